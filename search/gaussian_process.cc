#include "search/gaussian_process.h"

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "search/lbfgs.h"
#include "trials/error.h"

namespace tuner {

namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

const double kSqrt5 = std::sqrt(5.0);

// The priors on the log parameters: Gaussian in log space (log-normal), weak.
constexpr double kLogLengthscaleMean = -0.693;  // log 0.5: half the cube
constexpr double kLogLengthscaleSd = 1.5;
constexpr double kLogSignalMean = 0.0;  // standardized outputs
constexpr double kLogSignalSd = 1.5;
constexpr double kLogNoiseMean = -4.6;  // log 0.01
constexpr double kLogNoiseSd = 2.0;

double log_prior(double value, double mean, double sd, double* gradient) {
  const double z = (value - mean) / sd;
  *gradient = -z / sd;
  return -0.5 * z * z;
}

}  // namespace

struct GaussianProcess::Impl {
  int dims = 0;
  MatrixXd x;  // [n, dims]
  double y_mean = 0, y_scale = 1;
  GpKernelParams kernel;
  Eigen::LLT<MatrixXd> chol;
  VectorXd alpha;  // K^-1 y (standardized)
  double lml = 0;

  double correlation(std::span<const double> a, Eigen::Index row) const {
    double r2 = 0;
    for (int i = 0; i < dims; ++i) {
      const double d =
          (a[static_cast<size_t>(i)] - x(row, i)) / kernel.lengthscales[static_cast<size_t>(i)];
      r2 += d * d;
    }
    const double r = std::sqrt(r2);
    return (1.0 + kSqrt5 * r + 5.0 / 3.0 * r2) * std::exp(-kSqrt5 * r);
  }
};

namespace {

// The negative (log marginal likelihood + log prior) of standardized `y` at log parameters
// `theta` = [log l_1..log l_d, log s2, log n2], and its gradient. `min_noise` floors n2.
double negative_objective(const MatrixXd& x, const VectorXd& y, const VectorXd& theta,
                          double min_noise, VectorXd& gradient) {
  const Eigen::Index n = x.rows(), d = x.cols();
  const VectorXd inv_l2 = (-2.0 * theta.head(d)).array().exp();
  const double s2 = std::exp(theta(d));
  const double n2 = min_noise + std::exp(theta(d + 1));
  MatrixXd k_signal(n, n);
  // d2[i] for pair (a, b) is needed per dimension for the gradient: computed on the fly.
  MatrixXd shape(n, n);  // (5/3)(1 + sqrt5 r) exp(-sqrt5 r), the lengthscale derivatives' factor
  for (Eigen::Index a = 0; a < n; ++a) {
    for (Eigen::Index b = a; b < n; ++b) {
      const double r2 = ((x.row(a) - x.row(b)).array().square() * inv_l2.transpose().array()).sum();
      const double r = std::sqrt(r2);
      const double e = std::exp(-kSqrt5 * r);
      k_signal(a, b) = k_signal(b, a) = s2 * (1.0 + kSqrt5 * r + 5.0 / 3.0 * r2) * e;
      shape(a, b) = shape(b, a) = s2 * 5.0 / 3.0 * (1.0 + kSqrt5 * r) * e;
    }
  }
  MatrixXd k = k_signal;
  k.diagonal().array() += n2;
  Eigen::LLT<MatrixXd> chol(k);
  gradient.setZero(theta.size());
  if (chol.info() != Eigen::Success) return std::numeric_limits<double>::infinity();
  const VectorXd alpha = chol.solve(y);
  const double log_det = 2.0 * chol.matrixLLT().diagonal().array().log().sum();
  double lml =
      -0.5 * y.dot(alpha) - 0.5 * log_det - 0.5 * static_cast<double>(n) * std::log(2 * M_PI);
  // dLML/dtheta_j = 0.5 tr((alpha alpha^T - K^-1) dK/dtheta_j).
  const MatrixXd w = alpha * alpha.transpose() - chol.solve(MatrixXd::Identity(n, n));
  // For lengthscale i: sum_ab P_ab (x_ai - x_bi)^2 / l_i^2 with P = w o shape (symmetric), which is
  // 2 (sum_a r_a x_ai^2 - sum_a x_ai (P x)_ai) with r = P 1: one product for every dimension.
  const MatrixXd p = w.cwiseProduct(shape);
  const VectorXd r = p.rowwise().sum();
  const MatrixXd px = p * x;
  for (Eigen::Index i = 0; i < d; ++i) {
    const double g = 2.0 * (r.dot(x.col(i).cwiseAbs2()) - x.col(i).dot(px.col(i)));
    gradient(i) = 0.5 * g * inv_l2(i);
  }
  gradient(d) = 0.5 * (w.array() * k_signal.array()).sum();
  gradient(d + 1) = 0.5 * w.trace() * (n2 - min_noise);
  double prior_gradient = 0;
  for (Eigen::Index i = 0; i < d; ++i) {
    lml += log_prior(theta(i), kLogLengthscaleMean, kLogLengthscaleSd, &prior_gradient);
    gradient(i) += prior_gradient;
  }
  lml += log_prior(theta(d), kLogSignalMean, kLogSignalSd, &prior_gradient);
  gradient(d) += prior_gradient;
  lml += log_prior(theta(d + 1), kLogNoiseMean, kLogNoiseSd, &prior_gradient);
  gradient(d + 1) += prior_gradient;
  gradient = -gradient;
  return -lml;
}

}  // namespace

GaussianProcess GaussianProcess::fit(const std::vector<std::vector<double>>& x,
                                     const std::vector<double>& y, Rng& rng,
                                     const GpFitOptions& options) {
  if (x.empty() || x.size() != y.size()) {
    throw Error(ErrorCode::kInvalidArgument,
                "GaussianProcess::fit: needs as many points as values, at least one (got " +
                    std::to_string(x.size()) + " points, " + std::to_string(y.size()) + " values)");
  }
  const size_t dims = x.front().size();
  if (dims == 0)
    throw Error(ErrorCode::kInvalidArgument, "GaussianProcess::fit: points of dimension 0");
  auto impl = std::make_unique<Impl>();
  impl->dims = static_cast<int>(dims);
  impl->x.resize(static_cast<Eigen::Index>(x.size()), static_cast<Eigen::Index>(dims));
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i].size() != dims) {
      throw Error(ErrorCode::kInvalidArgument, "GaussianProcess::fit: point " + std::to_string(i) +
                                                   " has dimension " + std::to_string(x[i].size()) +
                                                   ", the first " + std::to_string(dims));
    }
    for (size_t j = 0; j < dims; ++j) {
      if (!std::isfinite(x[i][j]) || !std::isfinite(y[i])) {
        throw Error(ErrorCode::kInvalidArgument,
                    "GaussianProcess::fit: point " + std::to_string(i) + " is not finite");
      }
      impl->x(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = x[i][j];
    }
  }
  VectorXd ys = Eigen::Map<const VectorXd>(y.data(), static_cast<Eigen::Index>(y.size()));
  impl->y_mean = ys.mean();
  const double sd = std::sqrt((ys.array() - impl->y_mean).square().mean());
  impl->y_scale = sd > 0 ? sd : 1.0;
  ys = (ys.array() - impl->y_mean) / impl->y_scale;

  const Eigen::Index d = static_cast<Eigen::Index>(dims);
  auto objective = [&](const VectorXd& theta, VectorXd& gradient) {
    return negative_objective(impl->x, ys, theta, options.min_noise, gradient);
  };
  VectorXd start(d + 2);
  start.head(d).setConstant(kLogLengthscaleMean);
  start(d) = kLogSignalMean;
  start(d + 1) = kLogNoiseMean;
  VectorXd best = start;
  VectorXd gradient;
  double best_value = objective(start, gradient);
  for (int r = 0; r <= options.restarts; ++r) {
    VectorXd from = start;
    if (r > 0) {
      for (Eigen::Index i = 0; i < from.size(); ++i) from(i) += rng.normal();
    }
    const VectorXd theta =
        minimize_lbfgs(objective, from, options.max_iterations, options.relative_decrease);
    const double value = objective(theta, gradient);
    if (value < best_value) {
      best_value = value;
      best = theta;
    }
  }
  impl->kernel.lengthscales.resize(dims);
  for (size_t i = 0; i < dims; ++i) {
    impl->kernel.lengthscales[i] = std::exp(best(static_cast<Eigen::Index>(i)));
  }
  impl->kernel.signal_variance = std::exp(best(d));
  impl->kernel.noise_variance = options.min_noise + std::exp(best(d + 1));
  const Eigen::Index n = impl->x.rows();
  MatrixXd k(n, n);
  for (Eigen::Index a = 0; a < n; ++a) {
    const std::span<const double> row(&x[static_cast<size_t>(a)][0], dims);
    for (Eigen::Index b = 0; b < n; ++b) {
      k(a, b) = impl->kernel.signal_variance * impl->correlation(row, b);
    }
  }
  k.diagonal().array() += impl->kernel.noise_variance;
  impl->chol.compute(k);
  // Rounding can leave the matrix at the fitted parameters just short of positive definite (many
  // close points, tiny noise): raise the noise tenfold until it factors.
  for (int tries = 0; impl->chol.info() != Eigen::Success && tries < 8; ++tries) {
    const double more = std::max(impl->kernel.noise_variance, options.min_noise) * 9.0;
    impl->kernel.noise_variance += more;
    k.diagonal().array() += more;
    impl->chol.compute(k);
  }
  if (impl->chol.info() != Eigen::Success) {
    throw Error(ErrorCode::kInternal,
                "GaussianProcess::fit: the kernel matrix is not positive "
                "definite at the fitted parameters, even with the noise raised to " +
                    std::to_string(impl->kernel.noise_variance));
  }
  impl->alpha = impl->chol.solve(ys);
  impl->lml = -best_value;
  return GaussianProcess(std::move(impl));
}

GaussianProcess::GaussianProcess(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GaussianProcess::GaussianProcess(GaussianProcess&&) noexcept = default;
GaussianProcess& GaussianProcess::operator=(GaussianProcess&&) noexcept = default;
GaussianProcess::~GaussianProcess() = default;

GaussianProcess::Prediction GaussianProcess::predict(std::span<const double> x) const {
  const Impl& m = *impl_;
  const Eigen::Index n = m.x.rows();
  VectorXd k_star(n);
  for (Eigen::Index i = 0; i < n; ++i) k_star(i) = m.kernel.signal_variance * m.correlation(x, i);
  const double mean = k_star.dot(m.alpha);
  const VectorXd v = m.chol.matrixL().solve(k_star);
  const double variance = std::max(0.0, m.kernel.signal_variance - v.squaredNorm());
  return {.mean = m.y_mean + m.y_scale * mean, .variance = variance * m.y_scale * m.y_scale};
}

const GpKernelParams& GaussianProcess::kernel() const { return impl_->kernel; }
double GaussianProcess::log_marginal_likelihood() const { return impl_->lml; }
int GaussianProcess::dimension() const { return impl_->dims; }

}  // namespace tuner
