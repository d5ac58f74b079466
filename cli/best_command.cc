// tuner best --study NAME --storage PATH [--json]: the best COMPLETE trial of a study; in a
// constrained study, the best feasible one (every constraint value <= 0). A study of several
// objectives has no single best trial: its Pareto front (the feasible COMPLETE trials no other
// dominates) is printed instead, with --json as a JSON array.
#include <iostream>

#include "cli/command.h"
#include "cli/study_view.h"
#include "search/pareto.h"
#include "sweep/sweep_runner.h"
#include "trials/constraints.h"
#include "trials/error.h"
#include "trials/param_value.h"

namespace tuner::cli {

namespace {

// The front of a study of several objectives (pareto_front_trials), one trial a line, or as a
// JSON array.
int print_front(const StudyRecord& study, const std::vector<FrozenTrial>& complete, bool json) {
  const std::vector<FrozenTrial> front = pareto_front_trials(complete, study.directions);
  if (json) {
    std::cout << "[";
    for (size_t i = 0; i < front.size(); ++i) std::cout << (i ? ", " : "") << trial_json(front[i]);
    std::cout << "]\n";
    return kExitOk;
  }
  if (front.empty()) {
    throw Error(ErrorCode::kNotFound,
                "study '" + study.name + "' has no " +
                    (complete.empty() ? std::string("COMPLETE") : "feasible") + " trial yet");
  }
  std::string directions;
  for (StudyDirection d : study.directions) {
    directions += (directions.empty() ? "" : ", ") + std::string(to_string(d));
  }
  std::cout << "Pareto front of study '" << study.name << "' (" << directions
            << "): " << front.size() << " of " << complete.size() << " COMPLETE trials\n";
  for (const FrozenTrial& t : front) {
    std::cout << "trial " << t.number << ": values";
    for (double v : t.values) std::cout << " " << v;
    std::cout << "\n";
    for (const auto& [param, value] : t.params) {
      std::cout << "  " << param << " = " << to_string(value) << "\n";
    }
  }
  return kExitOk;
}

constexpr Flag kFlags[] = {
    kStorageFlag,
    kStudyFlag,
    {"--json", "", "print the trial (or the Pareto front, as an array) as JSON"},
};

}  // namespace

int run_best(const std::vector<std::string>& args) {
  Flags flags(args, kFlags, "best");
  const std::string path = flags.require("--storage");
  const std::string name = flags.require("--study");
  std::unique_ptr<Storage> storage = open_read_only(path);
  const StudyRecord study = find_study(*storage, name, path);
  const std::vector<FrozenTrial> trials =
      storage->get_trials(study.study_id, {.states = std::vector{TrialState::kComplete}});
  if (study.directions.size() != 1) return print_front(study, trials, flags.has("--json"));
  const FrozenTrial* best = best_feasible(trials, study.directions[0]);
  if (best == nullptr && !trials.empty()) {
    throw Error(ErrorCode::kNotFound,
                "study '" + name + "' has no feasible trial yet: each of its " +
                    std::to_string(trials.size()) +
                    " COMPLETE trials violates a constraint (a constraint value > 0; 'tuner "
                    "trials' shows them)");
  }
  if (best == nullptr) {
    throw Error(ErrorCode::kNotFound, "study '" + name + "' has no COMPLETE trial yet");
  }
  if (flags.has("--json")) {
    std::cout << trial_json(*best) << "\n";
    return kExitOk;
  }
  std::cout << "trial " << best->number << ": value " << best->values[0] << "\n";
  if (has_constraints(*best)) {
    std::cout << "  constraints:";
    for (const ConstraintValue& c : constraints_of(*best)) std::cout << " " << c.value;
    std::cout << " (feasible; " << count_infeasible(trials) << " of " << trials.size()
              << " COMPLETE trials are not)\n";
  }
  for (const auto& [param, value] : best->params) {
    std::cout << "  " << param << " = " << to_string(value) << "\n";
  }
  // A PBT segment: the params of each segment of its schedule.
  const std::vector<std::string> schedule =
      pbt_schedule(storage->get_trials(study.study_id), best->number);
  if (!schedule.empty()) std::cout << "  schedule:\n";
  for (const std::string& line : schedule) std::cout << "    " << line << "\n";
  // The job's final metrics (user attributes) and, for a sweep's engine job, its model.
  for (const auto& [key, json] : best->user_attrs) std::cout << "  " << key << ": " << json << "\n";
  if (study.system_attrs.contains(kSweepAttr)) {
    if (auto model = trial_model_path(stored_sweep(name, path), best->number)) {
      std::cout << "  model: " << *model << "\n";
    }
  }
  return kExitOk;
}

extern const Command kBestCommand = {
    .name = "best",
    .synopsis = "best --storage PATH --study NAME [--json]",
    .description =
        "the best COMPLETE trial and its parameters (with\n"
        "constraints: the best feasible one)",
    .flags = kFlags,
    .run = &run_best,
};

}  // namespace tuner::cli
