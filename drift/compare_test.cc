#include "drift/compare.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "drift/image_summaries.h"
#include "drift/report_format.h"
#include "trials/error.h"

namespace tuner::drift {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// N samples of two columns on a regular grid: x in [offset, offset + 1), y = 2 x (a permutation
// of the grid, so that the columns are not sorted alike).
Samples table(int n, double offset, double grid_shift = 0) {
  Samples s;
  s.count = n;
  s.input_width = 2;
  s.source = {.kind = "csv", .path = "t.csv"};
  for (int i = 0; i < n; ++i) {
    const double x = offset + (static_cast<double>((i * 7) % n) + grid_shift) / n;
    s.inputs.push_back(static_cast<float>(x));
    s.inputs.push_back(static_cast<float>(2 * x));
  }
  return s;
}

std::vector<int32_t> classes(int n, int k) {
  std::vector<int32_t> c;
  for (int i = 0; i < n; ++i) c.push_back(i % k);
  return c;
}

TEST(CompareTest, TheSameDistributionFlagsNothing) {
  const Samples ref = table(500, 0), cur = table(400, 0, 0.5);
  const DriftReport r = compare(ref, cur, {});
  ASSERT_EQ(r.features.size(), 2u);
  EXPECT_EQ(r.features[0].name, "x0");
  EXPECT_EQ(r.features[1].name, "x1");
  for (const FeatureDrift& f : r.features) {
    EXPECT_LT(f.psi, 0.01) << f.name;
    EXPECT_LT(f.ks.statistic, 0.02) << f.name;
    EXPECT_GT(f.ks.p_value, 0.9) << f.name;
    EXPECT_THAT(f.flags, IsEmpty());
    EXPECT_EQ(f.kind, "input");
  }
  EXPECT_FALSE(r.drift());
  EXPECT_FALSE(r.classes.has_value());
  EXPECT_EQ(r.tests, 2);
  EXPECT_DOUBLE_EQ(r.p_threshold, 0.025);  // Bonferroni: 0.05 / 2
}

TEST(CompareTest, AShiftIsFlaggedByEveryStatistic) {
  const Samples ref = table(500, 0), cur = table(500, 0.3);
  DriftOptions o;
  o.thresholds.ks_max = 0.2;
  const DriftReport r = compare(ref, cur, o);
  for (const FeatureDrift& f : r.features) {
    EXPECT_NEAR(f.ks.statistic, 0.3, 0.01) << f.name;
    EXPECT_GT(f.psi, 0.2) << f.name;
    EXPECT_THAT(f.flags, ElementsAre("psi", "p", "ks")) << f.name;
    EXPECT_NEAR(f.current_mean - f.reference_mean, f.name == "x0" ? 0.3 : 0.6, 1e-3);
  }
  EXPECT_THAT(r.flagged(), ElementsAre("x0", "x1"));
  // Thresholds decide: a PSI and KS the shift stays under, p-values off.
  o.thresholds = {.psi_max = 100, .p_min = 0, .ks_max = 0.5};
  EXPECT_FALSE(compare(ref, cur, o).drift());
}

TEST(CompareTest, TheClassDistribution) {
  Samples ref = table(1000, 0), cur = table(1000, 0);
  ref.predicted = classes(1000, 10);
  cur.predicted = classes(1000, 10);
  DriftReport r = compare(ref, cur, {});
  ASSERT_TRUE(r.classes.has_value());
  EXPECT_EQ(r.classes->reference_source, "predicted");
  EXPECT_EQ(r.classes->psi, 0.0);
  EXPECT_THAT(r.classes->flags, IsEmpty());
  EXPECT_EQ(r.tests, 3);
  // Half the current samples are class 0.
  for (int i = 0; i < 500; ++i) cur.predicted[i] = 0;
  r = compare(ref, cur, {});
  EXPECT_EQ(r.classes->current_counts[0], 550);
  EXPECT_THAT(r.classes->flags, ElementsAre("psi", "p"));
  EXPECT_THAT(r.flagged(), ElementsAre("class_distribution"));
  // Labels stand in for a side's predictions, with a note.
  ref.labels = ref.predicted;
  ref.predicted.clear();
  r = compare(ref, cur, {});
  EXPECT_EQ(r.classes->reference_source, "labels");
  EXPECT_THAT(r.notes, Contains(HasSubstr("the reference's labels and the current's predicted")));
  cur.predicted.clear();
  cur.labels.clear();
  r = compare(ref, cur, {});
  EXPECT_FALSE(r.classes.has_value());
  EXPECT_THAT(r.notes, Contains(HasSubstr("the predicted class distribution is not compared: the "
                                          "current has no classes")));
}

TEST(CompareTest, OutputsAreFeaturesWhenBothSidesHaveThem) {
  Samples ref = table(200, 0), cur = table(200, 0);
  for (Samples* s : {&ref, &cur}) {
    s->output_width = 2;
    for (int i = 0; i < s->count; ++i) {
      s->outputs.push_back(s->inputs[2 * i]);
      s->outputs.push_back(s == &cur ? 5.0f : 0.0f);
    }
  }
  const DriftReport r = compare(ref, cur, {});
  std::vector<std::string> names;
  for (const FeatureDrift& f : r.features) names.push_back(f.name);
  EXPECT_THAT(names, ElementsAre("x0", "x1", "logit_0", "logit_1", "confidence"));
  EXPECT_EQ(r.features[2].kind, "output");
  EXPECT_THAT(r.flagged(), ElementsAre("logit_1", "confidence"));
  cur.outputs.clear();
  cur.output_width = 0;
  EXPECT_THAT(compare(ref, cur, {}).notes,
              Contains(HasSubstr("the model's outputs are not compared: the current has none")));
}

TEST(CompareTest, NamedColumnsAreMatchedByName) {
  Samples ref = table(300, 0), cur = table(300, 0);
  ref.input_names = {"a", "b"};
  cur.input_names = {"b", "a"};
  for (int i = 0; i < cur.count; ++i) std::swap(cur.inputs[2 * i], cur.inputs[2 * i + 1]);
  const DriftReport r = compare(ref, cur, {});
  EXPECT_EQ(r.features[0].name, "a");
  EXPECT_FALSE(r.drift());
  cur.input_names = {"b", "c"};
  try {
    compare(ref, cur, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("csv t.csv has no column 'a' (the reference has)"));
  }
}

TEST(CompareTest, ImagesAreSummarized) {
  Samples ref, cur;
  for (Samples* s : {&ref, &cur}) {
    s->count = 50;
    s->input_width = 16;
    for (int i = 0; i < 50 * 16; ++i) {
      const float v = static_cast<float>((i * 37) % 200);
      s->inputs.push_back(s == &cur ? 255.0f - v : v);  // the current inverted
    }
  }
  DriftOptions o;
  o.features.image = training::Shape{1, 4, 4};
  const DriftReport r = compare(ref, cur, o);
  ASSERT_EQ(r.features.size(), image_summary_names().size());
  EXPECT_EQ(r.features[0].name, "image_mean");
  EXPECT_THAT(r.flagged(), Contains("image_mean"));
  EXPECT_THAT(r.notes, Contains(HasSubstr("few samples (50 reference, 50 current)")));
  o.features.image = training::Shape{1, 3, 3};
  EXPECT_THROW(compare(ref, cur, o), Error);
}

TEST(CompareTest, RefusesWhatCannotBeCompared) {
  Samples ref = table(10, 0), cur = table(10, 0);
  cur.input_width = 1;
  EXPECT_THROW(compare(ref, cur, {}), Error);
  cur = table(10, 0);
  DriftOptions o;
  o.bins = 1;
  EXPECT_THROW(compare(ref, cur, o), Error);
  o = {};
  o.thresholds.p_min = 1.0;
  EXPECT_THROW(compare(ref, cur, o), Error);
}

TEST(ReportFormatTest, TableAndJson) {
  Samples ref = table(500, 0), cur = table(500, 0.3);
  cur.source = {.kind = "request log",
                .path = "logs",
                .files = 2,
                .requests = 7,
                .first_time = "2026-12-02T11:00:00.000Z",
                .last_time = "2026-12-02T11:05:00.000Z",
                .models = {"fmnist version 3"}};
  ref.predicted = classes(500, 5);
  cur.predicted = classes(500, 5);
  const DriftReport r = compare(ref, cur, {});
  const std::string table_text = format_table(r);
  EXPECT_THAT(table_text, HasSubstr("current:   request log logs: 500 samples (7 requests in 2 "
                                    "files, 2026-12-02T11:00:00.000Z .. 2026-12-02T11:05:00.000Z; "
                                    "model fmnist version 3)"));
  EXPECT_THAT(table_text, HasSubstr("feature  kind"));
  EXPECT_THAT(table_text, HasSubstr("DRIFT (psi, p)"));
  EXPECT_THAT(table_text, HasSubstr("p-value < 0.0167 (0.05 / 3 tests, Bonferroni)"));
  EXPECT_THAT(table_text, HasSubstr("DRIFT: 2 of 3 flagged: x0, x1\n"));
  EXPECT_THAT(table_text, HasSubstr("  reference shares: 0.200 0.200 0.200 0.200 0.200\n"));

  const nlohmann::json j = nlohmann::json::parse(format_json(r));
  EXPECT_EQ(j["drift"], true);
  EXPECT_EQ(j["flagged"], nlohmann::json({"x0", "x1"}));
  EXPECT_EQ(j["tests"], 3);
  EXPECT_EQ(j["current"]["requests"], 7);
  EXPECT_EQ(j["current"]["models"][0], "fmnist version 3");
  EXPECT_EQ(j["reference"]["kind"], "csv");
  EXPECT_FALSE(j["reference"].contains("requests"));
  EXPECT_EQ(j["features"][0]["name"], "x0");
  EXPECT_EQ(j["features"][0]["flags"], nlohmann::json({"psi", "p"}));
  EXPECT_NEAR(j["features"][0]["ks"].get<double>(), r.features[0].ks.statistic, 1e-15);
  EXPECT_EQ(j["classes"]["drift"], false);
  EXPECT_EQ(j["classes"]["reference_counts"], nlohmann::json({100, 100, 100, 100, 100}));
  EXPECT_TRUE(j["thresholds"]["ks_max"].is_null());
  EXPECT_NEAR(j["thresholds"]["p_threshold"].get<double>(), 0.05 / 3, 1e-15);
  EXPECT_THAT(format_table(compare(ref, table(500, 0, 0.5), {})),
              HasSubstr("no drift: none of 2 tests flagged\n"));
}

}  // namespace
}  // namespace tuner::drift
