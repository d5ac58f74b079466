// The "pbt" and "pb2" scheduler sections of a sweep file: their options read, written back and
// refused with errors naming the option, their budget (the population, no "trials"), one
// objective only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "search/schedulers/pbt.h"
#include "sweep/sweep_file.h"
#include "trials/error.h"

namespace tuner {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;

const char* kSweep = R"({
  "space": {"params": {"lr": {"type": "float", "low": 0.001, "high": 0.1, "log": true}}},
  "objective": {"metric": "loss", "direction": "minimize"},
  "scheduler": {"type": "pbt", "perturbation_interval": 2},
  "job": {"kind": "command", "argv": ["python3", "t.py", "--lr", "{lr}"]}
})";

// kSweep with `patch` applied (RFC 7396: objects merge, null deletes).
std::string patched(std::string_view patch) {
  Json doc = Json::parse(kSweep);
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

TEST(SweepFilePbtTest, ReadsEveryOptionAndWritesThemBack) {
  const SweepFile s =
      parse_sweep_file(patched(R"({"scheduler": {"population_size": 6, "perturbation_interval": 3,
                                "quantile": 0.5, "resample_probability": 0.1,
                                "perturbation_factors": [0.5, 2], "synchronous": true,
                                "seed": 9, "max_steps": 30}})"),
                       "s.json");
  ASSERT_EQ(s.scheduler.type, SchedulerType::kPbt);
  const PbtOptions& o = s.scheduler.pbt;
  EXPECT_EQ(o.population_size, 6);
  EXPECT_EQ(o.perturbation_interval, 3);
  EXPECT_EQ(o.quantile, 0.5);
  EXPECT_EQ(o.resample_probability, 0.1);
  EXPECT_EQ(o.perturbation_factors, (std::vector<double>{0.5, 2}));
  EXPECT_TRUE(o.synchronous);
  EXPECT_EQ(o.seed, 9u);
  EXPECT_EQ(o.max_steps, 30);
  EXPECT_EQ(parse_sweep_file(to_json(s), s.path), s);
  auto pbt = std::dynamic_pointer_cast<PbtScheduler>(make_scheduler(s));
  ASSERT_NE(pbt, nullptr);
  EXPECT_EQ(pbt->segment_end(9), 30);
  // The study's scheduler is the same, for the API the sweep runner uses.
  EXPECT_NE(std::dynamic_pointer_cast<PbtScheduler>(make_study_options(s).scheduler), nullptr);
}

TEST(SweepFilePbtTest, DefaultsAreTheSchedulers) {
  const SweepFile s = parse_sweep_file(kSweep, "s.json");
  const PbtOptions defaults;
  EXPECT_EQ(s.scheduler.pbt.population_size, defaults.population_size);
  EXPECT_EQ(s.scheduler.pbt.quantile, defaults.quantile);
  EXPECT_EQ(s.scheduler.pbt.resample_probability, defaults.resample_probability);
  EXPECT_EQ(s.scheduler.pbt.perturbation_factors, defaults.perturbation_factors);
  EXPECT_FALSE(s.scheduler.pbt.synchronous);
  EXPECT_FALSE(s.scheduler.pbt.max_steps);
  EXPECT_FALSE(s.budget.trials);  // the population is the budget
}

TEST(SweepFilePbtTest, BadOptionsAreRefusedNamingThem) {
  EXPECT_THAT(error_of(patched(R"({"scheduler": {"perturbation_interval": null}})")),
              HasSubstr("scheduler: missing required field \"perturbation_interval\""));
  EXPECT_THAT(error_of(patched(R"({"scheduler": {"perturbation_interval": 0}})")),
              HasSubstr("scheduler.perturbation_interval"));
  EXPECT_THAT(error_of(patched(R"({"scheduler": {"population_size": 1}})")),
              HasSubstr("scheduler.population_size"));
  EXPECT_THAT(error_of(patched(R"({"scheduler": {"quantile": 0.75}})")),
              HasSubstr("scheduler.quantile"));
  EXPECT_THAT(error_of(patched(R"({"scheduler": {"resample_probability": -0.1}})")),
              HasSubstr("scheduler.resample_probability"));
  EXPECT_THAT(error_of(patched(R"({"scheduler": {"perturbation_factors": []}})")),
              HasSubstr("scheduler.perturbation_factors"));
  EXPECT_THAT(error_of(patched(R"({"scheduler": {"perturbation_factors": [1.2, 0]}})")),
              HasSubstr("scheduler.perturbation_factors[1]"));
  EXPECT_THAT(error_of(patched(R"({"scheduler": {"max_steps": 0}})")),
              HasSubstr("scheduler.max_steps"));
  EXPECT_THAT(error_of(patched(R"({"scheduler": {"interval": 2}})")), HasSubstr("interval"));
}

TEST(SweepFilePbtTest, AnEngineJobsEpochsAreTheStepsOfAMember) {
  Json doc = Json::parse(kSweep);
  doc["objective"]["metric"] = "val_accuracy";
  doc["objective"]["direction"] = "maximize";
  doc["job"] = Json::parse(R"({"kind": "engine",
      "model": {"input": [1, 28, 28], "layers": [{"type": "flatten"}, {"type": "linear", "out": 10}]},
      "data": {"dataset": "fashion-mnist", "train": 100, "validation": 50},
      "training": {"epochs": 12, "lr": "{lr}"}})");
  try {
    const SweepFile s = parse_sweep_file(doc.dump(), "s.json");
    EXPECT_EQ(s.scheduler.pbt.max_steps, 12);
    doc["scheduler"]["max_steps"] = 6;  // stated: kept
    EXPECT_EQ(parse_sweep_file(doc.dump(), "s.json").scheduler.pbt.max_steps, 6);
  } catch (const Error& e) {
    // A build without the engine refuses engine jobs at job.kind.
    EXPECT_THAT(e.what(), HasSubstr("job.kind"));
  }
}

TEST(SweepFilePbtTest, ATrialBudgetIsRefused) {
  EXPECT_THAT(error_of(patched(R"({"budget": {"trials": 20}})")),
              HasSubstr("budget.trials: a pbt or pb2 sweep's trials are its members' segments"));
  const SweepFile s = parse_sweep_file(patched(R"({"budget": {"time": "1h"}})"), "s.json");
  EXPECT_EQ(s.budget.time, std::chrono::hours(1));
}

TEST(SweepFilePbtTest, Pb2ReadsPbtsOptionsAndKappa) {
  const SweepFile s = parse_sweep_file(
      patched(R"({"scheduler": {"type": "pb2", "population_size": 6, "kappa": 2.5, "seed": 3}})"),
      "s.json");
  ASSERT_EQ(s.scheduler.type, SchedulerType::kPb2);
  EXPECT_EQ(s.scheduler.pbt.population_size, 6);
  EXPECT_EQ(s.scheduler.pbt.perturbation_interval, 2);
  EXPECT_EQ(s.scheduler.pbt.kappa, 2.5);
  EXPECT_EQ(s.scheduler.pbt.seed, 3u);
  EXPECT_FALSE(s.budget.trials);  // the population is the budget
  EXPECT_EQ(parse_sweep_file(to_json(s), s.path), s);
  auto pb2 = std::dynamic_pointer_cast<PbtScheduler>(make_scheduler(s));
  ASSERT_NE(pb2, nullptr);
  EXPECT_EQ(pb2->options().explore, PbtExplore::kBandit);
  EXPECT_EQ(pb2->options().kappa, 2.5);
  auto study = std::dynamic_pointer_cast<PbtScheduler>(make_study_options(s).scheduler);
  ASSERT_NE(study, nullptr);
  EXPECT_EQ(study->options().explore, PbtExplore::kBandit);
  // "pbt" perturbs, and its kappa stays the default.
  auto pbt =
      std::dynamic_pointer_cast<PbtScheduler>(make_scheduler(parse_sweep_file(kSweep, "s.json")));
  ASSERT_NE(pbt, nullptr);
  EXPECT_EQ(pbt->options().explore, PbtExplore::kPerturb);
  EXPECT_EQ(pbt->options().kappa, PbtOptions{}.kappa);
}

TEST(SweepFilePbtTest, Pb2BadOptionsAreRefusedNamingThem) {
  EXPECT_THAT(error_of(patched(R"({"scheduler": {"type": "pb2", "kappa": -1}})")),
              HasSubstr("scheduler.kappa"));
  EXPECT_THAT(
      error_of(patched(R"({"scheduler": {"type": "pb2", "kapa": 1}})")),
      HasSubstr("unknown field \"kapa\" for scheduler type \"pb2\" (did you mean \"kappa\"?)"));
  EXPECT_THAT(error_of(patched(R"({"scheduler": {"type": "pb2", "quantile": 0.75}})")),
              HasSubstr("scheduler.quantile"));
  EXPECT_THAT(error_of(patched(R"({"scheduler": {"type": "pb2", "perturbation_interval": null}})")),
              HasSubstr("scheduler: missing required field \"perturbation_interval\""));
  // kappa is PB2's: a pbt section refuses it.
  EXPECT_THAT(error_of(patched(R"({"scheduler": {"kappa": 1}})")), HasSubstr("kappa"));
  EXPECT_THAT(error_of(patched(R"({"scheduler": {"type": "pb2"}, "budget": {"trials": 4}})")),
              HasSubstr("budget.trials"));
}

TEST(SweepFilePbtTest, SeveralObjectivesAreRefused) {
  Json doc = Json::parse(kSweep);
  doc.erase("objective");
  doc["objectives"] = {{{"metric", "loss"}, {"direction", "minimize"}},
                       {{"metric", "ms"}, {"direction", "minimize"}}};
  EXPECT_THAT(error_of(doc.dump()), HasSubstr("scheduler"));
  doc["scheduler"]["type"] = "pb2";
  EXPECT_THAT(error_of(doc.dump()), HasSubstr("\"pb2\" judges one"));
}

}  // namespace
}  // namespace tuner
