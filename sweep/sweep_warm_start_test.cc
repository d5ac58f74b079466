// A sweep file's "warm_start" (docs/sweep_file.md): read, resolved against the file's directory,
// written back, refused when malformed, and given to the study with the objectives' metrics.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sweep/sweep_file.h"
#include "trials/error.h"

namespace tuner {
namespace {

using ::testing::HasSubstr;

const char* kMinimal = R"({
  "space": {"params": {"lr": {"type": "float", "low": 0.001, "high": 0.1, "log": true}}},
  "objective": {"metric": "loss", "direction": "minimize"},
  "budget": {"trials": 10},
  "job": {"kind": "command", "argv": ["python3", "t.py", "--lr", "{lr}"]}
})";

std::string with_warm_start(const std::string& warm_start) {
  nlohmann::json doc = nlohmann::json::parse(kMinimal);
  doc["warm_start"] = nlohmann::json::parse(warm_start);
  return doc.dump();
}

std::string error_of(const std::string& text) {
  try {
    parse_sweep_file(text, "/sweeps/b.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SweepWarmStart, ReadResolvedAndWrittenBack) {
  const SweepFile sweep = parse_sweep_file(
      with_warm_start(R"({"study": "a", "storage": "old/a.db", "allow_other_objective": true})"),
      "/sweeps/b.json");
  ASSERT_TRUE(sweep.warm_start);
  EXPECT_EQ(sweep.warm_start->study, "a");
  EXPECT_EQ(sweep.warm_start->storage_path, "/sweeps/old/a.db");
  EXPECT_TRUE(sweep.warm_start->allow_other_objective);
  const nlohmann::json written = nlohmann::json::parse(to_json(sweep));
  EXPECT_EQ(written["warm_start"]["storage"], "old/a.db");
  EXPECT_EQ(parse_sweep_file(to_json(sweep), sweep.path), sweep);

  const StudyOptions options = make_study_options(sweep);
  ASSERT_TRUE(options.warm_start);
  EXPECT_EQ(options.warm_start->storage_path, "/sweeps/old/a.db");
  EXPECT_EQ(options.warm_start->metric_names, std::vector<std::string>{"loss"});
}

TEST(SweepWarmStart, StorageDefaultsToTheSweepsOwn) {
  const SweepFile sweep = parse_sweep_file(with_warm_start(R"({"study": "a"})"), "/sweeps/b.json");
  ASSERT_TRUE(sweep.warm_start);
  EXPECT_EQ(sweep.warm_start->storage_path, "");
  EXPECT_FALSE(sweep.warm_start->allow_other_objective);
  EXPECT_FALSE(nlohmann::json::parse(to_json(sweep))["warm_start"].contains("storage"));
  EXPECT_EQ(parse_sweep_file(to_json(sweep), sweep.path), sweep);
  EXPECT_FALSE(parse_sweep_file(kMinimal, "/sweeps/b.json").warm_start);
}

TEST(SweepWarmStart, MalformedIsRefusedWithItsPath) {
  EXPECT_THAT(error_of(with_warm_start(R"({"storage": "a.db"})")),
              HasSubstr("/sweeps/b.json: warm_start: missing required field \"study\""));
  EXPECT_THAT(error_of(with_warm_start(R"({"study": "a", "stroage": "a.db"})")),
              HasSubstr("warm_start"));
  EXPECT_THAT(error_of(with_warm_start(R"({"study": 3})")), HasSubstr("warm_start.study"));
  EXPECT_THAT(error_of(with_warm_start(R"({"study": "a", "allow_other_objective": "yes"})")),
              HasSubstr("warm_start.allow_other_objective"));
  EXPECT_THAT(error_of(with_warm_start(R"("a")")), HasSubstr("warm_start"));
  EXPECT_THAT(error_of(with_warm_start(R"({"study": "b"})")),
              HasSubstr("warm_start.study: is this sweep's own study"));
  EXPECT_THAT(error_of(with_warm_start(R"({"study": "b", "storage": "b.db"})")),
              HasSubstr("warm_start.study: is this sweep's own study"));
  EXPECT_EQ(error_of(with_warm_start(R"({"study": "b", "storage": "other.db"})")), "");
}

}  // namespace
}  // namespace tuner
