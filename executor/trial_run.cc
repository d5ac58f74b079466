#include "executor/trial_run.h"

#include <chrono>
#include <csignal>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "executor/checkpoint_fetch.h"
#include "executor/checkpoint_writer.h"
#include "executor/command_job.h"
#include "executor/connection.h"
#include "executor/job_log.h"
#include "executor/outcome.h"
#include "executor/tensorboard_events.h"

namespace tuner {

namespace {

// How long a job whose process ended by a SIGTERM from elsewhere waits for the executor's own
// stop (run_to_outcome).
constexpr std::chrono::milliseconds kOutsideSigtermWait{1000};

// A trial's reports as TensorBoard scalars in its folder (TrialJob::scalars_dir), the file made
// at the first report. A folder that cannot be written costs the scalars, never the trial: the
// first problem is returned once for the log, and nothing more is tried.
class ReportScalars {
 public:
  explicit ReportScalars(std::string dir) : dir_(std::move(dir)) {}

  // Empty, or the problem to log (once).
  std::string add(const CommandReport& report) {
    if (dir_.empty() || failed_) return {};
    try {
      if (!writer_) writer_ = std::make_unique<TensorBoardWriter>(dir_);
      const double now =
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
              .count();
      writer_->add_scalars(report.step, report.metrics, now);
      return {};
    } catch (const std::exception& e) {
      failed_ = true;
      return std::string("no TensorBoard scalars for this trial: ") + e.what();
    }
  }

 private:
  std::string dir_;
  std::unique_ptr<TensorBoardWriter> writer_;
  bool failed_ = false;
};

// Each report to the loop as REPORT; the answer is the coordinator's last DECISION, or pause at
// the first report at or past a PBT segment's last step (TRIAL's pause_at_step; a job that
// reports every few steps, or resumed past it, may never report that step itself), decided here
// so that it holds while the coordinator is out of reach. The metrics of the report the job is
// paused at go to `paused_metrics`.
ReportCallback report_callback(HeldJob& job, JobEvents& events, ReportScalars& scalars,
                               Metrics& paused_metrics) {
  return [&job, &events, &scalars, &paused_metrics](const CommandReport& r) {
    const uint64_t lease = job.trial.lease_id;
    events.post(
        JobEvent{.lease_id = lease,
                 .report = ReportMessage{.lease_id = lease, .step = r.step, .metrics = r.metrics}});
    if (std::string problem = scalars.add(r); !problem.empty()) {
      events.post(JobEvent{.note = "trial " + std::to_string(job.trial.number) + ": " + problem});
    }
    JobDecision decision = job.decision.load();
    if (decision == JobDecision::kContinue && job.trial.pause_at_step &&
        r.step >= *job.trial.pause_at_step) {
      job.decision.compare_exchange_strong(decision, JobDecision::kPause);
      decision = job.decision.load();
    }
    if (decision == JobDecision::kPause) {
      int64_t none = -1;
      if (job.paused_at_step.compare_exchange_strong(none, r.step)) paused_metrics = r.metrics;
    }
    return decision;
  };
}

// The job's command (an engine job's `tuner trial` command) run to its end.
CommandOutcome run_command(HeldJob& job, const ExecutorOptions& options, const CommandTrial& trial,
                           const ReportCallback& on_report) {
  CommandJobOptions job_options;
  job_options.stop_grace = job.trial_job->stop_grace().value_or(options.stop_grace);
  job_options.time_limit = job.trial_job->timeout().value_or(std::chrono::milliseconds(0));
  job_options.log_path = trial_log_path(options, job.trial);
  if (!job.trial.gpus.empty()) job_options.gpu_memory = options.gpu_memory.get();
  CommandSpec spec = job.trial_job->command(TrialPlacement{
      .number = job.trial.number,
      .gpus = job.trial.gpus,
      .node = job.trial.node,
      .node_store_dir = job.node_store ? job.node_store->path().string() : std::string(),
      .rank_host = options.rank_host,
      .tuner_path = options.tuner_path});
  CommandJob command(std::move(spec), job_options);
  return command.run(trial, on_report, job.stop_source.get_token());
}

// Whether the coordinator's copy of the checkpoint `of`, at `path` on this host, was sent by a
// later lease than the one recorded beside `path` (none recorded: 0), asked with a CHECKPOINT_GET
// `stat`: false when the coordinator's is not newer, it does not know which lease sent it or has
// none; nullopt when it did not answer (or the job was stopped).
std::optional<bool> coordinators_copy_is_newer(HeldJob& job, JobEvents& events, CheckpointOf of,
                                               const std::filesystem::path& path) {
  const uint64_t local = read_checkpoint_writer(path);
  const std::optional<CheckpointDataMessage> stat =
      stat_checkpoint_file(job, events, of, path.filename().string());
  if (!stat) return std::nullopt;
  return stat->found && stat->written_by_lease > local;
}

// The coordinator's copy of the checkpoint `of` (`name` in its folder there) put at `path`, with
// its companions (checkpoint_file_names; not a PBT parent's pause record, which is of the
// parent's segment): the checkpoint fetched first under another name, then each companion over
// this host's (one the coordinator lacks is removed here: it would be another copy's), then the
// checkpoint renamed into place, so that a checkpoint here always has its own companions.
// Returns "" when done, else why not; `path` is then untouched.
std::string fetch_checkpoint(HeldJob& job, JobEvents& events, CheckpointOf of,
                             const std::string& name, const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  const fs::path fetched = path.string() + ".fetched";
  if (std::string why = fetch_checkpoint_file(job, events, of, name, fetched); !why.empty()) {
    return why;
  }
  std::error_code ec;
  const std::vector<std::string> theirs = checkpoint_file_names(name);
  const std::vector<std::string> ours = checkpoint_file_names(path);
  for (size_t i = 0; i + 1 < ours.size(); ++i) {
    const fs::path target = path.parent_path() / ours[i];
    if (of == CheckpointOf::kStart && target == checkpoint_pause_path(path)) {
      fs::remove(target, ec);
      continue;
    }
    if (!fetch_checkpoint_file(job, events, of, theirs[i], target).empty()) fs::remove(target, ec);
  }
  fs::rename(fetched, path, ec);
  if (ec) {
    fs::remove(fetched, ec);
    return "cannot rename " + fetched.string() + ": " + ec.message();
  }
  return "";
}

// A PBT segment's start: its parent's checkpoint copied to `path` (and, when there are, the
// engine's history file beside it and the best epoch's model.ckpt beside that, so that the
// segment's best epoch over its lineage keeps its model), unless `path` holds a checkpoint
// already (a re-run's). The newest copy is taken, as a re-run's own (fetch_own_checkpoint): the
// coordinator's when this host lacks the parent's checkpoint, or holds one written by an earlier
// lease of the parent than the coordinator's; this host's when the coordinator's is not newer or
// the coordinator does not answer. A copy that fails is noted; the job then starts without the
// parent's state. The copy is made under a temporary name and renamed, so that a job never sees
// half a checkpoint.
void copy_start_checkpoint(HeldJob& job, const std::filesystem::path& path, JobEvents& events) {
  if (!job.trial.start_checkpoint_path) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path, ec)) return;
  const fs::path from = fs::absolute(*job.trial.start_checkpoint_path, ec).lexically_normal();
  const std::string trial = "trial " + std::to_string(job.trial.number) + ": ";
  // A pause record here is of no checkpoint (one of the segment's own fetched only in part).
  fs::remove(checkpoint_pause_path(path), ec);
  if (!fs::exists(from, ec)) {  // not on this host: the coordinator's copy
    const std::string why =
        fetch_checkpoint(job, events, CheckpointOf::kStart, from.filename().string(), path);
    if (!why.empty()) {
      events.post(JobEvent{.note = trial + "its parent's checkpoint " + from.string() +
                                   " is not on this host, nor to be had from the coordinator (" +
                                   why + "); it starts without it"});
    }
    return;
  }
  if (coordinators_copy_is_newer(job, events, CheckpointOf::kStart, from).value_or(false)) {
    const std::string why =
        fetch_checkpoint(job, events, CheckpointOf::kStart, from.filename().string(), path);
    if (why.empty()) {
      events.post(JobEvent{.note = trial + "starts from the coordinator's copy of its parent's " +
                                   "checkpoint, newer than this host's"});
      return;
    }
    events.post(JobEvent{.note = trial + "starts from this host's older copy of its parent's " +
                                 "checkpoint; the coordinator's newer one cannot be fetched (" +
                                 why + ")"});
  }
  const std::pair<fs::path, fs::path> files[] = {
      {from.parent_path() / "model.ckpt", path.parent_path() / "model.ckpt"},
      {from.string() + ".history.json", path.string() + ".history.json"},
      {from, path}};  // the checkpoint itself last
  for (const auto& [source, target] : files) {
    const fs::path partial = target.string() + ".partial";
    if (source != from && !fs::exists(source, ec)) continue;  // the parent has none
    fs::copy_file(source, partial, fs::copy_options::overwrite_existing, ec);
    if (!ec) fs::rename(partial, target, ec);
    if (ec) {
      events.post(JobEvent{.note = trial + "cannot copy its parent's checkpoint " +
                                   source.string() + " to " + target.string() + ": " +
                                   ec.message()});
      return;
    }
  }
}

// A re-run's own checkpoint (`path`), with the history and best epoch's model beside it, fetched
// from the coordinator when this host lacks it (an earlier attempt ran elsewhere and sent its
// files), or when the coordinator's copy was sent by a later lease than the one that wrote this
// host's (recorded beside it, executor/checkpoint_writer.h): an attempt elsewhere went further.
// The files come together (fetch_checkpoint), with its pause record where it has one. Nothing to
// fetch is no error: the re-run then starts over, or from this host's copy. Returns false when this
// host's copy may be older than the coordinator's and stays (the coordinator did not answer, or the
// fetch failed).
bool fetch_own_checkpoint(HeldJob& job, const std::filesystem::path& path, JobEvents& events) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string trial = "trial " + std::to_string(job.trial.number);
  const bool here = fs::exists(path, ec);
  if (here) {
    const std::optional<bool> newer =
        coordinators_copy_is_newer(job, events, CheckpointOf::kOwn, path);
    // Unanswered (or the job was stopped): not known to be the newest.
    if (!newer) return false;
    if (!*newer) return true;
  }
  const std::string why =
      fetch_checkpoint(job, events, CheckpointOf::kOwn, path.filename().string(), path);
  if (!why.empty()) {
    if (here) {
      events.post(JobEvent{.note = trial + ": resumes from this host's older copy of its " +
                                   "checkpoint; the coordinator's newer one cannot be fetched (" +
                                   why + ")"});
    }
    return !here;
  }
  events.post(JobEvent{.note = trial + (here ? ": resumes from the coordinator's copy of its "
                                               "checkpoint, newer than this host's"
                                             : ": resumes from the coordinator's copy of its "
                                               "checkpoint")});
  return true;
}

// Whether the trial is a re-run, which resumes from its checkpoint: a re-issue after a lost lease
// or a preemption (attempt > 0), or a retry, whose checkpoint is its lineage's first trial's,
// outside its own folder.
bool is_rerun(const HeldJob& job, const std::filesystem::path& checkpoint) {
  if (job.trial.attempt > 0) return true;
  const std::string own = job.trial_job->trial_dir(job.trial.number);
  std::error_code ec;
  return !own.empty() &&
         std::filesystem::absolute(own, ec).lexically_normal() != checkpoint.parent_path();
}

// Records beside the checkpoint at `path` that the job's lease wrote it
// (executor/checkpoint_writer.h).
void record_checkpoint_writer(const HeldJob& job, const std::filesystem::path& path,
                              JobEvents& events) {
  if (std::string problem = write_checkpoint_writer(path, job.trial.lease_id); !problem.empty()) {
    events.post(JobEvent{.note = "trial " + std::to_string(job.trial.number) + ": " + problem});
  }
}

// The trial's checkpoint path, absolute (the program may run in another working directory), with
// its folder made: a re-run's checkpoint is in its lineage's first trial's folder, which a host
// that did not run that trial lacks (it is fetched from the coordinator then). A folder that
// cannot be made is noted; the job then finds no checkpoint and cannot save one. A re-run resumes
// from the newest copy of its own checkpoint; a PBT segment's parent checkpoint is copied there
// first where there is none (a segment's first run, or a re-run whose earlier runs left none).
std::optional<std::string> checkpoint_path_of(HeldJob& job, JobEvents& events) {
  if (!job.trial.checkpoint_path) return std::nullopt;
  std::error_code ec;
  std::filesystem::path path = std::filesystem::absolute(*job.trial.checkpoint_path, ec);
  if (ec) return job.trial.checkpoint_path;
  path = path.lexically_normal();
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) {
    events.post(JobEvent{.note = "trial " + std::to_string(job.trial.number) +
                                 ": cannot create the folder of its checkpoint " + path.string() +
                                 ": " + ec.message()});
  }
  bool newest = !ec;
  if (is_rerun(job, path)) newest = fetch_own_checkpoint(job, path, events) && newest;
  copy_start_checkpoint(job, path, events);
  // From now on this lease writes the checkpoint here: a copy of an earlier lease is not newer.
  // A copy known to be older than the coordinator's keeps its record, so that the next re-run
  // here fetches again. Where there is no checkpoint yet, the record waits for the job to write
  // one (record_checkpoint_writer): a trial that never checkpoints gets no record in its folder.
  if (newest && std::filesystem::exists(path, ec)) record_checkpoint_writer(job, path, events);
  job.checkpoint = path.string();
  job.checkpoint_before = stamp_checkpoint(path);
  return path.string();
}

// A PBT segment whose checkpoint is at its end already: an earlier run of it was paused at step
// S >= pause_at_step having written that checkpoint (its pause record, read from beside the
// checkpoint on this host, or fetched with it). It trains no more: its report at S, with that
// report's metrics, is made again, and it ends paused there with the earlier RESULT's metrics,
// without its job (which, resumed past its end, would report no step of its segment). Nullopt
// otherwise; a pause record that does not apply is removed, since the job writes the checkpoint
// anew.
std::optional<Message> finished_segment(HeldJob& job, JobEvents& events) {
  if (!job.trial.pause_at_step || job.checkpoint.empty()) return std::nullopt;
  std::error_code ec;
  const std::optional<CheckpointPause> pause = std::filesystem::exists(job.checkpoint, ec)
                                                   ? read_checkpoint_pause(job.checkpoint)
                                                   : std::nullopt;
  if (!pause || pause->step < *job.trial.pause_at_step) {
    std::filesystem::remove(checkpoint_pause_path(job.checkpoint), ec);
    return std::nullopt;
  }
  const uint64_t lease = job.trial.lease_id;
  events.post(JobEvent{.note = "trial " + std::to_string(job.trial.number) +
                               ": its checkpoint is at its segment's end already (paused at step " +
                               std::to_string(pause->step) + " by lease " +
                               std::to_string(pause->lease) + "): paused there without training"});
  events.post(JobEvent{
      .lease_id = lease,
      .report = ReportMessage{.lease_id = lease, .step = pause->step, .metrics = pause->metrics}});
  job.decision.store(JobDecision::kPause);
  job.paused_at_step.store(pause->step);
  CommandOutcome outcome{
      .exit_code = 0,
      .stopped_by = JobDecision::kPause,
      .last_report = CommandReport{.step = pause->step, .metrics = pause->metrics},
      .reports = 1};
  if (!pause->result.empty()) {
    outcome.final_metrics = pause->result;
    outcome.final_integers = pause->result_integers;
  }
  return outcome_message(*job.trial_job,
                         JobEnding{.lease_id = lease,
                                   .node = job.trial.node,
                                   .decision = JobDecision::kPause,
                                   .paused_at_step = pause->step},
                         outcome);
}

// Records beside the checkpoint that the job, which wrote it, was paused at the end of its PBT
// segment (`result`, paused at the report whose metrics are `report_metrics`), so that a re-run
// of the segment does not train past its end (finished_segment).
void record_pause(const HeldJob& job, const Message& result, const Metrics& report_metrics,
                  JobEvents& events) {
  const auto* paused = std::get_if<ResultMessage>(&result);
  if (!paused || !paused->paused_at_step || !job.trial.pause_at_step ||
      *paused->paused_at_step < *job.trial.pause_at_step || job.checkpoint.empty()) {
    return;
  }
  const std::string name = std::filesystem::path(job.checkpoint).filename().string();
  const CheckpointStamps now = stamp_checkpoint(job.checkpoint);
  auto written = now.find(name);
  auto before = job.checkpoint_before.find(name);
  if (written == now.end() ||
      (before != job.checkpoint_before.end() && before->second == written->second)) {
    return;  // not written by this job: it may be older than the step it was paused at
  }
  const std::string problem = write_checkpoint_pause(
      job.checkpoint, CheckpointPause{.lease = job.trial.lease_id,
                                      .step = *paused->paused_at_step,
                                      .metrics = report_metrics,
                                      .result = paused->metrics,
                                      .result_integers = paused->integer_metrics});
  if (!problem.empty()) {
    events.post(JobEvent{.note = "trial " + std::to_string(job.trial.number) + ": " + problem});
  }
}

Message run_to_outcome(HeldJob& job, const ExecutorOptions& options, JobEvents& events) {
  const CommandTrial trial{.trial_id = job.trial.trial_id,
                           .number = job.trial.number,
                           .params = job.trial.params,
                           .checkpoint_path = prepare_checkpoint(job, events),
                           .pause_at_step = job.trial.pause_at_step};
  if (std::optional<Message> done = finished_segment(job, events)) return std::move(*done);
  ReportScalars scalars(job.trial_job->scalars_dir(job.trial.number));
  Metrics paused_metrics;
  const ReportCallback on_report = report_callback(job, events, scalars, paused_metrics);
  const CommandOutcome outcome =
      options.job_runner ? options.job_runner(trial, on_report, job.stop_source.get_token())
                         : run_command(job, options, trial, on_report);
  // A SIGTERM this executor did not send may be the one that stops the executor too: Slurm
  // (preemption, requeue, the time limit) signals every process of the job at once. The job
  // waits a moment for that stop, so that it ends as preempted, not failed.
  const bool sigterm = outcome.term_signal == SIGTERM || outcome.exit_code == 128 + SIGTERM;
  if (sigterm && !job.stop_source.stop_requested()) job.wait_for_stop(kOutsideSigtermWait);
  Message message =
      outcome_message(*job.trial_job,
                      JobEnding{.lease_id = job.trial.lease_id,
                                .node = job.trial.node,
                                .decision = job.decision.load(),
                                .executor_stop_reason = job.stop_reason(),
                                .paused_at_step = job.paused_at_step.load() >= 0
                                                      ? std::optional(job.paused_at_step.load())
                                                      : std::nullopt},
                      outcome);
  record_pause(job, message, paused_metrics, events);
  return message;
}

// Chooses the ended attempt's files to send (HeldJob::files); those past the limit are named at
// the end of its log and in a note.
void plan_files(HeldJob& job, const ExecutorOptions& options, JobEvents& events) {
  const std::string log = options.job_runner ? "" : trial_log_path(options, job.trial);
  // A node other than 0 sends its log only: node 0's folder is the trial's.
  const std::string folder = job.trial.node == 0 ? job.trial_job->trial_dir(job.trial.number) : "";
  std::vector<std::string> problems;
  job.files = plan_trial_files(log, folder, options.max_trial_files_bytes, &problems);
  const std::string trial = "trial " + std::to_string(job.trial.number) + ": ";
  for (const std::string& problem : problems) events.post(JobEvent{.note = trial + problem});
  if (job.files.left.empty()) return;
  const std::string text = files_left_text(job.files.left, job.files.limit_bytes, host_name());
  events.post(JobEvent{.note = trial + text});
  if (log.empty()) return;
  std::ofstream(log, std::ios::app) << "[tuner] " << text << "\n";
  // The note is part of the log that is sent (it goes first, so it is not left for the note).
  for (TrialFile& file : job.files.send) {
    std::error_code ec;
    if (file.kind == TrialFileKind::kLog) file.size = std::filesystem::file_size(log, ec);
    if (ec) file.size = 0;
  }
}

}  // namespace

std::optional<std::string> prepare_checkpoint(HeldJob& job, JobEvents& events) {
  return checkpoint_path_of(job, events);
}

std::string trial_log_path(const ExecutorOptions& options, const TrialMessage& trial) {
  const std::string& dir =
      options.log_dir.empty() && options.send_files ? options.files_dir + "/logs" : options.log_dir;
  if (dir.empty()) return "";
  return dir + "/" + trial_log_name(trial.number, trial.lease_id);
}

void run_trial(HeldJob& job, const ExecutorOptions& options, JobEvents& events) {
  JobEvent done{.lease_id = job.trial.lease_id};
  try {
    done.outcome = run_to_outcome(job, options, events);
  } catch (const std::exception& e) {
    done.outcome = start_failure(job.trial.lease_id, e.what());
  }
  // A checkpoint the job wrote is this lease's, also where there was none when it started.
  std::error_code ec;
  if (!job.checkpoint.empty() && std::filesystem::exists(job.checkpoint, ec) &&
      stamp_checkpoint(job.checkpoint) != job.checkpoint_before) {
    record_checkpoint_writer(job, job.checkpoint, events);
  }
  if (options.send_files) plan_files(job, options, events);
  events.post(std::move(done));
}

}  // namespace tuner
