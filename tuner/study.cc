#include "tuner/study.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <sstream>
#include <thread>

#include "search/pareto.h"
#include "search/registry.h"
#include "search/samplers/auto_sampler.h"
#include "search/space/search_space_json.h"
#include "storage/in_memory_storage.h"
#include "trials/constraints.h"
#include "trials/error.h"
#include "trials/json_depth.h"
#include "trials/params_json.h"
#include "trials/system_attrs.h"
#include "trials/trial_origin.h"
#include "tuner/study_core.h"
#include "tuner/trial_state_internal.h"
#include "tuner/warm_start.h"
#include "util/json_string.h"

namespace tuner {

namespace {

constexpr char kSeedAttr[] = "tuner:seed";
// The study's objective is noisy (StudyOptions::noisy_objective): JSON true, or false.
constexpr char kNoisyObjectiveAttr[] = "tuner:noisy_objective";

// Stores `noisy` as the study's kNoisyObjectiveAttr.
void store_noisy(Storage& storage, StudyRecord& record, bool noisy) {
  const std::string json = noisy ? "true" : "false";
  storage.set_study_system_attr(record.study_id, kNoisyObjectiveAttr, json);
  record.system_attrs[kNoisyObjectiveAttr] = json;
}

// Optuna's study.set_metric_names() keeps the objectives' names here (a JSON list of strings).
constexpr char kMetricNamesAttr[] = "study:metric_names";

constexpr char kStudySamplerAttr[] = "tuner:sampler";  // the name of the sampler it was made with

// The sampler named `name` with its default options, for a study loaded without one.
std::shared_ptr<Sampler> sampler_named(const std::string& name, const StudyRecord& record,
                                       const std::optional<SearchSpace>& space) {
  const std::optional<SamplerType> type = sampler_type_named(name);
  if (!type || (*type == SamplerType::kGrid && !space)) {
    throw Error(ErrorCode::kFailedPrecondition, "study '" + record.name +
                                                    "' was created with the sampler \"" + name +
                                                    "\", which cannot be made again from its name" +
                                                    (type ? " without the study's space" : "") +
                                                    ": give StudyOptions::sampler to continue it");
  }
  return make_sampler(SamplerSpec{.type = *type}, space ? &*space : nullptr);
}

uint64_t fresh_random() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

std::string directions_text(const std::vector<StudyDirection>& directions) {
  std::string text;
  for (StudyDirection d : directions)
    text += (text.empty() ? "" : ", ") + std::string(to_string(d));
  return directions.size() == 1 ? text : "[" + text + "]";
}

// The enqueued values of a trial. Stored data that does not parse is data loss, not bad input.
Params fixed_params_of(const std::string& text, int trial_number) {
  try {
    return params_from_json(
        text, "trial " + std::to_string(trial_number) + ": system attribute " + kFixedParamsAttr);
  } catch (const Error& e) {
    throw Error(ErrorCode::kDataLoss, e.what());
  }
}

std::string format_ms(std::chrono::milliseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", static_cast<double>(d.count()) / 1000.0);
  return buf;
}

std::shared_ptr<StudyCore> make_core(StudyOptions& options, StudyRecord record, uint64_t seed) {
  if (options.heartbeat_interval) {
    const auto interval = *options.heartbeat_interval;
    const auto grace = options.grace_period.value_or(2 * interval);
    if (interval.count() <= 0 || grace <= interval) {
      throw Error(ErrorCode::kInvalidArgument,
                  "study '" + record.name + "': heartbeat_interval (" + format_ms(interval) +
                      ") must be > 0 and grace_period (" + format_ms(grace) +
                      ") longer than it, or a live trial would look stale");
    }
  }
  if (options.max_retries < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "study '" + record.name + "': max_retries must be >= 0");
  }
  if (options.scheduler && record.directions.size() > 1 &&
      !options.scheduler->judges_objectives(record.directions.size())) {
    // Most schedulers compare trials by one intermediate value; several objectives need one that
    // judges them all. docs/schedulers.md, "Several objectives".
    throw Error(ErrorCode::kInvalidArgument,
                "study '" + record.name + "' has " + std::to_string(record.directions.size()) +
                    " objectives, and a scheduler judges trials by one: give MoAshaScheduler, "
                    "a ScalarizedStopping (the median or percentile rule over weighted "
                    "objectives, one weight per objective), or no scheduler; or keep one "
                    "objective and state the others as constraints");
  }
  if (options.scheduler && record.directions.size() == 1 &&
      !options.scheduler->judges_objectives(1)) {
    throw Error(ErrorCode::kInvalidArgument,
                "study '" + record.name +
                    "' has one objective, and its scheduler judges several (a "
                    "ScalarizedStopping): give its rule (MedianStopping, PercentileStopping) "
                    "alone");
  }
  auto core = std::make_shared<StudyCore>();
  auto noisy = record.system_attrs.find(kNoisyObjectiveAttr);
  core->noisy = noisy != record.system_attrs.end() && noisy->second == "true";
  core->storage = options.storage;
  core->sampler = options.sampler;
  core->scheduler = options.scheduler;
  core->record = std::move(record);
  core->seed = seed;
  core->space = std::move(options.space);
  core->clock = options.clock ? options.clock : system_clock();
  core->heartbeat_interval = options.heartbeat_interval;
  if (options.heartbeat_interval) {
    core->grace_period = options.grace_period.value_or(2 * *options.heartbeat_interval);
    core->heartbeater =
        std::make_unique<Heartbeater>(*core->storage, *core->clock, *options.heartbeat_interval);
  }
  core->stale_trial_policy = options.stale_trial_policy;
  core->max_retries = options.max_retries;
  return core;
}

// The numbers of the earlier attempts of re-run `t` (its "retry_history"); empty for a first run
// or a history not written as Optuna writes it.
std::vector<int> retry_history_of(const FrozenTrial& t) {
  auto it = t.system_attrs.find(kRetryHistoryAttr);
  if (it == t.system_attrs.end() || json_nests_deeper_than(it->second, kMaxJsonDepth)) return {};
  const nlohmann::json history = nlohmann::json::parse(it->second, nullptr, false);
  std::vector<int> numbers;
  if (!history.is_array()) return numbers;
  for (const nlohmann::json& n : history) {
    if (!n.is_number_integer()) return {};
    numbers.push_back(n.get<int>());
  }
  return numbers;
}

// The WAITING copy of stale trial `t` that re-runs it, or nullopt when its chain has had
// `max_retries` retries. As Optuna's RetryFailedTrialCallback: the same params, distributions
// and user attributes; system attributes "failed_trial" (the chain's first trial) and
// "retry_history" (every failed attempt's number); and, so that this project's ask() serves the
// values, "fixed_params" (the params, with any still unused enqueued values).
std::optional<FrozenTrial> retry_of(const FrozenTrial& t, int max_retries) {
  std::vector<int> history = retry_history_of(t);
  history.push_back(t.number);
  if (static_cast<int>(history.size()) > max_retries) return std::nullopt;
  FrozenTrial retry;
  retry.params = t.params;
  retry.distributions = t.distributions;
  retry.user_attrs = t.user_attrs;
  retry.system_attrs = t.system_attrs;
  retry.system_attrs.erase(kFailReasonAttr);
  retry.system_attrs.erase(kSamplerAttr);
  if (!retry.system_attrs.contains(kFailedTrialAttr)) {
    retry.system_attrs[kFailedTrialAttr] = std::to_string(t.number);
  }
  retry.system_attrs[kRetryHistoryAttr] = nlohmann::json(history).dump();
  Params fixed;
  if (auto it = t.system_attrs.find(kFixedParamsAttr); it != t.system_attrs.end()) {
    fixed = fixed_params_of(it->second, t.number);
  }
  for (const auto& [name, value] : t.params) fixed[name] = value;
  retry.system_attrs[kFixedParamsAttr] = params_to_json(fixed);
  return retry;
}

// Puts a trial's constraint values (Trial::set_constraints) into `attrs`; false when one is NaN
// or infinite (constraint_failure() says which).
bool constraints_attrs(const std::optional<std::vector<double>>& constraints, Attributes& attrs) {
  if (!constraints) return true;
  for (double v : *constraints) {
    if (!std::isfinite(v)) return false;
  }
  attrs[kConstraintsAttr] = constraints_to_json(*constraints);
  return true;
}

std::string constraint_failure(const std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return "constraint " + std::to_string(i) + " of " + std::to_string(values.size()) + " is " +
             to_string(ParamValue(values[i])) +
             " (Trial::set_constraints); a constraint value must be a finite number";
    }
  }
  return "the constraint values are not finite";
}

}  // namespace

Heartbeater::Heartbeater(Storage& storage, Clock& clock, std::chrono::milliseconds interval)
    : storage_(storage), clock_(clock), interval_(interval) {}

Heartbeater::~Heartbeater() {
  std::jthread thread;
  {
    std::lock_guard lock(mutex_);
    thread = std::move(thread_);
  }
  // `thread` stops and joins here, outside the lock that run() takes.
}

void Heartbeater::add(int64_t trial_id) {
  std::lock_guard lock(mutex_);
  live_.insert(trial_id);
  if (!thread_.joinable()) {
    const auto first = clock_.steady_now() + interval_;
    thread_ = std::jthread([this, first](std::stop_token stop) { run(first, stop); });
  }
}

void Heartbeater::remove(int64_t trial_id) {
  std::lock_guard lock(mutex_);
  live_.erase(trial_id);
}

bool Heartbeater::is_live(int64_t trial_id) {
  std::lock_guard lock(mutex_);
  return live_.contains(trial_id);
}

void Heartbeater::run(Clock::SteadyTime next, std::stop_token stop) {
  while (clock_.sleep_until(next, stop)) {
    next += interval_;
    std::vector<int64_t> ids;
    {
      std::lock_guard lock(mutex_);
      ids.assign(live_.begin(), live_.end());
    }
    for (int64_t id : ids) {
      if (stop.stop_requested()) return;
      try {
        storage_.record_heartbeat(id, clock_.system_now());
      } catch (const Error& e) {
        // Finished meanwhile (told, or failed as stale elsewhere): no more heartbeats. Anything
        // else (a busy database) is retried at the next beat, well within the grace period.
        if (e.code() == ErrorCode::kFailedPrecondition || e.code() == ErrorCode::kNotFound) {
          remove(id);
        }
      }
    }
    // After a long stall (a suspended machine), beat at once and go on from now.
    if (const auto now = clock_.steady_now(); next < now) next = now;
  }
}

void StudyCore::handle_stale_trials_locked() {
  if (!heartbeater || !may_hold_foreign) return;
  // Only a RUNNING trial that no thread of this study object runs can be stale (and every
  // trial before first_unfinished is finished).
  const auto unfinished =
      std::span(trials).subspan(std::min(trials.size(), static_cast<size_t>(first_unfinished)));
  const bool foreign = std::any_of(unfinished.begin(), unfinished.end(), [&](const FrozenTrial& t) {
    return t.state == TrialState::kRunning && !heartbeater->is_live(t.trial_id);
  });
  may_hold_foreign = foreign;
  if (!foreign) return;
  const TimePoint now = clock->system_now();
  const TimePoint stale_before = now - grace_period;
  bool changed = false;
  for (const FrozenTrial& t : storage->get_stale_trials(record.study_id, stale_before)) {
    if (heartbeater->is_live(t.trial_id)) continue;  // ours: alive, its heartbeat is late
    Attributes fail_attrs;
    fail_attrs[kFailReasonAttr] = json_string(
        "stale: no heartbeat for more than the grace period of " + format_ms(grace_period) +
        " (the process running it died or hung); found by study '" + record.name + "' at " +
        std::to_string(
            std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count()) +
        " s since the epoch");
    std::optional<FrozenTrial> retry;
    if (stale_trial_policy == StaleTrialPolicy::kRetry) retry = retry_of(t, max_retries);
    if (retry) fail_attrs[kRerunMadeAttr] = "true";
    if (storage->fail_stale_trial(t.trial_id, stale_before, fail_attrs,
                                  retry ? &*retry : nullptr)) {
      changed = true;
    }
  }
  if (changed) refresh_locked();
}

void StudyCore::refresh_locked() {
  const std::optional<uint64_t> changes = storage->change_count();
  if (!changes || !seen_changes || *changes != *seen_changes) {
    TrialFilter filter;
    filter.min_number = first_unfinished;
    // The live trials' intermediate values are in the cache already (see `live`).
    for (const auto& [trial_id, number] : live) {
      if (cached_locked(number, trial_id)) filter.without_intermediate_values.push_back(trial_id);
    }
    for (FrozenTrial& t : storage->get_trials(record.study_id, filter)) {
      auto n = static_cast<size_t>(t.number);
      if (n >= trials.size()) trials.resize(n + 1);
      if (std::binary_search(filter.without_intermediate_values.begin(),
                             filter.without_intermediate_values.end(), t.trial_id)) {
        t.intermediate_values = std::move(trials[n].intermediate_values);
      }
      trials[n] = std::move(t);
    }
    seen_changes = changes;  // read before the trials: a change meanwhile is seen next time
    may_hold_foreign = true;
    objective_steps_current = false;  // others wrote: their steps too, perhaps
  }
  while (first_unfinished < static_cast<int>(trials.size()) &&
         is_finished(trials[first_unfinished].state)) {
    ++first_unfinished;
  }
  for (const auto& [number, proposal] : proposals) {
    if (number >= static_cast<int>(trials.size())) continue;
    FrozenTrial& t = trials[static_cast<size_t>(number)];
    if (t.state != TrialState::kRunning) continue;
    for (const auto& [name, value] : proposal.params) {
      if (t.params.emplace(name, value).second) {
        t.distributions.emplace(name, proposal.distributions.at(name));
      }
    }
  }
}

std::vector<std::string> objective_metric_names(const StudyRecord& record) {
  const size_t n = record.directions.size();
  std::vector<std::string> names;
  if (auto it = record.system_attrs.find(kMetricNamesAttr); it != record.system_attrs.end()) {
    const nlohmann::json json = json_nests_deeper_than(it->second, kMaxJsonDepth)
                                    ? nlohmann::json()
                                    : nlohmann::json::parse(it->second, nullptr, false);
    if (json.is_array() && json.size() == n &&
        std::all_of(json.begin(), json.end(), [](const auto& v) { return v.is_string(); })) {
      for (const auto& v : json) names.push_back(v.template get<std::string>());
      return names;
    }
  }
  for (size_t i = 0; i < n; ++i) names.push_back("values_" + std::to_string(i));
  return names;
}

const std::vector<std::string>& StudyCore::objective_names_locked() {
  if (!objective_names.empty()) return objective_names;
  // A sweep names the objectives after it creates the study: read them as stored now.
  std::optional<StudyRecord> stored;
  if (!record.system_attrs.contains(kMetricNamesAttr)) stored = storage->find_study(record.name);
  objective_names = objective_metric_names(stored ? *stored : record);
  return objective_names;
}

void StudyCore::note_step_metrics_locked(int number, int64_t step, const StepValues& metrics) {
  if (!objective_steps_current) return;
  if (!seen_changes || objective_names.empty()) {
    objective_steps_current = false;
    return;
  }
  std::vector<double> values(objective_names.size(), std::numeric_limits<double>::quiet_NaN());
  bool any = false;
  for (size_t i = 0; i < objective_names.size(); ++i) {
    if (auto m = metrics.find(objective_names[i]); m != metrics.end()) {
      values[i] = m->second;
      any = true;
    }
  }
  if (!any) return;
  auto& steps = objective_steps.by_trial[number];
  auto it = steps.find(step);
  if (it == steps.end()) {
    steps.emplace(step, std::move(values));
    return;
  }
  // Stored by name: a later write of the step keeps the objectives it does not name.
  for (size_t i = 0; i < objective_names.size(); ++i) {
    if (metrics.contains(objective_names[i])) it->second[i] = values[i];
  }
}

const ObjectiveSteps& StudyCore::objective_steps_locked() {
  const std::vector<std::string>& names = objective_names_locked();
  // Nothing changed but this object's own writes, whose steps are in already.
  if (objective_steps_current && seen_changes) return objective_steps;
  objective_steps_current = seen_changes.has_value();
  std::vector<int64_t> ids;
  for (const FrozenTrial& t : trials) {
    if (t.trial_id >= 0 && !objective_steps_final.contains(t.trial_id)) ids.push_back(t.trial_id);
  }
  if (ids.empty()) return objective_steps;
  std::map<int64_t, std::vector<StepMetrics>> read =
      storage->get_step_metrics(record.study_id, ids);
  for (const FrozenTrial& t : trials) {
    if (t.trial_id < 0 || objective_steps_final.contains(t.trial_id)) continue;
    if (is_finished(t.state)) objective_steps_final.insert(t.trial_id);
    auto it = read.find(t.trial_id);
    if (it == read.end()) {
      objective_steps.by_trial.erase(t.number);
      continue;
    }
    auto& steps = objective_steps.by_trial[t.number];
    steps.clear();
    for (const StepMetrics& step : it->second) {
      std::vector<double> values(names.size(), std::numeric_limits<double>::quiet_NaN());
      bool any = false;
      for (size_t i = 0; i < names.size(); ++i) {
        if (auto m = step.metrics.find(names[i]); m != step.metrics.end()) {
          values[i] = m->second;
          any = true;
        }
      }
      if (any) steps.emplace(step.step, std::move(values));
    }
  }
  return objective_steps;
}

Study::Study(std::shared_ptr<StudyCore> core) : core_(std::move(core)) {}

std::optional<uint64_t> stored_seed(const StudyRecord& record) {
  auto it = record.system_attrs.find(kSeedAttr);
  if (it == record.system_attrs.end()) return std::nullopt;
  try {
    return std::stoull(nlohmann::json::parse(it->second).get<std::string>());
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kDataLoss, "study '" + record.name + "': system attribute " + kSeedAttr +
                                          " is not a seed (" + it->second + ")");
  }
}

SpaceComparison compare_with_stored(const StudyRecord& record, Storage& storage,
                                    const SearchSpace& space) {
  StoredDistributions stored;
  if (auto it = record.system_attrs.find(kStudySpaceAttr); it != record.system_attrs.end()) {
    const nlohmann::json text = json_nests_deeper_than(it->second, kMaxJsonDepth)
                                    ? nlohmann::json()
                                    : nlohmann::json::parse(it->second, nullptr, false);
    if (!text.is_string()) {
      throw Error(ErrorCode::kDataLoss, "study '" + record.name + "': system attribute " +
                                            kStudySpaceAttr + " is not a search space");
    }
    try {
      stored = distributions_of(parse_search_space(
          text.get<std::string>(), "study '" + record.name + "': " + kStudySpaceAttr));
    } catch (const Error& e) {
      throw Error(ErrorCode::kDataLoss, e.what());
    }
  } else {
    // A study made before the space was stored, or by Optuna: its trials' distributions.
    for (const FrozenTrial& t : storage.get_trials(record.study_id)) {
      for (const auto& [param, distribution] : t.distributions) {
        auto it = std::find_if(stored.begin(), stored.end(),
                               [&p = param](const auto& entry) { return entry.first == p; });
        if (it == stored.end()) {
          stored.emplace_back(param, distribution);
        } else {
          it->second = distribution;
        }
      }
    }
  }
  return compare_spaces(stored, space);
}

namespace {

// Checks `space` against the stored study and records it (load()): refuses an incompatible
// change, appends a compatible one to kSpaceChangesAttr, and stores the space. Returns the
// change's summary ("" when none).
std::string check_and_record_space(StudyRecord& record, Storage& storage,
                                   const SearchSpace& space) {
  const SpaceComparison comparison = compare_with_stored(record, storage, space);
  if (comparison.conflict) {
    throw Error(ErrorCode::kFailedPrecondition,
                "study '" + record.name + "': " + comparison.conflict->message() +
                    "; its earlier trials could no longer be read by a sampler (nor by "
                    "Optuna's): to start a new study with this space, give it another name "
                    "(docs/search_space.md, \"Changing the space of a study\")");
  }
  const bool had_space = record.system_attrs.contains(kStudySpaceAttr);
  std::string summary;
  // A study whose space was never stored and that has no trials has no change to report.
  if (had_space || !comparison.change.removed.empty() || !comparison.change.changed.empty() ||
      comparison.change.added.size() != space.size()) {
    summary = comparison.change.summary();
  }
  if (!summary.empty()) {
    nlohmann::json changes = nlohmann::json::array();
    if (auto it = record.system_attrs.find(kSpaceChangesAttr); it != record.system_attrs.end()) {
      const nlohmann::json old = json_nests_deeper_than(it->second, kMaxJsonDepth)
                                     ? nlohmann::json()
                                     : nlohmann::json::parse(it->second, nullptr, false);
      if (old.is_array()) changes = old;
    }
    int next_number = 0;
    for (const FrozenTrial& t : storage.get_trials(record.study_id)) {
      next_number = std::max(next_number, t.number + 1);
    }
    changes.push_back({{"trial", next_number}, {"change", summary}});
    std::string text = changes.dump();
    storage.set_study_system_attr(record.study_id, kSpaceChangesAttr, text);
    record.system_attrs[kSpaceChangesAttr] = std::move(text);
  }
  std::string space_json = json_string(to_json(space));
  if (!had_space || record.system_attrs[kStudySpaceAttr] != space_json) {
    storage.set_study_system_attr(record.study_id, kStudySpaceAttr, space_json);
    record.system_attrs[kStudySpaceAttr] = std::move(space_json);
  }
  return summary;
}

}  // namespace

std::string stored_sampler_name(const StudyRecord& record) {
  auto it = record.system_attrs.find(kStudySamplerAttr);
  if (it == record.system_attrs.end()) return "tpe";
  const nlohmann::json name = json_nests_deeper_than(it->second, kMaxJsonDepth)
                                  ? nlohmann::json()
                                  : nlohmann::json::parse(it->second, nullptr, false);
  if (!name.is_string()) {
    throw Error(ErrorCode::kDataLoss, "study '" + record.name + "': system attribute " +
                                          kStudySamplerAttr + " is not a sampler's name (" +
                                          it->second + ")");
  }
  return name.get<std::string>();
}

Study Study::create(StudyOptions options) {
  if (!options.storage) options.storage = std::make_shared<InMemoryStorage>();
  if (options.name.empty()) options.name = "study-" + std::to_string(fresh_random() % 100000000);
  if (options.directions.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "study '" + options.name + "' needs a direction");
  }
  if (options.load_if_exists) {
    if (std::optional<StudyRecord> stored = options.storage->find_study(options.name)) {
      if (stored->directions != options.directions) {
        throw Error(ErrorCode::kFailedPrecondition,
                    "study '" + options.name + "' exists with direction " +
                        directions_text(stored->directions) + ", and these options ask for " +
                        directions_text(options.directions) +
                        ": give its directions to continue it, or another name for a new study");
      }
      return load(options);
    }
  }
  if (!options.sampler) options.sampler = std::make_shared<AutoSampler>();
  // Read before the study is made: a warm start that fails leaves nothing behind.
  std::optional<Prior> prior;
  if (options.warm_start) {
    prior = read_prior(*options.warm_start, *options.storage, options.name, options.directions,
                       options.space ? &*options.space : nullptr);
  }
  StudyRecord record = options.storage->create_study(options.name, options.directions);
  if (prior) {
    std::string json = warm_start_to_json(*options.warm_start, prior->trials.size());
    options.storage->set_study_system_attr(record.study_id, kWarmStartAttr, json);
    record.system_attrs[kWarmStartAttr] = std::move(json);
  }
  if (options.space) {
    std::string space_json = json_string(to_json(*options.space));
    options.storage->set_study_system_attr(record.study_id, kStudySpaceAttr, space_json);
    record.system_attrs[kStudySpaceAttr] = std::move(space_json);
  }
  uint64_t seed = options.seed ? *options.seed : fresh_random();
  std::string seed_json = json_string(std::to_string(seed));
  options.storage->set_study_system_attr(record.study_id, kSeedAttr, seed_json);
  record.system_attrs[kSeedAttr] = seed_json;
  if (options.noisy_objective.value_or(false)) store_noisy(*options.storage, record, true);
  std::string sampler_json = json_string(options.sampler->name());
  options.storage->set_study_system_attr(record.study_id, kStudySamplerAttr, sampler_json);
  record.system_attrs[kStudySamplerAttr] = std::move(sampler_json);
  auto core = make_core(options, std::move(record), seed);
  if (prior) {
    core->prior = std::move(prior->trials);
    core->warm_start = std::move(prior->summary);
  }
  return Study(core);
}

Study Study::load(StudyOptions options) {
  if (!options.storage) {
    throw Error(ErrorCode::kInvalidArgument,
                "loading study '" + options.name + "' needs a storage");
  }
  auto record = options.storage->find_study(options.name);
  if (!record) {
    std::string names;
    for (const auto& s : options.storage->list_studies())
      names += (names.empty() ? "" : ", ") + s.name;
    throw Error(ErrorCode::kNotFound,
                "no study named '" + options.name +
                    "' in the storage (it has: " + (names.empty() ? "no studies" : names) + ")");
  }
  // The warm start given, else the one stored with the study, read again (before any write: a
  // warm start that fails changes nothing).
  std::optional<WarmStartOptions> warm_start = options.warm_start;
  if (auto it = record->system_attrs.find(kWarmStartAttr);
      !warm_start && it != record->system_attrs.end()) {
    warm_start = warm_start_from_json(it->second, record->name);
  }
  std::optional<Prior> prior;
  if (warm_start) {
    prior = read_prior(*warm_start, *options.storage, record->name, record->directions,
                       options.space ? &*options.space : nullptr);
    std::string json = warm_start_to_json(*warm_start, prior->trials.size());
    if (record->system_attrs[kWarmStartAttr] != json) {
      options.storage->set_study_system_attr(record->study_id, kWarmStartAttr, json);
      record->system_attrs[kWarmStartAttr] = std::move(json);
    }
  }
  std::optional<uint64_t> seed = stored_seed(*record);
  if (!seed) {
    // A study another program made: this one's trials get a seed of their own, stored so that
    // the next load draws the same trials.
    seed = options.seed ? *options.seed : fresh_random();
    std::string seed_json = json_string(std::to_string(*seed));
    options.storage->set_study_system_attr(record->study_id, kSeedAttr, seed_json);
    record->system_attrs[kSeedAttr] = std::move(seed_json);
  }
  if (!options.sampler) {
    options.sampler = sampler_named(stored_sampler_name(*record), *record, options.space);
  }
  if (options.noisy_objective) store_noisy(*options.storage, *record, *options.noisy_objective);
  std::string space_change;
  if (options.space)
    space_change = check_and_record_space(*record, *options.storage, *options.space);
  auto core = make_core(options, std::move(*record), *seed);
  core->space_change = std::move(space_change);
  if (prior) {
    core->prior = std::move(prior->trials);
    core->warm_start = std::move(prior->summary);
  }
  std::lock_guard lock(core->mutex);
  core->refresh_locked();
  core->handle_stale_trials_locked();
  return Study(core);
}

const std::string& Study::name() const { return core_->record.name; }
const std::vector<StudyDirection>& Study::directions() const { return core_->record.directions; }
int64_t Study::id() const { return core_->record.study_id; }
uint64_t Study::seed() const { return core_->seed; }
Storage& Study::storage() const { return *core_->storage; }
const std::string& Study::space_change() const { return core_->space_change; }
const std::string& Study::warm_start() const { return core_->warm_start; }

History StudyCore::history_locked() {
  if (!space || std::none_of(space->params().begin(), space->params().end(),
                             [](const ParamSpec& p) { return p.default_value.has_value(); })) {
    return History{
        .trials = trials, .directions = record.directions, .noisy = noisy, .prior = prior};
  }
  // Trials made before a parameter with a default was added get it (docs/search_space.md,
  // "Changing the space of a study"); what is stored stays as it is.
  size_t keep = 0;
  while (keep < filled_finished && keep < trials.size() &&
         filled[keep].trial_id == trials[keep].trial_id) {
    ++keep;
  }
  filled.resize(keep);
  for (size_t i = keep; i < trials.size(); ++i) {
    FrozenTrial& t = filled.emplace_back(trials[i]);
    if (t.params.empty()) continue;  // nothing sampled yet (WAITING), or its ask failed
    for (const ParamSpec& spec : space->params()) {
      if (!spec.default_value || t.params.contains(spec.name)) continue;
      t.params.emplace(spec.name, *spec.default_value);
      t.distributions.insert_or_assign(spec.name, spec.distribution);
    }
  }
  filled_finished = keep;
  while (filled_finished < filled.size() && is_finished(filled[filled_finished].state)) {
    ++filled_finished;
  }
  return History{.trials = filled, .directions = record.directions, .noisy = noisy, .prior = prior};
}

StudyDirection Study::direction() const {
  if (directions().size() != 1) {
    throw Error(ErrorCode::kFailedPrecondition,
                "study '" + name() + "' has " + std::to_string(directions().size()) +
                    " objectives; direction() needs one (use directions())");
  }
  return directions().front();
}

Trial Study::ask() { return start_trial(core_->space ? &*core_->space : nullptr); }

Trial Study::ask(const SearchSpace& space) { return start_trial(&space); }

Trial Study::start_trial(const SearchSpace* space) {
  StudyCore& core = *core_;
  auto state = std::make_unique<Trial::State>();
  state->core = core_;
  std::lock_guard lock(core.mutex);
  core.refresh_locked();
  core.handle_stale_trials_locked();

  // Enqueued trials (and retries of stale ones) run first, in the order they were enqueued.
  for (size_t i = static_cast<size_t>(core.first_unfinished); i < core.trials.size(); ++i) {
    const FrozenTrial& t = core.trials[i];
    if (t.state == TrialState::kWaiting &&
        core.own_write_locked([&] { return core.storage->claim_waiting_trial(t.trial_id); })) {
      state->trial_id = t.trial_id;
      state->number = t.number;
      if (auto it = t.system_attrs.find(kFixedParamsAttr); it != t.system_attrs.end()) {
        state->fixed = fixed_params_of(it->second, t.number);
      }
      state->retry_history = retry_history_of(t);
      state->origin = !state->retry_history.empty() || t.system_attrs.contains(kFailedTrialAttr)
                          ? "retry"
                          : "enqueued";
      // The cache shows the claimed trial as stored (its state and start), read alone.
      if (core.seen_changes) core.trials[i] = core.storage->get_trial(state->trial_id);
      break;
    }
  }
  if (state->trial_id < 0) {
    if (core.sampler->exhausted(core.history_locked())) {
      throw Error(ErrorCode::kFailedPrecondition,
                  "study '" + core.record.name +
                      "': the sampler has nothing left to try (every "
                      "point of its grid has been run or is running)");
    }
    FrozenTrial created =
        core.own_write_locked([&] { return core.storage->create_trial(core.record.study_id); });
    state->trial_id = created.trial_id;
    state->number = created.number;
    // The new trial follows the history just read unless another process added one meanwhile:
    // then read again, so that the history has no gap.
    if (created.number == static_cast<int>(core.trials.size())) {
      core.trials.push_back(std::move(created));
    } else {
      core.seen_changes.reset();
    }
  }
  // The trial is RUNNING in storage from here: if what follows fails, it is failed with the
  // reason (or, when even that cannot be written, left to the stale-trial handling).
  try {
    if (static_cast<int>(core.trials.size()) <= state->number ||
        core.trials[static_cast<size_t>(state->number)].state != TrialState::kRunning) {
      core.refresh_locked();  // the history now includes the new (or claimed) trial
    }
    state->rng = Rng::for_trial(core.seed, state->number);
    History history = core.history_locked();
    TrialContext context{state->number};

    if (space) {
      // Define-and-run: the whole space is decided and stored before the objective runs.
      Params sampled = core.sampler->sample(*space, history, context, state->rng);
      if (state->origin.empty()) state->origin = core.sampler->origin(*space, history);
      for (const auto& [name, value] : state->fixed) sampled[name] = value;
      Params active;
      std::vector<Storage::NewParam> chosen;
      for (const ParamSpec& spec : space->params()) {
        if (!space->is_active(spec, active)) continue;
        auto it = sampled.find(spec.name);
        if (it == sampled.end()) {
          throw Error(ErrorCode::kInternal, "the sampler left parameter '" + spec.name + "' out");
        }
        chosen.push_back({spec.name, spec.distribution, it->second});
        active.insert(*it);
      }
      core.own_write_locked([&] {
        core.storage->set_trial_params(state->trial_id, chosen);  // one step: all or none
        return true;
      });
      if (core.seen_changes) {  // the cache shows the params as stored
        FrozenTrial& cached = core.trials[static_cast<size_t>(state->number)];
        for (const Storage::NewParam& p : chosen) {
          cached.params[p.name] = p.value;
          cached.distributions.insert_or_assign(p.name, p.distribution);
        }
      }
      for (Storage::NewParam& p : chosen) {
        state->params.emplace(p.name, p.value);
        state->distributions.emplace(p.name, std::move(p.distribution));
      }
      state->fixed = state->params;
    } else {
      SearchSpace relative = core.sampler->relative_space(history);
      if (state->origin.empty()) state->origin = core.sampler->origin(relative, history);
      if (!relative.empty()) {
        state->relative = core.sampler->sample(relative, history, context, state->rng);
        for (const ParamSpec& spec : relative.params()) {
          state->relative_distributions.emplace(spec.name, spec.distribution);
        }
        core.proposals[state->number] = {state->relative, state->relative_distributions};
      }
    }
  } catch (const std::exception& e) {
    std::optional<FrozenTrial> failed;
    try {
      failed = core.storage->finish_trial(
          state->trial_id, TrialState::kFail, {},
          {{kFailReasonAttr, json_string(std::string("ask() failed: ") + e.what())}});
    } catch (const std::exception&) {
      // The storage refuses writes now; the trial goes stale and is handled on resume.
    }
    const auto* error = dynamic_cast<const Error*>(&e);
    throw AskError(error ? error->code() : ErrorCode::kInternal, e.what(), std::move(failed));
  }
  if (core.heartbeater) core.heartbeater->add(state->trial_id);
  core.live[state->trial_id] = state->number;
  return Trial(std::move(state));
}

Trial Study::adopt(int64_t trial_id) {
  StudyCore& core = *core_;
  std::lock_guard lock(core.mutex);
  core.refresh_locked();
  auto it = std::find_if(core.trials.begin(), core.trials.end(),
                         [&](const FrozenTrial& t) { return t.trial_id == trial_id; });
  if (it == core.trials.end()) {
    throw Error(ErrorCode::kNotFound, "study '" + core.record.name + "' has no trial with id " +
                                          std::to_string(trial_id));
  }
  if (it->state != TrialState::kRunning) {
    throw Error(ErrorCode::kFailedPrecondition,
                "trial " + std::to_string(it->number) + " of study '" + core.record.name + "' is " +
                    std::string(to_string(it->state)) + ", not RUNNING");
  }
  auto state = std::make_unique<Trial::State>();
  state->core = core_;
  state->trial_id = it->trial_id;
  state->number = it->number;
  state->rng = Rng::for_trial(core.seed, it->number);
  state->params = it->params;
  state->fixed = it->params;
  state->distributions = it->distributions;
  if (!it->intermediate_values.empty()) {
    state->last_step = it->intermediate_values.rbegin()->first;
    state->max_step = state->last_step;
  }
  state->retry_history = retry_history_of(*it);
  if (core.heartbeater) core.heartbeater->add(state->trial_id);
  core.live[state->trial_id] = state->number;
  return Trial(std::move(state));
}

FrozenTrial Study::tell(Trial& trial, double value) {
  return tell(trial, std::vector<double>{value});
}

FrozenTrial Study::tell(Trial& trial, const std::vector<double>& values,
                        const Attributes& user_attrs) {
  Trial::State& s = *trial.state_;
  if (s.stop_requested) return tell(trial, TrialState::kPruned, "", user_attrs);
  if (values.size() != directions().size()) {
    return tell(trial, TrialState::kFail,
                "the objective returned " + std::to_string(values.size()) + " value(s) for " +
                    std::to_string(directions().size()) + " objective(s)",
                user_attrs);
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return tell(trial, TrialState::kFail,
                  "the objective returned " + to_string(ParamValue(values[i])) +
                      (values.size() > 1 ? " for objective " + std::to_string(i) : std::string()),
                  user_attrs);
    }
  }
  Attributes system_attrs;
  if (!constraints_attrs(s.constraints, system_attrs)) {
    return tell(trial, TrialState::kFail, constraint_failure(*s.constraints), user_attrs);
  }
  FrozenTrial finished = finish(s, TrialState::kComplete, values, system_attrs, user_attrs);
  mark_told(s);
  return finished;
}

FrozenTrial Study::tell(Trial& trial, TrialState state, const std::string& reason,
                        const Attributes& user_attrs, const Attributes& system_attrs) {
  Trial::State& s = *trial.state_;
  std::vector<double> values;
  Attributes attrs = system_attrs;
  if (state == TrialState::kPruned) {
    if (!constraints_attrs(s.constraints, attrs)) {
      return tell(trial, TrialState::kFail, constraint_failure(*s.constraints), user_attrs,
                  system_attrs);
    }
    if (s.stopped_at_step) attrs[kStoppedAtStepAttr] = std::to_string(*s.stopped_at_step);
    FrozenTrial record = core_->storage->get_trial(s.trial_id);
    if (!record.intermediate_values.empty() && directions().size() == 1) {
      double last = record.intermediate_values.rbegin()->second;
      if (std::isfinite(last)) values.push_back(last);
    }
  } else if (state == TrialState::kFail) {
    attrs[kFailReasonAttr] = json_string(reason);
  } else {
    throw Error(ErrorCode::kInvalidArgument, "trial " + std::to_string(s.number) +
                                                 ": tell() with a state takes PRUNED or FAIL, "
                                                 "not " +
                                                 std::string(to_string(state)) +
                                                 " (give COMPLETE trials their values)");
  }
  FrozenTrial finished = finish(s, state, values, attrs, user_attrs);
  mark_told(s);
  return finished;
}

FrozenTrial Study::finish(const Trial::State& s, TrialState state,
                          const std::vector<double>& values, const Attributes& system_attrs,
                          const Attributes& user_attrs) {
  StudyCore& core = *core_;
  Attributes attrs = system_attrs;
  if (!s.origin.empty()) attrs[kSamplerAttr] = json_string(s.origin);
  std::lock_guard lock(core.mutex);
  FrozenTrial finished = core.own_write_locked(
      [&] { return core.storage->finish_trial(s.trial_id, state, values, attrs, user_attrs); });
  const auto n = static_cast<size_t>(s.number);
  if (core.seen_changes && n < core.trials.size() && core.trials[n].trial_id == s.trial_id) {
    core.trials[n] = finished;  // the cache shows it as stored
  } else {
    core.seen_changes.reset();
  }
  return finished;
}

void Study::mark_told(Trial::State& s) {
  s.told = true;
  if (core_->heartbeater) core_->heartbeater->remove(s.trial_id);
  std::lock_guard lock(core_->mutex);
  core_->proposals.erase(s.number);
  core_->live.erase(s.trial_id);
}

namespace {

// Puts what one fail_stale_trial() stored into the cache, or marks the cache for a re-read when
// it does not follow on from it. REQUIRES: core.mutex held, core.seen_changes set.
void cache_rerun_locked(StudyCore& core, const Storage::StaleTrialOutcome& outcome) {
  const auto n = static_cast<size_t>(outcome.failed.number);
  if (n >= core.trials.size() || core.trials[n].trial_id != outcome.failed.trial_id) {
    core.seen_changes.reset();
    return;
  }
  core.trials[n] = outcome.failed;
  if (!outcome.retry) return;
  if (outcome.retry->number == static_cast<int>(core.trials.size())) {
    core.trials.push_back(*outcome.retry);
  } else {
    core.seen_changes.reset();
  }
}

}  // namespace

Study::Rerun Study::fail_and_retry(Trial& trial, const std::string& reason,
                                   std::optional<int> max_retries) {
  Trial::State& s = *trial.state_;
  StudyCore& core = *core_;
  Rerun rerun;
  {
    std::lock_guard lock(core.mutex);
    const FrozenTrial record = core.storage->get_trial(s.trial_id);  // its lineage
    if (is_finished(record.state)) {
      throw Error(ErrorCode::kFailedPrecondition,
                  "trial " + std::to_string(s.number) + " of study '" + name() + "' is " +
                      std::string(to_string(record.state)) + " already");
    }
    const std::optional<FrozenTrial> retry =
        retry_of(record, max_retries.value_or(std::numeric_limits<int>::max()));
    Attributes fail_attrs;
    fail_attrs[kFailReasonAttr] = json_string(reason);
    if (!s.origin.empty()) fail_attrs[kSamplerAttr] = json_string(s.origin);
    if (retry) fail_attrs[kRerunMadeAttr] = "true";
    // A stale_before past every heartbeat: any RUNNING trial (see Storage::fail_stale_trial).
    std::optional<Storage::StaleTrialOutcome> outcome = core.own_write_locked([&] {
      return core.storage->fail_stale_trial(s.trial_id, TimePoint::max(), fail_attrs,
                                            retry ? &*retry : nullptr);
    });
    // The cache shows the failed trial and its re-run as stored (one write), so that the next
    // ask reads nothing again.
    if (outcome && core.seen_changes) cache_rerun_locked(core, *outcome);
    if (!outcome) core.seen_changes.reset();
    if (!outcome) {
      throw Error(ErrorCode::kFailedPrecondition, "trial " + std::to_string(s.number) +
                                                      " of study '" + name() +
                                                      "' was finished meanwhile elsewhere");
    }
    rerun.failed = std::move(outcome->failed);
    rerun.retry = std::move(outcome->retry);
  }
  mark_told(s);
  return rerun;
}

void Study::enqueue_trial(const Params& params) {
  FrozenTrial created = core_->storage->create_trial(id(), TrialState::kWaiting);
  // The values wait in a system attribute (as Optuna's "fixed_params"): their distributions are
  // known only when the objective suggests them.
  core_->storage->set_trial_system_attr(created.trial_id, kFixedParamsAttr, params_to_json(params));
}

void Study::run_batch(const std::function<void()>& body) {
  // The study's mutex first, as ask() and tell() take it: another thread's ask() waits for the
  // batch instead of holding the mutex while it waits for the storage the batch holds.
  std::lock_guard batch_lock(core_->mutex);
  try {
    core_->storage->run_batch(body);
  } catch (...) {
    // The cache may hold what the batch read of itself (trials created or finished in it), and
    // first_unfinished may have moved past a trial whose finish was rolled back: read it all.
    core_->trials.clear();
    core_->first_unfinished = 0;
    core_->seen_changes.reset();
    throw;
  }
}

void Study::optimize(const Objective& objective, const OptimizeOptions& options) {
  optimize(MultiObjective([&](Trial& t) { return std::vector<double>{objective(t)}; }), options);
}

void Study::optimize(const MultiObjective& objective, const OptimizeOptions& options) {
  if (options.n_threads < 1) {
    throw Error(ErrorCode::kInvalidArgument, "optimize: n_threads must be >= 1");
  }
  if (options.trial_timeout && !(options.trial_timeout->count() > 0)) {
    throw Error(ErrorCode::kInvalidArgument, "optimize: trial_timeout must be > 0 s");
  }
  std::string timed_out_reason;
  std::optional<Clock::SteadyTime::duration> trial_timeout;
  if (options.trial_timeout) {
    trial_timeout = std::chrono::ceil<Clock::SteadyTime::duration>(*options.trial_timeout);
    std::ostringstream seconds;
    seconds << options.trial_timeout->count();
    timed_out_reason = "timed out after " + seconds.str() + " s (OptimizeOptions::trial_timeout)";
  }
  Clock& clock = *core_->clock;
  const auto start = clock.steady_now();
  std::atomic<int> started{0};
  std::atomic<bool> done{false};
  std::exception_ptr error;
  std::mutex error_mutex;

  auto worker = [&] {
    while (!done) {
      if (options.n_trials && started.fetch_add(1) >= *options.n_trials) break;
      if (options.timeout && clock.steady_now() - start >= *options.timeout) break;
      try {
        std::optional<Trial> trial;
        try {
          trial.emplace(ask());
        } catch (const Error& e) {
          if (e.code() != ErrorCode::kFailedPrecondition) throw;
          break;  // the sampler is exhausted: the study is done
        }
        FrozenTrial finished;
        try {
          Trial::State& state = *trial->state_;
          if (trial_timeout) state.deadline = clock.steady_now() + *trial_timeout;
          std::optional<std::vector<double>> values;
          std::string failure;
          try {
            values = objective(*trial);
          } catch (const std::exception& e) {
            failure = e.what();
          } catch (...) {
            failure = "the objective threw a non-standard exception";
          }
          if (state.deadline && (state.timed_out || clock.steady_now() >= *state.deadline)) {
            finished = tell(*trial, TrialState::kFail, timed_out_reason);
          } else {
            finished = values ? tell(*trial, *values) : tell(*trial, TrialState::kFail, failure);
          }
        } catch (const Error& e) {
          // Another process failed the trial as stale while it ran (this one was stalled past
          // the grace period): its result is not ours to write. Go on with the next trial.
          if (e.code() != ErrorCode::kFailedPrecondition ||
              !is_finished(core_->storage->get_trial(trial->id()).state)) {
            throw;
          }
          continue;
        }
        if (options.on_trial_finished) options.on_trial_finished(finished);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
        done = true;
      }
    }
  };
  if (options.n_threads == 1) {
    worker();
  } else {
    std::vector<std::jthread> threads;
    for (int i = 0; i < options.n_threads; ++i) threads.emplace_back(worker);
  }
  if (error) std::rethrow_exception(error);
}

std::vector<FrozenTrial> Study::trials(const TrialFilter& filter) const {
  return core_->storage->get_trials(id(), filter);
}

FrozenTrial Study::best_trial() const {
  direction();  // throws for several objectives
  std::optional<FrozenTrial> best = core_->storage->get_best_trial(id());
  if (!best) {
    throw Error(ErrorCode::kFailedPrecondition, "study '" + name() + "' has no COMPLETE trial yet");
  }
  if (is_feasible(*best)) return *best;
  // The best value violates a constraint (as Optuna: the best of the feasible trials instead).
  TrialFilter filter;
  filter.states = std::vector<TrialState>{TrialState::kComplete};
  const std::vector<FrozenTrial> complete = trials(filter);
  const FrozenTrial* feasible = best_feasible(complete, direction());
  if (!feasible) {
    const FrozenTrial* least_violating = nullptr;
    double least = std::numeric_limits<double>::infinity();
    for (const FrozenTrial& t : complete) {
      if (t.values.size() != 1) continue;
      const double violation = constraint_violation(constraints_of(t));
      if (!least_violating || violation < least) {
        least_violating = &t;
        least = violation;
      }
    }
    std::ostringstream by;
    by << least;
    throw Error(ErrorCode::kFailedPrecondition,
                "study '" + name() + "' has no feasible COMPLETE trial yet: each of its " +
                    std::to_string(complete.size()) +
                    " COMPLETE trials has a constraint value > 0 (the least violation is trial " +
                    std::to_string(least_violating ? least_violating->number : -1) + "'s, by " +
                    by.str() + ")");
  }
  return *feasible;
}

std::vector<FrozenTrial> Study::best_trials() const {
  TrialFilter filter;
  filter.states = std::vector<TrialState>{TrialState::kComplete};
  return pareto_front_trials(trials(filter), directions());
}

}  // namespace tuner
