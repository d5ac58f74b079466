#include "storage/in_memory_storage.h"

#include <algorithm>
#include <map>

#include "storage/write_checks.h"
#include "trials/error.h"

namespace tuner {

struct InMemoryStorage::State {
  struct Study {
    StudyRecord record;
    std::vector<int64_t> trial_ids;  // by number
  };
  std::map<int64_t, Study> studies;
  std::vector<FrozenTrial> trials;          // by trial_id
  std::vector<int64_t> trial_study;         // study of each trial_id
  std::map<int64_t, TimePoint> heartbeats;  // trial_id -> last heartbeat
  // trial_id -> step -> its metrics
  std::map<int64_t, std::map<int64_t, StepMetrics>> step_metrics;
  int64_t next_study_id = 1;

  Study& study(int64_t study_id) {
    auto it = studies.find(study_id);
    if (it == studies.end()) {
      throw Error(ErrorCode::kNotFound, "no study with id " + std::to_string(study_id));
    }
    return it->second;
  }
  FrozenTrial& trial(int64_t trial_id) {
    if (trial_id < 0 || trial_id >= static_cast<int64_t>(trials.size()) ||
        !studies.contains(trial_study[trial_id])) {
      throw Error(ErrorCode::kNotFound, "no trial with id " + std::to_string(trial_id));
    }
    return trials[trial_id];
  }

  FrozenTrial& add_trial(int64_t study_id, TrialState state, const FrozenTrial* from,
                         TimePoint now) {
    auto& s = study(study_id);
    FrozenTrial trial;
    if (from) {
      trial.params = from->params;
      trial.distributions = from->distributions;
      trial.user_attrs = from->user_attrs;
      trial.system_attrs = from->system_attrs;
    }
    trial.trial_id = static_cast<int64_t>(trials.size());
    trial.number = static_cast<int>(s.trial_ids.size());
    trial.state = state;
    if (state == TrialState::kRunning) trial.datetime_start = now;
    s.trial_ids.push_back(trial.trial_id);
    trials.push_back(std::move(trial));
    trial_study.push_back(study_id);
    return trials.back();
  }

  bool is_stale(const FrozenTrial& trial, TimePoint stale_before) const {
    if (trial.state != TrialState::kRunning) return false;
    auto it = heartbeats.find(trial.trial_id);
    std::optional<TimePoint> last =
        it != heartbeats.end() ? std::optional<TimePoint>(it->second) : trial.datetime_start;
    return last && *last < stale_before;
  }

  void finish(FrozenTrial& trial, TrialState state, const std::vector<double>& values,
              const Attributes& system_attrs, TimePoint now) {
    for (const auto& [key, json] : system_attrs) trial.system_attrs[key] = json;
    trial.state = state;
    trial.values = values;
    trial.datetime_complete = now;
    if (!trial.datetime_start) trial.datetime_start = trial.datetime_complete;
  }
};

InMemoryStorage::InMemoryStorage(std::shared_ptr<Clock> clock)
    : clock_(clock ? std::move(clock) : system_clock()), state_(std::make_unique<State>()) {}
InMemoryStorage::~InMemoryStorage() = default;

StudyRecord InMemoryStorage::create_study(const std::string& name,
                                          const std::vector<StudyDirection>& directions) {
  if (directions.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "study '" + name + "' needs at least one direction");
  }
  std::lock_guard lock(mutex_);
  ++changes_;
  for (const auto& [id, s] : state_->studies) {
    if (s.record.name == name) {
      throw Error(ErrorCode::kAlreadyExists, "a study named '" + name + "' already exists");
    }
  }
  StudyRecord record{state_->next_study_id++, name, directions, {}, {}};
  state_->studies[record.study_id] = {record, {}};
  return record;
}

std::optional<StudyRecord> InMemoryStorage::find_study(const std::string& name) {
  std::lock_guard lock(mutex_);
  for (const auto& [id, s] : state_->studies) {
    if (s.record.name == name) return s.record;
  }
  return std::nullopt;
}

std::vector<StudyRecord> InMemoryStorage::list_studies() {
  std::lock_guard lock(mutex_);
  std::vector<StudyRecord> out;
  for (const auto& [id, s] : state_->studies) out.push_back(s.record);
  return out;
}

void InMemoryStorage::delete_study(int64_t study_id) {
  std::lock_guard lock(mutex_);
  ++changes_;
  for (int64_t trial_id : state_->study(study_id).trial_ids) state_->step_metrics.erase(trial_id);
  state_->studies.erase(study_id);
}

void InMemoryStorage::set_study_user_attr(int64_t study_id, const std::string& key,
                                          const std::string& json) {
  std::lock_guard lock(mutex_);
  ++changes_;
  state_->study(study_id).record.user_attrs[key] = json;
}

void InMemoryStorage::set_study_system_attr(int64_t study_id, const std::string& key,
                                            const std::string& json) {
  std::lock_guard lock(mutex_);
  ++changes_;
  state_->study(study_id).record.system_attrs[key] = json;
}

FrozenTrial InMemoryStorage::create_trial(int64_t study_id, TrialState state,
                                          const FrozenTrial* from) {
  if (state != TrialState::kRunning && state != TrialState::kWaiting) {
    throw Error(ErrorCode::kInvalidArgument,
                "a new trial is RUNNING or WAITING, not " + std::string(to_string(state)));
  }
  std::lock_guard lock(mutex_);
  ++changes_;
  return state_->add_trial(study_id, state, from, clock_->system_now());
}

bool InMemoryStorage::claim_waiting_trial(int64_t trial_id) {
  std::lock_guard lock(mutex_);
  ++changes_;
  auto& trial = state_->trial(trial_id);
  if (trial.state != TrialState::kWaiting) return false;
  trial.state = TrialState::kRunning;
  trial.datetime_start = clock_->system_now();
  return true;
}

void InMemoryStorage::set_trial_param(int64_t trial_id, const std::string& name,
                                      const Distribution& distribution, const ParamValue& value) {
  std::lock_guard lock(mutex_);
  ++changes_;
  auto& trial = state_->trial(trial_id);
  check_param(trial, name, distribution, value);
  trial.params[name] = value;
  trial.distributions[name] = distribution;
}

void InMemoryStorage::set_trial_params(int64_t trial_id, const std::vector<NewParam>& params) {
  std::lock_guard lock(mutex_);
  ++changes_;
  auto& trial = state_->trial(trial_id);
  FrozenTrial changed = trial;  // all or none
  for (const NewParam& p : params) {
    check_param(changed, p.name, p.distribution, p.value);
    changed.params[p.name] = p.value;
    changed.distributions[p.name] = p.distribution;
  }
  trial = std::move(changed);
}

void InMemoryStorage::set_trial_intermediate_value(int64_t trial_id, int64_t step, double value) {
  std::lock_guard lock(mutex_);
  ++changes_;
  auto& trial = state_->trial(trial_id);
  check_intermediate_value(trial, step, value);
  trial.intermediate_values[step] = value;
}

void InMemoryStorage::set_trial_step_metrics(int64_t trial_id, int64_t step,
                                             const StepValues& metrics) {
  std::lock_guard lock(mutex_);
  ++changes_;
  check_writable(state_->trial(trial_id), "report metrics");
  if (metrics.empty()) return;
  StepMetrics& stored = state_->step_metrics[trial_id][step];
  stored.step = step;
  stored.time = clock_->system_now();
  for (const auto& [name, value] : metrics) stored.metrics[name] = value;
}

void InMemoryStorage::set_trial_user_attr(int64_t trial_id, const std::string& key,
                                          const std::string& json) {
  std::lock_guard lock(mutex_);
  ++changes_;
  auto& trial = state_->trial(trial_id);
  check_writable(trial, "set user attribute '" + key + "'");
  trial.user_attrs[key] = json;
}

void InMemoryStorage::set_trial_system_attr(int64_t trial_id, const std::string& key,
                                            const std::string& json) {
  std::lock_guard lock(mutex_);
  ++changes_;
  auto& trial = state_->trial(trial_id);
  check_writable(trial, "set system attribute '" + key + "'");
  trial.system_attrs[key] = json;
}

FrozenTrial InMemoryStorage::finish_trial(int64_t trial_id, TrialState state,
                                          const std::vector<double>& values,
                                          const Attributes& system_attrs,
                                          const Attributes& user_attrs) {
  std::lock_guard lock(mutex_);
  ++changes_;
  auto& trial = state_->trial(trial_id);
  const auto& study = state_->study(state_->trial_study[trial_id]);
  check_finish(trial, state, values, study.record.directions.size());
  for (const auto& [key, json] : user_attrs) trial.user_attrs[key] = json;
  state_->finish(trial, state, values, system_attrs, clock_->system_now());
  return trial;
}

void InMemoryStorage::record_heartbeat(int64_t trial_id, TimePoint time) {
  std::lock_guard lock(mutex_);
  ++changes_;
  auto& trial = state_->trial(trial_id);
  check_heartbeat(trial);
  state_->heartbeats[trial_id] = time;
}

std::vector<FrozenTrial> InMemoryStorage::get_stale_trials(int64_t study_id,
                                                           TimePoint stale_before) {
  std::lock_guard lock(mutex_);
  std::vector<FrozenTrial> out;
  for (int64_t id : state_->study(study_id).trial_ids) {
    if (state_->is_stale(state_->trials[id], stale_before)) out.push_back(state_->trials[id]);
  }
  return out;
}

std::optional<Storage::StaleTrialOutcome> InMemoryStorage::fail_stale_trial(
    int64_t trial_id, TimePoint stale_before, const Attributes& fail_attrs,
    const FrozenTrial* retry) {
  std::lock_guard lock(mutex_);
  ++changes_;
  if (!state_->is_stale(state_->trial(trial_id), stale_before)) return std::nullopt;
  const TimePoint now = clock_->system_now();
  state_->finish(state_->trial(trial_id), TrialState::kFail, {}, fail_attrs, now);
  StaleTrialOutcome outcome;
  if (retry) {
    outcome.retry =
        state_->add_trial(state_->trial_study[trial_id], TrialState::kWaiting, retry, now);
  }
  outcome.failed = state_->trials[trial_id];  // after add_trial: it may move the vector
  return outcome;
}

FrozenTrial InMemoryStorage::get_trial(int64_t trial_id) {
  std::lock_guard lock(mutex_);
  return state_->trial(trial_id);
}

std::optional<FrozenTrial> InMemoryStorage::get_best_trial(int64_t study_id) {
  std::lock_guard lock(mutex_);
  const auto& study = state_->study(study_id);
  const StudyDirection direction = study.record.directions.front();
  const FrozenTrial* best = nullptr;
  for (int64_t id : study.trial_ids) {
    const FrozenTrial& t = state_->trials[id];
    if (t.state != TrialState::kComplete || t.values.empty()) continue;
    if (!best || is_better(direction, t.values[0], best->values[0])) best = &t;
  }
  if (!best) return std::nullopt;
  return *best;
}

std::vector<FrozenTrial> InMemoryStorage::get_trials(int64_t study_id, const TrialFilter& filter) {
  std::lock_guard lock(mutex_);
  const auto& study = state_->study(study_id);
  std::vector<FrozenTrial> out;
  for (size_t n = static_cast<size_t>(std::max(filter.min_number, 0)); n < study.trial_ids.size();
       ++n) {
    const FrozenTrial& trial = state_->trials[study.trial_ids[n]];
    if (filter.states && std::find(filter.states->begin(), filter.states->end(), trial.state) ==
                             filter.states->end()) {
      continue;
    }
    if (std::find(filter.without_intermediate_values.begin(),
                  filter.without_intermediate_values.end(),
                  trial.trial_id) != filter.without_intermediate_values.end()) {
      // Copied without its values (moved aside for the copy and back: no copy of them at all).
      FrozenTrial& stored = state_->trials[study.trial_ids[n]];
      std::map<int64_t, double> values = std::move(stored.intermediate_values);
      stored.intermediate_values.clear();
      out.push_back(stored);
      stored.intermediate_values = std::move(values);
      continue;
    }
    out.push_back(trial);
  }
  return out;
}

std::map<int64_t, std::vector<StepMetrics>> InMemoryStorage::get_step_metrics(
    int64_t study_id, const std::vector<int64_t>& trial_ids) {
  std::lock_guard lock(mutex_);
  const auto& study = state_->study(study_id);
  std::map<int64_t, std::vector<StepMetrics>> out;
  for (int64_t trial_id : study.trial_ids) {
    if (!trial_ids.empty() &&
        std::find(trial_ids.begin(), trial_ids.end(), trial_id) == trial_ids.end()) {
      continue;
    }
    auto it = state_->step_metrics.find(trial_id);
    if (it == state_->step_metrics.end()) continue;
    std::vector<StepMetrics>& steps = out[trial_id];
    for (const auto& [step, metrics] : it->second) steps.push_back(metrics);
  }
  return out;
}

std::optional<uint64_t> InMemoryStorage::change_count() {
  std::lock_guard lock(mutex_);
  return changes_;
}

void InMemoryStorage::run_batch(const std::function<void()>& body) {
  std::lock_guard lock(mutex_);
  body();
}

}  // namespace tuner
