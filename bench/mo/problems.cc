#include "bench/mo/problems.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "search/pareto.h"

namespace tuner::bench {
namespace {

constexpr double kPi = std::numbers::pi;

// ZDT's g over x[1..n): 1 + 9 mean(x[1..n)).
double zdt_g(std::span<const double> x) {
  double sum = 0.0;
  for (size_t i = 1; i < x.size(); ++i) sum += x[i];
  return 1.0 + 9.0 * sum / static_cast<double>(x.size() - 1);
}

// DTLZ2 with m objectives: g over the last n - m + 1 variables, the first m - 1 the position.
std::vector<double> dtlz2(std::span<const double> x, size_t m) {
  double g = 0.0;
  for (size_t i = m - 1; i < x.size(); ++i) g += (x[i] - 0.5) * (x[i] - 0.5);
  std::vector<double> f(m, 1.0 + g);
  for (size_t k = 0; k < m; ++k) {
    for (size_t i = 0; i + 1 < m - k; ++i) f[k] *= std::cos(x[i] * kPi / 2);
    if (k > 0) f[k] *= std::sin(x[m - 1 - k] * kPi / 2);
  }
  return f;
}

// WFG's multi-modal shift (s_multi) and weighted sum (r_sum with unit weights).
double s_multi(double y, double a, double b, double c) {
  const double t = std::abs(y - c) / (2.0 * (std::floor(c - y) + c));
  const double v =
      (1.0 + std::cos((4.0 * a + 2.0) * kPi * (0.5 - t)) + 4.0 * b * t * t) / (b + 2.0);
  return std::clamp(v, 0.0, 1.0);
}

// WFG4 with 2 objectives, k position and the rest distance variables; x_i in [0, 2 (i + 1)].
std::vector<double> wfg4(std::span<const double> x, size_t k) {
  const size_t n = x.size();
  double position = 0.0, distance = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double y = s_multi(x[i] / (2.0 * static_cast<double>(i + 1)), 30.0, 10.0, 0.35);
    (i < k ? position : distance) += y;
  }
  position /= static_cast<double>(k);
  distance /= static_cast<double>(n - k);
  // Concave front, D = 1, S_m = 2m.
  return {distance + 2.0 * std::sin(position * kPi / 2),
          distance + 4.0 * std::cos(position * kPi / 2)};
}

// C2-DTLZ2's constraint (r = 0.4 for 3 objectives): feasible inside a sphere of radius r around
// each corner of the front or around its centre.
double c2_dtlz2_constraint(const std::vector<double>& f) {
  const double r = 0.4;
  const size_t m = f.size();
  double sum_sq = 0.0;
  for (double v : f) sum_sq += v * v;
  double best = INFINITY;
  for (size_t i = 0; i < m; ++i) {
    best = std::min(best, sum_sq - f[i] * f[i] + (f[i] - 1.0) * (f[i] - 1.0) - r * r);
  }
  double centre = 0.0;
  for (double v : f)
    centre += (v - 1.0 / std::sqrt(static_cast<double>(m))) *
              (v - 1.0 / std::sqrt(static_cast<double>(m)));
  return std::min(best, centre - r * r);
}

MoProblem make(std::string name, int n, int m, std::vector<double> reference,
               std::string description, bool constrained = false) {
  MoProblem p;
  p.name = std::move(name);
  p.n_vars = n;
  p.n_objectives = m;
  p.lower.assign(static_cast<size_t>(n), 0.0);
  p.upper.assign(static_cast<size_t>(n), 1.0);
  p.constrained = constrained;
  p.reference = std::move(reference);
  p.description = std::move(description);
  return p;
}

}  // namespace

const std::vector<MoProblem>& mo_problems() {
  static const std::vector<MoProblem> problems = [] {
    std::vector<MoProblem> v;
    v.push_back(make("zdt1", 30, 2, {1.1, 11.0}, "ZDT1, 30 variables in [0, 1]: convex front"));
    v.push_back(make("zdt2", 30, 2, {1.1, 11.0}, "ZDT2, 30 variables in [0, 1]: concave front"));
    v.push_back(
        make("zdt3", 30, 2, {1.1, 11.0}, "ZDT3, 30 variables in [0, 1]: disconnected front"));
    v.push_back(make("dtlz2", 12, 3, {2.0, 2.0, 2.0},
                     "DTLZ2, 3 objectives, 12 variables in [0, 1]: the positive unit sphere"));
    MoProblem wfg = make("wfg4", 24, 2, {3.3, 5.5},
                         "WFG4, 2 objectives, k = 4 position and l = 20 distance variables, "
                         "x_i in [0, 2i]: multi-modal, concave front");
    for (int i = 0; i < 24; ++i) wfg.upper[static_cast<size_t>(i)] = 2.0 * (i + 1);
    v.push_back(wfg);
    v.push_back(make("c2_dtlz2", 12, 3, {2.0, 2.0, 2.0},
                     "C2-DTLZ2, 3 objectives, 12 variables in [0, 1], r = 0.4: only the regions "
                     "of the front near its corners and centre are feasible",
                     true));
    // Held out.
    MoProblem zdt4 = make("zdt4", 10, 2, {1.1, 250.0},
                          "ZDT4, 10 variables, x0 in [0, 1], the others in [-5, 5]: multi-modal");
    for (int i = 1; i < 10; ++i) {
      zdt4.lower[static_cast<size_t>(i)] = -5.0;
      zdt4.upper[static_cast<size_t>(i)] = 5.0;
    }
    v.push_back(zdt4);
    v.push_back(make("zdt6", 10, 2, {1.1, 11.0},
                     "ZDT6, 10 variables in [0, 1]: a non-uniform, concave front"));
    v.push_back(make("dtlz4", 12, 3, {2.0, 2.0, 2.0},
                     "DTLZ4, 3 objectives, 12 variables in [0, 1], alpha = 100: DTLZ2 with a "
                     "biased density of solutions"));
    // Held out with more than 20 variables: what the AutoSampler's bound on the GP's parameters
    // for several objectives is measured on (docs/samplers.md, "Auto").
    v.push_back(make("dtlz7", 22, 3, {1.1, 1.1, 21.0},
                     "DTLZ7, 3 objectives, 22 variables in [0, 1]: four disconnected regions"));
    v.push_back(make("zdt6_40", 40, 2, {1.1, 11.0},
                     "ZDT6 with 40 variables in [0, 1]: a non-uniform, concave front"));
    v.push_back(make("dtlz2_40", 40, 3, {3.5, 3.5, 3.5},
                     "DTLZ2, 3 objectives, 40 variables in [0, 1]: the positive unit sphere"));
    for (size_t i = v.size() - 6; i < v.size(); ++i) v[i].held_out = true;
    return v;
  }();
  return problems;
}

const MoProblem* find_mo_problem(const std::string& name) {
  for (const MoProblem& p : mo_problems()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

MoValues evaluate(const MoProblem& problem, std::span<const double> x) {
  MoValues out;
  if (problem.name == "zdt1" || problem.name == "zdt2" || problem.name == "zdt3") {
    const double f1 = x[0], g = zdt_g(x), r = f1 / g;
    double h = 1.0 - std::sqrt(r);
    if (problem.name == "zdt2") h = 1.0 - r * r;
    if (problem.name == "zdt3") h = 1.0 - std::sqrt(r) - r * std::sin(10.0 * kPi * f1);
    out.objectives = {f1, g * h};
  } else if (problem.name == "zdt4") {
    double g = 1.0 + 10.0 * static_cast<double>(x.size() - 1);
    for (size_t i = 1; i < x.size(); ++i) g += x[i] * x[i] - 10.0 * std::cos(4.0 * kPi * x[i]);
    out.objectives = {x[0], g * (1.0 - std::sqrt(x[0] / g))};
  } else if (problem.name == "zdt6" || problem.name == "zdt6_40") {
    const double f1 = 1.0 - std::exp(-4.0 * x[0]) * std::pow(std::sin(6.0 * kPi * x[0]), 6);
    double sum = 0.0;
    for (size_t i = 1; i < x.size(); ++i) sum += x[i];
    const double g = 1.0 + 9.0 * std::pow(sum / static_cast<double>(x.size() - 1), 0.25);
    out.objectives = {f1, g * (1.0 - (f1 / g) * (f1 / g))};
  } else if (problem.name == "dtlz4") {
    std::vector<double> y(x.begin(), x.end());
    for (size_t i = 0; i < 2; ++i) y[i] = std::pow(y[i], 100.0);
    out.objectives = dtlz2(y, 3);
  } else if (problem.name == "dtlz7") {
    // g over the last n - 2 variables; f1, f2 the first two; f3 (1 + g) h.
    double sum = 0.0;
    for (size_t i = 2; i < x.size(); ++i) sum += x[i];
    const double g = 1.0 + 9.0 * sum / static_cast<double>(x.size() - 2);
    double h = 3.0;
    for (size_t i = 0; i < 2; ++i) h -= x[i] / (1.0 + g) * (1.0 + std::sin(3.0 * kPi * x[i]));
    out.objectives = {x[0], x[1], (1.0 + g) * h};
  } else if (problem.name == "dtlz2" || problem.name == "c2_dtlz2" || problem.name == "dtlz2_40") {
    out.objectives = dtlz2(x, 3);
    if (problem.constrained) out.constraint = c2_dtlz2_constraint(out.objectives);
  } else if (problem.name == "wfg4") {
    out.objectives = wfg4(x, 4);
  }
  return out;
}

double feasible_hypervolume(const MoProblem& problem, std::span<const double> values,
                            std::span<const double> constraints) {
  const size_t m = static_cast<size_t>(problem.n_objectives);
  std::vector<double> feasible;
  for (size_t i = 0; i < values.size() / m; ++i) {
    if (!constraints.empty() && constraints[i] > 0) continue;
    feasible.insert(feasible.end(), values.begin() + static_cast<ptrdiff_t>(i * m),
                    values.begin() + static_cast<ptrdiff_t>((i + 1) * m));
  }
  return hypervolume(feasible, m, problem.reference);
}

}  // namespace tuner::bench
