// The executor's outcome rule: how a finished job's exit and metrics become the RESULT or FAIL
// that goes to the coordinator (wire/protocol.h).
//
//   - timed out under the job's own "timeout_s":     FAIL "timed out after ..." (not run again);
//   - told to stop or pause by a DECISION:           RESULT with whatever metrics it has;
//   - stopped by the executor (lease given up, ...): FAIL "stopped by the executor (...)";
//   - exited other than 0, or killed:                FAIL, with the job's own reason when it
//                                                    printed one (TrialJob::failure_reason);
//   - node > 0 of a multi-node trial, ended well:    RESULT without metrics (node 0 reports);
//   - ended well:                                    RESULT with the metrics.
// A FAIL carries the exit code and the log tail; either carries the peak GPU memory where it was
// measured (node 0's, for a multi-node trial). RESULT.values stays empty: the coordinator
// picks the study's objective values from RESULT.metrics, and fails a trial without them
// (coordinator/study_run.cc, StudyRun::tell_result).
//
// Thread safety: pure functions; call them from any thread.
#ifndef TUNER_EXECUTOR_OUTCOME_H_
#define TUNER_EXECUTOR_OUTCOME_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "executor/command_job.h"
#include "executor/trial_job.h"
#include "wire/protocol.h"

namespace tuner {

// How one run of a trial's job ended, as the rule above reads it.
struct JobEnding {
  uint64_t lease_id = 0;
  int node = 0;  // the trial's node (TrialMessage::node)
  // The last DECISION the coordinator sent for the trial.
  JobDecision decision = JobDecision::kContinue;
  // Why the executor itself stopped the job; empty when it did not.
  std::string executor_stop_reason;
  // Paused: the step of the report it was paused at, when known (RESULT's paused_at_step).
  std::optional<int64_t> paused_at_step;
};

// RESULT or FAIL for a job `job` whose run ended as `ending` with `outcome`.
Message outcome_message(const TrialJob& job, const JobEnding& ending,
                        const CommandOutcome& outcome);

// FAIL for a job that could not start (`what`: the exception's message).
FailMessage start_failure(uint64_t lease_id, std::string_view what);

}  // namespace tuner

#endif  // TUNER_EXECUTOR_OUTCOME_H_
