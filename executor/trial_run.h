// run_trial: one held trial's job run to its end on a job thread (executor/job_threads.h). Its
// reports go to the loop as REPORT events (and, for a job with a scalars folder, to TensorBoard
// scalars there); its end becomes the RESULT or FAIL of the outcome rule (executor/outcome.h),
// posted as the job's last event. The job runs as ExecutorOptions::job_runner when one is set,
// else as the command its TrialJob makes (an engine job's `tuner trial`), with the job's stop
// grace and time limit and a log file (trial_log_path()). An executor that sends its trials'
// files has them planned (executor/trial_files.h) into HeldJob::files before the last event; the
// files past the limit are named in the log and in a note.
//
// Thread safety: call on the job's own thread; HeldJob's contract says what the loop may touch
// meanwhile. `options` and `events` must outlive the call.
#ifndef TUNER_EXECUTOR_TRIAL_RUN_H_
#define TUNER_EXECUTOR_TRIAL_RUN_H_

#include <optional>
#include <string>

#include "executor/executor_service.h"
#include "executor/held_job.h"
#include "executor/job_events.h"

namespace tuner {

// Where the attempt of `trial` logs: ExecutorOptions::log_dir, else (send_files) files_dir/logs,
// as trial-<number>-lease-<lease>.log; empty when it keeps no log file.
std::string trial_log_path(const ExecutorOptions& options, const TrialMessage& trial);

// The trial's checkpoint path, absolute, ready before its job starts: its folder made; a re-run's
// own checkpoint (with its companions and pause record), or else a PBT segment's parent
// checkpoint, copied there, each fetched from the coordinator when this host lacks it or has an
// older copy (docs/protocol.md, "Checkpoints that travel"); the lease recorded as the writer of
// the copy here (executor/checkpoint_writer.h).
// Nullopt when the trial has none.
// Problems are posted as notes; the job then starts over or from what is here.
std::optional<std::string> prepare_checkpoint(HeldJob& job, JobEvents& events);

// Runs `job` and posts its reports, notes and outcome to `events`. Never throws: a job that
// cannot start is a FAIL. A PBT segment's job is paused at its first report at or past
// pause_at_step; one that wrote its checkpoint and was paused so has the pause recorded beside it
// (CheckpointPause). A segment whose checkpoint has such a record at or past its pause_at_step
// (a re-run of a segment whose RESULT was lost) is not run: the recorded report is posted again
// and the outcome is a RESULT paused at its step, with the recorded RESULT's metrics
// (docs/schedulers.md, "PBT").
void run_trial(HeldJob& job, const ExecutorOptions& options, JobEvents& events);

}  // namespace tuner

#endif  // TUNER_EXECUTOR_TRIAL_RUN_H_
