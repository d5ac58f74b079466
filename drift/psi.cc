#include "drift/psi.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tuner::drift {

std::vector<double> quantile_cut_points(std::span<const double> reference, int bins) {
  if (reference.empty() || bins < 1) {
    throw std::invalid_argument("quantile_cut_points: needs values and bins >= 1");
  }
  std::vector<double> sorted(reference.begin(), reference.end());
  std::sort(sorted.begin(), sorted.end());
  const double last = static_cast<double>(sorted.size() - 1);
  std::vector<double> cuts;
  for (int i = 1; i < bins; ++i) {
    const double at = last * static_cast<double>(i) / bins;
    const size_t lo = static_cast<size_t>(std::floor(at));
    const size_t hi = std::min(lo + 1, sorted.size() - 1);
    const double cut = sorted[lo] + (at - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
    if (cuts.empty() || cut > cuts.back()) cuts.push_back(cut);
  }
  return cuts;
}

std::vector<int64_t> bin_counts(std::span<const double> values, std::span<const double> cuts) {
  std::vector<int64_t> counts(cuts.size() + 1, 0);
  for (double v : values) {
    // The number of cut points below v: x <= cut[i] falls in bin i.
    counts[static_cast<size_t>(std::lower_bound(cuts.begin(), cuts.end(), v) - cuts.begin())]++;
  }
  return counts;
}

double psi_from_counts(std::span<const int64_t> reference, std::span<const int64_t> current,
                       double epsilon) {
  if (reference.size() != current.size() || !(epsilon > 0)) {
    throw std::invalid_argument("psi_from_counts: histograms of different sizes or epsilon <= 0");
  }
  int64_t ref_total = 0, cur_total = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    ref_total += reference[i];
    cur_total += current[i];
  }
  if (ref_total <= 0 || cur_total <= 0) {
    throw std::invalid_argument("psi_from_counts: an empty histogram");
  }
  double psi = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    const double r = std::max(static_cast<double>(reference[i]) / ref_total, epsilon);
    const double c = std::max(static_cast<double>(current[i]) / cur_total, epsilon);
    psi += (c - r) * std::log(c / r);
  }
  return psi;
}

double population_stability_index(std::span<const double> reference,
                                  std::span<const double> current, int bins, double epsilon) {
  if (current.empty()) throw std::invalid_argument("population_stability_index: no current values");
  const std::vector<double> cuts = quantile_cut_points(reference, bins);
  return psi_from_counts(bin_counts(reference, cuts), bin_counts(current, cuts), epsilon);
}

}  // namespace tuner::drift
