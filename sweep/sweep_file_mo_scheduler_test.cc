// The scheduler section of a sweep of several objectives: "mo_asha", and "median" / "percentile"
// with "scalarization"; the others refused, and the options of several objectives refused with
// one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "search/schedulers/mo_asha.h"
#include "search/schedulers/scalarized_stopping.h"
#include "sweep/sweep_file.h"
#include "trials/error.h"

namespace tuner {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;

const char* kTwoObjectives = R"({
  "space": {"params": {"lr": {"type": "float", "low": 0.001, "high": 0.1, "log": true}}},
  "objectives": [{"metric": "accuracy", "direction": "maximize"},
                 {"metric": "latency_ms", "direction": "minimize"}],
  "budget": {"trials": 10},
  "job": {"kind": "command", "argv": ["python3", "t.py", "--lr", "{lr}"]}
})";

// kTwoObjectives with `patch` applied (RFC 7396: objects merge, null deletes).
std::string patched(std::string_view patch) {
  Json doc = Json::parse(kTwoObjectives);
  doc.merge_patch(Json::parse(patch));
  return doc.dump();
}

// The same with one objective.
std::string one_objective(std::string_view patch) {
  Json doc = Json::parse(kTwoObjectives);
  doc.erase("objectives");
  doc["objective"] = {{"metric", "accuracy"}, {"direction", "maximize"}};
  doc.merge_patch(Json::parse(patch));
  return doc.dump();
}

std::string error_of(const std::string& text) {
  try {
    parse_sweep_file(text, "s.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "";
}

TEST(SweepFileMoSchedulerTest, MoAshaIsTakenWithSeveralObjectives) {
  const SweepFile s = parse_sweep_file(
      patched(R"({"scheduler": {"type": "mo_asha", "reduction_factor": 2, "max_resource": 8}})"),
      "s.json");
  EXPECT_EQ(s.scheduler.type, SchedulerType::kMoAsha);
  EXPECT_EQ(s.scheduler.mo_asha.reduction_factor, 2);
  const auto scheduler = std::dynamic_pointer_cast<MoAshaScheduler>(make_scheduler(s));
  ASSERT_NE(scheduler, nullptr);
  EXPECT_EQ(scheduler->rungs(), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(parse_sweep_file(to_json(s), s.path), s);  // written back as read
}

TEST(SweepFileMoSchedulerTest, MedianTakesScalarizationWithSeveralObjectives) {
  for (const char* type : {"median", "percentile"}) {
    const std::string extra = std::string(type) == "percentile" ? R"("percentile": 25, )" : "";
    const SweepFile s =
        parse_sweep_file(patched(R"({"scheduler": {"type": ")" + std::string(type) + "\", " +
                                 extra + R"("scalarization": {"weights": [1, 0.01]}}})"),
                         "s.json");
    EXPECT_EQ(s.scheduler.scalarization_weights, (std::vector<double>{1, 0.01}));
    const auto scheduler = std::dynamic_pointer_cast<ScalarizedStopping>(make_scheduler(s));
    ASSERT_NE(scheduler, nullptr) << type;
    EXPECT_EQ(scheduler->weights(), (std::vector<double>{1, 0.01}));
    EXPECT_EQ(parse_sweep_file(to_json(s), s.path), s);
    const StudyOptions options = make_study_options(s);
    EXPECT_TRUE(options.scheduler->judges_objectives(options.directions.size()));
  }
}

TEST(SweepFileMoSchedulerTest, RefusalsNameTheFieldAndWhatWorks) {
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {patched(R"({"scheduler": {"type": "median"}})"),
            "s.json: scheduler: early stopping judges trials by one metric, but this sweep has 2 "
            "objectives: give \"scalarization\": {\"weights\": [...]} (one weight per objective) "
            "to judge their weighted sum, or use \"mo_asha\""},
           {patched(R"({"scheduler": {"type": "asha"}})"),
            "s.json: scheduler: early stopping judges trials by one metric, but this sweep has 2 "
            "objectives: \"asha\" judges one; use \"mo_asha\", or \"median\" or \"percentile\" "
            "with \"scalarization\", or remove \"scheduler\""},
           {patched(R"({"scheduler": {"type": "hyperband", "max_resource": 9}})"),
            "\"hyperband\" judges one; use \"mo_asha\""},
           {patched(R"({"scheduler": {"type": "patience", "patience": 3}})"),
            "\"patience\" judges one; use \"mo_asha\""},
           {patched(R"({"scheduler": {"type": "median", "scalarization": {"weights": [1]}}})"),
            "s.json: scheduler.scalarization.weights: has 1 weight(s), but this sweep has 2 "
            "objectives: give one per objective, in their order"},
           {patched(R"({"scheduler": {"type": "median", "scalarization": {"weights": [1, -1]}}})"),
            "s.json: scheduler.scalarization.weights[1]: expected a number >= 0"},
           {patched(R"({"scheduler": {"type": "median", "scalarization": {"weights": [0, 0]}}})"),
            "s.json: scheduler.scalarization.weights: every weight is 0: give at least one > 0"},
           {patched(R"({"scheduler": {"type": "median", "scalarization": [1, 1]}})"),
            "s.json: scheduler.scalarization: expected an object"},
           {patched(R"({"scheduler": {"type": "median", "scalarization": {"weight": [1, 1]}}})"),
            "s.json: scheduler.scalarization: unknown field \"weight\""},
           {patched(R"({"scheduler": {"type": "mo_asha", "scalarization": {"weights": [1, 1]}}})"),
            "s.json: scheduler: unknown field \"scalarization\""},
           {patched(R"({"scheduler": {"type": "mo_asha", "reduction_factor": 1}})"),
            "s.json: scheduler.reduction_factor: expected an integer >= 2"},
           {one_objective(R"({"scheduler": {"type": "mo_asha"}})"),
            "s.json: scheduler.type: \"mo_asha\" ranks several objectives, but this sweep has "
            "one: use \"asha\""},
           {one_objective(
                R"({"scheduler": {"type": "median", "scalarization": {"weights": [1]}}})"),
            "s.json: scheduler.scalarization: weighs several objectives, but this sweep has one: "
            "remove it"},
       }) {
    EXPECT_THAT(error_of(text), HasSubstr(expected)) << text;
  }
  // One objective keeps the plain rules.
  EXPECT_EQ(error_of(one_objective(R"({"scheduler": {"type": "median"}})")), "");
}

// An engine job reports its model's size and latency at every epoch, so MO-ASHA can judge a
// sweep of accuracy against them; what it knows only after its epochs (the test split's
// figures, the best epoch) is refused with a scheduler.
TEST(SweepFileMoSchedulerTest, AnEngineSweepOfAccuracyAgainstLatencyAndSizeTakesMoAsha) {
  std::ifstream in(std::filesystem::path(TUNER_SOURCE_DIR) / "examples" / "sweeps" /
                   "fashion_mnist_tradeoff.json");
  Json doc = Json::parse(in);
  doc["scheduler"] = {{"type", "mo_asha"}, {"max_resource", 4}};
  const SweepFile s = parse_sweep_file(doc.dump(), "s.json");
  EXPECT_EQ(s.scheduler.type, SchedulerType::kMoAsha);
  ASSERT_EQ(s.objectives.size(), 3u);
  EXPECT_EQ(s.objectives[1].metric, "latency_ms");
  EXPECT_EQ(s.objectives[2].metric, "num_params");
  doc["scheduler"] = {{"type", "median"}, {"scalarization", {{"weights", {1, 0.1, 1e-6}}}}};
  EXPECT_EQ(error_of(doc.dump()), "");

  doc["objectives"][1] = {{"metric", "test_accuracy"}, {"direction", "maximize"}};
  EXPECT_THAT(error_of(doc.dump()),
              HasSubstr("s.json: objectives[1].metric: \"test_accuracy\" is known only after the "
                        "last epoch, so the scheduler cannot judge it at each epoch"));
  doc.erase("scheduler");  // judged once, at the end: fine without a scheduler
  EXPECT_EQ(error_of(doc.dump()), "");
}

}  // namespace
}  // namespace tuner
