// Constrained optimization through the Study API (docs/samplers.md, "Constraints"): the values a
// trial sets are stored as Optuna stores them, best_trial() and best_trials() skip infeasible
// trials, and a NaN or infinite constraint value fails its trial.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "search/samplers/random_sampler.h"
#include "storage/sqlite_storage.h"
#include "trials/constraints.h"
#include "trials/error.h"
#include "tuner/study.h"

namespace tuner {
namespace {

StudyOptions random_study() {
  StudyOptions options;
  options.name = "constrained";
  options.sampler = std::make_shared<RandomSampler>();
  options.seed = 5;
  return options;
}

// One trial told `value` with `constraints`.
FrozenTrial run(Study& study, double value, std::vector<double> constraints) {
  Trial t = study.ask();
  t.suggest_float("x", 0, 1);
  t.set_constraints(std::move(constraints));
  return study.tell(t, value);
}

TEST(StudyConstraints, ValuesRoundTripThroughSqliteAsOptunasList) {
  const std::filesystem::path path =
      std::filesystem::path(testing::TempDir()) / "study_constraints_round_trip.db";
  std::filesystem::remove(path);
  const std::vector<double> values = {0.1, -2.5, 1e-300, 12345.678};
  {
    StudyOptions options = random_study();
    options.storage = std::make_shared<SqliteStorage>(path.string());
    Study study = Study::create(options);
    FrozenTrial told = run(study, 1.0, values);
    EXPECT_EQ(told.system_attrs.at(kConstraintsAttr), constraints_to_json(values));
  }
  StudyOptions options = random_study();
  options.storage = std::make_shared<SqliteStorage>(path.string());
  Study study = Study::load(options);
  const FrozenTrial read = study.trials().at(0);
  // The stored text is a JSON list, as Optuna's constraints_func writes it.
  EXPECT_EQ(read.system_attrs.at("constraints").front(), '[');
  const std::vector<ConstraintValue> back = constraints_of(read);
  ASSERT_EQ(back.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(back[i].value, values[i]);
  EXPECT_FALSE(is_feasible(read));
  std::filesystem::remove(path);
}

TEST(StudyConstraints, BestTrialIsTheBestFeasibleOne) {
  Study study = Study::create(random_study());
  run(study, 5.0, {-1.0, 0.0});  // feasible
  run(study, 1.0, {0.5, -1.0});  // better, infeasible
  run(study, 3.0, {-0.1});       // feasible, the best of those
  run(study, 0.5, {});           // no constraint values: feasible, and the best
  EXPECT_EQ(study.best_trial().number, 3);
  // Without that unconstrained trial the answer is trial 2, not the infeasible trial 1.
  Study other = Study::create([] {
    StudyOptions o = random_study();
    o.name = "other";
    return o;
  }());
  run(other, 5.0, {-1.0, 0.0});
  run(other, 1.0, {0.5, -1.0});
  run(other, 3.0, {-0.1});
  EXPECT_EQ(other.best_trial().number, 2);
  std::vector<FrozenTrial> front = other.best_trials();
  ASSERT_EQ(front.size(), 1u);
  EXPECT_EQ(front[0].number, 2);
}

TEST(StudyConstraints, MaximizeSkipsInfeasibleTrialsToo) {
  StudyOptions options = random_study();
  options.directions = {StudyDirection::kMaximize};
  Study study = Study::create(options);
  run(study, 1.0, {-1.0});
  run(study, 9.0, {1.0});
  run(study, 4.0, {-3.0});
  EXPECT_EQ(study.best_trial().number, 2);
}

TEST(StudyConstraints, NoFeasibleTrialSaysSo) {
  Study study = Study::create(random_study());
  run(study, 1.0, {2.0, -1.0});
  run(study, 2.0, {0.25, 0.5});
  try {
    study.best_trial();
    ADD_FAILURE() << "an infeasible trial was returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_EQ(std::string(e.what()),
              "study 'constrained' has no feasible COMPLETE trial yet: each of its 2 COMPLETE "
              "trials has a constraint value > 0 (the least violation is trial 1's, by 0.75)");
  }
  EXPECT_TRUE(study.best_trials().empty());
}

TEST(StudyConstraints, NanOrInfiniteConstraintFailsTheTrialWithTheReason) {
  Study study = Study::create(random_study());
  int calls = 0;
  OptimizeOptions o;
  o.n_trials = 3;
  study.optimize(
      [&](Trial& t) {
        ++calls;
        t.suggest_float("x", 0, 1);
        if (calls == 1) t.set_constraints({-1.0, std::nan("")});
        if (calls == 2) t.set_constraints({HUGE_VAL});
        if (calls == 3) t.set_constraints({-1.0});
        return 1.0;
      },
      o);
  const std::vector<FrozenTrial> all = study.trials();
  EXPECT_EQ(all[0].state, TrialState::kFail);
  EXPECT_EQ(all[0].system_attrs.at("fail_reason"),
            "\"constraint 1 of 2 is nan (Trial::set_constraints); a constraint value must be a "
            "finite number\"");
  EXPECT_FALSE(all[0].system_attrs.contains(kConstraintsAttr));
  EXPECT_EQ(all[1].state, TrialState::kFail);
  EXPECT_EQ(all[1].system_attrs.at("fail_reason"),
            "\"constraint 0 of 1 is inf (Trial::set_constraints); a constraint value must be a "
            "finite number\"");
  EXPECT_EQ(all[2].state, TrialState::kComplete);
  EXPECT_EQ(study.best_trial().number, 2);
}

TEST(StudyConstraints, PrunedTrialsKeepTheirConstraintsAndFailedOnesDoNot) {
  Study study = Study::create(random_study());
  Trial pruned = study.ask();
  pruned.report(1, 0.5);
  pruned.set_constraints({0.5});
  EXPECT_EQ(study.tell(pruned, TrialState::kPruned).system_attrs.at(kConstraintsAttr), "[0.5]");
  Trial failed = study.ask();
  failed.set_constraints({0.5});
  EXPECT_FALSE(
      study.tell(failed, TrialState::kFail, "crashed").system_attrs.contains(kConstraintsAttr));
  EXPECT_THROW(failed.set_constraints({1.0}), Error);  // told already
}

TEST(StudyConstraints, ConstraintsWrittenByOptunasNamedFormAreRead) {
  // Optuna 5's trial.set_constraint("latency", 0.3) writes "constraints:latency".
  Study study = Study::create(random_study());
  Trial a = study.ask();
  study.storage().set_trial_system_attr(a.id(), "constraints:latency", "0.3");
  study.tell(a, 1.0);
  Trial b = study.ask();
  study.storage().set_trial_system_attr(b.id(), "constraints:latency", "-0.3");
  study.tell(b, 2.0);
  EXPECT_EQ(study.best_trial().number, 1);
}

}  // namespace
}  // namespace tuner
