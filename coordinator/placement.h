// Placement: which executor gets the next trial of which study. A pure function of a snapshot
// (the executors' free slots and GPUs, the studies that want slots and how many trials each has
// leased); it sends nothing, stores nothing and asks no study. The coordinator's dispatch
// (coordinator/dispatch.h) takes a snapshot, asks for one assignment at a time, and tells the
// snapshot what came of it: apply() when the study gave a trial and it was leased, or
// StudyDemand::wants = false when the study had none to give now.
//
// A round of dispatch runs three steps, in this order:
// 1. next_group(): multi-node trials (a study whose trials need K > 1 executors). Each goes to
//    the first K executors (in their order) that have a free slot now (credit, and fewer leases
//    than slots: not one taken ahead, since every node must start at once) and, for CUDA, the
//    GPUs of its ranks; or to none. Studies in the order they were added.
// 2. reserve_for_groups(), once per round: the executors kept from single-node trials for
//    multi-node trials whose turn it is. A multi-node study that wants slots and has no more
//    trials leased than the single-node studies that want slots (the fair share) reserves K
//    executors: those with enough GPUs that hold the fewest leases (the first on ties). Without
//    it, single-node trials would take each slot as it frees and a multi-node trial could wait
//    for ever.
// 3. next_single(): each executor in its order, not reserved, with credit and fewer leases than
//    lease_limit() (its slots and as many again taken ahead: ExecutorOptions::prefetch), gets a
//    trial of the single-node study that wants slots, has the GPUs it needs there free, and has
//    the fewest trials leased (fair sharing; ties go to the study added first).
//
// GPUs: a study's trial needs none, `gpus_per_trial` whole GPUs (free: no lease holds any part
// of them; the first free ones in the executor's order), or a share of one GPU (`gpu_share`, in
// millionths of a GPU: a command job's "gpus_per_trial" in (0, 1)). A share goes to the GPU with
// the most room left that fits it (a free GPU, or one that only shares hold, whose shares then
// sum to at most kWholeGpu), the first on ties: trials share a GPU only when every GPU is in use.
// So shares of 1/2 put at most 2 trials on a GPU, of 1/3 at most 3; shares of several studies
// mix on one GPU while they sum to at most one GPU. An executor without GPUs gets no trial that
// needs one.
//
// GPU memory: a study may also state the memory each trial takes on each of its GPUs
// (`gpu_memory`, a job's "gpu_memory_per_trial"). A GPU whose memory is known (HELLO) then takes
// a trial only when the memory of the shares held on it and the trial's fit in it; a GPU of
// unknown memory (declared with `tuner executor --gpus`) is bounded by the shares alone.
//
// Thread safety: functions of their arguments only.
#ifndef TUNER_COORDINATOR_PLACEMENT_H_
#define TUNER_COORDINATOR_PLACEMENT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace tuner {

// One GPU in shares: a share is a millionth of a GPU.
inline constexpr int kWholeGpu = 1'000'000;

// A fraction of one GPU in (0, 1) (a job's "gpus_per_trial") as shares, rounded to the nearest
// and at least 1; 0 for a fraction of 0. REQUIRES: 0 <= fraction < 1.
int gpu_share(double fraction);

// A GPU that shares of it are held on: its index and the shares held, in (0, kWholeGpu].
struct SharedGpu {
  int index = 0;
  int used = 0;
  uint64_t memory = 0;  // the bytes the studies of those shares state (StudyDemand::gpu_memory)
  bool operator==(const SharedGpu&) const = default;
};

// One GPU's memory in bytes, by index.
struct GpuMemory {
  int index = 0;
  uint64_t bytes = 0;
};

// One executor, as placement sees it.
struct ExecutorSlots {
  int credit = 0;                      // slots its last READY offered, less the TRIALs sent since
  int held = 0;                        // leases it holds whose outcome is not being committed
  int cpu_slots = 0;                   // its slots (HELLO)
  int gpus = 0;                        // its GPUs (HELLO), free or not
  std::vector<int> free_gpus;          // the GPUs no lease holds, in its order
  std::vector<SharedGpu> shared_gpus;  // the GPUs only shares are held on, in its order
  std::vector<GpuMemory> gpu_memory;   // its GPUs' memory (HELLO); absent or 0: not known
};

// One study, as placement sees it.
struct StudyDemand {
  bool wants = false;       // it has a trial to lease (and may lease one more) now
  int leased = 0;           // its trials leased: the fair share counts these
  int gpus_per_trial = 0;   // whole GPUs on each of a trial's executors
  int gpu_share = 0;        // or: shares of one GPU, in (0, kWholeGpu), for single-node trials
  uint64_t gpu_memory = 0;  // bytes a trial takes on each of its GPUs; 0: not stated
  int nodes_per_trial = 1;
};

// Executors and studies in their order (the executors by connection, the studies as added);
// assignments name them by index.
struct PlacementInput {
  std::vector<ExecutorSlots> executors;
  std::vector<StudyDemand> studies;
};

struct Assignment {
  size_t study = 0;
  std::vector<size_t> executors;  // one per node: node n on executors[n]
  // Per node: the GPUs given to it (empty without GPUs; one GPU for a study's gpu_share).
  std::vector<std::vector<int>> gpus;
};

// The most trials an executor holds at once: its slots, and as many again taken ahead.
inline int lease_limit(int cpu_slots) { return 2 * cpu_slots; }

// Step 1: the next multi-node trial to lease, or nullopt.
std::optional<Assignment> next_group(const PlacementInput& input);
// Step 2: for each executor, whether it is kept for a multi-node trial this round.
std::vector<bool> reserve_for_groups(const PlacementInput& input);
// Step 3: the next single-node trial to lease on an executor that is not `reserved`, or nullopt.
std::optional<Assignment> next_single(const PlacementInput& input,
                                      const std::vector<bool>& reserved);
// The snapshot after `assignment` was leased: each of its executors has one credit less, one
// lease more and its GPUs taken (whole, or the study's gpu_share of one); the study has one
// trial more leased.
void apply(PlacementInput& input, const Assignment& assignment);

// A whole round (steps 1 to 3) as the coordinator runs it when study i has `trials[i]` trials to
// lease and gives one whenever asked: it wants slots while it has some left (the `wants` of
// `input` are not read). REQUIRES: trials.size() == input.studies.size().
std::vector<Assignment> plan(PlacementInput input, std::vector<int> trials);

}  // namespace tuner

#endif  // TUNER_COORDINATOR_PLACEMENT_H_
