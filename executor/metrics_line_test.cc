#include "executor/metrics_line.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tuner {
namespace {

using Kind = MetricsLine::Kind;

TEST(MetricsLine, ReportWithStep) {
  auto line = parse_metrics_line(R"({"step": 3, "val_loss": 0.41, "phase": "train"})");
  EXPECT_EQ(line.kind, Kind::kReport);
  EXPECT_EQ(line.step, 3);
  EXPECT_EQ(line.metrics, (Metrics{{"val_loss", 0.41}}));  // non-numbers are ignored
}

TEST(MetricsLine, FinalWithoutStep) {
  auto line = parse_metrics_line("  {\"val_loss\": 0.38, \"acc\": 1}\r");
  EXPECT_EQ(line.kind, Kind::kFinal);
  EXPECT_EQ(line.metrics, (Metrics{{"acc", 1.0}, {"val_loss", 0.38}}));
  // Regression: an integer metric came back as a float (12345 -> 12345.0).
  EXPECT_EQ(line.integers, std::vector<std::string>{"acc"});
  EXPECT_TRUE(parse_metrics_line(R"({"n": 1.0, "big": 1e300, "huge": 18446744073709551615})")
                  .integers.empty());
}

TEST(MetricsLine, PythonNanAndInfinityTokens) {
  auto line = parse_metrics_line(
      R"({"step": 1, "a": NaN, "b": Infinity, "c": -Infinity, "d": "nan", "s": "NaN text"})");
  ASSERT_EQ(line.kind, Kind::kReport);
  EXPECT_TRUE(std::isnan(line.metrics.at("a")));
  EXPECT_EQ(line.metrics.at("b"), INFINITY);
  EXPECT_EQ(line.metrics.at("c"), -INFINITY);
  EXPECT_TRUE(std::isnan(line.metrics.at("d")));
  EXPECT_EQ(line.metrics.count("s"), 0u);
}

TEST(MetricsLine, TextAndMalformed) {
  EXPECT_EQ(parse_metrics_line("epoch 3 done").kind, Kind::kText);
  EXPECT_EQ(parse_metrics_line("").kind, Kind::kText);
  EXPECT_EQ(parse_metrics_line(R"({"status": "ok"})").kind, Kind::kText);
  auto bad = parse_metrics_line(R"({"step": 3, "loss": )");
  EXPECT_EQ(bad.kind, Kind::kMalformed);
  EXPECT_EQ(bad.problem, "not valid JSON");
  EXPECT_EQ(parse_metrics_line(R"({"step": 1.5, "loss": 1})").problem,
            "\"step\" must be an integer");
  EXPECT_EQ(parse_metrics_line(R"({"step": "3"})").problem, "\"step\" must be an integer");
  EXPECT_EQ(parse_metrics_line(R"({"step": 18446744073709551615})").problem,
            "\"step\" is out of the int64 range");
  EXPECT_EQ(parse_metrics_line(std::string(1000, '{')).problem, "nested deeper than 64");
}

}  // namespace
}  // namespace tuner
