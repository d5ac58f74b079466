// StudyCore: what a Study and its live Trials share. Internal to tuner/.
#ifndef TUNER_TUNER_STUDY_CORE_H_
#define TUNER_TUNER_STUDY_CORE_H_

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "search/history.h"
#include "search/samplers/sampler.h"
#include "search/schedulers/scheduler.h"
#include "search/space/search_space.h"
#include "storage/storage.h"
#include "trials/clock.h"
#include "tuner/study.h"

namespace tuner {

// Records a heartbeat every `interval` for each live trial it was told about, on its own thread
// (started with the first live trial, stopped and joined when the Heartbeater is destroyed).
// A heartbeat that the storage refuses because the trial is finished drops the trial; other
// storage errors are retried at the next beat. Thread-safe.
class Heartbeater {
 public:
  Heartbeater(Storage& storage, Clock& clock, std::chrono::milliseconds interval);
  ~Heartbeater();
  Heartbeater(const Heartbeater&) = delete;
  Heartbeater& operator=(const Heartbeater&) = delete;

  void add(int64_t trial_id);
  void remove(int64_t trial_id);
  bool is_live(int64_t trial_id);

 private:
  // Beats at `next`, then every interval_ after it, until `stop`.
  void run(Clock::SteadyTime next, std::stop_token stop);

  // Constant after construction.
  Storage& storage_;
  Clock& clock_;
  const std::chrono::milliseconds interval_;

  // State below is protected by mutex_.
  std::mutex mutex_;
  std::set<int64_t> live_;
  std::jthread thread_;  // last: joined before the members above go
};

// The names of the step metrics that hold the objectives of study `record` (as sweeps and
// Trial::report of several values store them): its "study:metric_names" (Optuna's
// set_metric_names) when that lists one name per objective, else "values_0", "values_1", ...
// (Optuna's names for unnamed objectives).
std::vector<std::string> objective_metric_names(const StudyRecord& record);

struct StudyCore {
  // Constant after construction.
  std::shared_ptr<Storage> storage;
  std::shared_ptr<Sampler> sampler;
  std::shared_ptr<Scheduler> scheduler;  // may be null
  StudyRecord record;
  uint64_t seed = 0;
  bool noisy = false;  // StudyOptions::noisy_objective, as stored
  std::optional<SearchSpace> space;
  std::string space_change;  // Study::space_change()
  // The warm start's observations (History::prior) and Study::warm_start().
  std::vector<FrozenTrial> prior;
  std::string warm_start;
  std::shared_ptr<Clock> clock;
  std::optional<std::chrono::milliseconds> heartbeat_interval;  // nullopt: heartbeats off
  std::chrono::milliseconds grace_period{0};
  StaleTrialPolicy stale_trial_policy = StaleTrialPolicy::kRetry;
  int max_retries = 0;

  // State below is protected by mutex (recursive: Study::run_batch holds it while the asks and
  // tells of its batch take it, so that it is always taken before the storage's). A cache of the
  // study's trials by number: finished trials never change, so a refresh re-reads only the
  // trials from the first unfinished one on, and none when the storage's change_count() says
  // that nothing changed but what this study wrote and put in the cache itself.
  std::recursive_mutex mutex;
  std::vector<FrozenTrial> trials;
  int first_unfinished = 0;
  // storage->change_count() when `trials` was last known to match storage; nullopt: re-read.
  std::optional<uint64_t> seen_changes;
  // The relative proposals of this object's live define-by-run trials (by number), shown in
  // `trials` as if stored until the objective suggests them, so that a sampler asked meanwhile on
  // another thread sees them taken (a grid point is not handed out twice).
  struct Proposal {
    Params params;
    std::map<std::string, Distribution, std::less<>> distributions;
  };
  std::map<int, Proposal> proposals;
  // The trials with a live handle from this object (trial_id -> number). Their intermediate
  // values are stored only through their handles (Trial::report), which put each one in
  // `trials` too: a refresh keeps the cached ones instead of reading them again, so that a
  // trial's report costs the same however many steps it reported before.
  std::map<int64_t, int> live;
  // The cache may hold a RUNNING trial that no live handle of this object runs (read from
  // storage, or a handle dropped without tell): handle_stale_trials_locked() looks for them.
  // False once a look found none, until a refresh reads trials or a handle is dropped.
  bool may_hold_foreign = true;

  // Brings `trials` up to date with storage. REQUIRES: mutex held.
  void refresh_locked();
  // The cached record of trial `number` when it is trial `trial_id`; null when the cache does
  // not hold it. REQUIRES: mutex held for as long as the pointer is used.
  FrozenTrial* cached_locked(int number, int64_t trial_id) {
    if (number < 0 || number >= static_cast<int>(trials.size())) return nullptr;
    FrozenTrial& t = trials[static_cast<size_t>(number)];
    return t.trial_id == trial_id ? &t : nullptr;
  }
  // Runs `write`, one write call on storage whose effect the caller then puts in `trials`
  // itself; the cache stays known to match storage when nothing else changed it meanwhile.
  // REQUIRES: mutex held.
  template <class Write>
  auto own_write_locked(Write&& write) {
    const std::optional<uint64_t> before = storage->change_count();
    auto result = write();
    const std::optional<uint64_t> after = storage->change_count();
    const bool only_ours =
        before && after && seen_changes && *before == *seen_changes && *after == *before + 1;
    seen_changes = only_ours ? after : std::nullopt;
    return result;
  }
  // Fails (and, by policy, enqueues retries of) the study's stale trials, then refreshes.
  // No-op when heartbeats are off, or when the cache holds no RUNNING trial that this object
  // does not run (`may_hold_foreign`). REQUIRES: mutex held.
  void handle_stale_trials_locked();
  // A view of the cached trials as the samplers see them: with `space`'s defaults
  // (ParamSpec::default_value) in the trials that lack those parameters. REQUIRES: mutex held for
  // as long as the view is used, and no other view of it in use (each call updates `filled`).
  History history_locked();
  // The cached trials with the defaults filled in; used only when `space` declares defaults. Its
  // first `filled_finished` trials are finished ones, which never change: a call copies only the
  // trials after them.
  std::vector<FrozenTrial> filled;
  size_t filled_finished = 0;

  // A study of several objectives: the names of the step metrics that hold its objectives
  // (objective_metric_names(); empty until first needed, then fixed), and each trial's objective
  // values per step, read from them (History::objective_steps). A finished trial's steps never
  // change: `objective_steps_final` (trial ids) are read once.
  std::vector<std::string> objective_names;
  ObjectiveSteps objective_steps;
  std::set<int64_t> objective_steps_final;
  // `objective_steps` matches storage: read since the last change by others, this object's own
  // step metrics put in by note_step_metrics_locked(). False: the next use reads them again.
  bool objective_steps_current = false;
  // REQUIRES: mutex held.
  const std::vector<std::string>& objective_names_locked();
  // Trial `number` (live here) stored `metrics` at `step` through own_write_locked(): the
  // objectives among them go into `objective_steps`. REQUIRES: mutex held.
  void note_step_metrics_locked(int number, int64_t step, const StepValues& metrics);
  // `objective_steps` brought up to date with storage for the trials in `trials`.
  // REQUIRES: mutex held, and refresh_locked() called.
  const ObjectiveSteps& objective_steps_locked();

  // Null when heartbeats are off. Last: destroyed (its thread joined) before what it uses.
  std::unique_ptr<Heartbeater> heartbeater;
};

}  // namespace tuner

#endif  // TUNER_TUNER_STUDY_CORE_H_
