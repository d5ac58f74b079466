#include "report/hypervolume_series.h"

#include <algorithm>
#include <cmath>

#include "report/subsample.h"
#include "search/pareto.h"

namespace tuner::report {

namespace {

// The seconds the steps may take together, about; a front too large for kMinSteps steps within
// kMaxSeconds gets no series.
constexpr double kBudgetSeconds = 1.0;
constexpr double kMaxSeconds = 2.0;
constexpr size_t kMinSteps = 2;

// The seconds one step takes on a front of f points of m objectives (a pareto_front() merge and a
// hypervolume()), roughly: fitted to search/pareto.h on fronts of 2,000 and 20,000 points here
// (f log f for 2 objectives; a power of f that grows with each objective above 3).
double step_seconds(size_t f, size_t m) {
  const double n = static_cast<double>(std::max<size_t>(f, 2));
  double seconds = 1e-8 * n * std::log2(n);
  if (m >= 3) seconds *= 5 * std::pow(n / 25, 0.85 * static_cast<double>(m - 3));
  return seconds;
}

}  // namespace

HypervolumeSeries hypervolume_series(const StudyView& view, size_t max_steps) {
  HypervolumeSeries series;
  const size_t m = view.n_objectives;
  const size_t n = view.complete.size();
  auto loss = [&](size_t i) { return view.losses.begin() + static_cast<std::ptrdiff_t>(i * m); };
  std::vector<double> feasible_losses;
  for (size_t i = 0; i < n; ++i) {
    if (view.feasible[i]) feasible_losses.insert(feasible_losses.end(), loss(i), loss(i) + m);
  }
  if (feasible_losses.empty()) return series;
  series.reference = nadir_reference(feasible_losses, m);

  // The indices into view.complete after which a step is taken (the last always). The whole
  // study's front sizes the work of a step.
  const double per_step = step_seconds(view.pareto.size(), m);
  const double affordable = kBudgetSeconds / per_step;
  size_t steps = max_steps;
  if (affordable < static_cast<double>(max_steps)) {
    if (affordable < static_cast<double>(kMinSteps) &&
        per_step * static_cast<double>(kMinSteps) > kMaxSeconds) {
      series.too_large = true;
      return series;
    }
    steps = std::max(kMinSteps, static_cast<size_t>(affordable));
  }
  const std::vector<size_t> at = spread_sample(n, std::max<size_t>(1, steps), {n - 1});
  std::vector<double> front;    // losses of the current front, row-major
  std::vector<double> pending;  // feasible losses counted since the last step
  double volume = 0;
  size_t next = 0;
  for (size_t s : at) {
    for (; next <= s; ++next) {
      if (view.feasible[next]) pending.insert(pending.end(), loss(next), loss(next) + m);
    }
    bool changed = false;
    if (!pending.empty()) {
      const size_t old_size = front.size() / m;
      std::vector<double> candidates = std::move(front);
      candidates.insert(candidates.end(), pending.begin(), pending.end());
      pending.clear();
      front.clear();
      for (size_t f : pareto_front(candidates, m)) {
        changed |= f >= old_size;
        const auto row = candidates.begin() + static_cast<std::ptrdiff_t>(f * m);
        front.insert(front.end(), row, row + m);
      }
      if (changed) volume = hypervolume(front, m, series.reference);
    }
    series.steps.push_back({s + 1, volume, changed});
  }
  return series;
}

}  // namespace tuner::report
