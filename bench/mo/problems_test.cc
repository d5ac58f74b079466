// The problems' definitions at points whose values are known: their Pareto fronts.
#include "bench/mo/problems.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

namespace tuner::bench {
namespace {

std::vector<double> values(const std::string& name, const std::vector<double>& x) {
  const MoProblem* p = find_mo_problem(name);
  EXPECT_NE(p, nullptr) << name;
  EXPECT_EQ(static_cast<size_t>(p->n_vars), x.size());
  return evaluate(*p, x).objectives;
}

TEST(MoProblems, ZdtFronts) {
  std::vector<double> x(30, 0.0);
  x[0] = 0.25;
  EXPECT_DOUBLE_EQ(values("zdt1", x)[1], 0.5);
  EXPECT_DOUBLE_EQ(values("zdt2", x)[1], 1.0 - 0.0625);
  EXPECT_NEAR(values("zdt3", x)[1], 0.5 - 0.25 * std::sin(2.5 * std::numbers::pi), 1e-12);
  x.assign(30, 1.0);
  EXPECT_DOUBLE_EQ(values("zdt1", x)[1], 10.0 * (1.0 - std::sqrt(0.1)));  // g = 10
}

TEST(MoProblems, Dtlz2FrontIsTheUnitSphere) {
  for (double a : {0.0, 0.3, 1.0}) {
    std::vector<double> x(12, 0.5);
    x[0] = a;
    x[1] = 1.0 - a / 2;
    std::vector<double> f = values("dtlz2", x);
    EXPECT_NEAR(f[0] * f[0] + f[1] * f[1] + f[2] * f[2], 1.0, 1e-12);
  }
}

// DTLZ7's front: g = 1 (the tail at 0), f3 = 2 h with h = 3 - sum f_i (1 + sin(3 pi f_i)) / 2.
TEST(MoProblems, Dtlz7OnItsFront) {
  std::vector<double> x(22, 0.0);
  x[0] = 0.2;
  x[1] = 0.7;
  double h = 3.0;
  for (double f : {0.2, 0.7}) h -= f / 2 * (1.0 + std::sin(3.0 * std::numbers::pi * f));
  const std::vector<double> f = values("dtlz7", x);
  EXPECT_DOUBLE_EQ(f[0], 0.2);
  EXPECT_DOUBLE_EQ(f[1], 0.7);
  EXPECT_NEAR(f[2], 2.0 * h, 1e-12);
  x.assign(22, 1.0);
  EXPECT_NEAR(values("dtlz7", x)[2],
              11.0 * (3.0 - 2.0 / 11.0 * (1.0 + std::sin(3.0 * std::numbers::pi))),
              1e-9);  // g = 10
}

// The 40-variable variants are the same functions over more variables.
TEST(MoProblems, FortyVariableVariants) {
  std::vector<double> x(40, 0.5);
  x[0] = 0.3;
  const std::vector<double> f = values("dtlz2_40", x);
  EXPECT_NEAR(f[0] * f[0] + f[1] * f[1] + f[2] * f[2], 1.0, 1e-12);
  x.assign(40, 0.0);
  x[0] = 0.25;
  const double f1 = 1.0 - std::exp(-1.0) * std::pow(std::sin(1.5 * std::numbers::pi), 6);
  EXPECT_NEAR(values("zdt6_40", x)[1], 1.0 - f1 * f1, 1e-12);  // g = 1
}

TEST(MoProblems, C2Dtlz2IsFeasibleNearTheCornersAndTheCentre) {
  const MoProblem* p = find_mo_problem("c2_dtlz2");
  std::vector<double> x(12, 0.5);
  x[0] = 1.0;  // f = (0, 0, 1): a corner
  EXPECT_LE(evaluate(*p, x).constraint, 0.0);
  x[0] = 0.5;
  x[1] = 0.0;  // f = (0.707, 0, 0.707): between two corners, far from the centre
  EXPECT_GT(evaluate(*p, x).constraint, 0.0);
  x.assign(12, 0.9);  // off the front
  EXPECT_GT(evaluate(*p, x).constraint, 0.0);
}

TEST(MoProblems, Wfg4FrontIsAnEllipse) {
  // Distance variables at 0.35 of their range: distance 0, f1 = 2 sin(t pi / 2), f2 = 4 cos.
  std::vector<double> x(24);
  for (int i = 0; i < 24; ++i) x[static_cast<size_t>(i)] = 0.35 * 2.0 * (i + 1);
  std::vector<double> f = values("wfg4", x);
  EXPECT_NEAR(f[0] * f[0] / 4 + f[1] * f[1] / 16, 1.0, 1e-9);
  x.assign(24, 0.0);  // every y = 0: far from the front
  f = values("wfg4", x);
  EXPECT_GT(f[0] * f[0] / 4 + f[1] * f[1] / 16, 1.2);
}

TEST(MoProblems, FeasibleHypervolumeSkipsInfeasiblePoints) {
  const MoProblem* p = find_mo_problem("zdt1");
  const std::vector<double> v = {0.1, 1.0, 0.0, 0.0};
  EXPECT_NEAR(feasible_hypervolume(*p, v, {}), 11.0 * 1.1, 1e-12);
  EXPECT_NEAR(feasible_hypervolume(*p, v, std::vector<double>{0.0, 1.0}), 1.0 * 10.0, 1e-12);
}

}  // namespace
}  // namespace tuner::bench
