// run_sweep: what `tuner sweep FILE` does. The study lives in the sweep's SQLite file; a
// coordinator runs in this process and, unless the sweep asks for none, an executor with the
// sweep's local slots too (its jobs are child processes, so a crashing trial cannot take the
// sweep down). Executors on other hosts may connect to the same coordinator.
//
// Slurm: with "executors.slurm" the coordinator binds tcp on every interface (unless given an
// endpoint), makes CURVE keys for the run (its own too, when given none) and a SlurmLauncher
// (launch/slurm_launcher.h) submits and cancels executor jobs as the queue needs, its files in
// "<storage path>.slurm/<study>/"; every job is cancelled when the sweep ends, however it ends.
// A job Slurm refuses or that fails at once stops the sweep with Error(kFailedPrecondition).
//
// MLflow tracking: with a "tracking" section the study is logged to MLflow as it runs, on a thread
// of its own (sweep/sweep_tracking.h), and once more at the end; tracking never slows or fails
// the sweep.
//
// Stopping: `drain` (a first Ctrl-C, or the time budget) starts no new trial and lets the
// running ones finish; `abort` (a second Ctrl-C) stops them at once: each is stored as FAIL
// ("abandoned") and enqueued with its params, so a resumed sweep runs it first. The time budget
// (budget.time) ends the sweep on time: at its end the sweep drains, and the trials still running
// a grace later (5% of budget.time, at most 30 s) are stopped as by `abort` (FAIL "abandoned: the
// sweep's time budget ran out", enqueued). Each trial's own limit is budget.trial_time, which
// its executor enforces. Either way everything finished is committed, and the sweep file is kept
// with the study (system attribute "tuner:sweep") so that `tuner resume` needs only the study
// name and the storage.
//
// Thread safety: run_sweep blocks the calling thread until the sweep ends; the stop tokens may
// be requested from any thread.
#ifndef TUNER_SWEEP_SWEEP_RUNNER_H_
#define TUNER_SWEEP_SWEEP_RUNNER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "coordinator/coordinator.h"
#include "sweep/sweep_file.h"
#include "trials/frozen_trial.h"
#include "tuner/study.h"

namespace tuner {

// The study system attribute that holds the sweep file (to_json(SweepFile)) as a JSON string.
inline constexpr char kSweepAttr[] = "tuner:sweep";

// Where a sweep stands; counts are over the whole study (earlier runs of it included).
struct SweepProgress {
  int64_t complete = 0, pruned = 0, failed = 0, running = 0;
  int64_t infeasible = 0;  // COMPLETE trials that violate a constraint (counted in `complete`)
  // Finished re-runs of lost trials (Study::fail_and_retry): each takes its lost attempt's place
  // in the counts (that FAIL is not counted again), as it does in the trial budget.
  int64_t reruns = 0;
  // Lost attempts whose re-run has not ended: not counted as finished meanwhile.
  int64_t awaiting_rerun = 0;
  std::optional<int> trial_budget;  // the sweep's budget.trials
  // The best feasible COMPLETE trial (every COMPLETE one is feasible without constraints).
  std::optional<double> best_value;
  std::optional<int> best_number;
  std::chrono::seconds elapsed{0};                // since this run started
  std::optional<std::chrono::seconds> time_left;  // of the time budget
  int64_t done_before = 0;  // trials finished by earlier runs (for a time-left estimate)
  bool draining = false;
};

// Adds a COMPLETE, PRUNED or FAIL trial to the counts and best of `progress` (others are not
// counted: `running` comes from the coordinator). REQUIRES: a re-run of a lost trial is counted
// after the FAIL of its lost attempt (in number order, or as they finish).
void count_trial(SweepProgress& progress, const FrozenTrial& trial, StudyDirection direction);

struct SweepRunOptions {
  // Where the coordinator listens. Default: an ipc socket in a fresh temporary directory (only
  // the local executor can reach it).
  std::string endpoint;
  // Who may connect to the endpoint (CURVE keys; coordinator/coordinator.h). The local executor is
  // let in with the coordinator's own key pair.
  CoordinatorSecurity security;
  // How long a storage write waits for another process's lock before failing. Default: the
  // storage's own (SqliteStorageOptions::busy_timeout, 5 s).
  std::optional<std::chrono::milliseconds> busy_timeout;
  // Per-trial logs of the local executor (sweep/trial_logs.h). Default: "<storage path>.logs".
  std::string log_dir;
  std::stop_token drain;  // finish the running trials, start no more
  std::stop_token abort;  // stop the running trials now
  // About once a second, and once at the end.
  std::function<void(const SweepProgress&)> on_progress;
  // After each trial's outcome is stored.
  std::function<void(const FrozenTrial&, const SweepProgress&)> on_trial_finished;
  // Log lines of the coordinator and the local executor. Default: none.
  std::function<void(const std::string&)> log;
  // Problems that do not stop the sweep, one line each: MLflow tracking's (a server that is
  // down: one line when it stops answering, one when it answers again), and, at the start, an
  // objective direction that contradicts its metric's name (sweep/objective_direction.h).
  // Default: none.
  std::function<void(const std::string&)> warn;
  // Lines worth a word that are no problem: "space changed: + activation; hidden [16, 256] ->
  // [16, 512]" when the file changed the space of the stored study compatibly
  // (Study::space_change(); the change is kept in the study's "tuner:space_changes"). Default:
  // none.
  std::function<void(const std::string&)> notice;
};

enum class SweepEnd {
  kBudgetSpent,  // the trial budget is used up or the sampler has nothing left
  kTimeUp,       // the time budget ran out (running trials finished, or were stopped)
  kDrained,      // `drain` was requested (running trials finished)
  kAborted,      // `abort` was requested
  // Failed trials reached budget.max_failures (sweep/failure_policy.h): the running trials were
  // stopped as by `abort`; SweepResult::stop_reason says why.
  kFailures,
  // The study's writes kept failing for the storage's sake (a full disk, a read-only file;
  // Coordinator::storage_failure()), or failed when a stop was asked: the sweep stopped at once.
  // What was committed before stays; the trials that were running stay RUNNING in the file
  // unless they could be stored as stopped. SweepResult::stop_reason says why.
  kStorageFailed,
  // The study's file was deleted or replaced while the sweep ran (SqliteStorage::file_replaced,
  // looked at every turn of the loop): the running trials were stopped in the open file, which
  // was copied to SweepResult::recovered_path. Nothing is created at the study's path.
  kFileReplaced,
};

struct SweepResult {
  SweepEnd end = SweepEnd::kBudgetSpent;
  SweepProgress progress;
  // Trials still running a grace after the time budget ran out: stopped, stored FAIL and
  // enqueued, so that a resumed sweep runs them first.
  int stopped_at_time_up = 0;
  std::string study_name;
  std::string storage_path;
  // kFailures: why the failures stopped the sweep, with the last failure's reason.
  std::string stop_reason;
  // Where the local executor wrote the trials' logs (SweepRunOptions::log_dir).
  std::string log_dir;
  // Running trials that the sweep stopped (time up, failures, storage failure) but could not
  // store as stopped: they stay RUNNING in storage (a resumed sweep takes them as an earlier
  // run's, and runs them again).
  int not_stopped = 0;
  // kFileReplaced: where the open database was copied ("" when the copy failed too; then
  // stop_reason says why).
  std::string recovered_path;
};

// A sweep's study, created or loaded by name, with the sweep file stored on it (kSweepAttr).
struct OpenedSweep {
  SweepFile sweep;  // an engine job without an artifacts_dir has "<storage path>.artifacts/<study>"
  Study study;
  std::vector<FrozenTrial> existing;    // the study's trials when it was opened
  std::optional<int> remaining_trials;  // budget.trials less the trials already started
                                        // (re-runs of lost trials are not counted)
};
OpenedSweep open_sweep(const SweepFile& sweep, std::shared_ptr<Storage> storage);
// How the coordinator runs an opened sweep's study.
StudyRunOptions study_run_options(const OpenedSweep& opened);

// Runs (or continues: the study is created or loaded by name) the sweep. Throws Error for what
// prevents the start (the storage cannot be opened, the endpoint cannot be bound, a study of that
// name with another direction, no endpoint while no local executor slot or a job of "nodes" > 1
// leaves nothing able to run its trials), and Error(kAborted) when the study stopped because
// sampling failed 3 times in a row ("sweep 'NAME': sampling failed 3 times in a row: ...": a
// space the sampler cannot sample), after the running trials finished; trial failures are
// outcomes, not exceptions. An engine job without an artifacts_dir gets
// "<storage path>.artifacts/<study name>" (studies of one file have trials of the same numbers).
SweepResult run_sweep(const SweepFile& sweep, const SweepRunOptions& options = {});

// Where an engine job keeps trial `number`'s best model (docs/engine_jobs.md, "Artifacts"): by
// default "<storage path>.artifacts/<study name>/trial-<number>/model.ckpt". nullopt for command
// jobs and when the file does not exist (the trial saved none).
std::optional<std::string> trial_model_path(const SweepFile& sweep, int number);

// The sweep file stored with a study by run_sweep, parsed back (relative paths as they were
// resolved then). Throws Error(kNotFound) when the study has none (it was not made by a sweep).
SweepFile stored_sweep(const std::string& study_name, const std::string& storage_path);

}  // namespace tuner

#endif  // TUNER_SWEEP_SWEEP_RUNNER_H_
