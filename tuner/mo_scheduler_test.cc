// Early stopping in a study of several objectives, in-process: Trial::report of several values,
// the schedulers made for them, and the refusal of the others.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "search/samplers/random_sampler.h"
#include "search/schedulers/asha.h"
#include "search/schedulers/median_stopping.h"
#include "search/schedulers/mo_asha.h"
#include "search/schedulers/scalarized_stopping.h"
#include "storage/in_memory_storage.h"
#include "trials/error.h"
#include "tuner/study.h"
#include "tuner/trial.h"

namespace tuner {
namespace {

using ::testing::HasSubstr;

constexpr auto kMin = StudyDirection::kMinimize;
constexpr auto kMax = StudyDirection::kMaximize;

StudyOptions two_objectives(std::shared_ptr<Storage> storage,
                            std::shared_ptr<Scheduler> scheduler) {
  StudyOptions options;
  options.name = "accuracy-latency";
  options.directions = {kMax, kMin};
  options.storage = std::move(storage);
  options.scheduler = std::move(scheduler);
  options.sampler = std::make_shared<RandomSampler>();
  options.seed = 7;
  options.heartbeat_interval = std::nullopt;
  options.load_if_exists = true;
  return options;
}

// Trial n's accuracy (maximized) and latency (minimized) at `step`: every trial learns at its
// own rate; latency is fixed per trial and traded against the rate.
std::vector<double> values_of(int n, int64_t step) {
  const double rate = 0.05 + 0.03 * ((n * 7) % 11);
  const double latency = 5.0 + 4.0 * ((n * 5) % 9) - 2.0 * ((n * 7) % 11);
  return {1.0 - std::exp(-rate * static_cast<double>(step)), latency};
}

struct Outcome {
  TrialState state;
  int64_t last_step;
  bool operator==(const Outcome&) const = default;
};

// Runs trials [first, last) of `study` for up to 27 steps each, stopping when told.
void run_trials(Study& study, int first, int last, std::vector<Outcome>& outcomes) {
  for (int n = first; n < last; ++n) {
    Trial trial = study.ask();
    EXPECT_EQ(trial.number(), n);
    int64_t step = 1;
    for (; step <= 27; ++step) {
      trial.report(step, values_of(n, step));
      if (trial.should_stop()) break;
    }
    const int64_t last_step = std::min<int64_t>(step, 27);
    FrozenTrial told = trial.stop_requested() ? study.tell(trial, TrialState::kPruned)
                                              : study.tell(trial, values_of(n, 27));
    outcomes.push_back({told.state, last_step});
  }
}

// A study continued by another Study object (a resumed sweep) reads every trial's objective
// values from storage, and so decides as the object that ran them would have.
TEST(MoSchedulerStudyTest, AResumedStudyDecidesTheSame) {
  for (auto make :
       {+[]() -> std::shared_ptr<Scheduler> {
          return std::make_shared<MoAshaScheduler>(
              MoAshaOptions{.reduction_factor = 3, .max_resource = 27});
        },
        +[]() -> std::shared_ptr<Scheduler> {
          return std::make_shared<ScalarizedStopping>(
              std::make_shared<MedianStopping>(MedianStoppingOptions{.n_startup_trials = 2}),
              std::vector<double>{1.0, 0.02});
        }}) {
    std::vector<Outcome> straight;
    {
      Study study = Study::create(two_objectives(std::make_shared<InMemoryStorage>(), make()));
      run_trials(study, 0, 16, straight);
    }
    std::vector<Outcome> resumed;
    auto storage = std::make_shared<InMemoryStorage>();
    {
      Study study = Study::create(two_objectives(storage, make()));
      run_trials(study, 0, 7, resumed);
    }
    Study study = Study::load(two_objectives(storage, make()));
    run_trials(study, 7, 16, resumed);
    ASSERT_EQ(resumed.size(), straight.size());
    int pruned = 0;
    for (size_t i = 0; i < straight.size(); ++i) {
      EXPECT_EQ(resumed[i], straight[i]) << "trial " << i;
      pruned += straight[i].state == TrialState::kPruned;
    }
    // Both outcomes happen, or the comparison shows little.
    EXPECT_GT(pruned, 2);
    EXPECT_LT(pruned, 15);
  }
}

// Without "study:metric_names", the values are stored as Optuna names unnamed objectives; the
// first is the intermediate value. A NaN is kept as a metric and not as an intermediate value.
TEST(MoSchedulerStudyTest, ReportOfSeveralValuesStoresEachAsAStepMetric) {
  auto storage = std::make_shared<InMemoryStorage>();
  Study study = Study::create(two_objectives(storage, std::make_shared<MoAshaScheduler>()));
  Trial trial = study.ask();
  trial.report(1, {0.5, 12.0});
  trial.report(2, {std::nan(""), 11.0});
  EXPECT_THAT(
      [&] {
        try {
          trial.report(3, std::vector<double>{0.5});
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
          return std::string(e.what());
        }
        return std::string("no error");
      }(),
      HasSubstr("report at step 3 has 1 value(s) for a study of 2 objective(s)"));
  const auto steps = storage->get_step_metrics(study.id()).at(trial.id());
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].metrics.at("values_0"), 0.5);
  EXPECT_EQ(steps[0].metrics.at("values_1"), 12.0);
  EXPECT_TRUE(std::isnan(steps[1].metrics.at("values_0")));
  const FrozenTrial stored = storage->get_trial(trial.id());
  EXPECT_EQ(stored.intermediate_values, (std::map<int64_t, double>{{1, 0.5}}));
}

// The study's metric names, when it has them, name the step metrics.
TEST(MoSchedulerStudyTest, ReportUsesTheStudysMetricNames) {
  auto storage = std::make_shared<InMemoryStorage>();
  Study study = Study::create(two_objectives(storage, std::make_shared<MoAshaScheduler>()));
  storage->set_study_system_attr(study.id(), "study:metric_names", R"(["accuracy", "latency_ms"])");
  Trial trial = study.ask();
  trial.report(1, {0.5, 12.0});
  const auto steps = storage->get_step_metrics(study.id()).at(trial.id());
  EXPECT_EQ(steps.at(0).metrics.at("accuracy"), 0.5);
  EXPECT_EQ(steps.at(0).metrics.at("latency_ms"), 12.0);
}

TEST(MoSchedulerStudyTest, OnlySchedulersForSeveralObjectivesAreTaken) {
  auto refusal = [](StudyOptions options) -> std::string {
    try {
      Study::create(std::move(options));
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return e.what();
    }
    return "no error";
  };
  auto storage = std::make_shared<InMemoryStorage>();
  EXPECT_THAT(refusal(two_objectives(storage, std::make_shared<AshaScheduler>())),
              HasSubstr("has 2 objectives, and a scheduler judges trials by one: give "
                        "MoAshaScheduler, a ScalarizedStopping"));
  auto scalarized = [](std::vector<double> weights) {
    return std::make_shared<ScalarizedStopping>(std::make_shared<MedianStopping>(),
                                                std::move(weights));
  };
  // Weights that do not number the objectives.
  EXPECT_THAT(refusal(two_objectives(storage, scalarized({1, 1, 1}))),
              HasSubstr("has 2 objectives"));
  StudyOptions one = two_objectives(storage, scalarized({1, 1}));
  one.name = "one";
  one.directions = {kMin};
  EXPECT_THAT(refusal(one), HasSubstr("has one objective, and its scheduler judges several"));
  EXPECT_EQ(refusal(two_objectives(storage, scalarized({1, 0.5}))), "no error");
  EXPECT_EQ(refusal(two_objectives(storage, std::make_shared<MoAshaScheduler>())), "no error");
}

}  // namespace
}  // namespace tuner
