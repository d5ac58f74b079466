#include "tuner/study.h"

#include <atomic>
#include <cmath>
#include <exception>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "search/tpe_sampler.h"
#include "storage/in_memory_storage.h"
#include "trials/error.h"
#include "tuner/study_core.h"
#include "tuner/trial_state_internal.h"

namespace tuner {

namespace {

constexpr char kSeedAttr[] = "tuner:seed";
constexpr char kFailReasonAttr[] = "fail_reason";    // the keys Optuna uses
constexpr char kFixedParamsAttr[] = "fixed_params";

std::shared_ptr<Sampler> default_sampler() { return std::make_shared<TpeSampler>(); }

uint64_t fresh_random() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

std::string json_string(const std::string& s) { return nlohmann::json(s).dump(); }

std::string params_to_json(const Params& params) {
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  for (const auto& [name, value] : params) {
    std::visit([&](const auto& v) { object[name] = v; }, value);
  }
  return object.dump();
}

Params params_from_json(const std::string& text, int trial_number) {
  auto fail = [&](const std::string& why) {
    return Error(ErrorCode::kDataLoss, "trial " + std::to_string(trial_number) + ": system attribute " +
                                           kFixedParamsAttr + " " + why);
  };
  nlohmann::json object = nlohmann::json::parse(text, nullptr, false);
  if (!object.is_object()) throw fail("is not a JSON object");
  Params params;
  for (const auto& [name, v] : object.items()) {
    if (v.is_boolean()) params[name] = v.get<bool>();
    else if (v.is_number_integer()) params[name] = v.get<int64_t>();
    else if (v.is_number_float()) params[name] = v.get<double>();
    else if (v.is_string()) params[name] = v.get<std::string>();
    else throw fail("holds '" + name + "' = " + v.dump() + ", which is not a parameter value");
  }
  return params;
}

uint64_t parse_seed(const StudyRecord& record) {
  auto it = record.system_attrs.find(kSeedAttr);
  if (it == record.system_attrs.end()) return 0;  // a study written by another program
  try {
    return std::stoull(nlohmann::json::parse(it->second).get<std::string>());
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kDataLoss, "study '" + record.name + "': system attribute " + kSeedAttr +
                                          " is not a seed (" + it->second + ")");
  }
}

std::shared_ptr<StudyCore> make_core(StudyOptions& options, StudyRecord record, uint64_t seed) {
  auto core = std::make_shared<StudyCore>();
  core->storage = options.storage;
  core->sampler = options.sampler ? options.sampler : default_sampler();
  core->scheduler = options.scheduler;
  core->record = std::move(record);
  core->seed = seed;
  core->space = std::move(options.space);
  return core;
}

// Normalizes a value so that smaller is better in every direction.
double as_minimized(StudyDirection direction, double v) {
  return direction == StudyDirection::kMinimize ? v : -v;
}

bool dominates(const std::vector<StudyDirection>& directions, const std::vector<double>& a,
               const std::vector<double>& b) {
  bool strictly = false;
  for (size_t i = 0; i < directions.size(); ++i) {
    double x = as_minimized(directions[i], a[i]), y = as_minimized(directions[i], b[i]);
    if (x > y) return false;
    if (x < y) strictly = true;
  }
  return strictly;
}

}  // namespace

void StudyCore::refresh_locked() {
  TrialFilter filter;
  filter.min_number = first_unfinished;
  for (FrozenTrial& t : storage->get_trials(record.study_id, filter)) {
    auto n = static_cast<size_t>(t.number);
    if (n >= trials.size()) trials.resize(n + 1);
    trials[n] = std::move(t);
  }
  while (first_unfinished < static_cast<int>(trials.size()) &&
         is_finished(trials[first_unfinished].state)) {
    ++first_unfinished;
  }
}

Study::Study(std::shared_ptr<StudyCore> core) : core_(std::move(core)) {}

Study Study::create(StudyOptions options) {
  if (!options.storage) options.storage = std::make_shared<InMemoryStorage>();
  if (options.name.empty()) options.name = "study-" + std::to_string(fresh_random() % 100000000);
  if (options.directions.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "study '" + options.name + "' needs a direction");
  }
  if (options.load_if_exists && options.storage->find_study(options.name)) return load(options);
  StudyRecord record = options.storage->create_study(options.name, options.directions);
  uint64_t seed = options.seed ? *options.seed : fresh_random();
  std::string seed_json = json_string(std::to_string(seed));
  options.storage->set_study_system_attr(record.study_id, kSeedAttr, seed_json);
  record.system_attrs[kSeedAttr] = seed_json;
  return Study(make_core(options, std::move(record), seed));
}

Study Study::load(StudyOptions options) {
  if (!options.storage) {
    throw Error(ErrorCode::kInvalidArgument, "loading study '" + options.name + "' needs a storage");
  }
  auto record = options.storage->find_study(options.name);
  if (!record) {
    std::string names;
    for (const auto& s : options.storage->list_studies()) names += (names.empty() ? "" : ", ") + s.name;
    throw Error(ErrorCode::kNotFound, "no study named '" + options.name + "' in the storage (it has: " +
                                          (names.empty() ? "no studies" : names) + ")");
  }
  uint64_t seed = parse_seed(*record);
  auto core = make_core(options, std::move(*record), seed);
  std::lock_guard lock(core->mutex);
  core->refresh_locked();
  return Study(core);
}

const std::string& Study::name() const { return core_->record.name; }
const std::vector<StudyDirection>& Study::directions() const { return core_->record.directions; }
int64_t Study::id() const { return core_->record.study_id; }
uint64_t Study::seed() const { return core_->seed; }
Storage& Study::storage() const { return *core_->storage; }

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

  // Enqueued trials run first, in the order they were enqueued.
  for (const FrozenTrial& t : core.trials) {
    if (t.state == TrialState::kWaiting && core.storage->claim_waiting_trial(t.trial_id)) {
      state->trial_id = t.trial_id;
      state->number = t.number;
      if (auto it = t.system_attrs.find(kFixedParamsAttr); it != t.system_attrs.end()) {
        state->fixed = params_from_json(it->second, t.number);
      }
      break;
    }
  }
  if (state->trial_id < 0) {
    if (core.sampler->exhausted(core.history_locked())) {
      throw Error(ErrorCode::kFailedPrecondition,
                  "study '" + core.record.name + "': the sampler has nothing left to try (every "
                  "point of its grid has been run or is running)");
    }
    FrozenTrial created = core.storage->create_trial(core.record.study_id);
    state->trial_id = created.trial_id;
    state->number = created.number;
  }
  core.refresh_locked();  // the history now includes the new trial
  state->rng = Rng::for_trial(core.seed, state->number);
  History history = core.history_locked();
  TrialContext context{state->number};

  if (space) {
    // Define-and-run: the whole space is decided and stored before the objective runs.
    Params sampled = core.sampler->sample(*space, history, context, state->rng);
    for (const auto& [name, value] : state->fixed) sampled[name] = value;
    Params active;
    for (const ParamSpec& spec : space->params()) {
      if (!space->is_active(spec, active)) continue;
      auto it = sampled.find(spec.name);
      if (it == sampled.end()) {
        throw Error(ErrorCode::kInternal, "the sampler left parameter '" + spec.name + "' out");
      }
      core.storage->set_trial_param(state->trial_id, spec.name, spec.distribution, it->second);
      active.insert(*it);
      state->params.insert(*it);
      state->distributions.emplace(spec.name, spec.distribution);
    }
    state->fixed = state->params;
  } else {
    SearchSpace relative = core.sampler->relative_space(history);
    if (!relative.empty()) {
      state->relative = core.sampler->sample(relative, history, context, state->rng);
      for (const ParamSpec& spec : relative.params()) {
        state->relative_distributions.emplace(spec.name, spec.distribution);
      }
    }
  }
  return Trial(std::move(state));
}

FrozenTrial Study::tell(Trial& trial, double value) {
  return tell(trial, std::vector<double>{value});
}

FrozenTrial Study::tell(Trial& trial, const std::vector<double>& values) {
  Trial::State& s = *trial.state_;
  if (s.stop_requested) return tell(trial, TrialState::kPruned);
  if (values.size() != directions().size()) {
    return tell(trial, TrialState::kFail,
                "the objective returned " + std::to_string(values.size()) + " value(s) for " +
                    std::to_string(directions().size()) + " objective(s)");
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return tell(trial, TrialState::kFail,
                  "the objective returned " + to_string(ParamValue(values[i])) +
                      (values.size() > 1 ? " for objective " + std::to_string(i) : std::string()));
    }
  }
  core_->storage->finish_trial(s.trial_id, TrialState::kComplete, values);
  s.told = true;
  return core_->storage->get_trial(s.trial_id);
}

FrozenTrial Study::tell(Trial& trial, TrialState state, const std::string& reason) {
  Trial::State& s = *trial.state_;
  std::vector<double> values;
  if (state == TrialState::kPruned) {
    FrozenTrial record = core_->storage->get_trial(s.trial_id);
    if (!record.intermediate_values.empty() && directions().size() == 1) {
      double last = record.intermediate_values.rbegin()->second;
      if (std::isfinite(last)) values.push_back(last);
    }
  } else if (state == TrialState::kFail) {
    core_->storage->set_trial_system_attr(s.trial_id, kFailReasonAttr, json_string(reason));
  } else {
    throw Error(ErrorCode::kInvalidArgument,
                "trial " + std::to_string(s.number) + ": tell() with a state takes PRUNED or FAIL, "
                "not " + std::string(to_string(state)) + " (give COMPLETE trials their values)");
  }
  core_->storage->finish_trial(s.trial_id, state, values);
  s.told = true;
  return core_->storage->get_trial(s.trial_id);
}

void Study::enqueue_trial(const Params& params) {
  FrozenTrial created = core_->storage->create_trial(id(), TrialState::kWaiting);
  // The values wait in a system attribute (as Optuna's "fixed_params"): their distributions are
  // known only when the objective suggests them.
  core_->storage->set_trial_system_attr(created.trial_id, kFixedParamsAttr, params_to_json(params));
}

void Study::optimize(const Objective& objective, const OptimizeOptions& options) {
  optimize(MultiObjective([&](Trial& t) { return std::vector<double>{objective(t)}; }), options);
}

void Study::optimize(const MultiObjective& objective, const OptimizeOptions& options) {
  if (options.n_threads < 1) {
    throw Error(ErrorCode::kInvalidArgument, "optimize: n_threads must be >= 1");
  }
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::atomic<int> started{0};
  std::atomic<bool> done{false};
  std::exception_ptr error;
  std::mutex error_mutex;

  auto worker = [&] {
    while (!done) {
      if (options.n_trials && started.fetch_add(1) >= *options.n_trials) break;
      if (options.timeout && Clock::now() - start >= *options.timeout) break;
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
          std::vector<double> values = objective(*trial);
          finished = tell(*trial, values);
        } catch (const std::exception& e) {
          finished = tell(*trial, TrialState::kFail, e.what());
        } catch (...) {
          finished = tell(*trial, TrialState::kFail, "the objective threw a non-standard exception");
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
  StudyDirection dir = direction();
  TrialFilter filter;
  filter.states = std::vector<TrialState>{TrialState::kComplete};
  std::optional<FrozenTrial> best;
  for (FrozenTrial& t : trials(filter)) {
    if (!best || is_better(dir, t.values[0], best->values[0])) best = std::move(t);
  }
  if (!best) {
    throw Error(ErrorCode::kFailedPrecondition, "study '" + name() + "' has no COMPLETE trial yet");
  }
  return *best;
}

std::vector<FrozenTrial> Study::best_trials() const {
  TrialFilter filter;
  filter.states = std::vector<TrialState>{TrialState::kComplete};
  std::vector<FrozenTrial> complete = trials(filter);
  std::vector<FrozenTrial> front;
  for (const FrozenTrial& t : complete) {
    bool dominated = false;
    for (const FrozenTrial& u : complete) {
      if (dominates(directions(), u.values, t.values)) {
        dominated = true;
        break;
      }
    }
    if (!dominated) front.push_back(t);
  }
  return front;
}

}  // namespace tuner
