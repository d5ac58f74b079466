#include "report/hypervolume_series.h"

#include <algorithm>

#include "report/subsample.h"
#include "search/pareto.h"

namespace tuner::report {

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

  // The indices into view.complete after which a step is taken (the last always).
  const std::vector<size_t> at = spread_sample(n, std::max<size_t>(1, max_steps), {n - 1});
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
