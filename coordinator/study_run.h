// StudyRun: one study on the coordinator and the state of its run.
//
// It owns the study's budget and what waits to be leased: the trials asked and not yet leased
// (`prepared`), the re-runs waiting in storage (`pending_retries`), the trials an earlier
// coordinator left RUNNING (`orphans`, until an executor takes them back or they time out), the
// failed asks in a row (3 drain the study with `failure` set), draining and pausing, and the
// study's counts (`stats`). It asks the study for trials (next_work), tells outcomes, fails and
// re-runs lost trials, drains and abandons. The leases themselves are the LeaseTable's, which
// also counts each study's leased trials (leases()).
// Invariants: `prepared` holds live handles, oldest first; pending_retries counts re-runs
// WAITING in storage that ask() will serve before new samples (0 once the sampler is
// exhausted); a drained run asks nothing more.
//
// Also here: what the coordinator needs to know of a study's job (job_needs()).
//
// Thread safety: not thread-safe; the coordinator's loop thread uses it (the Study it holds is
// thread-safe and may be used elsewhere meanwhile).
#ifndef TUNER_COORDINATOR_STUDY_RUN_H_
#define TUNER_COORDINATOR_STUDY_RUN_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "coordinator/coordinator.h"
#include "coordinator/lease_table.h"
#include "coordinator/outbox.h"
#include "coordinator/work.h"
#include "trials/clock.h"
#include "wire/protocol.h"

namespace tuner {

class GroupCommit;
class TrialJob;

// What the coordinator needs to know of a study's job, as the job says it (executor/trial_job.h:
// the coordinator never reads a job kind's own fields).
struct StudyJobNeeds {
  // The GPUs one executor needs for a trial: gpus_per_trial, or 1 for a share of one.
  int gpus_per_executor() const { return gpu_share > 0 ? 1 : gpus_per_trial; }
  // "2 GPUs" or "0.5 of a GPU", as the job's "gpus_per_trial" states it.
  std::string gpus_text() const;

  std::string objective_metric;   // what REPORTs are judged by and RESULTs are valued by
  int gpus_per_trial = 0;         // whole GPUs on each executor of a trial (TrialJob::needs)
  int gpu_share = 0;              // or: a share of one GPU (coordinator/placement.h, gpu_share())
  uint64_t gpu_memory_bytes = 0;  // GPU memory a trial takes on each of its GPUs; 0: not stated
  int nodes_per_trial = 1;        // executors per trial (TrialJob::needs)
  std::shared_ptr<const TrialJob> job;

  // Where the lineage whose first trial is number `first_trial` checkpoints (TRIAL's
  // checkpoint_path: TrialJob::checkpoint_path); nullopt for a job without checkpoints.
  std::optional<std::string> checkpoint_path(int first_trial) const;
};

// tuner's own trial system attribute: how many attempts of the trial's lineage, up to it, were
// preempted (StudyRun::preempt), a JSON integer. A re-run inherits it with the lineage
// (Study::fail_and_retry copies the system attributes), and fail_and_rerun adds it to
// max_retries: a preempted attempt is not a retry.
inline constexpr char kPreemptedAttemptsAttr[] = "tuner:preempted_attempts";

// Reads `job_json`'s needs. Throws parse_trial_job's Error(kInvalidArgument), its message
// starting with `context`.
StudyJobNeeds job_needs(const std::string& job_json, const std::string& context);

// Adds the per-study counts of `add` to `sum` (not executors or active_leases).
void accumulate(CoordinatorStats& sum, const CoordinatorStats& add);

// What a study's run borrows from its coordinator. Every pointer outlives the run.
struct StudyRunContext {
  Clock* clock = nullptr;
  Outbox* outbox = nullptr;  // log lines
  // Lines for the user even when the log is not shown (CoordinatorServiceOptions::warn); unset:
  // the log.
  std::function<void(const std::string&)> warn;
  const LeaseTable* leases = nullptr;  // the study's lease counts
  std::chrono::milliseconds heartbeat_interval = kDefaultHeartbeatInterval;
  std::chrono::milliseconds lease_timeout = kDefaultLeaseTimeout;
};

// A trial left RUNNING by an earlier coordinator of the study: an executor may still run it and
// take it back (HELLO lists it); unclaimed at `deadline`, it fails and is re-run.
struct Orphan {
  int number = -1;
  Clock::SteadyTime deadline{};
};

struct StudyRun {
  // Checks the study and options (naming the study: Error(kInvalidArgument) for several
  // objectives, a negative max_retries or n_trials, or a bad job) and finds the trials an earlier
  // coordinator left: RUNNING ones become orphans, WAITING re-runs pending_retries.
  StudyRun(StudyRunId id, Study study, StudyRunOptions options, const StudyRunContext& context);

  // Constant after construction.
  StudyRunId id = 0;
  Study study;
  StudyRunOptions options;
  StudyJobNeeds needs;
  StudyRunContext context;

  // State below is used by the loop's thread only.
  int told_executors = 0;  // the executors (fewer than its nodes) it last logged it waits with
  // The most GPUs an executor had when it last logged that no executor has the GPUs its trials
  // need; -1 when not logged (or executors with enough joined since).
  int told_most_gpus = -1;
  // Re-runs WAITING in storage (Study::fail_and_retry made them with their lineage), which ask()
  // serves before new samples: asked for even when the budget of new trials is spent.
  int pending_retries = 0;
  std::deque<Prepared> prepared;
  std::map<int64_t, Orphan> orphans;  // by trial id
  bool exhausted = false;             // the sampler has nothing left
  bool draining = false;
  bool paused = false;
  Clock::SteadyTime ask_blocked_until{};  // after a failed ask(): wait before asking again
  int failed_asks_in_a_row = 0;
  // Why the study's run stopped early (sampling kept failing); it drains then.
  std::optional<std::string> failure;
  CoordinatorStats stats;
  // PBT (options.pbt): the members started, the next segments WAITING in storage (which ask()
  // serves), and whether the population is to be looked at again before the next ask (at the
  // start, after an outcome, after an undone batch): pbt_refresh() makes the segments due.
  int pbt_members = 0;
  int pending_segments = 0;
  bool pbt_check = true;

  LeaseCounts leases() const { return context.leases->counts(this); }
  // An earlier coordinator's trials that no executor took back yet count against
  // max_concurrency: their executors may still run them.
  bool may_lease_more() const;
  bool may_start_new() const;
  // Something to lease now or later (draining or paused studies wait).
  bool wants_slots() const;
  // CoordinatorStats::waiting of this study, now.
  int waiting() const {
    return pending_retries + pending_segments + static_cast<int>(prepared.size());
  }
  // Nothing of it is leased, asked or waiting, and its budget is spent or it drains (draining,
  // its re-runs wait in storage for the study's next run).
  bool done() const;

  // The next trial to lease: one already asked, or a new ask() (a waiting re-run first, which the
  // study serves before new samples). nullopt when its budget is spent or the study cannot give
  // one now (an ask() that failed is tried again a heartbeat interval later; see ask_failed).
  // Inside an open batch of `commit`, a failed ask's FAIL trial is reported once committed.
  std::optional<Prepared> next_work(GroupCommit& commit);
  // A trial that was to be leased waits for another executor, first in line.
  void requeue(Prepared work);
  // The batch that leased `work` was not committed: a trial asked in it does not exist (a
  // re-run's WAITING trial waits again), one asked before waits to be leased again.
  void undo_lease(Prepared work);

  // A REPORT of the trial's progress: every metric stored as the step's metrics, its objective
  // metric also as an intermediate value (a NaN is not stored; with several objectives, their
  // values by Trial::report of several), and the scheduler asked. True when
  // the trial should stop. A report that cannot be stored is logged, naming `lease`, and the trial
  // goes on.
  bool report(Trial& trial, const ReportMessage& report, const std::string& lease);
  // The outcome of a RESULT (COMPLETE, PRUNED when the scheduler stopped it, FAIL when a metric
  // it needs is missing or unfit), with every final metric as a user attribute. A PBT segment
  // told to pause at step `paused_at` is COMPLETE with its last intermediate value up to there
  // (the job may have gone on a little before it stopped). Throws as Study::tell does.
  FrozenTrial tell_result(Trial& trial, const ResultMessage& result,
                          std::optional<int64_t> paused_at = std::nullopt);
  // PBT: a report at `step` ends `work`'s segment (PbtScheduler::segment_end), so the job is
  // told to pause.
  bool pauses(const Prepared& work, int64_t step) const;
  // PBT: `step` lies before `work`'s segment (a job resumed from a checkpoint that reports its
  // earlier steps again, as the engine does): the report is not the segment's.
  bool before_segment(const Prepared& work, int64_t step) const;
  // FAIL with `reason`, keeping `fail`'s exit code and log tail as the trial's system attributes
  // "exit_code" and "log_tail". Throws as Study::tell does.
  FrozenTrial tell_fail(Trial& trial, const FailMessage& fail, const std::string& reason);
  // Counts a told outcome (completed, pruned or failed).
  void count(const FrozenTrial& finished);
  // Calls options.on_trial_finished, if any.
  void finished(const FrozenTrial& trial) const;

  // Tells a lost trial FAIL and, up to max_retries attempts, makes its re-run in the same storage
  // step (Study::fail_and_retry: a WAITING trial with the same params and the lineage in
  // "failed_trial" and "retry_history", so that the attempt count goes on across restarts of the
  // coordinator and the re-run is not a new trial of the budget). The lineage's preempted
  // attempts (kPreemptedAttemptsAttr) are not counted. True when a re-run was made.
  bool fail_and_rerun(Prepared& work, const std::string& reason);
  // FAIL "abandoned: <reason>" with a re-run whatever the lineage, for the study's next run.
  void abandon(Trial& trial, const std::string& reason);
  // A trial whose executor was stopped under it (its BYE listed the lease as preempted): FAIL
  // with `reason` and a re-run whatever the lineage, waiting to be leased at once (before new
  // samples, and not a new trial of the budget). The attempt is counted in the lineage's
  // kPreemptedAttemptsAttr, so that fail_and_rerun does not count it against max_retries. True
  // when the re-run was made (false: logged; the storage refused, or the trial was finished).
  bool preempt(Prepared& work, const std::string& reason);

  // An orphan an executor holds (HELLO lists it), as a live handle, counted as reattached:
  // nullopt when `trial_id` is none of its orphans, or when the study cannot adopt it (logged;
  // the orphan is forgotten then too).
  std::optional<Prepared> take_back(int64_t trial_id);
  // Fails (and re-runs) the orphans nobody took back by `now`.
  void expire_orphans(Clock::SteadyTime now);
  std::optional<Clock::SteadyTime> next_orphan_deadline() const;

  // Stops asking: trials asked and not yet leased wait as re-runs for the study's next run.
  void drain();

 private:
  void ask_failed(const std::string& what, bool transient);
  // PBT: counts the members and WAITING segments in storage, and makes (WAITING, with fixed
  // params and their lineage) the next segments PbtScheduler::next_segments() finds due, in one
  // storage batch (the open one when `in_batch`). False (logged) when the storage refused.
  bool pbt_refresh(bool in_batch);
  // PBT: what a trial just asked is (a new member, a next segment, a re-run), its lineage and
  // the checkpoint it starts from, in `p`; a new member's lineage is stored. Throws the
  // storage's Error.
  void pbt_take(Prepared& p);
  void find_orphans();
  Prepared adopt(int64_t trial_id);
  // Gives `trial` the constraint values of its study's metric constraints from a RESULT's
  // metrics. Returns why they cannot be had (a metric missing, NaN or infinite), and then sets
  // none.
  std::string set_constraints(Trial& trial, const Metrics& metrics) const;
  // Warns of a trial whose processes held more GPU memory than the job states.
  void check_gpu_memory(const Trial& trial, uint64_t peak_bytes) const;
  // FAIL for a RESULT without the objective metric `metric`, naming what the job printed, with
  // the metric in kMissingMetricAttr and the RESULT's `metrics` as user attributes.
  FrozenTrial tell_missing(Trial& trial, const std::string& metric, const ResultMessage& result,
                           const Attributes& metrics);
  void log(const std::string& line) const { context.outbox->log(line); }
};

}  // namespace tuner

#endif  // TUNER_COORDINATOR_STUDY_RUN_H_
