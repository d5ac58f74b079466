// The population stability index (PSI) of one feature: how far the current sample's distribution
// over the reference's quantile bins has moved from the reference's own (docs/drift.md).
//
//   PSI = sum_i (c_i - r_i) * ln(c_i / r_i)
//
// r_i, c_i: the shares of the reference and current samples in bin i, a share of 0 replaced by
// epsilon (as Evidently does, 1e-4) so that an empty bin counts as a large change, not as infinity.
// Pure functions; thread-safe.
#ifndef TUNER_DRIFT_PSI_H_
#define TUNER_DRIFT_PSI_H_

#include <cstdint>
#include <span>
#include <vector>

namespace tuner::drift {

inline constexpr int kDefaultBins = 10;
inline constexpr double kDefaultEpsilon = 1e-4;

// The cut points between `bins` bins of equal reference mass: the reference's quantiles at
// 1/bins, ..., (bins-1)/bins (linear interpolation between order statistics, numpy's default),
// ascending, repeated ones dropped (a feature with ties has fewer bins). Bin i holds the values x
// with cut[i-1] < x <= cut[i] (the first bin from -inf, the last to +inf).
// REQUIRES: !reference.empty(), bins >= 1.
std::vector<double> quantile_cut_points(std::span<const double> reference, int bins);

// Values per bin of `cuts` (cuts.size() + 1 bins).
std::vector<int64_t> bin_counts(std::span<const double> values, std::span<const double> cuts);

// PSI of two histograms over the same bins (or categories). REQUIRES: equal sizes, each with a
// positive total; epsilon > 0.
double psi_from_counts(std::span<const int64_t> reference, std::span<const int64_t> current,
                       double epsilon = kDefaultEpsilon);

// PSI of a feature over the reference's quantile bins.
// REQUIRES: both non-empty, bins >= 1, epsilon > 0.
double population_stability_index(std::span<const double> reference,
                                  std::span<const double> current, int bins = kDefaultBins,
                                  double epsilon = kDefaultEpsilon);

}  // namespace tuner::drift

#endif  // TUNER_DRIFT_PSI_H_
