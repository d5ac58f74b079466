#include "report/importance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "search/rng.h"

namespace tuner::report {
namespace {

// `n` COMPLETE trials with x, y uniform on [-1, 1] and a categorical c, scored by `f`.
std::vector<FrozenTrial> make_trials(int n, const std::function<double(double, double, int)>& f) {
  Rng rng(7);
  std::vector<FrozenTrial> trials;
  for (int i = 0; i < n; ++i) {
    FrozenTrial t;
    t.trial_id = i;
    t.number = i;
    t.state = TrialState::kComplete;
    double x = rng.uniform(-1, 1), y = rng.uniform(-1, 1);
    int64_t c = rng.integer(0, 2);
    t.params = {{"x", x}, {"y", y}, {"c", std::string(1, static_cast<char>('a' + c))}};
    t.distributions = {
        {"x", FloatDistribution{-1, 1}},
        {"y", FloatDistribution{-1, 1}},
        {"c", CategoricalDistribution{{std::string("a"), std::string("b"), std::string("c")}}}};
    t.values = {f(x, y, static_cast<int>(c))};
    trials.push_back(std::move(t));
  }
  return trials;
}

double importance_of(const Importances& imp, const std::string& name) {
  for (const auto& p : imp.params) {
    if (p.name == name) return p.importance;
  }
  return -1;
}

double sum_of(const Importances& imp) {
  double s = 0;
  for (const auto& p : imp.params) s += p.importance;
  return s;
}

TEST(ImportanceTest, OnlyXMatters) {
  auto trials = make_trials(200, [](double x, double, int) { return x * x + 0.5 * x; });
  Importances imp = compute_importances(trials, 0);
  EXPECT_FALSE(imp.degenerate);
  EXPECT_EQ(imp.n_trials, 200);
  ASSERT_EQ(imp.params.size(), 3u);
  EXPECT_EQ(imp.params[0].name, "x");
  EXPECT_GT(importance_of(imp, "x"), 0.9);
  EXPECT_NEAR(sum_of(imp), 1.0, 1e-9);
}

TEST(ImportanceTest, TwoEquallyImportantParamsGetSimilarShares) {
  auto trials = make_trials(300, [](double x, double y, int) { return x + y; });
  Importances imp = compute_importances(trials, 0);
  double x = importance_of(imp, "x"), y = importance_of(imp, "y");
  EXPECT_GT(x, 0.35);
  EXPECT_GT(y, 0.35);
  EXPECT_NEAR(x, y, 0.12);
  EXPECT_LT(importance_of(imp, "c"), 0.1);
}

TEST(ImportanceTest, CategoricalParamIsFound) {
  auto trials = make_trials(200, [](double x, double, int c) { return 3.0 * c + 0.1 * x; });
  Importances imp = compute_importances(trials, 0);
  EXPECT_EQ(imp.params[0].name, "c");
  EXPECT_GT(importance_of(imp, "c"), 0.9);
}

TEST(ImportanceTest, ConstantObjectiveGivesEqualSharesFlaggedDegenerate) {
  auto trials = make_trials(50, [](double, double, int) { return 1.5; });
  Importances imp = compute_importances(trials, 0);
  EXPECT_TRUE(imp.degenerate);
  ASSERT_EQ(imp.params.size(), 3u);
  EXPECT_NEAR(sum_of(imp), 1.0, 1e-9);
}

TEST(ImportanceTest, FewOrNoCompleteTrialsDoNotCrash) {
  EXPECT_TRUE(compute_importances({}, 0).params.empty());
  auto one = make_trials(1, [](double x, double, int) { return x; });
  EXPECT_TRUE(compute_importances(one, 0).degenerate);
  auto pruned = make_trials(20, [](double x, double, int) { return x; });
  for (auto& t : pruned) t.state = TrialState::kPruned;
  EXPECT_EQ(compute_importances(pruned, 0).n_trials, 0);
}

TEST(ImportanceTest, ConditionalParamBeingSetIsWhatMatters) {
  // "z" exists only when c == "a", and its presence alone shifts the objective.
  auto trials =
      make_trials(240, [](double x, double, int c) { return 0.05 * x + (c == 0 ? 2 : 0); });
  for (auto& t : trials) {
    if (std::get<std::string>(t.params["c"]) == "a") {
      t.params["z"] = 0.5;
      t.distributions["z"] = FloatDistribution{0, 1};
    }
  }
  Importances imp = compute_importances(trials, 0);
  EXPECT_NEAR(sum_of(imp), 1.0, 1e-9);
  EXPECT_GT(importance_of(imp, "c") + importance_of(imp, "z"), 0.8);
}

TEST(ImportanceTest, LogParamsAreOnTheirLogScale) {
  // On a log scale, lr's effect spreads over the whole range: a linear view would see it in the
  // lowest sliver only. Both views rank it first; this pins that log distributions are accepted.
  Rng rng(3);
  std::vector<FrozenTrial> trials;
  for (int i = 0; i < 150; ++i) {
    FrozenTrial t;
    t.number = i;
    t.state = TrialState::kComplete;
    double lr = std::exp(rng.uniform(std::log(1e-5), std::log(1e-1)));
    int64_t units = rng.integer(1, 8);
    t.params = {{"lr", lr}, {"units", units}};
    t.distributions = {{"lr", FloatDistribution{1e-5, 1e-1, true}},
                       {"units", IntDistribution{1, 8}}};
    t.values = {std::log10(lr)};
    trials.push_back(std::move(t));
  }
  Importances imp = compute_importances(trials, 0);
  EXPECT_EQ(imp.params[0].name, "lr");
  EXPECT_GT(imp.params[0].importance, 0.9);
}

TEST(ImportanceTest, SameSeedSameResult) {
  auto trials = make_trials(100, [](double x, double y, int) { return x * y + x; });
  ImportanceOptions options;
  options.seed = 11;
  Importances a = compute_importances(trials, 0, options);
  Importances b = compute_importances(trials, 0, options);
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    EXPECT_EQ(a.params[i].name, b.params[i].name);
    EXPECT_EQ(a.params[i].importance, b.params[i].importance);
  }
}

TEST(ImportanceTest, SecondObjectiveIsUsedWhenAsked) {
  auto trials = make_trials(150, [](double x, double, int) { return x; });
  for (auto& t : trials) t.values.push_back(std::get<double>(t.params["y"]) * 2);
  EXPECT_EQ(compute_importances(trials, 0).params[0].name, "x");
  EXPECT_EQ(compute_importances(trials, 1).params[0].name, "y");
}

}  // namespace
}  // namespace tuner::report
