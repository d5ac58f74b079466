#include "search/samplers/gp/hypervolume_improvement.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "search/samplers/tpe/parzen_estimator.h"  // ndtri

namespace tuner {

std::vector<double> normal_samples(size_t count, size_t m, Rng& rng) {
  static constexpr int kPrimes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53};
  std::vector<double> shift(m);
  for (double& v : shift) v = rng.uniform();
  std::vector<double> z(count * m);
  for (size_t s = 0; s < count; ++s) {
    for (size_t j = 0; j < m; ++j) {
      const int base = kPrimes[j % std::size(kPrimes)];
      double u = 0, f = 1.0 / base;
      for (size_t i = s + 1; i > 0; i /= static_cast<size_t>(base), f /= base) {
        u += f * static_cast<double>(i % static_cast<size_t>(base));
      }
      u += shift[j];
      u -= std::floor(u);
      z[s * m + j] = ndtri(std::clamp(u, 1e-12, 1.0 - 1e-12));
    }
  }
  return z;
}

NonDominatedBoxes non_dominated_boxes(const std::vector<double>& front, size_t m,
                                      const std::vector<double>& reference) {
  const size_t n = front.size() / m;
  const double minus_infinity = -std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> grid(m - 1);
  for (size_t j = 0; j + 1 < m; ++j) {
    grid[j].push_back(minus_infinity);
    for (size_t i = 0; i < n; ++i) {
      if (front[i * m + j] < reference[j]) grid[j].push_back(front[i * m + j]);
    }
    std::sort(grid[j].begin(), grid[j].end());
    grid[j].erase(std::unique(grid[j].begin(), grid[j].end()), grid[j].end());
    grid[j].push_back(reference[j]);
  }
  NonDominatedBoxes boxes{.m = m};
  std::vector<size_t> cell(m - 1, 0);
  while (true) {
    double bound = reference[m - 1];
    for (size_t i = 0; i < n; ++i) {
      bool below = true;
      for (size_t j = 0; j + 1 < m && below; ++j) below = front[i * m + j] <= grid[j][cell[j]];
      if (below) bound = std::min(bound, front[i * m + m - 1]);
    }
    // The previous box, the cell before this one along the first objective, merged with this one
    // when their bounds agree.
    if (cell[0] > 0 && boxes.upper[(boxes.count - 1) * m + m - 1] == bound) {
      boxes.upper[(boxes.count - 1) * m] = grid[0][cell[0] + 1];
    } else {
      for (size_t j = 0; j + 1 < m; ++j) {
        boxes.lower.push_back(grid[j][cell[j]]);
        boxes.upper.push_back(grid[j][cell[j] + 1]);
      }
      boxes.lower.push_back(minus_infinity);
      boxes.upper.push_back(bound);
      ++boxes.count;
    }
    // The next cell, the first objective fastest.
    size_t j = 0;
    while (j + 1 < m && ++cell[j] + 1 == grid[j].size()) cell[j++] = 0;
    if (j + 1 == m) break;
  }
  return boxes;
}

double expected_improvement_volume(const double* mean, const double* sd,
                                   const std::vector<double>& z, const NonDominatedBoxes& boxes,
                                   double* d_mean, double* d_sd) {
  const size_t m = boxes.m, samples = z.size() / m;
  double total = 0;
  std::vector<double> y(m), side(m), d_y(m);
  if (d_mean != nullptr) std::fill(d_mean, d_mean + m, 0.0), std::fill(d_sd, d_sd + m, 0.0);
  for (size_t s = 0; s < samples; ++s) {
    for (size_t j = 0; j < m; ++j) y[j] = mean[j] + sd[j] * z[s * m + j], d_y[j] = 0;
    for (size_t k = 0; k < boxes.count; ++k) {
      const double* lo = &boxes.lower[k * m];
      const double* up = &boxes.upper[k * m];
      double volume = 1;
      size_t j = 0;
      for (; j < m; ++j) {
        side[j] = up[j] - std::max(y[j], lo[j]);
        if (side[j] <= 0) break;
        volume *= side[j];
      }
      if (j < m) continue;
      total += volume;
      if (d_mean == nullptr) continue;
      for (j = 0; j < m; ++j) {
        if (y[j] > lo[j]) d_y[j] -= volume / side[j];
      }
    }
    if (d_mean != nullptr) {
      for (size_t j = 0; j < m; ++j) d_mean[j] += d_y[j], d_sd[j] += d_y[j] * z[s * m + j];
    }
  }
  const double scale = 1.0 / static_cast<double>(samples);
  if (d_mean != nullptr) {
    for (size_t j = 0; j < m; ++j) d_mean[j] *= scale, d_sd[j] *= scale;
  }
  return total * scale;
}

}  // namespace tuner
