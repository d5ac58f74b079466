#include "search/samplers/gp/gaussian_process.h"

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "search/samplers/gp/lbfgs.h"
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
  MatrixXd x;                // [n, dims]
  MatrixXd xs;               // [n, dims]: x with each column divided by its lengthscale
  VectorXd inv_lengthscale;  // [dims]
  double y_mean = 0, y_scale = 1;
  GpKernelParams kernel;
  Eigen::LLT<MatrixXd> chol;
  VectorXd alpha;  // K^-1 y (standardized)
  double lml = 0;
};

namespace {

// r2(a, b) = |xs_a - xs_b|^2 for the rows of xs [n, d]; r2 [n, n]. Exact (no Gram-matrix
// cancellation): the diagonal is 0 and near points keep their small distances.
void squared_distances(const MatrixXd& xs, MatrixXd& r2) {
  const Eigen::Index n = xs.rows(), d = xs.cols();
  r2.setZero(n, n);
  for (Eigen::Index b = 0; b < n; ++b) {
    for (Eigen::Index i = 0; i < d; ++i)
      r2.col(b).array() += (xs.col(i).array() - xs(b, i)).square();
  }
}

// The buffers of one fit's objective, reused by each of its evaluations: an evaluation allocates
// nothing (at 100-200 points, fresh n x n matrices cost as much in page faults as the algebra).
struct Workspace {
  Workspace(Eigen::Index n, Eigen::Index d)
      : xs(n, d),
        r2(n, n),
        k_signal(n, n),
        shape(n, n),
        k(n, n),
        w(n, n),
        px(n, d),
        scratch(n / 2 + 1, n / 2 + 1),
        alpha(n),
        row_sums(n) {}
  MatrixXd xs, r2, k_signal, shape, k, w, px, scratch;
  VectorXd alpha, row_sums;
};

// The Matern 5/2 kernel matrix of the rows of `xs` [n, d] (already divided by the lengthscales),
// scaled by s2: k_signal = s2 (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r), and, for the lengthscale
// derivatives, shape = 5/3 s2 (1 + sqrt5 r) exp(-sqrt5 r). Uses ws.r2 as scratch.
void matern_matrices(double s2, Workspace& ws) {
  squared_distances(ws.xs, ws.r2);
  ws.k_signal.array() = ws.r2.array().sqrt();                // r
  ws.shape.array() = (-kSqrt5 * ws.k_signal.array()).exp();  // e
  ws.r2.array() *= (5.0 / 3.0 * s2) * ws.shape.array();      // 5/3 s2 r^2 e
  ws.shape.array() *= (5.0 / 3.0 * s2) * (1.0 + kSqrt5 * ws.k_signal.array());
  ws.k_signal.array() = 0.6 * ws.shape.array() + ws.r2.array();
}

// Replaces the lower triangle of `l` (a lower-triangular factor, [n, n]) by that of its inverse,
// blockwise: [A 0; B C]^-1 = [A^-1 0; -C^-1 B A^-1  C^-1]; n^3/3 flops, a third of a solve
// against the identity. `scratch` has room for [n/2 + 1, n/2 + 1]. The upper triangle is left.
void invert_lower(Eigen::Ref<MatrixXd> l, MatrixXd& scratch) {
  const Eigen::Index n = l.rows();
  if (n <= 16) {
    for (Eigen::Index j = 0; j < n; ++j) {  // column j of the inverse, by forward substitution
      l(j, j) = 1.0 / l(j, j);
      for (Eigen::Index i = j + 1; i < n; ++i) {
        double sum = 0;
        for (Eigen::Index k = j; k < i; ++k) sum += l(i, k) * l(k, j);
        l(i, j) = -sum / l(i, i);
      }
    }
    return;
  }
  const Eigen::Index h = n / 2;
  invert_lower(l.topLeftCorner(h, h), scratch);
  invert_lower(l.bottomRightCorner(n - h, n - h), scratch);
  auto b = l.bottomLeftCorner(n - h, h);
  auto t = scratch.topLeftCorner(n - h, h);
  t.noalias() = l.bottomRightCorner(n - h, n - h).triangularView<Eigen::Lower>() * b;
  b.noalias() = -t * l.topLeftCorner(h, h).triangularView<Eigen::Lower>();
}

// m = l^T l for a lower-triangular `l` [n, n] (its lower triangle; the upper is ignored), into the
// lower triangle of `m`, blockwise: for l = [A 0; B C], l^T l = [A^T A + B^T B, B^T C; C^T B,
// C^T C]; n^3/3 flops (LAPACK's dlauum). `scratch` has room for [n/2 + 1, n/2 + 1].
void lower_gram(const Eigen::Ref<const MatrixXd>& l, Eigen::Ref<MatrixXd> m, MatrixXd& scratch) {
  const Eigen::Index n = l.rows();
  if (n <= 16) {
    for (Eigen::Index j = 0; j < n; ++j) {
      for (Eigen::Index i = j; i < n; ++i) {
        double sum = 0;
        for (Eigen::Index k = i; k < n; ++k) sum += l(k, i) * l(k, j);
        m(i, j) = sum;
      }
    }
    return;
  }
  const Eigen::Index h = n / 2;
  const auto b = l.bottomLeftCorner(n - h, h);
  lower_gram(l.topLeftCorner(h, h), m.topLeftCorner(h, h), scratch);
  m.topLeftCorner(h, h).selfadjointView<Eigen::Lower>().rankUpdate(b.transpose());
  auto t = scratch.topLeftCorner(n - h, h);
  t.noalias() = l.bottomRightCorner(n - h, n - h).triangularView<Eigen::Lower>().transpose() * b;
  m.bottomLeftCorner(n - h, h) = t;
  lower_gram(l.bottomRightCorner(n - h, n - h), m.bottomRightCorner(n - h, n - h), scratch);
}

// The negative (log marginal likelihood + log prior) of standardized `y` at log parameters
// `theta` = [log l_1..log l_d, log s2, log n2], and its gradient. `min_noise` floors n2.
double negative_objective(const MatrixXd& x, const VectorXd& y, const VectorXd& theta,
                          double min_noise, Workspace& ws, VectorXd& gradient) {
  const Eigen::Index n = x.rows(), d = x.cols();
  const double s2 = std::exp(theta(d));
  const double n2 = min_noise + std::exp(theta(d + 1));
  ws.xs.noalias() = x * (-theta.head(d)).array().exp().matrix().asDiagonal();
  matern_matrices(s2, ws);
  ws.k = ws.k_signal;
  ws.k.diagonal().array() += n2;
  Eigen::LLT<Eigen::Ref<MatrixXd>> chol(ws.k);  // in place: ws.k holds the factor
  gradient.setZero(theta.size());
  if (chol.info() != Eigen::Success) return std::numeric_limits<double>::infinity();
  ws.alpha = y;
  chol.solveInPlace(ws.alpha);
  const double log_det = 2.0 * ws.k.diagonal().array().log().sum();
  double lml =
      -0.5 * y.dot(ws.alpha) - 0.5 * log_det - 0.5 * static_cast<double>(n) * std::log(2 * M_PI);
  // dLML/dtheta_j = 0.5 tr(W dK/dtheta_j) with W = alpha alpha^T - K^-1, K^-1 = L^-T L^-1.
  invert_lower(ws.k, ws.scratch);
  lower_gram(ws.k, ws.w, ws.scratch);
  ws.w.triangularView<Eigen::StrictlyUpper>() = ws.w.transpose();
  ws.w = -ws.w;
  ws.w.noalias() += ws.alpha * ws.alpha.transpose();
  // For lengthscale i: sum_ab P_ab (x_ai - x_bi)^2 / l_i^2 with P = W o shape (symmetric), which
  // is 2 (sum_a r_a x_ai^2 - sum_a x_ai (P x)_ai) with r = P 1: one product for every dimension.
  ws.shape.array() *= ws.w.array();  // P
  ws.row_sums.noalias() = ws.shape.rowwise().sum();
  ws.px.noalias() = ws.shape * x;
  const VectorXd inv_l2 = (-2.0 * theta.head(d)).array().exp();
  for (Eigen::Index i = 0; i < d; ++i) {
    const double g = 2.0 * (ws.row_sums.dot(x.col(i).cwiseAbs2()) - x.col(i).dot(ws.px.col(i)));
    gradient(i) = 0.5 * g * inv_l2(i);
  }
  gradient(d) = 0.5 * (ws.w.array() * ws.k_signal.array()).sum();
  gradient(d + 1) = 0.5 * ws.w.trace() * (n2 - min_noise);
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

VectorXd log_parameters(const GpKernelParams& kernel, double min_noise) {
  const Eigen::Index d = static_cast<Eigen::Index>(kernel.lengthscales.size());
  VectorXd theta(d + 2);
  for (Eigen::Index i = 0; i < d; ++i) {
    theta(i) = std::log(kernel.lengthscales[static_cast<size_t>(i)]);
  }
  theta(d) = std::log(kernel.signal_variance);
  theta(d + 1) = std::log(std::max(kernel.noise_variance - min_noise, 1e-12));
  return theta;
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
  if (options.warm_start && options.warm_start->lengthscales.size() != dims) {
    throw Error(ErrorCode::kInvalidArgument,
                "GaussianProcess::fit: the warm start has " +
                    std::to_string(options.warm_start->lengthscales.size()) +
                    " lengthscales for points of dimension " + std::to_string(dims));
  }
  // members[g]: the dimensions in lengthscale group g (one group per dimension without groups).
  const std::vector<int>& groups = options.lengthscale_groups;
  std::vector<int> members(dims, 1);
  if (!groups.empty()) {
    if (groups.size() != dims) {
      throw Error(ErrorCode::kInvalidArgument,
                  "GaussianProcess::fit: " + std::to_string(groups.size()) +
                      " lengthscale groups for points of dimension " + std::to_string(dims));
    }
    const int largest = *std::max_element(groups.begin(), groups.end());
    members.assign(static_cast<size_t>(std::max(largest, 0)) + 1, 0);
    for (size_t i = 0; i < dims; ++i) {
      if (groups[i] < 0) {
        throw Error(ErrorCode::kInvalidArgument, "GaussianProcess::fit: dimension " +
                                                     std::to_string(i) + " has lengthscale group " +
                                                     std::to_string(groups[i]) + " (below 0)");
      }
      ++members[static_cast<size_t>(groups[i])];
    }
    if (std::find(members.begin(), members.end(), 0) != members.end()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "GaussianProcess::fit: a lengthscale group below the largest is empty");
    }
  }
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
  impl->y_mean += options.prior_mean * impl->y_scale;  // the prior mean: 0 once standardized
  ys = (ys.array() - impl->y_mean) / impl->y_scale;

  const Eigen::Index n = impl->x.rows();
  const Eigen::Index d = static_cast<Eigen::Index>(dims);
  Workspace ws(n, d);
  auto full_objective = [&](const VectorXd& theta, VectorXd& gradient) {
    return negative_objective(impl->x, ys, theta, options.min_noise, ws, gradient);
  };
  // With tied lengthscales the fit's parameters are [one log lengthscale per group, log s2,
  // log n2]: expanded to a parameter per dimension, the gradient summed over each group, and the
  // lengthscale prior of each group's members past its first taken back out.
  const Eigen::Index p = static_cast<Eigen::Index>(members.size());
  auto expand = [&](const VectorXd& theta) {
    if (groups.empty()) return theta;
    VectorXd full(d + 2);
    for (Eigen::Index i = 0; i < d; ++i) full(i) = theta(groups[static_cast<size_t>(i)]);
    full(d) = theta(p);
    full(d + 1) = theta(p + 1);
    return full;
  };
  VectorXd full_gradient;
  auto objective = [&](const VectorXd& theta, VectorXd& gradient) {
    if (groups.empty()) return full_objective(theta, gradient);
    double value = full_objective(expand(theta), full_gradient);
    gradient = VectorXd::Zero(p + 2);
    for (Eigen::Index i = 0; i < d; ++i) {
      gradient(groups[static_cast<size_t>(i)]) += full_gradient(i);
    }
    gradient(p) = full_gradient(d);
    gradient(p + 1) = full_gradient(d + 1);
    for (Eigen::Index g = 0; g < p; ++g) {
      const double extra = members[static_cast<size_t>(g)] - 1;
      if (extra == 0) continue;
      double prior_gradient = 0;
      value += extra * log_prior(theta(g), kLogLengthscaleMean, kLogLengthscaleSd, &prior_gradient);
      gradient(g) += extra * prior_gradient;
    }
    return value;
  };
  VectorXd start(p + 2);
  start.head(p).setConstant(kLogLengthscaleMean);
  start(p) = kLogSignalMean;
  start(p + 1) = kLogNoiseMean;
  VectorXd best = start;
  VectorXd gradient;
  double best_value = std::numeric_limits<double>::infinity();
  if (options.warm_start) {
    // One start, from the given parameters: a fit to nearly the same points ends near them.
    const VectorXd full_from = log_parameters(*options.warm_start, options.min_noise);
    VectorXd from = full_from;
    if (!groups.empty()) {
      // A group starts from the mean of its members' log lengthscales.
      from = VectorXd::Zero(p + 2);
      for (Eigen::Index i = 0; i < d; ++i) {
        const int g = groups[static_cast<size_t>(i)];
        from(g) += full_from(i) / members[static_cast<size_t>(g)];
      }
      from(p) = full_from(d);
      from(p + 1) = full_from(d + 1);
    }
    const VectorXd theta =
        minimize_lbfgs(objective, from, options.max_iterations, options.warm_relative_decrease);
    best_value = objective(theta, gradient);
    best = theta;
  }
  if (!std::isfinite(best_value)) {
    best = start;
    best_value = objective(start, gradient);
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
  }
  best = expand(best);
  impl->kernel.lengthscales.resize(dims);
  for (size_t i = 0; i < dims; ++i) {
    impl->kernel.lengthscales[i] = std::exp(best(static_cast<Eigen::Index>(i)));
  }
  impl->kernel.signal_variance = std::exp(best(d));
  impl->kernel.noise_variance = options.min_noise + std::exp(best(d + 1));
  impl->inv_lengthscale = (-best.head(d)).array().exp();
  impl->xs = impl->x * impl->inv_lengthscale.asDiagonal();
  ws.xs = impl->xs;
  matern_matrices(impl->kernel.signal_variance, ws);
  MatrixXd& k = ws.k_signal;
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

namespace {

// Matern 5/2 correlations (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r) of squared distances, in place.
void matern_in_place(Eigen::Ref<MatrixXd> r2) {
  r2.array() = (1.0 + kSqrt5 * r2.array().sqrt() + 5.0 / 3.0 * r2.array()) *
               (-kSqrt5 * r2.array().sqrt()).exp();
}

}  // namespace

GaussianProcess::Prediction GaussianProcess::predict(std::span<const double> x) const {
  Prediction at;
  predict(x, 1, std::span<Prediction>(&at, 1));
  return at;
}

void GaussianProcess::predict(std::span<const double> points, size_t count,
                              std::span<Prediction> out) const {
  const Impl& m = *impl_;
  const Eigen::Index n = m.x.rows(), d = m.dims, c = static_cast<Eigen::Index>(count);
  if (points.size() != count * static_cast<size_t>(d) || out.size() < count) {
    throw Error(ErrorCode::kInvalidArgument,
                "GaussianProcess::predict: " + std::to_string(points.size()) + " coordinates for " +
                    std::to_string(count) + " points of dimension " + std::to_string(d));
  }
  if (count == 0) return;
  // The points scaled by the lengthscales, one per column: [d, c].
  const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>> p(
      points.data(), d, c);
  const MatrixXd ps = m.inv_lengthscale.asDiagonal() * p;
  // k_star [n, c]: squared distances dimension by dimension (exact), then the kernel.
  MatrixXd k_star = MatrixXd::Zero(n, c);
  for (Eigen::Index j = 0; j < c; ++j) {
    for (Eigen::Index i = 0; i < d; ++i) {
      k_star.col(j).array() += (m.xs.col(i).array() - ps(i, j)).square();
    }
  }
  matern_in_place(k_star);
  k_star *= m.kernel.signal_variance;
  const VectorXd mean = k_star.transpose() * m.alpha;
  m.chol.matrixL().solveInPlace(k_star);  // one blocked triangular solve for every point
  for (Eigen::Index j = 0; j < c; ++j) {
    const double variance = std::max(0.0, m.kernel.signal_variance - k_star.col(j).squaredNorm());
    out[static_cast<size_t>(j)] = {.mean = m.y_mean + m.y_scale * mean(j),
                                   .variance = variance * m.y_scale * m.y_scale};
  }
}

GaussianProcess::Prediction GaussianProcess::predict_with_gradient(
    std::span<const double> x, std::span<double> mean_gradient,
    std::span<double> variance_gradient) const {
  const Impl& m = *impl_;
  const Eigen::Index d = m.dims;
  if (x.size() != static_cast<size_t>(d) || mean_gradient.size() != x.size() ||
      variance_gradient.size() != x.size()) {
    throw Error(ErrorCode::kInvalidArgument,
                "GaussianProcess::predict_with_gradient: a point of dimension " +
                    std::to_string(x.size()) + " (and gradients of " +
                    std::to_string(mean_gradient.size()) + ", " +
                    std::to_string(variance_gradient.size()) + ") for a GP of dimension " +
                    std::to_string(d));
  }
  const Eigen::Map<const VectorXd> p(x.data(), d);
  const VectorXd ps = m.inv_lengthscale.cwiseProduct(p);
  const VectorXd r2 = (m.xs.rowwise() - ps.transpose()).rowwise().squaredNorm();
  const Eigen::ArrayXd r = r2.array().sqrt();
  const Eigen::ArrayXd e = (-kSqrt5 * r).exp();
  const double s2 = m.kernel.signal_variance;
  const VectorXd k_star = (s2 * (1.0 + kSqrt5 * r + 5.0 / 3.0 * r2.array()) * e).matrix();
  // dk_i/dp_j = -shape_i (p_j - x_ij) / l_j^2, shape = 5/3 s2 (1 + sqrt5 r) exp(-sqrt5 r).
  const VectorXd shape = (5.0 / 3.0 * s2 * (1.0 + kSqrt5 * r) * e).matrix();
  const double mean = k_star.dot(m.alpha);
  const VectorXd v = m.chol.matrixL().solve(k_star);
  const VectorXd u = m.chol.matrixU().solve(v);  // K^-1 k: the variance's gradient is -2 u^T dk
  const double variance = std::max(0.0, s2 - v.squaredNorm());
  const VectorXd a_shape = m.alpha.cwiseProduct(shape), u_shape = u.cwiseProduct(shape);
  const double a_sum = a_shape.sum(), u_sum = u_shape.sum();
  const VectorXd a_x = m.x.transpose() * a_shape, u_x = m.x.transpose() * u_shape;
  const double y2 = m.y_scale * m.y_scale;
  for (Eigen::Index j = 0; j < d; ++j) {
    const double inv_l2 = m.inv_lengthscale(j) * m.inv_lengthscale(j);
    mean_gradient[static_cast<size_t>(j)] = -m.y_scale * inv_l2 * (p(j) * a_sum - a_x(j));
    variance_gradient[static_cast<size_t>(j)] =
        variance > 0 ? 2.0 * y2 * inv_l2 * (p(j) * u_sum - u_x(j)) : 0.0;
  }
  return {.mean = m.y_mean + m.y_scale * mean, .variance = variance * y2};
}

const GpKernelParams& GaussianProcess::kernel() const { return impl_->kernel; }
double GaussianProcess::output_scale() const { return impl_->y_scale; }
double GaussianProcess::log_marginal_likelihood() const { return impl_->lml; }
int GaussianProcess::dimension() const { return impl_->dims; }

}  // namespace tuner
