#include "executor/job_spec.h"

#include <gtest/gtest.h>

#include "trials/error.h"

namespace tuner {
namespace {

std::string error_of(const std::string& json) {
  try {
    parse_job_spec(json);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "(no error)";
}

TEST(JobSpecTest, ParsesACommandJob) {
  JobSpec spec = parse_job_spec(R"({"kind": "command", "argv": ["python3", "t.py", "--lr", "{lr}"],
      "env": {"OMP_NUM_THREADS": "1"}, "working_dir": "/src", "objective_metric": "val_loss"})");
  EXPECT_EQ(spec.kind, JobKind::kCommand);
  EXPECT_EQ(spec.command.argv, (std::vector<std::string>{"python3", "t.py", "--lr", "{lr}"}));
  EXPECT_EQ(spec.command.env.at("OMP_NUM_THREADS"), "1");
  EXPECT_EQ(spec.command.working_dir, "/src");
  EXPECT_EQ(spec.objective_metric, "val_loss");
}

TEST(JobSpecTest, RoundTripsThroughJson) {
  JobSpec spec = parse_job_spec(
      R"({"kind": "command", "argv": ["a", "{x}"], "env": {"A": "b"}, "objective_metric": "m"})");
  JobSpec again = parse_job_spec(job_spec_to_json(spec));
  EXPECT_EQ(again.command.argv, spec.command.argv);
  EXPECT_EQ(again.command.env, spec.command.env);
  EXPECT_EQ(again.objective_metric, spec.objective_metric);
}

TEST(JobSpecTest, ErrorsNameTheJsonPath) {
  EXPECT_EQ(error_of(R"({"kind": "command", "argv": ["a", 3], "objective_metric": "m"})"),
            "job.argv[1]: expected a string, got number");
  EXPECT_EQ(error_of(R"({"kind": "command", "argv": ["a"]})"), "job.objective_metric: missing");
  // Issue 15, item 8: an unbalanced brace failed every trial instead of the job.
  EXPECT_EQ(error_of(R"({"kind": "command", "argv": ["a", "x}"], "objective_metric": "m"})"),
            "job.argv[1] \"x}\": stray '}' at offset 1 (write '}}' for a brace)");
  EXPECT_EQ(error_of(R"({"kind": "command", "argv": [], "objective_metric": "m"})"),
            "job.argv: must name a program (it is empty)");
  EXPECT_EQ(error_of(R"({"kind": "command", "argv": ["a"], "env": {"X": 1},
                         "objective_metric": "m"})"),
            "job.env.X: expected a string, got number");
  EXPECT_EQ(error_of(R"({"kind": "shell", "argv": ["a"], "objective_metric": "m"})"),
            "job.kind: expected \"command\" or \"engine\", got \"shell\"");
  EXPECT_NE(error_of(R"({"kind": "command", "argv": ["a"], "evn": {}, "objective_metric": "m"})")
                .find("job.evn: unknown member"),
            std::string::npos);
  EXPECT_NE(error_of("[1, 2]").find("job: expected an object"), std::string::npos);
  EXPECT_NE(error_of("{oops").find("job: not valid JSON"), std::string::npos);
}

}  // namespace
}  // namespace tuner
