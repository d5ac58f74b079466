// Study: an optimization session, as in Optuna.
//
// A study owns nothing but handles: its trials live in a Storage, its proposals come from a
// Sampler and its early stops from a Scheduler, and none of these keeps state that storage does
// not hold, so Study::load() continues a study exactly. Two ways to run trials:
// - optimize(objective, ...): the study asks, runs the objective, and tells, on one or more
// threads;
// - ask() / tell(): the caller runs trials itself (an executor, a notebook loop).
//
// Resume: a trial is live from ask() until tell() (or until its Trial handle is destroyed); while
// it is live, the study records a heartbeat for it every `heartbeat_interval`. A RUNNING trial
// whose last heartbeat (or start) is older than `grace_period` belongs to a process that died:
// Study::load() and every ask() hand such stale trials to `stale_trial_policy` (FAIL with the
// reason in "fail_reason", or FAIL and re-run with the same params as a new WAITING trial that
// runs before new samples, as Optuna's RetryFailedTrialCallback does). docs/storage.md.
//
// Thread-safe: ask, tell and optimize may be called from several threads. Copies share the study.
#ifndef TUNER_TUNER_STUDY_H_
#define TUNER_TUNER_STUDY_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "search/samplers/sampler.h"
#include "search/schedulers/scheduler.h"
#include "search/space/search_space.h"
#include "search/space/space_change.h"
#include "storage/storage.h"
#include "trials/clock.h"
#include "trials/error.h"
#include "trials/frozen_trial.h"
#include "trials/trial_state.h"
#include "tuner/trial.h"

namespace tuner {

// What happens to a stale trial (RUNNING, but its heartbeat stopped: its process died).
enum class StaleTrialPolicy {
  kFail,   // FAIL, with the reason in the "fail_reason" system attribute
  kRetry,  // FAIL as above, and enqueue a copy with the same params (system attributes
           // "failed_trial": the first trial of the chain, "retry_history": the numbers of every
           // failed attempt, as Optuna's RetryFailedTrialCallback writes them) until
           // max_retries retries of one trial have failed; then only FAIL
};

// How many times one lost trial is run again by default: gone stale here, or its executor lost
// under a coordinator (CoordinatorOptions::max_retries).
inline constexpr int kDefaultMaxRetries = 3;

// Where a study's samplers get prior observations from: the finished trials of an earlier study
// (tuner's or Optuna's), read once when the study is created or loaded and given to its sampler
// as History::prior; never copied into the study (docs/samplers.md, "Warm start").
struct WarmStartOptions {
  // The earlier study's name. Required.
  std::string study;
  // The SQLite file holding it (tuner's or Optuna's; it must exist). Default (empty): the new
  // study's own storage.
  std::string storage_path;
  // The new study's objectives' metric names, compared with the earlier study's (its system
  // attribute "study:metric_names", where Optuna's set_metric_names() and tuner's sweeps keep
  // them) when both have them. Default: none, not compared.
  std::vector<std::string> metric_names;
  // Accept an earlier study of other directions or metric names (it must have as many
  // objectives): where a direction differs its values are negated, so that better stays better.
  // Default: false, such a study is refused.
  bool allow_other_objective = false;
  bool operator==(const WarmStartOptions&) const = default;
};

struct StudyOptions {
  // Unique within the storage. Default: "study-" followed by a random suffix.
  std::string name;
  // One per objective. Default: minimize a single objective.
  std::vector<StudyDirection> directions = {StudyDirection::kMinimize};
  // Default: for a new study an AutoSampler with its default options; a stored study keeps the
  // sampler it was created with (stored_sampler_name(); a sampler of your own must be given).
  std::shared_ptr<Sampler> sampler;
  // Default: none (trials always continue).
  std::shared_ptr<Scheduler> scheduler;
  // Default: a new InMemoryStorage.
  std::shared_ptr<Storage> storage;
  // Seeds every trial's random source (trial n uses Rng::for_trial(seed, n)), so a seed gives
  // the same trials. Default: drawn once at creation. Stored with the study; load() reuses it
  // (the stored seed wins over this one).
  std::optional<uint64_t> seed;
  // The objective is noisy: the same parameters may give another value, so a sampler may propose
  // a point a trial already has (search/history.h). Unset: a new study's objective is
  // deterministic, and a stored study keeps what it was last given. Stored with the study.
  std::optional<bool> noisy_objective;
  // Define-and-run: every ask() samples this whole space up front. Default: define-by-run.
  // A stored study continued with a space is checked against the space it was run with
  // (compare_with_stored()): an incompatible change is refused, a compatible one recorded
  // (Study::space_change()). Parameters with a default_value fill the earlier trials that lack
  // them, in what the sampler sees.
  std::optional<SearchSpace> space;
  // create(): open the study of that name when it exists instead of failing.
  bool load_if_exists = false;
  // Seed the sampler with an earlier study's finished trials. Default: none for a new study; a
  // stored study keeps the warm start it was last given (kWarmStartAttr) and reads it again.
  // Throws, at create() and load(), Error(kNotFound) naming a missing file or study (listing the
  // studies the file has), Error(kFailedPrecondition) for objectives that do not match.
  std::optional<WarmStartOptions> warm_start;

  // Time of heartbeats and of stale-trial detection. Default: the system clock. (Storages stamp
  // trial datetimes with their own clock: tests give both the same FakeClock.)
  std::shared_ptr<Clock> clock;
  // How often a live trial's heartbeat is stored. Default 60 s (Optuna's suggested value).
  // nullopt: no heartbeats and no stale-trial detection (Optuna's default; RUNNING trials of a
  // dead process then stay RUNNING).
  std::optional<std::chrono::milliseconds> heartbeat_interval = std::chrono::seconds(60);
  // A RUNNING trial without a heartbeat (or start) for longer than this is stale.
  // Default: 2 x heartbeat_interval (Optuna's default). REQUIRES: > heartbeat_interval.
  std::optional<std::chrono::milliseconds> grace_period;
  // Default: kRetry.
  StaleTrialPolicy stale_trial_policy = StaleTrialPolicy::kRetry;
  // kRetry: how many times one trial is re-run after its runs went stale. Default 3.
  int max_retries = kDefaultMaxRetries;
};

struct OptimizeOptions {
  // Stop after this many trials have been run by this call. Default: no limit (then a timeout,
  // an exhausted sampler or the objective's end must stop it).
  std::optional<int> n_trials;
  // Trials run in parallel on this many threads. Default 1.
  int n_threads = 1;
  // No new trial starts after this much wall time. Default: none.
  std::optional<std::chrono::duration<double>> timeout;
  // Each trial's wall time, on the study's clock. Past it, the trial's should_stop() answers
  // true, and a trial that ran longer is stored FAIL "timed out after 30 s
  // (OptimizeOptions::trial_timeout)" whatever its objective returns. A thread cannot be killed:
  // an objective that never asks should_stop() runs on to its end (the limit is hard only for
  // trials run by executors: a job's "timeout_s", executor/trial_job.h). Default: none.
  // REQUIRES: > 0.
  std::optional<std::chrono::duration<double>> trial_timeout;
  // Called after every finished trial, from the thread that ran it.
  std::function<void(const FrozenTrial&)> on_trial_finished;
};

// The seed stored with a study (what Study::seed() gives once it is loaded); nullopt for a
// study another program made (Optuna). Throws Error(kDataLoss) for a stored value that is not a
// seed.
std::optional<uint64_t> stored_seed(const StudyRecord& record);

// The name (Sampler::name()) of the sampler a study was created with, stored with it: what
// load() uses when StudyOptions::sampler is null. "tpe" for a study made before tuner stored it,
// or by Optuna: both made TPE their default.
std::string stored_sampler_name(const StudyRecord& record);

// Where a study keeps the space it was last continued with (its canonical JSON, as a JSON
// string), and the compatible changes of that space: a JSON list of {"trial": the first trial
// number under the new space, "change": SpaceChange::summary()}. Optuna ignores both.
inline constexpr char kStudySpaceAttr[] = "tuner:space";
// Where a study keeps its warm start (StudyOptions::warm_start): a JSON object {"study": name,
// "storage": absolute path or null (the study's own), "metric_names": [...],
// "allow_other_objective": bool, "observations": how many it read last}.
inline constexpr char kWarmStartAttr[] = "tuner:warm_start";
inline constexpr char kSpaceChangesAttr[] = "tuner:space_changes";

// How `space` differs from the space of the stored study `record`: its kStudySpaceAttr when
// present, otherwise the distributions of its trials' params (the latest of each name). A study
// without either has no stored space: everything is new, and nothing conflicts.
SpaceComparison compare_with_stored(const StudyRecord& record, Storage& storage,
                                    const SearchSpace& space);

// What ask() throws when sampling fails after its trial was stored RUNNING (the sampler or the
// space throws, a sampled value is refused): the trial is stored FAIL with the reason
// ("ask() failed: ...") in "fail_reason", and failed_trial() is that record (nullopt when even
// that write failed: the trial then goes stale). code() is the cause's (kInternal for an
// exception that is not an Error); what() is its message.
class AskError : public Error {
 public:
  AskError(ErrorCode code, const std::string& message, std::optional<FrozenTrial> failed)
      : Error(code, message), failed_(std::move(failed)) {}
  const std::optional<FrozenTrial>& failed_trial() const { return failed_; }

 private:
  std::optional<FrozenTrial> failed_;
};

using Objective = std::function<double(Trial&)>;
using MultiObjective = std::function<std::vector<double>(Trial&)>;

class Study {
 public:
  // Throws Error(kAlreadyExists) when the name is taken (unless load_if_exists), and, with
  // load_if_exists, Error(kFailedPrecondition) when the stored study has other directions.
  static Study create(StudyOptions options = {});
  // Continues a stored study: numbering goes on and the sampler and scheduler see its history.
  // `options.name` and `options.storage` name it; directions and seed come from storage. A study
  // with no stored seed (one that Optuna made) gets options.seed, or a fresh one, stored now.
  // Throws Error(kNotFound) naming the study and listing the ones that exist, and
  // Error(kFailedPrecondition) when options.space changes a parameter incompatibly (naming it,
  // its stored and its new distribution: docs/search_space.md, "Changing the space of a study").
  static Study load(StudyOptions options);

  const std::string& name() const;
  const std::vector<StudyDirection>& directions() const;
  StudyDirection direction() const;  // REQUIRES: one objective
  int64_t id() const;
  uint64_t seed() const;
  Storage& storage() const;
  // What load() (or create() with load_if_exists) found changed in the space of the stored
  // study, as SpaceChange::summary() writes it ("+ activation; hidden [16, 256] -> [16, 512]");
  // empty when nothing changed, for a new study, and without StudyOptions::space.
  const std::string& space_change() const;
  // What the warm start gave the sampler, one line ("24 observations from study 'a' in a.db;
  // left out: 2 with values outside this space; ignored: momentum (not in this space)"); empty
  // without a warm start.
  const std::string& warm_start() const;

  // Starts a trial (RUNNING in storage). Throws Error(kFailedPrecondition) when the sampler is
  // exhausted (a grid whose every point has been tried), before any trial is stored, and
  // AskError when sampling fails after the trial was stored (it is then FAIL).
  Trial ask();
  // Define-and-run with an explicit space: all active params are sampled and stored now.
  Trial ask(const SearchSpace& space);

  // A live handle for a trial that is RUNNING in storage with nobody holding it: its process died
  // (a coordinator killed while its executors ran on) and this one carries it on. Params,
  // distributions and the last reported step come from storage, and heartbeats resume.
  // Throws Error(kNotFound) for a trial of another study or none, Error(kFailedPrecondition)
  // for one that is not RUNNING.
  Trial adopt(int64_t trial_id);

  // Finishes a trial, with its constraint values (Trial::set_constraints) when it is COMPLETE or
  // PRUNED. A NaN or infinite value, or constraint value, makes it FAIL with the reason stored in
  // its "fail_reason" system attribute; a trial whose should_stop() said true becomes PRUNED.
  // Atomic: when the storage write fails (Error), the trial is as it was before the call, and
  // tell() may be called again. Throws Error(kFailedPrecondition) when the trial is finished
  // already (told before, or failed as stale by another process).
  FrozenTrial tell(Trial& trial, double value);
  // `user_attrs` are set on the trial in the same atomic step (e.g. a job's final metrics).
  FrozenTrial tell(Trial& trial, const std::vector<double>& values,
                   const Attributes& user_attrs = {});
  // PRUNED (with the last intermediate value) or FAIL (with `reason`). `system_attrs` are set in
  // the same atomic step (what a failed run left: its exit code, its log's tail).
  FrozenTrial tell(Trial& trial, TrialState state, const std::string& reason = "",
                   const Attributes& user_attrs = {}, const Attributes& system_attrs = {});

  // A trial whose run was lost (its executor vanished, its lease expired, the run was abandoned):
  // in one atomic storage step, FAIL with `reason` and, unless its lineage has had
  // `max_retries` re-runs already, a WAITING re-run with the same params, made as the stale-trial
  // policy makes one (Optuna's "failed_trial" and "retry_history" system attributes): the next
  // ask() runs it before new samples, and that trial's retry_history() names the attempts
  // before it. nullopt max_retries: re-run whatever the lineage. Throws as tell() does
  // (Error(kFailedPrecondition) when the trial is finished already).
  struct Rerun {
    FrozenTrial failed;
    std::optional<FrozenTrial> retry;  // the WAITING re-run; none past max_retries
  };
  Rerun fail_and_retry(Trial& trial, const std::string& reason, std::optional<int> max_retries);

  // Adds a WAITING trial with these params; the next ask() runs it before sampling new ones.
  void enqueue_trial(const Params& params);

  // Group commit (Storage::run_batch): what `body` asks, tells and writes on this thread is
  // stored in one commit when it returns (a coordinator's poll round: every outcome and every
  // new trial at once). When run_batch throws, nothing of the batch is stored: the trials asked
  // inside do not exist (drop their handles), the trials told inside are still RUNNING (tell
  // them again), and the study reads its history from storage afresh. `body` should not throw
  // (SqliteStorage then stores nothing of it; InMemoryStorage keeps what was done).
  void run_batch(const std::function<void()>& body);

  // Runs trials until a limit of `options` is reached. An objective that throws, or returns NaN
  // or an infinity, makes its trial FAIL and the study goes on. A trial that another process
  // finished meanwhile (failed as stale) is skipped. A storage error ends optimize() with it.
  void optimize(const Objective& objective, const OptimizeOptions& options);
  void optimize(const MultiObjective& objective, const OptimizeOptions& options);

  // The best feasible COMPLETE trial: in constrained optimization (Trial::set_constraints), the
  // best of those whose constraint values are all <= 0, as Optuna's best_trial. Throws
  // Error(kFailedPrecondition) when there is none (saying whether no trial is COMPLETE or none is
  // feasible), or when the study has several objectives (use best_trials()).
  FrozenTrial best_trial() const;
  // The Pareto front of the feasible COMPLETE trials (for one objective: every trial with the
  // best value), by number; empty when there is none. Trials with equal values are all in it or
  // all out. O(n log n) in the trials for two and three objectives (search/pareto.h).
  std::vector<FrozenTrial> best_trials() const;
  std::vector<FrozenTrial> trials(const TrialFilter& filter = {}) const;

 private:
  explicit Study(std::shared_ptr<StudyCore> core);
  Trial start_trial(const SearchSpace* space);
  // finish_trial(), with the finished record put in the study's cache.
  FrozenTrial finish(const Trial::State& s, TrialState state, const std::vector<double>& values,
                     const Attributes& system_attrs, const Attributes& user_attrs);
  void mark_told(Trial::State& s);
  std::shared_ptr<StudyCore> core_;
};

}  // namespace tuner

#endif  // TUNER_TUNER_STUDY_H_
