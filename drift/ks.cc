#include "drift/ks.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <vector>

namespace tuner::drift {

double kolmogorov_survival(double z) {
  if (!(z > 0)) return 1.0;
  if (z < 1.0) {
    // The alternating series converges slowly for small z; the theta-function form of the CDF,
    // sqrt(2 pi) / z * sum_{k>=1} exp(-(2k-1)^2 pi^2 / (8 z^2)), fast.
    const double w = std::numbers::pi * std::numbers::pi / (8.0 * z * z);
    double cdf = 0;
    for (int k = 1; k <= 20; ++k) {
      const double odd = 2.0 * k - 1.0;
      const double term = std::exp(-odd * odd * w);
      cdf += term;
      if (term < 1e-17 * cdf) break;
    }
    cdf *= std::sqrt(2.0 * std::numbers::pi) / z;
    return std::clamp(1.0 - cdf, 0.0, 1.0);
  }
  double sum = 0, sign = 1;
  for (int k = 1; k <= 100; ++k) {
    const double term = std::exp(-2.0 * k * k * z * z);
    sum += sign * term;
    if (term < 1e-17) break;
    sign = -sign;
  }
  return std::clamp(2.0 * sum, 0.0, 1.0);
}

KsResult ks_two_sample(std::span<const double> reference, std::span<const double> current) {
  if (reference.empty() || current.empty()) {
    throw std::invalid_argument("ks_two_sample: a sample is empty");
  }
  std::vector<double> a(reference.begin(), reference.end());
  std::vector<double> b(current.begin(), current.end());
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  const double n = static_cast<double>(a.size()), m = static_cast<double>(b.size());
  size_t i = 0, j = 0;
  double d = 0;
  while (i < a.size() && j < b.size()) {
    // Step past every copy of the next value in both samples before comparing.
    const double x = std::min(a[i], b[j]);
    while (i < a.size() && a[i] == x) ++i;
    while (j < b.size() && b[j] == x) ++j;
    d = std::max(d, std::abs(static_cast<double>(i) / n - static_cast<double>(j) / m));
  }
  // Past the end of one sample the other's distribution function only rises towards 1, so the
  // largest gap is already seen.
  KsResult r;
  r.statistic = d;
  r.p_value = kolmogorov_survival(std::sqrt(n * m / (n + m)) * d);
  return r;
}

}  // namespace tuner::drift
