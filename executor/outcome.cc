#include "executor/outcome.h"

#include <utility>

#include "executor/child_process.h"

namespace tuner {

namespace {

FailMessage fail(const JobEnding& ending, const CommandOutcome& outcome, std::string reason) {
  return FailMessage{.lease_id = ending.lease_id,
                     .reason = std::move(reason),
                     .exit_code = outcome.exit_code,
                     .log_tail = outcome.log_tail,
                     .gpu_memory_peak_bytes = outcome.gpu_memory_peak_bytes};
}

// The job's own limit, not a lost lease: FAIL, and not run again.
FailMessage timed_out(const TrialJob& job, const JobEnding& ending, const CommandOutcome& outcome) {
  return fail(ending, outcome,
              "timed out after " + seconds_text(*job.timeout()) + " (the job's timeout_s); " +
                  ExitStatus{outcome.exit_code, outcome.term_signal}.describe());
}

// A job that did not succeed may say why in its output (an engine trial on its last stderr
// line, "error: ..."): that is the reason, with the exit after it.
FailMessage failed(const TrialJob& job, const JobEnding& ending, const CommandOutcome& outcome) {
  std::string reason = outcome.describe();
  if (auto error = job.failure_reason(outcome.log_tail)) reason = *error + " (" + reason + ")";
  return fail(ending, outcome, std::move(reason));
}

// RESULT with the job's metrics; the coordinator picks the objective values from them.
ResultMessage result(const JobEnding& ending, const CommandOutcome& outcome) {
  return ResultMessage{.lease_id = ending.lease_id,
                       .metrics = outcome.result_metrics(),
                       .integer_metrics = outcome.result_integer_metrics(),
                       .gpu_memory_peak_bytes = outcome.gpu_memory_peak_bytes,
                       .paused_at_step = ending.decision == JobDecision::kPause
                                             ? ending.paused_at_step
                                             : std::nullopt};
}

}  // namespace

Message outcome_message(const TrialJob& job, const JobEnding& ending,
                        const CommandOutcome& outcome) {
  if (outcome.timed_out && job.timeout()) return timed_out(job, ending, outcome);
  // Told to stop (pruned) or pause: the coordinator records the trial as such.
  if (ending.decision != JobDecision::kContinue) return result(ending, outcome);
  if (!ending.executor_stop_reason.empty()) {
    return fail(
        ending, outcome,
        "stopped by the executor (" + ending.executor_stop_reason + "); " + outcome.describe());
  }
  if (!outcome.succeeded()) return failed(job, ending, outcome);
  // A node other than 0 of a multi-node trial: its part is done; node 0 reports the metrics.
  if (ending.node > 0) return ResultMessage{.lease_id = ending.lease_id};
  return result(ending, outcome);
}

FailMessage start_failure(uint64_t lease_id, std::string_view what) {
  return FailMessage{.lease_id = lease_id,
                     .reason = "the job could not start: " + std::string(what)};
}

}  // namespace tuner
