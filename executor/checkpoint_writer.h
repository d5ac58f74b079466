// Which lease wrote a copy of a checkpoint file (docs/protocol.md, "Checkpoints that travel"): a
// sidecar file beside it, FILE + ".lease", holding the lease id in decimal. The coordinator keeps
// one beside each checkpoint file a preempted executor sent; an executor keeps one beside the
// checkpoint of each trial it runs. Lease ids grow with time, so a copy with the larger id is the
// newer; a re-run fetches the coordinator's copy when its lease is newer than the local one's.
// A PBT segment's checkpoint at its end has a second sidecar, its pause record (CheckpointPause).
//
// Thread safety: free functions without state; a sidecar is replaced whole (written under a
// temporary name and renamed), so that a reader sees the old record or the new one.
#ifndef TUNER_EXECUTOR_CHECKPOINT_WRITER_H_
#define TUNER_EXECUTOR_CHECKPOINT_WRITER_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "wire/protocol.h"

namespace tuner {

// The sidecar of `file`: file + ".lease".
std::filesystem::path checkpoint_writer_path(const std::filesystem::path& file);

// The lease recorded beside `file`; 0 when there is no sidecar or it does not hold a lease id.
uint64_t read_checkpoint_writer(const std::filesystem::path& file);

// Records `lease` beside `file`. Returns "" when done, else why not (naming the sidecar).
std::string write_checkpoint_writer(const std::filesystem::path& file, uint64_t lease);

// A PBT segment's checkpoint that is at its end: the job that wrote it was paused at a report of
// step >= the segment's pause_at_step. Kept in a sidecar FILE + ".paused.json" (JSON: "lease",
// "step", "metrics", "result", "result_integers"), written by the executor after such a job
// and travelling with the checkpoint (checkpoint_file_names), so that a re-run of the segment
// that resumes from it is done without training (executor/trial_run.h).
struct CheckpointPause {
  uint64_t lease = 0;                        // the lease whose job was paused
  int64_t step = 0;                          // the step of the report it was paused at
  Metrics metrics;                           // that report's metrics
  Metrics result;                            // its RESULT's metrics (an engine job's final metrics)
  std::vector<std::string> result_integers;  // of `result`: those written as JSON integers
};

// The sidecar of `file`: file + ".paused.json".
std::filesystem::path checkpoint_pause_path(const std::filesystem::path& file);

// The pause recorded beside `file`; nullopt when there is none or it is not one (a finite
// metric value is kept, others are left out).
std::optional<CheckpointPause> read_checkpoint_pause(const std::filesystem::path& file);

// Records `pause` beside `file`. Returns "" when done, else why not (naming the sidecar).
std::string write_checkpoint_pause(const std::filesystem::path& file, const CheckpointPause& pause);

}  // namespace tuner

#endif  // TUNER_EXECUTOR_CHECKPOINT_WRITER_H_
