#include "sweep/sweep_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "storage/in_memory_storage.h"
#include "sweep/sweep_file.h"
#include "trials/error.h"
#include "trials/system_attrs.h"

namespace tuner {
namespace {

using ::testing::HasSubstr;

SweepFile sweep_with(const std::string& objective, const std::string& sampler = "") {
  return parse_sweep_file(R"({
    "name": "s", "storage": "s.db",
    "space": {"params": {"x": {"type": "float", "low": 0, "high": 1}}},
    "objective": )" + objective +
                              R"(,)" + sampler + R"(
    "budget": {"trials": 3},
    "job": {"kind": "command", "argv": ["true", "{x}"]}
  })",
                          "sweep.json");
}

const char* kMaximizeAcc = R"({"metric": "acc", "direction": "maximize"})";

std::string open_error(const SweepFile& sweep, const std::shared_ptr<Storage>& storage) {
  try {
    open_sweep(sweep, storage);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "";
}

// Regression: "minimize" on a MAXIMIZE study ran, printed the worst trial as the best and
// exported the worst model as champion.
TEST(OpenSweep, RefusesADirectionThatContradictsTheStudy) {
  auto storage = std::make_shared<InMemoryStorage>();
  open_sweep(sweep_with(kMaximizeAcc), storage);
  EXPECT_EQ(open_error(sweep_with(R"({"metric": "acc", "direction": "minimize"})"), storage),
            "sweep.json: objective.direction is \"minimize\", but study 's' in s.db has "
            "direction \"maximize\"; to start a new study instead, give it another name (\"name\" "
            "in the file, or --study NAME)");
}

// Regression: a changed metric appended another metric's values and overwrote the names.
TEST(OpenSweep, RefusesAMetricThatContradictsTheStudy) {
  auto storage = std::make_shared<InMemoryStorage>();
  open_sweep(sweep_with(kMaximizeAcc), storage);
  EXPECT_THAT(open_error(sweep_with(R"({"metric": "f1", "direction": "maximize"})"), storage),
              HasSubstr("sweep.json: objective.metric is \"f1\", but study 's' in s.db has the "
                        "metric \"acc\""));
  EXPECT_NO_THROW(open_sweep(sweep_with(kMaximizeAcc), storage));
}

TEST(OpenSweep, RefusesASeedThatContradictsTheStudy) {
  auto storage = std::make_shared<InMemoryStorage>();
  open_sweep(sweep_with(kMaximizeAcc, R"("sampler": {"type": "random", "seed": 3},)"), storage);
  EXPECT_THAT(
      open_error(sweep_with(kMaximizeAcc, R"("sampler": {"type": "random", "seed": 4},)"), storage),
      HasSubstr("sweep.json: sampler.seed is 4, but study 's' in s.db has seed 3"));
  // No seed in the file: the study's own.
  EXPECT_EQ(open_sweep(sweep_with(kMaximizeAcc), storage).study.seed(), 3u);
}

// Regression: the sweep's seed was ignored for a study Optuna created (seed 0, nothing
// stored).
TEST(OpenSweep, AStudyOptunaMadeTakesTheSweepsSeed) {
  auto storage = std::make_shared<InMemoryStorage>();
  storage->create_study("s", {StudyDirection::kMaximize});
  const SweepFile seeded = sweep_with(kMaximizeAcc, R"("sampler": {"type": "random", "seed": 9},)");
  EXPECT_EQ(open_sweep(seeded, storage).study.seed(), 9u);
  EXPECT_EQ(open_sweep(seeded, storage).study.seed(), 9u);
}

// A file without a sampler type makes new studies with the default (auto); it continues a stored
// study with the sampler that study was created with.
TEST(OpenSweep, AStudyKeepsTheSamplerItWasCreatedWith) {
  auto storage = std::make_shared<InMemoryStorage>();
  auto type_of_opened = [&](const std::string& name, const std::string& sampler = "") {
    SweepFile sweep = sweep_with(kMaximizeAcc, sampler);
    sweep.name = name;
    return open_sweep(sweep, storage).sweep.sampler.type;
  };
  EXPECT_EQ(type_of_opened("s"), SamplerType::kAuto);
  EXPECT_EQ(type_of_opened("s"), SamplerType::kAuto);
  type_of_opened("t", R"("sampler": {"type": "random"},)");
  EXPECT_EQ(type_of_opened("t"), SamplerType::kRandom);
  // A study made before tuner stored its sampler was TPE's (the default then).
  storage->create_study("old", {StudyDirection::kMaximize});
  EXPECT_EQ(type_of_opened("old"), SamplerType::kTpe);
  // A type in the file is the file's choice.
  EXPECT_EQ(type_of_opened("old", R"("sampler": {"type": "auto"},)"), SamplerType::kAuto);
}

// Regression: with two trials of the same best value, the sweep's last line named the one that
// finished first, and the export the lower number (the storage's best trial).
TEST(SweepProgress, ATieForTheBestValueGoesToTheLowerTrialNumber) {
  SweepProgress p;
  for (const int64_t number : {3, 1, 2}) {
    FrozenTrial t;
    t.number = number;
    t.state = TrialState::kComplete;
    t.values = {number == 2 ? 0.9 : 0.5};
    count_trial(p, t, StudyDirection::kMinimize);
  }
  EXPECT_EQ(p.best_number, 1);
  EXPECT_EQ(p.best_value, 0.5);
}

// Regression: after a resume re-ran a lost trial, the counter said "31/30 done": the lost
// attempt's FAIL and its re-run were both counted, though the budget counts them as one.
TEST(SweepProgress, AReRunTakesItsLostAttemptsPlace) {
  SweepProgress p;
  FrozenTrial lost;
  lost.number = 4;
  lost.state = TrialState::kFail;
  FrozenTrial rerun;
  rerun.number = 30;
  rerun.state = TrialState::kComplete;
  rerun.values = {0.5};
  rerun.system_attrs[kFailedTrialAttr] = "4";
  count_trial(p, lost, StudyDirection::kMinimize);
  EXPECT_EQ(p.failed, 1);
  count_trial(p, rerun, StudyDirection::kMinimize);
  EXPECT_EQ(p.complete + p.pruned + p.failed, 1);
  EXPECT_EQ(p.reruns, 1);
  EXPECT_EQ(p.best_number, 30);
  // A re-run that is lost too stays one FAIL.
  FrozenTrial lost_again = rerun;
  lost_again.state = TrialState::kFail;
  lost_again.values.clear();
  SweepProgress q;
  count_trial(q, lost, StudyDirection::kMinimize);
  count_trial(q, lost_again, StudyDirection::kMinimize);
  EXPECT_EQ(q.failed, 1);
}

// Regression: a preempted or lost trial counted as done while its re-run was still to come.
TEST(SweepProgress, ALostAttemptIsNotDoneUntilItsRerunEnds) {
  SweepProgress p;
  FrozenTrial lost;
  lost.number = 4;
  lost.state = TrialState::kFail;
  lost.system_attrs[kRerunMadeAttr] = "true";
  count_trial(p, lost, StudyDirection::kMinimize);
  EXPECT_EQ(p.complete + p.pruned + p.failed, 0);
  EXPECT_EQ(p.awaiting_rerun, 1);
  // Its re-run is lost too and run again: still one place waiting.
  FrozenTrial lost_rerun = lost;
  lost_rerun.number = 9;
  lost_rerun.system_attrs[kFailedTrialAttr] = "4";
  count_trial(p, lost_rerun, StudyDirection::kMinimize);
  EXPECT_EQ(p.awaiting_rerun, 1);
  FrozenTrial last;
  last.number = 12;
  last.state = TrialState::kComplete;
  last.values = {0.25};
  last.system_attrs[kFailedTrialAttr] = "4";
  count_trial(p, last, StudyDirection::kMinimize);
  EXPECT_EQ(p.complete, 1);
  EXPECT_EQ(p.failed, 0);
  EXPECT_EQ(p.awaiting_rerun, 0);
  EXPECT_EQ(p.reruns, 1);
}

}  // namespace
}  // namespace tuner
