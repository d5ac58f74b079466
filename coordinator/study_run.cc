#include "coordinator/study_run.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "coordinator/group_commit.h"
#include "coordinator/placement.h"
#include "executor/artifact_files.h"
#include "executor/trial_job.h"
#include "storage/storage_fault.h"
#include "trials/error.h"
#include "trials/params_json.h"
#include "trials/system_attrs.h"
#include "util/json_string.h"
#include "util/strings.h"

namespace tuner {

namespace {

// A study whose ask() fails this many times in a row (no trial asked in between) stops.
constexpr int kMaxFailedAsksInARow = 3;

int64_t to_ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// A final metric as JSON text the way Python's json.dumps writes it (NaN and the infinities
// included), which is how Optuna's tools read user attributes; one the job wrote as an integer
// stays one.
std::string metric_json(double value, bool integer) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  if (integer && value == std::trunc(value) && std::abs(value) <= 0x1p53) {
    return std::to_string(static_cast<int64_t>(value));
  }
  return nlohmann::json(value).dump();
}

// The attempts of `trial`'s lineage that were preempted, from its stored kPreemptedAttemptsAttr;
// 0 when it has none. Throws the storage's Error.
int preempted_attempts(Study& study, const Trial& trial) {
  const FrozenTrial record = study.storage().get_trial(trial.id());
  auto it = record.system_attrs.find(kPreemptedAttemptsAttr);
  if (it == record.system_attrs.end()) return 0;
  const nlohmann::json count = nlohmann::json::parse(it->second, nullptr, false);
  if (!count.is_number_integer()) return 0;
  return static_cast<int>(std::clamp<int64_t>(count.get<int64_t>(), 0, 1'000'000));
}

}  // namespace

// --- The job's needs ----------------------------------------------------------------------------

StudyJobNeeds job_needs(const std::string& job_json, const std::string& context) {
  std::shared_ptr<const TrialJob> job = parse_trial_job(job_json, context);
  const TrialNeeds needs = job->needs();
  return StudyJobNeeds{.objective_metric = job->objective_metric(),
                       .gpus_per_trial = needs.gpus_per_node,
                       .gpu_share = gpu_share(needs.gpu_fraction),
                       .gpu_memory_bytes = needs.gpu_memory_bytes,
                       .nodes_per_trial = needs.nodes,
                       .job = std::move(job)};
}

std::string StudyJobNeeds::gpus_text() const {
  if (gpu_share > 0) {
    return nlohmann::json(static_cast<double>(gpu_share) / kWholeGpu).dump() + " of a GPU";
  }
  return std::to_string(gpus_per_trial) + (gpus_per_trial == 1 ? " GPU" : " GPUs");
}

std::optional<std::string> StudyJobNeeds::checkpoint_path(int first_trial) const {
  std::string path = job->checkpoint_path(first_trial);
  if (path.empty()) return std::nullopt;
  return path;
}

void accumulate(CoordinatorStats& sum, const CoordinatorStats& add) {
  sum.trials_started += add.trials_started;
  sum.retries_started += add.retries_started;
  sum.completed += add.completed;
  sum.pruned += add.pruned;
  sum.failed += add.failed;
  sum.failed_asks += add.failed_asks;
  sum.leases_expired += add.leases_expired;
  sum.reattached += add.reattached;
  sum.stale_outcomes_refused += add.stale_outcomes_refused;
  sum.reports += add.reports;
  sum.not_abandoned += add.not_abandoned;
}

// --- Budget -------------------------------------------------------------------------------------

StudyRun::StudyRun(StudyRunId run_id, Study s, StudyRunOptions o, const StudyRunContext& c)
    : id(run_id), study(std::move(s)), options(std::move(o)), context(c) {
  const size_t objectives = std::max<size_t>(1, options.objective_metrics.size());
  if (study.directions().size() != objectives) {
    throw Error(ErrorCode::kInvalidArgument,
                "coordinator: study '" + study.name() + "' has " +
                    std::to_string(study.directions().size()) + " objective(s) but the run names " +
                    std::to_string(objectives) +
                    " objective metric(s) (the job's objective_metric, or one per objective in "
                    "StudyRunOptions::objective_metrics)");
  }
  if (options.max_retries < 0 || (options.n_trials && *options.n_trials < 0)) {
    throw Error(ErrorCode::kInvalidArgument,
                "coordinator: study '" + study.name() + "': max_retries and n_trials must be >= 0");
  }
  needs = job_needs(options.job_json, "coordinator: study '" + study.name() + "': job");
  if (options.pbt && objectives > 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "coordinator: study '" + study.name() +
                    "': population-based training ranks members by one objective, but the study "
                    "has " +
                    std::to_string(objectives));
  }
  find_orphans();
}

bool StudyRun::may_lease_more() const {
  const LeaseCounts counts = leases();
  return options.max_concurrency <= 0 ||
         counts.leased - counts.finishing + static_cast<int>(orphans.size()) <
             options.max_concurrency;
}

bool StudyRun::may_start_new() const {
  if (options.pbt && pbt_members >= options.pbt->options().population_size) return false;
  return !exhausted && (!options.n_trials || stats.trials_started < *options.n_trials);
}

bool StudyRun::wants_slots() const {
  return !draining && !paused && may_lease_more() &&
         (!prepared.empty() || pending_retries > 0 || pending_segments > 0 ||
          (options.pbt && pbt_check) || may_start_new());
}

bool StudyRun::done() const {
  const bool population_done = options.pbt && pending_segments == 0 && !pbt_check &&
                               pbt_members >= options.pbt->options().population_size;
  return leases().leased == 0 && (draining || pending_retries == 0) && prepared.empty() &&
         orphans.empty() && (draining || !options.pbt || population_done) &&
         (draining || exhausted || population_done ||
          (options.n_trials && stats.trials_started >= *options.n_trials));
}

std::optional<Prepared> StudyRun::next_work(GroupCommit& commit) {
  if (!prepared.empty()) {
    Prepared p = std::move(prepared.front());
    prepared.pop_front();
    return p;
  }
  if (context.clock->steady_now() < ask_blocked_until) return std::nullopt;
  if (options.pbt && pbt_check && !draining && !pbt_refresh(commit.open())) {
    ask_blocked_until = context.clock->steady_now() + context.heartbeat_interval;
    return std::nullopt;
  }
  if (draining || (pending_retries == 0 && pending_segments == 0 && !may_start_new())) {
    return std::nullopt;
  }
  std::optional<Trial> trial;
  try {
    trial.emplace(options.space ? study.ask(*options.space) : study.ask());
  } catch (const Error& e) {
    // The file refuses writes (a full disk, a read-only file, a lock held past the busy
    // timeout): not the end of the trials; asked again a heartbeat later. A failed ask whose
    // trial could not even be stored as FAIL failed in the storage too.
    const auto* refused = dynamic_cast<const AskError*>(&e);
    if (is_storage_fault(e) || (refused && !refused->failed_trial())) {
      commit.write_failed("asking a trial: " + std::string(e.what()));
      ask_failed(e.what(), /*transient=*/true);
      return std::nullopt;
    }
    // Sampling failed after the trial was stored: it is FAIL, and counted as such.
    if (const auto* ask_error = dynamic_cast<const AskError*>(&e);
        ask_error && ask_error->failed_trial()) {
      ++stats.failed_asks;
      if (commit.open()) {
        commit.ask_failed(*this, *ask_error->failed_trial());
      } else {
        finished(*ask_error->failed_trial());
      }
    }
    if (e.code() == ErrorCode::kFailedPrecondition) {
      if (!exhausted) log(std::string("no more trials: ") + e.what());
      exhausted = true;
      pending_retries = 0;  // none waits: ask() would have served it
      return std::nullopt;
    }
    ask_failed(e.what(), /*transient=*/e.code() == ErrorCode::kUnavailable);
    return std::nullopt;
  } catch (const std::exception& e) {
    ask_failed(e.what(), /*transient=*/false);
    return std::nullopt;
  }
  failed_asks_in_a_row = 0;
  if (!commit.open()) commit.writes_succeeded();
  Prepared p;
  p.params = trial->params();
  p.history = trial->retry_history();
  p.attempt = static_cast<int>(p.history.size());
  p.trial = std::move(trial);
  if (options.pbt) {
    try {
      pbt_take(p);
    } catch (const Error& e) {
      log("trial " + std::to_string(p.trial->number()) +
          ": cannot record its place in the population: " + e.what());
    }
  }
  if (p.attempt > 0) {
    // A re-run (made by fail_and_retry here or by an earlier coordinator, or by the study's
    // stale-trial policy): not a new trial of the budget.
    ++stats.retries_started;
    if (pending_retries > 0) --pending_retries;
  } else if (p.segment && p.segment->segment > 0) {
    if (pending_segments > 0) --pending_segments;  // a member's next segment
  } else {
    ++stats.trials_started;
  }
  p.asked_in_batch = commit.open();
  return p;
}

// An ask() that failed (not for an exhausted sampler): asked again a heartbeat interval later,
// unless it failed kMaxFailedAsksInARow times in a row: then the study stops (drains) with
// that error, instead of storing a FAIL trial every interval for ever. A transient failure (a
// busy database: kUnavailable) is retried without counting.
void StudyRun::ask_failed(const std::string& what, bool transient) {
  if (!transient) ++failed_asks_in_a_row;
  if (failed_asks_in_a_row >= kMaxFailedAsksInARow) {
    failure =
        "sampling failed " + std::to_string(failed_asks_in_a_row) + " times in a row: " + what;
    log("study '" + study.name() + "': " + *failure +
        "; no new trials are started (the running ones finish)");
    drain();
    return;
  }
  log("study '" + study.name() + "': ask() failed (" +
      (transient ? std::string("transient")
                 : std::to_string(failed_asks_in_a_row) + " of " +
                       std::to_string(kMaxFailedAsksInARow) + " in a row stop the study") +
      "; retrying in one heartbeat interval): " + what);
  ask_blocked_until = context.clock->steady_now() + context.heartbeat_interval;
}

void StudyRun::requeue(Prepared work) {
  work.asked_in_batch = false;
  prepared.push_front(std::move(work));
}

void StudyRun::undo_lease(Prepared work) {
  if (!work.asked_in_batch) {  // asked in an earlier round: stored, and still to run
    prepared.push_front(std::move(work));
    return;
  }
  // Not stored: the trial does not exist. A re-run's WAITING trial waits again.
  if (options.pbt) pbt_check = true;  // the population as stored, counted again
  if (work.attempt > 0) {
    --stats.retries_started;
    ++pending_retries;
  } else if (work.segment && work.segment->segment > 0) {
    // A member's next segment: waits again (pbt_refresh counts it).
  } else {
    --stats.trials_started;
  }
}

// --- Outcomes -----------------------------------------------------------------------------------

bool StudyRun::report(Trial& trial, const ReportMessage& report, const std::string& lease) {
  ++stats.reports;
  try {
    trial.log_metrics(report.step, report.metrics);
    if (options.objective_metrics.size() > 1) {
      // Several objectives: the first as the intermediate value, and all of them judged by the
      // schedulers made for several (the others are refused at Study::create).
      std::vector<double> values;
      bool any = false;
      for (const std::string& name : options.objective_metrics) {
        auto metric = report.metrics.find(name);
        any = any || metric != report.metrics.end();
        values.push_back(metric != report.metrics.end() ? metric->second
                                                        : std::numeric_limits<double>::quiet_NaN());
      }
      if (!any) return false;
      trial.report(report.step, values);
      return trial.should_stop();
    }
    auto metric = report.metrics.find(needs.objective_metric);
    if (metric == report.metrics.end()) return false;
    if (!std::isnan(metric->second)) trial.report(report.step, metric->second);
    return trial.should_stop();
  } catch (const Error& e) {
    log(lease + ": cannot store the report of step " + std::to_string(report.step) + ": " +
        e.what());
    return false;
  }
}

namespace {

// What the trial's run left in its folder, as Optuna's artifact records
// (executor/artifact_files.h); none for a job without a folder per trial.
Attributes artifact_records(const StudyJobNeeds& needs, const Trial& trial) {
  Attributes records;
  if (needs.job) {
    for (auto& [key, json] : trial_artifact_attrs(*needs.job, trial.number())) {
      records.emplace(key, std::move(json));
    }
  }
  return records;
}

}  // namespace

FrozenTrial StudyRun::tell_result(Trial& trial, const ResultMessage& result,
                                  std::optional<int64_t> paused_at) {
  // The files its run left, recorded while the trial takes attributes (before it is told);
  // one that cannot be recorded costs the record, not the outcome.
  try {
    for (const auto& [key, json] : artifact_records(needs, trial)) {
      study.storage().set_trial_system_attr(trial.id(), key, json);
    }
  } catch (const Error& e) {
    log("trial " + std::to_string(trial.number()) + ": cannot record its artifacts: " + e.what());
  }
  if (result.gpu_memory_peak_bytes) {
    try {
      study.storage().set_trial_system_attr(trial.id(), kGpuMemoryPeakAttr,
                                            std::to_string(*result.gpu_memory_peak_bytes));
    } catch (const Error& e) {
      log("trial " + std::to_string(trial.number()) +
          ": cannot record its peak GPU memory: " + e.what());
    }
    check_gpu_memory(trial, *result.gpu_memory_peak_bytes);
  }
  // Every final metric stays with the trial as a user attribute (as a W&B run keeps its
  // summary): test accuracy, the best epoch, whatever the job printed. Stored with the outcome,
  // in one step.
  Attributes metrics;
  for (const auto& [name, value] : result.metrics) {
    const bool integer = std::find(result.integer_metrics.begin(), result.integer_metrics.end(),
                                   name) != result.integer_metrics.end();
    metrics[name] = metric_json(value, integer);
  }
  const std::string unfit = set_constraints(trial, result.metrics);
  if (trial.stop_requested()) return study.tell(trial, TrialState::kPruned, "", metrics);
  if (!unfit.empty()) return study.tell(trial, TrialState::kFail, unfit, metrics);
  if (!paused_at && options.pbt) paused_at = result.paused_at_step;
  if (paused_at) {
    // A PBT segment's value is its value at its end, whatever the job did after. Reports sent
    // while no coordinator was there are lost: the RESULT's (its last report's) then stands for
    // the step it was paused at.
    const FrozenTrial record = study.storage().get_trial(trial.id());
    auto after = record.intermediate_values.upper_bound(*paused_at);
    if (after == record.intermediate_values.begin() || std::prev(after)->first < *paused_at) {
      auto metric = result.metrics.find(needs.objective_metric);
      if (metric != result.metrics.end() && std::isfinite(metric->second)) {
        trial.report(*paused_at, metric->second);
        return study.tell(trial, {metric->second}, metrics);
      }
    }
    if (after != record.intermediate_values.begin()) {
      return study.tell(trial, {std::prev(after)->second}, metrics);
    }
  }
  if (options.objective_metrics.size() > 1) {
    std::vector<double> values;
    for (const std::string& name : options.objective_metrics) {
      auto metric = result.metrics.find(name);
      if (metric == result.metrics.end()) return tell_missing(trial, name, result, metrics);
      if (std::isnan(metric->second)) {
        return study.tell(trial, TrialState::kFail,
                          "RESULT has NaN for the objective metric '" + name + "'", metrics);
      }
      values.push_back(metric->second);
    }
    return study.tell(trial, values, metrics);
  }
  auto metric = result.metrics.find(needs.objective_metric);
  if (metric != result.metrics.end()) return study.tell(trial, {metric->second}, metrics);
  // An executor that sends the objective's value without the metric.
  if (!result.values.empty()) return study.tell(trial, result.values, metrics);
  return tell_missing(trial, needs.objective_metric, result, metrics);
}

FrozenTrial StudyRun::tell_missing(Trial& trial, const std::string& metric,
                                   const ResultMessage& result, const Attributes& metrics) {
  std::string printed;
  for (const auto& [name, value] : result.metrics) printed += (printed.empty() ? "" : ", ") + name;
  return study.tell(trial, TrialState::kFail,
                    "the job ended well without its objective metric '" + metric +
                        "' (it printed: " + (printed.empty() ? "no metrics" : printed) + ")",
                    metrics, {{kMissingMetricAttr, json_string(metric)}});
}

std::string StudyRun::set_constraints(Trial& trial, const Metrics& metrics) const {
  if (options.constraints.empty()) return "";
  std::vector<double> values;
  for (const MetricConstraint& c : options.constraints) {
    auto metric = metrics.find(c.metric);
    if (metric == metrics.end()) {
      return "RESULT has no value for the constraint metric '" + c.metric + "' (" + to_string(c) +
             ")";
    }
    if (!std::isfinite(metric->second)) {
      return "the constraint metric '" + c.metric + "' (" + to_string(c) + ") is " +
             to_string(ParamValue(metric->second)) + "; a constraint needs a finite value";
    }
    values.push_back(constraint_value(c, metric->second));
  }
  trial.set_constraints(std::move(values));
  return "";
}

FrozenTrial StudyRun::tell_fail(Trial& trial, const FailMessage& fail, const std::string& reason) {
  Attributes left = artifact_records(needs, trial);  // what the run left, stored with the FAIL
  if (fail.exit_code) left["exit_code"] = std::to_string(*fail.exit_code);
  if (!fail.log_tail.empty()) left["log_tail"] = json_string(fail.log_tail);
  if (fail.gpu_memory_peak_bytes) {
    left[kGpuMemoryPeakAttr] = std::to_string(*fail.gpu_memory_peak_bytes);
    check_gpu_memory(trial, *fail.gpu_memory_peak_bytes);
  }
  return study.tell(trial, TrialState::kFail, reason, {}, left);
}

void StudyRun::check_gpu_memory(const Trial& trial, uint64_t peak_bytes) const {
  if (needs.gpu_memory_bytes == 0 || peak_bytes <= needs.gpu_memory_bytes) return;
  const std::string line = "trial " + std::to_string(trial.number()) +
                           ": its processes held up to " + byte_size_text(peak_bytes) +
                           " of GPU memory, more than the job's gpu_memory_per_trial (" +
                           byte_size_text(needs.gpu_memory_bytes) +
                           "): trials placed together by it may run out of GPU memory; raise it";
  context.warn ? context.warn(line) : log(line);
}

void StudyRun::count(const FrozenTrial& finished_trial) {
  if (options.pbt) pbt_check = true;  // a segment ended: its member may be due
  switch (finished_trial.state) {
    case TrialState::kComplete:
      ++stats.completed;
      break;
    case TrialState::kPruned:
      ++stats.pruned;
      break;
    default:
      ++stats.failed;
      break;
  }
}

void StudyRun::finished(const FrozenTrial& trial) const {
  if (options.on_trial_finished) options.on_trial_finished(trial);
}

bool StudyRun::fail_and_rerun(Prepared& work, const std::string& reason) {
  Trial& trial = *work.trial;
  if (options.pbt) pbt_check = true;
  Study::Rerun rerun;
  try {
    rerun =
        study.fail_and_retry(trial, reason, options.max_retries + preempted_attempts(study, trial));
  } catch (const Error& e) {
    // Finished elsewhere (kFailedPrecondition) or the storage refuses: in the second case the
    // trial stays RUNNING and the study's stale-trial policy takes it when it is loaded again.
    log("trial " + std::to_string(trial.number()) + ": cannot record the expiry: " + e.what());
    return false;
  }
  ++stats.failed;
  finished(rerun.failed);
  if (!rerun.retry) {
    log("trial " + std::to_string(trial.number()) +
        " is not run again: " + std::to_string(work.attempt + 1) + " attempt(s), max_retries " +
        std::to_string(options.max_retries));
    return false;
  }
  // Draining, it waits in storage for the study's next run (tuner resume).
  ++pending_retries;
  return true;
}

void StudyRun::abandon(Trial& trial, const std::string& reason) {
  try {
    // Its re-run carries the lineage: the next run of the study (a resumed sweep) runs it
    // first, and not as a new trial of the budget.
    const Study::Rerun rerun = study.fail_and_retry(trial, "abandoned: " + reason, std::nullopt);
    ++stats.failed;
    finished(rerun.failed);
  } catch (const Error& e) {
    ++stats.not_abandoned;
    log("trial " + std::to_string(trial.number()) + ": cannot abandon it: " + e.what());
  }
}

bool StudyRun::preempt(Prepared& work, const std::string& reason) {
  Trial& trial = *work.trial;
  if (options.pbt) pbt_check = true;
  Study::Rerun rerun;
  try {
    // Counted before the FAIL, so that the re-run copies the count with the lineage.
    const int preempted = preempted_attempts(study, trial) + 1;
    study.storage().set_trial_system_attr(trial.id(), kPreemptedAttemptsAttr,
                                          std::to_string(preempted));
    rerun = study.fail_and_retry(trial, reason, std::nullopt);
  } catch (const Error& e) {
    log("trial " + std::to_string(trial.number()) + ": cannot record its preemption: " + e.what());
    return false;
  }
  ++stats.failed;
  finished(rerun.failed);
  if (!rerun.retry) return false;  // not expected: no limit was given
  ++pending_retries;
  return true;
}

// --- Trials of an earlier coordinator -----------------------------------------------------------

// The study's RUNNING trials, which nobody here holds: an earlier coordinator leased them.
// And its WAITING re-runs (an earlier coordinator's lost trials), to run before new samples.
void StudyRun::find_orphans() {
  const Clock::SteadyTime deadline = context.clock->steady_now() + 2 * context.lease_timeout;
  for (const FrozenTrial& t :
       study.trials({.states = std::vector{TrialState::kRunning, TrialState::kWaiting}})) {
    if (t.state == TrialState::kWaiting) {
      if (t.system_attrs.contains(kFailedTrialAttr)) ++pending_retries;
      continue;
    }
    orphans[t.trial_id] = Orphan{.number = t.number, .deadline = deadline};
  }
  if (!orphans.empty()) {
    log("study '" + study.name() + "': " + std::to_string(orphans.size()) +
        " trial(s) were running under an earlier coordinator; waiting " +
        std::to_string(to_ms(2 * context.lease_timeout)) +
        " ms for their executors to take them back");
  }
}

// A live handle for an orphan, with its attempt and retry history from its system attributes.
Prepared StudyRun::adopt(int64_t trial_id) {
  Prepared work;
  work.trial.emplace(study.adopt(trial_id));
  work.params = work.trial->params();
  work.history = work.trial->retry_history();
  work.attempt = static_cast<int>(work.history.size());
  if (options.pbt) work.segment = pbt_lineage(study.storage().get_trial(trial_id));
  return work;
}

std::optional<Prepared> StudyRun::take_back(int64_t trial_id) {
  auto orphan = orphans.find(trial_id);
  if (orphan == orphans.end()) return std::nullopt;
  const int number = orphan->second.number;
  orphans.erase(orphan);
  try {
    Prepared work = adopt(trial_id);
    ++stats.reattached;
    return work;
  } catch (const Error& e) {
    log("trial " + std::to_string(number) + ": cannot take it back: " + e.what());
    return std::nullopt;
  }
}

void StudyRun::expire_orphans(Clock::SteadyTime now) {
  for (auto it = orphans.begin(); it != orphans.end();) {
    if (now < it->second.deadline) {
      ++it;
      continue;
    }
    const auto [trial_id, orphan] = *it;
    it = orphans.erase(it);
    const std::string reason = "trial " + std::to_string(orphan.number) +
                               " was running under an earlier coordinator, and no executor "
                               "took it back within " +
                               std::to_string(to_ms(2 * context.lease_timeout)) + " ms";
    log(reason);
    ++stats.leases_expired;
    try {
      Prepared work = adopt(trial_id);
      fail_and_rerun(work, reason);
    } catch (const Error& e) {
      log("trial " + std::to_string(orphan.number) + ": " + e.what());
    }
  }
}

std::optional<Clock::SteadyTime> StudyRun::next_orphan_deadline() const {
  std::optional<Clock::SteadyTime> next;
  for (const auto& [trial_id, orphan] : orphans) {
    if (!next || orphan.deadline < *next) next = orphan.deadline;
  }
  return next;
}

// --- Population-based training ------------------------------------------------------------------

namespace {

// The first trial of `trial`'s lineage of re-runs, which names its checkpoint.
int lineage_first(const FrozenTrial& trial) {
  auto it = trial.system_attrs.find(kFailedTrialAttr);
  if (it == trial.system_attrs.end()) return trial.number;
  const nlohmann::json first = nlohmann::json::parse(it->second, nullptr, false);
  return first.is_number_integer() ? first.get<int>() : trial.number;
}

}  // namespace

bool StudyRun::pauses(const Prepared& work, int64_t step) const {
  return options.pbt && work.segment && step >= options.pbt->segment_end(work.segment->segment);
}

bool StudyRun::before_segment(const Prepared& work, int64_t step) const {
  return options.pbt && work.segment && work.segment->segment > 0 &&
         step <= options.pbt->segment_end(work.segment->segment - 1);
}

bool StudyRun::pbt_refresh(bool in_batch) {
  try {
    const std::vector<FrozenTrial> trials = study.trials();
    const History history{trials, study.directions()};
    int waiting = 0;
    for (const FrozenTrial& t : trials) {
      if (t.state == TrialState::kWaiting && !t.system_attrs.contains(kFailedTrialAttr) &&
          pbt_lineage(t)) {
        ++waiting;
      }
    }
    const std::vector<PbtNextSegment> next = options.pbt->next_segments(history);
    auto make = [&] {
      for (const PbtNextSegment& s : next) {
        // One write: the params it runs with (as Study::enqueue_trial stores them) and its
        // lineage come with the WAITING trial.
        FrozenTrial from;
        from.system_attrs = pbt_attrs(s.lineage);
        from.system_attrs[kFixedParamsAttr] = params_to_json(s.params);
        const FrozenTrial made =
            study.storage().create_trial(study.id(), TrialState::kWaiting, &from);
        log("study '" + study.name() + "': member " + std::to_string(s.lineage.member) +
            ", segment " + std::to_string(s.lineage.segment) + " is trial " +
            std::to_string(made.number) + ": " +
            (s.exploited ? "exploits trial " : "continues from trial ") +
            std::to_string(*s.lineage.parent) + " with " + params_to_json(s.params));
      }
    };
    in_batch ? make() : study.run_batch(make);
    pbt_members = PbtScheduler::members(history);
    pending_segments = waiting + static_cast<int>(next.size());
    pbt_check = false;
    return true;
  } catch (const Error& e) {
    log("study '" + study.name() + "': cannot make the population's next segments: " + e.what());
    return false;
  }
}

void StudyRun::pbt_take(Prepared& p) {
  const FrozenTrial record = study.storage().get_trial(p.trial->id());
  std::optional<PbtLineage> lineage = pbt_lineage(record);
  if (!lineage && p.attempt == 0) {
    // A new member, sampled by the study's sampler: segment 0.
    lineage = PbtLineage{.member = pbt_members, .segment = 0};
    for (const auto& [key, json] : pbt_attrs(*lineage)) {
      study.storage().set_trial_system_attr(p.trial->id(), key, json);
    }
    ++pbt_members;
  }
  p.segment = lineage;
  if (lineage && lineage->parent) {
    const std::vector<FrozenTrial> from = study.trials({.min_number = *lineage->parent});
    if (!from.empty() && from.front().number == *lineage->parent) {
      p.start_from = lineage_first(from.front());
    }
  }
}

// --- Stopping -----------------------------------------------------------------------------------

void StudyRun::drain() {
  if (draining) return;
  draining = true;
  // A trial asked and not yet leased waits as a re-run (with its lineage: not a new trial of
  // the budget) for the study's next run; so do the re-runs waiting in storage already.
  for (Prepared& p : prepared) {
    try {
      study.fail_and_retry(*p.trial, "not started: the coordinator was drained", std::nullopt);
    } catch (const Error& e) {
      log("trial " + std::to_string(p.trial->number()) + ": cannot requeue it: " + e.what());
    }
  }
  prepared.clear();
  log("study '" + study.name() + "' draining: no new trials; " + std::to_string(leases().leased) +
      " still running");
}

}  // namespace tuner
