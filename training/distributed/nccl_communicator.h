// NcclCommunicator: the Communicator of GPU training, one process (or thread) per GPU, over NCCL.
//
// Rank 0's process makes the run's id with nccl_new_unique_id() (it also listens there for the
// other ranks while they connect, so that process must stay up), the id travels to every rank as
// text (e.g. inside the coordinator's trial message), and each rank makes its communicator with
// it. Buffers are device memory on the communicator's device.
//
// No call waits forever: the communicator is non-blocking and every wait (connecting, each
// collective) polls NCCL's error state up to the timeout; a dead or stalled peer makes it abort
// the communicator and throw CommunicatorError("nccl ..."), after which every call throws.
//
// Collectives run on the communicator's own CUDA stream, after the work queued so far on the
// producer stream (set_producer_stream; default: the legacy default stream), so
// all_reduce_sum_async overlaps the caller's later kernels. Builds without CUDA have the type,
// but making one throws CommunicatorError.
#ifndef TUNER_TRAINING_DISTRIBUTED_NCCL_COMMUNICATOR_H_
#define TUNER_TRAINING_DISTRIBUTED_NCCL_COMMUNICATOR_H_

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "training/distributed/communicator.h"

namespace tuner::training {

// The GPUs NCCL can use in this process: count 0 and the reason when there are none (no CUDA in
// this build, no driver, no device).
struct NcclDevices {
  int count = 0;
  std::string why_none;
};
NcclDevices nccl_visible_devices();

// A new NCCL unique id (ncclUniqueId, 128 bytes) as 256 lowercase hex digits. Call it in rank 0's
// process. Throws CommunicatorError when NCCL fails or the build has none.
std::string nccl_new_unique_id();

// Thread safety: as Communicator (one issuing thread). The CUDA device is made current on the
// calling thread by every call.
class NcclCommunicator final : public Communicator {
 public:
  // Joins the run named by unique_id_hex (from nccl_new_unique_id) as `rank` of `size`, on CUDA
  // device `device`; every rank must call it within `timeout` (default 30 s) of the others.
  // REQUIRES: 0 <= rank < size; unique_id_hex has 256 hex digits (else std::invalid_argument).
  // Throws CommunicatorError when NCCL fails or the others do not join in time.
  NcclCommunicator(int rank, int size, const std::string& unique_id_hex, int device,
                   std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Flushes and frees the communicator (aborting it when that does not finish within the
  // timeout). Outstanding PendingCollectives stay valid.
  ~NcclCommunicator() override;

  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  std::string_view name() const override { return "nccl"; }
  int rank() const override;
  int size() const override;
  int device() const;

  // x: device memory on device().
  void all_reduce_sum(std::span<float> x) override;
  std::unique_ptr<PendingCollective> all_reduce_sum_async(std::span<float> x) override;
  void broadcast(std::span<float> x, int root) override;
  void barrier() override;

  // `stream` (a cudaStream_t on device(); nullptr: the legacy default stream) is where the
  // caller's kernels write the buffers: each later collective starts on the GPU after the work
  // queued on it so far. The stream must outlive this communicator's use of it.
  void set_producer_stream(void* stream);

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with the pending collectives
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DISTRIBUTED_NCCL_COMMUNICATOR_H_
