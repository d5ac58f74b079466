// The expected hypervolume improvement of Gaussian predictions over a Pareto front, by
// quasi-Monte Carlo: the GP sampler's acquisition for several objectives (gp_sampler.h). Losses
// throughout (smaller better; maximized objectives negated), row-major as in search/pareto.h.
//
// Internal to search/; compiled with the GP's flags (search/CMakeLists.txt), so that its floating
// point is the same as when it lived in gp_sampler.cc. Thread safety: pure functions.
#ifndef TUNER_SEARCH_SAMPLERS_GP_HYPERVOLUME_IMPROVEMENT_H_
#define TUNER_SEARCH_SAMPLERS_GP_HYPERVOLUME_IMPROVEMENT_H_

#include <cstddef>
#include <vector>

#include "search/rng.h"

namespace tuner {

// The fixed standard normal samples of the Monte Carlo expectation: `count` points of a Halton
// sequence in m dimensions (bases 2, 3, 5, ...), shifted modulo 1 by one uniform per dimension
// drawn from `rng` (a randomized quasi-Monte Carlo rule), through the normal's inverse CDF.
// Row-major: sample s is z[s * m, (s + 1) * m).
std::vector<double> normal_samples(size_t count, size_t m, Rng& rng);

// The region below `reference` that no point of a front dominates, as disjoint boxes
// [lower, upper]: the grid of the front's values in the first m - 1 objectives cut into cells,
// each cell's box open below in the last objective and bounded above by the least last value of
// the points that dominate the cell in the others; neighbouring cells along the first objective
// with the same bound merged. For 2 objectives, n + 1 strips.
struct NonDominatedBoxes {
  size_t m = 0, count = 0;
  std::vector<double> lower, upper;  // row-major, count x m; lower may be -infinity
};
NonDominatedBoxes non_dominated_boxes(const std::vector<double>& front, size_t m,
                                      const std::vector<double>& reference);

// The Monte Carlo expected hypervolume improvement of a point whose losses are N(mean_j,
// sd_j^2), independent, over the samples `z`: the mean over samples y = mean + sd z of the
// volume of the boxes above y. With d_mean and d_sd (m values each), its derivatives there.
double expected_improvement_volume(const double* mean, const double* sd,
                                   const std::vector<double>& z, const NonDominatedBoxes& boxes,
                                   double* d_mean = nullptr, double* d_sd = nullptr);

}  // namespace tuner

#endif  // TUNER_SEARCH_SAMPLERS_GP_HYPERVOLUME_IMPROVEMENT_H_
