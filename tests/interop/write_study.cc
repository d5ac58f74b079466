// The C++ half of the Optuna interop test (see check_study.py and run_interop.sh).
//
//   write_study write DB JSON [--v300d]     writes studies "interop" (one objective) and
//                                           "interop-mo" (two) with a random sampler, then
//                                           dumps every stored field to JSON
//   write_study continue DB JSON STUDY N    loads STUDY (written by Optuna), runs N more trials
//                                           of the same space, dumps every trial to JSON
//   write_study write-constrained DB JSON   writes "interop-constrained": the constrained
//                                           problem of check_constraints.py, 30 random trials
//   write_study continue-constrained DB JSON STUDY N
//                                           loads STUDY (Optuna's), runs N more trials of the
//                                           problem with the TPE sampler, dumps it
//   write_study write-mo DB JSON            writes "interop-mo-tpe": the two-objective problem
//                                           of check_multi_objective.py, 20 trials of the
//                                           multi-objective TPE sampler
//   write_study continue-mo DB JSON STUDY N loads STUDY (Optuna's), runs N more trials of the
//                                           problem with the multi-objective TPE sampler, dumps it
//
// The dump: {"studies": [{"name", "directions", "user_attrs", "trials": [{"number", "state",
// "params", "distributions" (Optuna's JSON), "values", "intermediate_values" ({"step": value}),
// "user_attrs" (parsed), "datetime_start", "datetime_complete" (naive UTC text)}]}]};
// infinities are the strings "inf" and "-inf". The constrained dump: {"name", "best" (the number
// of Study::best_trial(), or null), "trials": [{"number", "state", "params", "values",
// "constraints" ({name: value} as tuner reads them, Optuna's FrozenTrial.constraints' form)}]}.
// The multi-objective dump: {"name", "directions", "best_trials" (the numbers of
// Study::best_trials()), "trials": [{"number", "state", "params", "values"}]}.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "search/samplers/random_sampler.h"
#include "search/samplers/tpe/tpe_sampler.h"
#include "storage/optuna_schema.h"
#include "storage/sqlite_storage.h"
#include "trials/constraints.h"
#include "tuner/study.h"

namespace {

using nlohmann::json;
using namespace tuner;

json number(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  return v;
}

json param_json(const ParamValue& v) {
  return std::visit([](const auto& x) { return json(x); }, v);
}

std::string datetime(const std::optional<TimePoint>& t) {
  return t ? optuna_schema::format_datetime(*t) : std::string();
}

json dump_study(Storage& storage, const std::string& name) {
  StudyRecord record = *storage.find_study(name);
  json study = {{"name", name}, {"directions", json::array()}, {"user_attrs", json::object()}};
  for (StudyDirection d : record.directions) study["directions"].push_back(to_string(d));
  for (const auto& [k, v] : record.user_attrs) study["user_attrs"][k] = json::parse(v);
  json trials = json::array();
  for (const FrozenTrial& t : storage.get_trials(record.study_id)) {
    json trial = {{"number", t.number},
                  {"state", to_string(t.state)},
                  {"params", json::object()},
                  {"distributions", json::object()},
                  {"values", json::array()},
                  {"intermediate_values", json::object()},
                  {"user_attrs", json::object()},
                  {"datetime_start", datetime(t.datetime_start)},
                  {"datetime_complete", datetime(t.datetime_complete)}};
    for (const auto& [k, v] : t.params) trial["params"][k] = param_json(v);
    for (const auto& [k, d] : t.distributions) {
      trial["distributions"][k] = json::parse(optuna_schema::to_optuna_json(d));
    }
    for (double v : t.values) trial["values"].push_back(number(v));
    for (const auto& [step, v] : t.intermediate_values) {
      trial["intermediate_values"][std::to_string(step)] = number(v);
    }
    for (const auto& [k, v] : t.user_attrs) trial["user_attrs"][k] = json::parse(v);
    trials.push_back(trial);
  }
  study["trials"] = trials;
  return study;
}

// One trial of the test space; its fate depends on its number.
void run_trial(Study& study, bool continued) {
  Trial trial = study.ask();
  const int n = trial.number();
  double lr = trial.suggest_float("lr", 1e-5, 1e-1, {.log = true});
  double dropout = trial.suggest_float("dropout", 0.0, 0.5, {.step = 0.1});
  int64_t layers = trial.suggest_int("layers", 1, 8);
  int64_t units = trial.suggest_int("units", 16, 256, {.step = 16});
  ParamValue opt = trial.suggest_categorical(
      "optimizer", {std::string("sgd"), std::string("adam"), int64_t{3}, 2.5, true});
  trial.set_user_attr("writer", continued ? "\"tuner-continue\"" : "\"tuner\"");
  trial.set_user_attr("config", "{\"n\": " + std::to_string(n) + ", \"tags\": [\"a\", \"b\"]}");
  double loss = lr * 100 + dropout + static_cast<double>(layers) / 8 + units / 256.0 +
                (opt == ParamValue(std::string("adam")) ? 0.0 : 0.5);
  for (int step = 0; step < 3; ++step) {
    trial.report(step, step == 1 && n % 3 == 0 ? INFINITY : loss + 1.0 / (step + 1));
  }
  if (n % 5 == 2) {
    study.tell(trial, TrialState::kPruned);
  } else if (n % 5 == 4) {
    study.tell(trial, TrialState::kFail, "the objective raised ValueError");
  } else {
    study.tell(trial, loss);
  }
}

int write(const std::string& db, const std::string& out, bool v300d) {
  SqliteStorageOptions options;
  if (v300d) options.revision = OptunaRevision::kV3_0_0_d;
  auto storage = std::make_shared<SqliteStorage>(db, options);
  StudyOptions so;
  so.name = "interop";
  so.storage = storage;
  so.sampler = std::make_shared<RandomSampler>();
  so.seed = 42;
  Study study = Study::create(so);
  storage->set_study_user_attr(study.id(), "dataset", "\"fashion-mnist\"");
  for (int i = 0; i < 8; ++i) run_trial(study, false);

  StudyOptions mo = so;
  mo.name = "interop-mo";
  mo.directions = {StudyDirection::kMinimize, StudyDirection::kMaximize};
  Study multi = Study::create(mo);
  for (int i = 0; i < 3; ++i) {
    Trial t = multi.ask();
    double x = t.suggest_float("x", -1.0, 1.0);
    multi.tell(t, std::vector<double>{x * x, -std::abs(x) + 1e-300});
  }
  json dump = {{"studies", {dump_study(*storage, "interop"), dump_study(*storage, "interop-mo")}}};
  std::ofstream(out) << dump.dump(2) << "\n";
  return 0;
}

int resume(const std::string& db, const std::string& out, const std::string& name, int n) {
  auto storage = std::make_shared<SqliteStorage>(db);
  StudyOptions so;
  so.name = name;
  so.storage = storage;
  so.sampler = std::make_shared<RandomSampler>();
  Study study = Study::load(so);
  // Enqueued (WAITING) trials are run first, without creating new ones.
  TrialFilter waiting;
  waiting.states = std::vector<TrialState>{TrialState::kWaiting};
  const size_t n_waiting = study.trials(waiting).size();
  const size_t expected = study.trials().size() + n - std::min<size_t>(n, n_waiting);
  for (int i = 0; i < n; ++i) run_trial(study, true);
  auto trials = study.trials();
  for (size_t i = 0; i < trials.size(); ++i) {
    if (trials[i].number != static_cast<int>(i) || trials[i].state == TrialState::kRunning) {
      std::cerr << "write_study: trial " << trials[i].number << " at position " << i << " is "
                << to_string(trials[i].state) << "\n";
      return 1;
    }
  }
  if (trials.size() != expected) {
    std::cerr << "write_study: " << trials.size() << " trials, expected " << expected << "\n";
    return 1;
  }
  json dump = {{"studies", {dump_study(*storage, name)}}};
  std::ofstream(out) << dump.dump(2) << "\n";
  return 0;
}

// The constrained problem (as check_constraints.py's objective): minimize (x - 1.5)^2 + (y + 2)^2
// subject to x >= 5 and y <= 8, stored as the constraint values [5 - x, y - 8]. Trial numbers
// 3 mod 10 are PRUNED (with their constraints), 7 mod 10 FAIL.
void run_constrained_trial(Study& study) {
  Trial trial = study.ask();
  const int n = trial.number();
  const double x = trial.suggest_float("x", -10, 10);
  const double y = trial.suggest_float("y", -10, 10);
  const double value = (x - 1.5) * (x - 1.5) + (y + 2) * (y + 2);
  trial.set_constraints({5 - x, y - 8});
  trial.report(0, value);
  if (n % 10 == 3) {
    study.tell(trial, TrialState::kPruned);
  } else if (n % 10 == 7) {
    study.tell(trial, TrialState::kFail, "the objective raised ValueError");
  } else {
    study.tell(trial, value);
  }
}

json dump_constrained(const Study& study) {
  json trials = json::array();
  for (const FrozenTrial& t : study.trials()) {
    json trial = {{"number", t.number},
                  {"state", to_string(t.state)},
                  {"params", json::object()},
                  {"values", json::array()},
                  {"constraints", json::object()}};
    for (const auto& [k, v] : t.params) trial["params"][k] = param_json(v);
    for (double v : t.values) trial["values"].push_back(number(v));
    for (const ConstraintValue& c : constraints_of(t))
      trial["constraints"][c.name] = number(c.value);
    trials.push_back(trial);
  }
  json best = nullptr;
  try {
    best = study.best_trial().number;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kFailedPrecondition) throw;
  }
  return {{"name", study.name()}, {"best", best}, {"trials", trials}};
}

int write_constrained(const std::string& db, const std::string& out) {
  StudyOptions so;
  so.name = "interop-constrained";
  so.storage = std::make_shared<SqliteStorage>(db);
  so.sampler = std::make_shared<RandomSampler>();
  so.seed = 17;
  Study study = Study::create(so);
  for (int i = 0; i < 30; ++i) run_constrained_trial(study);
  std::ofstream(out) << dump_constrained(study).dump(2) << "\n";
  return 0;
}

int continue_constrained(const std::string& db, const std::string& out, const std::string& name,
                         int n) {
  StudyOptions so;
  so.name = name;
  so.storage = std::make_shared<SqliteStorage>(db);
  so.sampler = std::make_shared<TpeSampler>();
  so.seed = 23;
  Study study = Study::load(so);
  const size_t before = study.trials().size();
  for (int i = 0; i < n; ++i) run_constrained_trial(study);
  // TPE read the constraints Optuna wrote: most of its trials are feasible (x >= 5 is a quarter
  // of the space; the unconstrained best, x = 1.5, is not in it).
  int complete = 0, feasible = 0;
  for (const FrozenTrial& t : study.trials()) {
    if (t.number < static_cast<int>(before) || t.state != TrialState::kComplete) continue;
    ++complete;
    if (is_feasible(t)) ++feasible;
  }
  std::cout << "write_study: " << feasible << " of tuner's " << complete
            << " COMPLETE trials are feasible\n";
  if (feasible * 2 < complete) {
    std::cerr << "write_study: tuner's TPE does not seem to read Optuna's constraints\n";
    return 1;
  }
  std::ofstream(out) << dump_constrained(study).dump(2) << "\n";
  return 0;
}

// The two-objective problem (as check_multi_objective.py's objective): minimize
// x^2 + y^2 and maximize -((x - 1)^2 + y^2), a front along y = 0 between x = 0 and x = 1. Trial
// numbers 3 mod 7 FAIL.
void run_mo_trial(Study& study) {
  Trial trial = study.ask();
  const double x = trial.suggest_float("x", -2, 2);
  const double y = trial.suggest_float("y", -2, 2);
  if (trial.number() % 7 == 3) {
    study.tell(trial, TrialState::kFail, "the objective raised ValueError");
    return;
  }
  study.tell(trial, std::vector<double>{x * x + y * y, -((x - 1) * (x - 1) + y * y)});
}

json dump_mo(const Study& study) {
  json trials = json::array();
  for (const FrozenTrial& t : study.trials()) {
    json trial = {{"number", t.number},
                  {"state", to_string(t.state)},
                  {"params", json::object()},
                  {"values", json::array()}};
    for (const auto& [k, v] : t.params) trial["params"][k] = param_json(v);
    for (double v : t.values) trial["values"].push_back(number(v));
    trials.push_back(trial);
  }
  json best = json::array();
  for (const FrozenTrial& t : study.best_trials()) best.push_back(t.number);
  json directions = json::array();
  for (StudyDirection d : study.directions()) directions.push_back(to_string(d));
  return {{"name", study.name()},
          {"directions", directions},
          {"best_trials", best},
          {"trials", trials}};
}

int write_mo(const std::string& db, const std::string& out) {
  StudyOptions so;
  so.name = "interop-mo-tpe";
  so.storage = std::make_shared<SqliteStorage>(db);
  so.sampler = std::make_shared<TpeSampler>();
  so.seed = 29;
  so.directions = {StudyDirection::kMinimize, StudyDirection::kMaximize};
  Study study = Study::create(so);
  for (int i = 0; i < 20; ++i) run_mo_trial(study);
  std::ofstream(out) << dump_mo(study).dump(2) << "\n";
  return 0;
}

int continue_mo(const std::string& db, const std::string& out, const std::string& name, int n) {
  StudyOptions so;
  so.name = name;
  so.storage = std::make_shared<SqliteStorage>(db);
  so.sampler = std::make_shared<TpeSampler>();
  so.seed = 31;
  Study study = Study::load(so);
  if (study.directions() != std::vector{StudyDirection::kMinimize, StudyDirection::kMaximize}) {
    std::cerr << "write_study: " << name << " does not have Optuna's two directions\n";
    return 1;
  }
  const size_t before = study.trials().size();
  for (int i = 0; i < n; ++i) run_mo_trial(study);
  if (study.trials().size() != before + static_cast<size_t>(n)) {
    std::cerr << "write_study: " << study.trials().size() << " trials, expected " << before + n
              << "\n";
    return 1;
  }
  std::ofstream(out) << dump_mo(study).dump(2) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "write" && (argc == 4 || argc == 5)) {
      return write(argv[2], argv[3], argc == 5 && std::string(argv[4]) == "--v300d");
    }
    if (mode == "write-mo" && argc == 4) return write_mo(argv[2], argv[3]);
    if (mode == "continue-mo" && argc == 6) {
      return continue_mo(argv[2], argv[3], argv[4], std::stoi(argv[5]));
    }
    if (mode == "continue" && argc == 6) {
      return resume(argv[2], argv[3], argv[4], std::stoi(argv[5]));
    }
    if (mode == "write-constrained" && argc == 4) return write_constrained(argv[2], argv[3]);
    if (mode == "continue-constrained" && argc == 6) {
      return continue_constrained(argv[2], argv[3], argv[4], std::stoi(argv[5]));
    }
    std::cerr << "usage: write_study write DB JSON [--v300d] | continue DB JSON STUDY N | "
                 "write-constrained DB JSON | continue-constrained DB JSON STUDY N | "
                 "write-mo DB JSON | continue-mo DB JSON STUDY N\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "write_study: " << e.what() << "\n";
    return 1;
  }
}
