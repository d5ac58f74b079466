// fetch_checkpoint_file: a file of a checkpoint the trial starts from, fetched from the
// coordinator's host when this host lacks it (docs/protocol.md, "Checkpoints that travel"): one
// CHECKPOINT_GET after another through the loop (JobEvent::checkpoint_get), each answered by a
// CHECKPOINT_DATA that the loop delivers to the job (HeldJob::deliver).
//
// Thread safety: call on the job's own thread.
#ifndef TUNER_EXECUTOR_CHECKPOINT_FETCH_H_
#define TUNER_EXECUTOR_CHECKPOINT_FETCH_H_

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "executor/held_job.h"
#include "executor/job_events.h"
#include "wire/protocol.h"

namespace tuner {

// How long the job waits for each answer before it asks again, and how often it asks.
inline constexpr std::chrono::milliseconds kCheckpointAnswerWait{10'000};
inline constexpr int kCheckpointAsks = 3;

// The size of the coordinator's copy of `file` in the folder of the lease's checkpoint `of`, and
// the lease that sent it (written_by_lease; 0 when the coordinator does not know), without its
// bytes (a CHECKPOINT_GET "stat"); found = false when the coordinator lacks it. Nullopt when it
// did not answer `asks` times `wait`, or the job was stopped.
std::optional<CheckpointDataMessage> stat_checkpoint_file(
    HeldJob& job, JobEvents& events, CheckpointOf of, const std::string& file,
    std::chrono::milliseconds wait = kCheckpointAnswerWait, int asks = kCheckpointAsks);

// Writes the coordinator's copy of `file` in the folder of the lease's checkpoint `of` to
// `target`, under a temporary name (target + ".partial") renamed when whole, so that no job sees
// half a file. Returns "" when done, else why not (the coordinator has no such file, it did not
// answer `asks` times `wait`, the job was stopped, `target` cannot be written); `target` is then
// untouched.
std::string fetch_checkpoint_file(HeldJob& job, JobEvents& events, CheckpointOf of,
                                  const std::string& file, const std::filesystem::path& target,
                                  std::chrono::milliseconds wait = kCheckpointAnswerWait,
                                  int asks = kCheckpointAsks);

}  // namespace tuner

#endif  // TUNER_EXECUTOR_CHECKPOINT_FETCH_H_
