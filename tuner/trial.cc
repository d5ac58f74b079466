#include "tuner/trial.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "trials/error.h"
#include "tuner/trial_state_internal.h"

namespace tuner {

Trial::Trial(std::unique_ptr<State> state) : state_(std::move(state)) {}
Trial::Trial(Trial&&) noexcept = default;
Trial& Trial::operator=(Trial&& other) noexcept {
  if (this != &other) {
    release();
    state_ = std::move(other.state_);
  }
  return *this;
}
Trial::~Trial() { release(); }

void Trial::release() noexcept {
  // A trial dropped without tell(): no more heartbeats, so it goes stale and the study's policy
  // handles it after the grace period.
  if (!state_ || state_->told) return;
  StudyCore& core = *state_->core;
  if (core.heartbeater) core.heartbeater->remove(state_->trial_id);
  std::lock_guard lock(core.mutex);
  core.proposals.erase(state_->number);
  core.live.erase(state_->trial_id);
  core.may_hold_foreign = true;  // its trial is RUNNING with nobody here running it
}

int Trial::number() const { return state_->number; }
int64_t Trial::id() const { return state_->trial_id; }
const Params& Trial::params() const { return state_->params; }
const std::vector<int>& Trial::retry_history() const { return state_->retry_history; }
bool Trial::stop_requested() const { return state_->stop_requested; }

double Trial::suggest_float(const std::string& name, double low, double high,
                            FloatOptions options) {
  return std::get<double>(suggest(name, FloatDistribution{low, high, options.log, options.step}));
}

int64_t Trial::suggest_int(const std::string& name, int64_t low, int64_t high, IntOptions options) {
  return std::get<int64_t>(suggest(name, IntDistribution{low, high, options.log, options.step}));
}

ParamValue Trial::suggest_categorical(const std::string& name, std::vector<ParamValue> choices) {
  return suggest(name, CategoricalDistribution{std::move(choices)});
}

ParamValue Trial::suggest(const std::string& name, const Distribution& distribution) {
  State& s = *state_;
  std::string where = "trial " + std::to_string(s.number) + " param '" + name + "'";
  if (s.told) {
    throw Error(ErrorCode::kFailedPrecondition, where + ": the trial is already finished");
  }
  validate(distribution, where);
  if (auto it = s.distributions.find(name); it != s.distributions.end()) {
    if (it->second != distribution) {
      throw Error(ErrorCode::kInvalidArgument,
                  where + " was suggested as " + to_string(it->second) + " and now as " +
                      to_string(distribution) + "; a parameter keeps one distribution");
    }
    return s.params.at(name);
  }

  // On a failed store, the trial is left as before the call, its random source included.
  const Rng rng_before = s.rng;
  ParamValue value;
  if (auto it = s.fixed.find(name); it != s.fixed.end()) {
    if (!contains(distribution, it->second)) {
      throw Error(ErrorCode::kInvalidArgument,
                  where + ": the value decided before the trial ran, " + to_string(it->second) +
                      ", is not in " + to_string(distribution));
    }
    value = it->second;
  } else if (auto rit = s.relative.find(name);
             rit != s.relative.end() && s.relative_distributions.at(name) == distribution) {
    value = rit->second;
  } else {
    std::lock_guard lock(s.core->mutex);
    value = s.core->sampler->sample_independent(name, distribution, s.core->history_locked(),
                                                TrialContext{s.number}, s.rng);
  }
  try {
    s.core->storage->set_trial_param(s.trial_id, name, distribution, value);
  } catch (...) {
    s.rng = rng_before;
    throw;
  }
  s.params[name] = value;
  s.distributions[name] = distribution;
  return value;
}

namespace {

// Throws Error(kFailedPrecondition) once the trial is told: "trial 3: cannot WHAT after it
// finished".
void require_running(bool told, int number, const char* what) {
  if (told) {
    throw Error(ErrorCode::kFailedPrecondition,
                "trial " + std::to_string(number) + ": cannot " + what + " after it finished");
  }
}

}  // namespace

void Trial::report(int64_t step, double value) {
  State& s = *state_;
  require_running(s.told, s.number, "report");
  StudyCore& core = *s.core;
  std::lock_guard lock(core.mutex);
  core.own_write_locked([&] {
    core.storage->set_trial_intermediate_value(s.trial_id, step, value);
    return true;
  });
  // The cache holds the value too (a live trial's values are read from storage only once).
  if (FrozenTrial* cached = core.cached_locked(s.number, s.trial_id)) {
    cached->intermediate_values[step] = value;
  } else {
    core.seen_changes.reset();
  }
  if (s.max_step && step <= *s.max_step) s.memo.reset();  // perhaps a rewrite
  s.max_step = s.max_step ? std::max(*s.max_step, step) : step;
  s.last_step = step;
}

void Trial::report(int64_t step, const std::vector<double>& values) {
  State& s = *state_;
  require_running(s.told, s.number, "report");
  StudyCore& core = *s.core;
  const size_t n = core.record.directions.size();
  if (values.size() != n) {
    throw Error(ErrorCode::kInvalidArgument,
                "trial " + std::to_string(s.number) + ": report at step " + std::to_string(step) +
                    " has " + std::to_string(values.size()) + " value(s) for a study of " +
                    std::to_string(n) + " objective(s); give one per objective");
  }
  if (n == 1) {
    report(step, values.front());
    return;
  }
  StepValues metrics;
  {
    std::lock_guard lock(core.mutex);
    const std::vector<std::string>& names = core.objective_names_locked();
    for (size_t i = 0; i < n; ++i) metrics[names[i]] = values[i];
  }
  log_metrics(step, metrics);
  if (!std::isnan(values.front())) {
    report(step, values.front());
    return;
  }
  if (s.max_step && step <= *s.max_step) s.memo.reset();
  s.max_step = s.max_step ? std::max(*s.max_step, step) : step;
  s.last_step = step;
}

void Trial::log_metrics(int64_t step, const StepValues& metrics) {
  State& s = *state_;
  require_running(s.told, s.number, "log metrics");
  StudyCore& core = *s.core;
  std::lock_guard lock(core.mutex);
  // Step metrics are not part of the cached trials; its objectives' are cached apart.
  core.own_write_locked([&] {
    core.storage->set_trial_step_metrics(s.trial_id, step, metrics);
    return true;
  });
  core.note_step_metrics_locked(s.number, step, metrics);
}

bool Trial::should_stop() {
  State& s = *state_;
  if (s.stop_requested || s.timed_out) return true;
  if (s.deadline && s.core->clock->steady_now() >= *s.deadline) {
    s.timed_out = true;
    return true;
  }
  if (!s.core->scheduler || !s.last_step) return false;
  StudyCore& core = *s.core;
  std::lock_guard lock(core.mutex);
  core.refresh_locked();
  // The trial's record from the cache, which the refresh keeps up to date without reading its
  // values again; from storage only when the cache does not hold it.
  std::optional<FrozenTrial> read;
  const FrozenTrial* record = core.cached_locked(s.number, s.trial_id);
  if (record == nullptr) {
    read = core.storage->get_trial(s.trial_id);
    record = &*read;
  }
  // Schedulers judge intermediate values (and, with several objectives, the objective values
  // per step): the trials as stored (no space defaults filled in).
  History history{core.trials, core.record.directions, core.noisy};
  if (core.record.directions.size() > 1) history.objective_steps = &core.objective_steps_locked();
  Decision d = core.scheduler->on_report_memoized(*record, *s.last_step, history, s.memo);
  // In-process trials cannot be paused and resumed later; a pause means go on.
  s.stop_requested = d == Decision::kStop;
  if (s.stop_requested) s.stopped_at_step = s.last_step;
  return s.stop_requested;
}

void Trial::set_user_attr(const std::string& key, const std::string& json) {
  state_->core->storage->set_trial_user_attr(state_->trial_id, key, json);
}

void Trial::set_constraints(std::vector<double> values) {
  require_running(state_->told, state_->number, "set constraints");
  state_->constraints = std::move(values);
}

}  // namespace tuner
