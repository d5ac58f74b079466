#include "search/samplers/gp/output_warping.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>

namespace tuner {
namespace {

constexpr double kLowest = -2.0;  // the lambdas searched: wide enough for heavy tails either way
constexpr double kHighest = 4.0;

double yeo_johnson(double z, double lambda) {
  if (z >= 0) {
    return std::abs(lambda) < 1e-9 ? std::log1p(z) : (std::pow(z + 1, lambda) - 1) / lambda;
  }
  const double mirrored = 2 - lambda;
  return std::abs(mirrored) < 1e-9 ? -std::log1p(-z) : -(std::pow(1 - z, mirrored) - 1) / mirrored;
}

// The profile log likelihood of lambda for standardized values z: normal with the transformed
// values' own mean and variance, plus the log Jacobian.
double log_likelihood(const std::vector<double>& z, double lambda) {
  const double n = static_cast<double>(z.size());
  double sum = 0, sum_sq = 0, jacobian = 0;
  for (double v : z) {
    const double t = yeo_johnson(v, lambda);
    sum += t;
    sum_sq += t * t;
    jacobian += std::copysign(std::log1p(std::abs(v)), v);
  }
  const double variance = std::max(sum_sq / n - (sum / n) * (sum / n), 1e-300);
  return -0.5 * n * std::log(variance) + (lambda - 1) * jacobian;
}

}  // namespace

OutputWarping OutputWarping::fit(const std::vector<double>& y) {
  if (y.size() < 2) return OutputWarping(0, 1, 1);
  // Centred on the median and scaled by the interquartile range: a long tail would inflate a
  // standard deviation and squash the other values into the transform's linear middle.
  std::vector<double> sorted = y;
  std::sort(sorted.begin(), sorted.end());
  auto quantile = [&](double q) {
    const double at = q * static_cast<double>(sorted.size() - 1);
    const size_t i = static_cast<size_t>(at);
    const double frac = at - static_cast<double>(i);
    return i + 1 < sorted.size() ? sorted[i] * (1 - frac) + sorted[i + 1] * frac : sorted[i];
  };
  const double median = quantile(0.5);
  double scale = quantile(0.75) - quantile(0.25);
  if (!(scale > 0)) scale = sorted.back() - sorted.front();
  if (!(scale > 0)) return OutputWarping(median, 1, 1);
  std::vector<double> z(y.size());
  for (size_t i = 0; i < y.size(); ++i) z[i] = (y[i] - median) / scale;
  // The likelihood is unimodal in lambda in practice: a coarse grid, then golden sections
  // around its best point.
  double best = 1, best_ll = log_likelihood(z, 1);
  for (double l = kLowest; l <= kHighest + 1e-12; l += 0.25) {
    const double ll = log_likelihood(z, l);
    if (ll > best_ll) best = l, best_ll = ll;
  }
  double a = std::max(kLowest, best - 0.25), b = std::min(kHighest, best + 0.25);
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  double c = b - ratio * (b - a), d = a + ratio * (b - a);
  double fc = log_likelihood(z, c), fd = log_likelihood(z, d);
  for (int i = 0; i < 30; ++i) {
    if (fc > fd) {
      b = d, d = c, fd = fc;
      c = b - ratio * (b - a), fc = log_likelihood(z, c);
    } else {
      a = c, c = d, fc = fd;
      d = a + ratio * (b - a), fd = log_likelihood(z, d);
    }
  }
  const double refined = (a + b) / 2;
  if (log_likelihood(z, refined) > best_ll) best = refined;
  return OutputWarping(median, scale, best);
}

double OutputWarping::operator()(double v) const {
  return yeo_johnson((v - mean_) / scale_, lambda_);
}

double OutputWarping::log_derivative(double v) const {
  const double z = (v - mean_) / scale_;
  return (lambda_ - 1) * std::copysign(std::log1p(std::abs(z)), z) - std::log(scale_);
}

bool warping_predicts_no_worse(
    const std::vector<std::vector<double>>& x, const std::vector<double>& y,
    const std::function<GaussianProcess(const std::vector<std::vector<double>>&,
                                        const std::vector<double>&)>& fit) {
  const size_t n = y.size(), held = std::max<size_t>(3, n / 4);
  if (n < held + 4) return true;
  const size_t m = n - held;
  const std::vector<std::vector<double>> x_fit(x.begin(),
                                               x.begin() + static_cast<std::ptrdiff_t>(m));
  const std::vector<double> y_fit(y.begin(), y.begin() + static_cast<std::ptrdiff_t>(m));
  const OutputWarping warping = OutputWarping::fit(y_fit);
  auto log_density = [&](bool warped) {
    std::vector<double> values = y_fit;
    if (warped) {
      for (double& v : values) v = warping(v);
    }
    const GaussianProcess gp = fit(x_fit, values);
    const double noise = gp.kernel().noise_variance * gp.output_scale() * gp.output_scale();
    double sum = 0;
    for (size_t j = m; j < n; ++j) {
      const GaussianProcess::Prediction at = gp.predict(x[j]);
      const double v = warped ? warping(y[j]) : y[j];
      const double variance = std::max(at.variance + noise, 1e-300);
      sum += -0.5 *
             (std::log(2 * std::numbers::pi * variance) + (v - at.mean) * (v - at.mean) / variance);
      if (warped) sum += warping.log_derivative(y[j]);
    }
    return sum;
  };
  return !(log_density(false) - log_density(true) > 0.5 * static_cast<double>(held));
}

}  // namespace tuner
