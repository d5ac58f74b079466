#include "search/parzen_estimator.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <numeric>
#include <string>

#include "trials/error.h"

namespace tuner {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kSqrt2 = std::numbers::sqrt2;
constexpr double kLogSqrt2Pi = 0.91893853320467274178;  // log(sqrt(2 pi))
constexpr double kEps = 1e-12;                          // the bandwidth floor without the clip
// |z| beyond which Phi(z) is 0 or 1 to double precision (relative to 1).
constexpr double kNegligibleTail = 8.5;

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

[[noreturn]] void fail(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, "ParzenEstimator: " + message);
}

// 0.5 * erfc(|z| / sqrt 2): the mass of the tail beyond |z|.
double upper_tail(double z) { return 0.5 * std::erfc(std::abs(z) / kSqrt2); }

// log(1 - exp(x)) for x <= 0, accurate near 0 and for very negative x.
double log1mexp(double x) {
  return x > -std::numbers::ln2 ? std::log(-std::expm1(x)) : std::log1p(-std::exp(x));
}

// exp(x) for x <= 0 (inputs below -700 give about 1e-304): a branch-free polynomial the compiler
// can vectorize; relative error below 1e-15.
inline double exp_nonpositive(double x) {
  constexpr double kLog2e = std::numbers::log2e;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kShifter = 0x1.8p52;
  x = x < -700.0 ? -700.0 : x;
  double shifted = x * kLog2e + kShifter;  // round to nearest: n in the low mantissa bits
  double n = shifted - kShifter;
  double r = (x - n * kLn2Hi) - n * kLn2Lo;  // |r| <= ln2 / 2
  double p = 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  uint64_t scale = (std::bit_cast<uint64_t>(shifted) + 1023) << 52;  // 2^n
  return p * std::bit_cast<double>(scale);
}

// log of the N(0, 1) mass of [z - a, z + a] (a > 0; log_2a = log(2a)). A series in a when the
// cell is narrow against the kernel (error below 1e-3 in the log at 9 sigmas, far less
// nearer); the leading term of the tail
// expansion when the cell lies beyond 9 sigmas (relative error about 1%, on a mass below e^-40);
// the exact form otherwise.
inline double log_cell_mass(double z, double a, double log_2a) {
  if (a <= 0.125) {
    // log of the integral of exp(-z u - u^2 / 2) over [-a, a] around the cell's centre: the
    // exp(-z u) part exactly (sinh), the u^2 / 2 part and the cross term as a series.
    double a2 = a * a;
    double z2 = z * z;
    double za = std::abs(z) * a;
    // Beyond 9 sigmas (mass below e^-40 of a near kernel's) the series is close enough.
    double sinh_term = za <= 0.5 || std::abs(z) > 9.0
                           ? za * za / 6.0 - za * za * za * za / 180.0
                           : za + std::log1p(-exp_nonpositive(-2.0 * za)) - std::log(2.0 * za);
    return log_2a - 0.5 * z2 - kLogSqrt2Pi + sinh_term - a2 / 6.0 + a2 * a2 / 90.0 -
           z2 * a2 * a2 / 45.0;
  }
  double near = std::abs(z) - a;  // distance of the cell's nearer end from the centre
  if (near > 9.0) {
    double far = near + 2.0 * a;
    double log_near = -0.5 * near * near - std::log(near);
    double log_far = -0.5 * far * far - std::log(far);
    return log_near + log1mexp(log_far - log_near) - kLogSqrt2Pi;
  }
  return log_gauss_mass(z - a, z + a);
}

double transform(bool log, double x) { return log ? std::log(x) : x; }

}  // namespace

double log_ndtr(double z) {
  if (z > 6.0) return std::log1p(-upper_tail(z));
  if (z > -30.0) return std::log(0.5 * std::erfc(-z / kSqrt2));
  // Asymptotic series of the lower tail: phi(z) / -z * (1 - 1/z^2 + 3/z^4 - 15/z^6 + 105/z^8).
  double w = 1.0 / (z * z);
  double series = 1.0 + w * (-1.0 + w * (3.0 + w * (-15.0 + w * 105.0)));
  return -0.5 * z * z - kLogSqrt2Pi - std::log(-z) + std::log(series);
}

double log_gauss_mass(double a, double b) {
  if (!(a <= b)) return -kInf;
  if (a == b) return -kInf;
  if (b <= 0.0) {
    double lb = log_ndtr(b);
    return lb + log1mexp(log_ndtr(a) - lb);
  }
  if (a >= 0.0) return log_gauss_mass(-b, -a);
  // a < 0 < b: one minus both tails.
  double tails =
      (a < -kNegligibleTail ? 0.0 : upper_tail(a)) + (b > kNegligibleTail ? 0.0 : upper_tail(b));
  return std::log1p(-tails);
}

double ndtri(double p) {
  if (p <= 0.0) return -kInf;
  if (p >= 1.0) return kInf;
  // Acklam's rational approximation (relative error 1.2e-9), then one Halley step.
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  double x;
  if (p < kLow) {
    double q = std::sqrt(-2.0 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  } else if (p <= 1.0 - kLow) {
    double q = p - 0.5;
    double r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
  } else {
    double q = std::sqrt(-2.0 * std::log1p(-p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  }
  // Halley refinement against the lower tail (the accurate side for p < 0.5).
  double e = p < 0.5 ? 0.5 * std::erfc(-x / kSqrt2) - p : (1.0 - p) - 0.5 * std::erfc(x / kSqrt2);
  double u = e * std::sqrt(2.0 * std::numbers::pi) * std::exp(0.5 * x * x);
  return x - u / (1.0 + 0.5 * x * u);
}

double truncnorm_ppf(double u, double a, double b) {
  if (a >= 0.0 && a > -b) return -truncnorm_ppf(1.0 - u, -b, -a);  // work in the lower tail
  // Now a < 0 (or both at 0): Phi(a) is accurate; Phi(b) may be close to 1.
  double pa = std::isinf(a) ? 0.0 : 0.5 * std::erfc(-a / kSqrt2);
  double pb = std::isinf(b) ? 1.0 : (b <= 0.0 ? 0.5 * std::erfc(-b / kSqrt2) : 1.0 - upper_tail(b));
  double z;
  if (pb - pa > 0.0) {
    z = ndtri(pa + u * (pb - pa));
  } else {
    // Both bounds deep in the tail: the mass sits at the bound nearer the centre.
    z = b;
  }
  if (std::isnan(z)) z = b;
  return std::clamp(z, a, b);
}

ParzenEstimator::ParzenEstimator(std::span<const Distribution> dims,
                                 std::span<const std::vector<double>> observations,
                                 std::span<const double> weights,
                                 const ParzenEstimatorOptions& options,
                                 std::span<const std::vector<int>> sorted) {
  if (observations.size() != dims.size()) {
    fail(std::to_string(observations.size()) + " observation columns for " +
         std::to_string(dims.size()) + " dimensions");
  }
  if (!sorted.empty() && sorted.size() != dims.size()) fail("sorted orders do not match dims");
  if (!(options.prior_weight >= 0.0) || !std::isfinite(options.prior_weight)) {
    fail("prior_weight must be a finite number >= 0");
  }
  const size_t n = weights.size();
  for (size_t d = 0; d < dims.size(); ++d) {
    if (observations[d].size() != n) {
      fail("observation column " + std::to_string(d) + " has " +
           std::to_string(observations[d].size()) + " values for " + std::to_string(n) +
           " weights");
    }
    if (!sorted.empty() && sorted[d].size() != n) fail("sorted order " + std::to_string(d));
  }
  double weight_sum = 0.0;
  for (double w : weights) {
    if (!(w >= 0.0) || !std::isfinite(w)) fail("weights must be finite and >= 0");
    weight_sum += w;
  }
  if (n > 0 && !(weight_sum > 0.0)) fail("weights must not all be zero");

  const bool with_prior = options.consider_prior || n == 0;
  const size_t n_kernels = n + (with_prior ? 1 : 0);
  // Kernel weights: observation weights, then the prior's; normalized.
  double prior_w = n == 0 ? 1.0 : (with_prior ? options.prior_weight : 0.0);
  double total = weight_sum + prior_w;
  weight_.resize(n_kernels);
  for (size_t k = 0; k < n; ++k) weight_[k] = weights[k] / total;
  if (with_prior) weight_[n] = prior_w / total;

  dims_.resize(dims.size());
  std::vector<int> order;
  for (size_t d = 0; d < dims.size(); ++d) {
    const auto& column = observations[d];
    if (const auto* c = std::get_if<CategoricalDistribution>(&dims[d])) {
      build_categorical(dims_[d], *c, column, options, with_prior);
      continue;
    }
    if (sorted.empty()) {
      order.resize(n);
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](int i, int j) { return column[i] < column[j]; });
    }
    build_numeric(dims_[d], dims[d], column,
                  sorted.empty() ? std::span<const int>(order) : std::span<const int>(sorted[d]),
                  options, with_prior);
  }
  if (dims_.size() == 1 && dims_[0].kind != Kind::kContinuous) merge_identical_kernels();

  // Per kernel constants: log(weight / prod(sigma * Z)) over the continuous dimensions, with one
  // log per kernel (the products are renormalized before they could overflow).
  const size_t K = weight_.size();
  size_t n_continuous = 0;
  for (const Dim& dim : dims_) n_continuous += dim.kind == Kind::kContinuous ? 1 : 0;
  kernel_const_.assign(K, -kLogSqrt2Pi * static_cast<double>(n_continuous));
  // Weights and bandwidths repeat (flat weights; bandwidths at the clip): remember the last log.
  auto memo_log = [](double v, double& last_in, double& last_out) {
    if (v != last_in) {
      last_in = v;
      last_out = std::log(v);
    }
    return last_out;
  };
  double w_in = -1.0, w_out = 0.0;
  for (size_t k = 0; k < K; ++k) kernel_const_[k] += memo_log(weight_[k], w_in, w_out);
  for (const Dim& dim : dims_) {
    if (dim.kind != Kind::kContinuous) continue;
    double s_in = -1.0, s_out = 0.0;
    for (size_t k = 0; k < K; ++k) {
      double a = (dim.low - dim.mu[k]) * dim.inv_sigma[k];
      double b = (dim.high - dim.mu[k]) * dim.inv_sigma[k];
      if (a > -kNegligibleTail || b < kNegligibleTail) kernel_const_[k] -= log_gauss_mass(a, b);
      kernel_const_[k] -= memo_log(dim.sigma[k], s_in, s_out);
    }
  }
  if (dims_.size() == 1 && dims_[0].kind == Kind::kContinuous) sort_kernels_1d(n);
  cum_weight_.resize(K);
  double acc = 0.0;
  for (size_t k = 0; k < K; ++k) {
    acc += weight_[k];
    cum_weight_[k] = acc;
  }
}

void ParzenEstimator::build_numeric(Dim& dim, const Distribution& distribution,
                                    std::span<const double> column, std::span<const int> order,
                                    const ParzenEstimatorOptions& options, bool with_prior) {
  const size_t n = column.size();
  double prior_mu = 0.0;
  double prior_sigma = 0.0;
  double span_low = 0.0;  // the range the bandwidths are measured against
  double span_high = 0.0;
  std::visit(Overloaded{
                 [&](const FloatDistribution& d) {
                   dim.log = d.log;
                   dim.raw_low = d.low;
                   dim.raw_high = d.high;
                   double half = d.step ? 0.5 * *d.step : 0.0;
                   dim.kind = d.step ? Kind::kDiscrete : Kind::kContinuous;
                   dim.step = d.step.value_or(0.0);
                   dim.low = transform(d.log, d.low - half);
                   dim.high = transform(d.log, d.high + half);
                 },
                 [&](const IntDistribution& d) {
                   dim.log = d.log;
                   dim.kind = Kind::kDiscrete;
                   dim.raw_low = static_cast<double>(d.low);
                   dim.raw_high = static_cast<double>(d.high);
                   dim.step = static_cast<double>(d.step);
                   dim.low = transform(d.log, dim.raw_low - 0.5 * dim.step);
                   dim.high = transform(d.log, dim.raw_high + 0.5 * dim.step);
                 },
                 [&](const CategoricalDistribution&) {},
                 [&](const NormalDistribution& d) {
                   dim.log = d.log;
                   dim.kind = Kind::kContinuous;
                   dim.step = d.q.value_or(0.0);
                   dim.low = -kInf;
                   dim.high = kInf;
                   dim.raw_low = d.log ? 0.0 : -kInf;
                   dim.raw_high = kInf;
                 },
             },
             distribution);
  const bool unbounded = std::isinf(dim.low);
  if (unbounded) {
    const auto& d = std::get<NormalDistribution>(distribution);
    prior_mu = d.mu;
    prior_sigma = d.sigma;
    span_low = d.mu - 2.0 * d.sigma;
    span_high = d.mu + 2.0 * d.sigma;
  } else {
    prior_mu = 0.5 * (dim.low + dim.high);
    prior_sigma = dim.high - dim.low;
    span_low = dim.low;
    span_high = dim.high;
  }

  // Bandwidths: the larger gap to a neighbour in sorted order (the range's ends are neighbours
  // of the outermost observations), as Optuna's TPE computes them.
  const size_t n_kernels = n + (with_prior ? 1 : 0);
  dim.mu.resize(n_kernels);
  dim.sigma.resize(n_kernels);
  std::vector<double> sorted_t(n);
  for (size_t i = 0; i < n; ++i) sorted_t[i] = transform(dim.log, column[order[i]]);
  double lo_end = unbounded && n > 0 ? std::min(span_low, sorted_t.front()) : span_low;
  double hi_end = unbounded && n > 0 ? std::max(span_high, sorted_t.back()) : span_high;
  double max_sigma = unbounded ? prior_sigma : span_high - span_low;
  double min_sigma = options.consider_magic_clip
                         ? (span_high - span_low) / std::min(100.0, 1.0 + n_kernels)
                         : kEps;
  min_sigma = std::min(min_sigma, max_sigma);
  for (size_t i = 0; i < n; ++i) {
    double prev = i == 0 ? lo_end : sorted_t[i - 1];
    double next = i + 1 == n ? hi_end : sorted_t[i + 1];
    double s = std::max(sorted_t[i] - prev, next - sorted_t[i]);
    if (!options.consider_endpoints && n >= 2) {
      if (i == 0) s = sorted_t[1] - sorted_t[0];
      if (i + 1 == n) s = sorted_t[n - 1] - sorted_t[n - 2];
    }
    size_t k = static_cast<size_t>(order[i]);
    dim.mu[k] = sorted_t[i];
    dim.sigma[k] = std::clamp(s, min_sigma, max_sigma);
  }
  if (with_prior) {
    dim.mu[n] = prior_mu;
    dim.sigma[n] = prior_sigma;
  }
  dim.inv_sigma.resize(n_kernels);
  for (size_t k = 0; k < n_kernels; ++k) dim.inv_sigma[k] = 1.0 / dim.sigma[k];
  dim.order.assign(order.begin(), order.end());
  if (dim.kind != Kind::kDiscrete) return;

  // Distinct (mu, sigma) shapes: observations repeat on a grid, and their mass tables are shared.
  dim.pair.assign(n_kernels, -1);
  size_t run_start = 0;
  for (size_t i = 0; i <= n; ++i) {
    if (i < n && (i == run_start || sorted_t[i] == sorted_t[run_start])) continue;
    // sorted_t[run_start, i) are equal: one shape per distinct sigma among them.
    size_t first_pair = dim.pair_mu.size();
    for (size_t j = run_start; j < i; ++j) {
      int k = order[j];
      int found = -1;
      for (size_t p = first_pair; p < dim.pair_mu.size(); ++p) {
        if (dim.pair_sigma[p] == dim.sigma[k]) {
          found = static_cast<int>(p);
          break;
        }
      }
      if (found < 0) {
        found = static_cast<int>(dim.pair_mu.size());
        dim.pair_mu.push_back(dim.mu[k]);
        dim.pair_sigma.push_back(dim.sigma[k]);
      }
      dim.pair[k] = found;
    }
    run_start = i;
  }
  if (with_prior) {
    dim.pair[n] = static_cast<int>(dim.pair_mu.size());
    dim.pair_mu.push_back(prior_mu);
    dim.pair_sigma.push_back(prior_sigma);
  }
  dim.pair_log_z.resize(dim.pair_mu.size());
  for (size_t p = 0; p < dim.pair_mu.size(); ++p) {
    double a = (dim.low - dim.pair_mu[p]) / dim.pair_sigma[p];
    double b = (dim.high - dim.pair_mu[p]) / dim.pair_sigma[p];
    dim.pair_log_z[p] = (a > -kNegligibleTail || b < kNegligibleTail) ? log_gauss_mass(a, b) : 0.0;
  }
}

void ParzenEstimator::build_categorical(Dim& dim, const CategoricalDistribution& distribution,
                                        std::span<const double> column,
                                        const ParzenEstimatorOptions& options, bool with_prior) {
  const size_t n = column.size();
  const int n_choices = static_cast<int>(distribution.choices.size());
  dim.kind = Kind::kCategorical;
  dim.n_choices = n_choices;
  const size_t n_kernels = n + (with_prior ? 1 : 0);
  // Kernel of an observation of choice c: prior_weight / n_kernels on every choice, plus 1 on c,
  // normalized (Optuna's categorical kernel). Shapes: one per choice, then the uniform prior.
  double smoothing = n == 0 ? 1.0 : options.prior_weight / static_cast<double>(n_kernels);
  dim.cat_p.assign(static_cast<size_t>(n_choices + 1) * n_choices, 0.0);
  for (int c = 0; c <= n_choices; ++c) {
    double* row = &dim.cat_p[static_cast<size_t>(c) * n_choices];
    if (c == n_choices) {
      std::fill(row, row + n_choices, 1.0 / n_choices);
      continue;
    }
    double norm = 1.0 + smoothing * n_choices;
    std::fill(row, row + n_choices, smoothing / norm);
    row[c] = (1.0 + smoothing) / norm;
  }
  dim.cat_log_p.resize(dim.cat_p.size());
  for (size_t i = 0; i < dim.cat_p.size(); ++i) dim.cat_log_p[i] = std::log(dim.cat_p[i]);
  dim.pair.resize(n_kernels);
  for (size_t k = 0; k < n; ++k) {
    double index = std::round(column[k]);
    if (!(index >= 0 && index < n_choices)) {
      fail("categorical observation " + std::to_string(column[k]) + " is not a choice index");
    }
    dim.pair[k] = static_cast<int>(index);
  }
  if (with_prior) dim.pair[n] = n_choices;
}

void ParzenEstimator::merge_identical_kernels() {
  // One dimension, discrete or categorical: kernels with one shape are one kernel whose weight
  // is their sum. The mixture is the same; evaluating it is cheaper.
  Dim& dim = dims_[0];
  size_t n_pairs =
      dim.kind == Kind::kCategorical ? static_cast<size_t>(dim.n_choices) + 1 : dim.pair_mu.size();
  std::vector<double> weight(n_pairs, 0.0);
  for (size_t k = 0; k < weight_.size(); ++k) {
    weight[static_cast<size_t>(dim.pair[k])] += weight_[k];
  }
  std::vector<int> kept;  // the shapes that carry weight
  for (size_t p = 0; p < n_pairs; ++p) {
    if (weight[p] > 0.0) kept.push_back(static_cast<int>(p));
  }
  weight_.clear();
  std::vector<double> mu, sigma, inv_sigma;
  for (int p : kept) {
    weight_.push_back(weight[static_cast<size_t>(p)]);
    if (dim.kind == Kind::kDiscrete) {
      mu.push_back(dim.pair_mu[static_cast<size_t>(p)]);
      sigma.push_back(dim.pair_sigma[static_cast<size_t>(p)]);
      inv_sigma.push_back(1.0 / sigma.back());
    }
  }
  dim.pair = kept;
  if (dim.kind == Kind::kDiscrete) {
    dim.mu = std::move(mu);
    dim.sigma = std::move(sigma);
    dim.inv_sigma = std::move(inv_sigma);
  }
}

double ParzenEstimator::draw_in_dim(const Dim& dim, int kernel, Rng& rng) const {
  const size_t k = static_cast<size_t>(kernel);
  if (dim.kind == Kind::kCategorical) {
    const double* row = &dim.cat_p[static_cast<size_t>(dim.pair[k]) * dim.n_choices];
    double u = rng.uniform();
    double acc = 0.0;
    for (int c = 0; c + 1 < dim.n_choices; ++c) {
      acc += row[c];
      if (u < acc) return c;
    }
    return dim.n_choices - 1;
  }
  double mu = dim.mu[k];
  double sigma = dim.sigma[k];
  double z = truncnorm_ppf(rng.uniform(), (dim.low - mu) / sigma, (dim.high - mu) / sigma);
  double t = std::clamp(mu + sigma * z, dim.low, dim.high);
  double x = dim.log ? std::exp(t) : t;
  if (dim.kind == Kind::kDiscrete) {
    x = dim.raw_low + std::round((x - dim.raw_low) / dim.step) * dim.step;
  } else if (dim.step > 0.0) {  // a normal's q
    x = std::round(x / dim.step) * dim.step;
    if (dim.log && x <= 0.0) x = dim.step;
  }
  if (dim.log && !(x > 0.0)) x = std::numeric_limits<double>::min();
  return std::clamp(x, dim.raw_low, dim.raw_high);
}

std::vector<double> ParzenEstimator::sample(Rng& rng, int n) const {
  const size_t n_dims = dims_.size();
  std::vector<double> out(static_cast<size_t>(std::max(n, 0)) * n_dims);
  for (int i = 0; i < n; ++i) {
    double u = rng.uniform() * cum_weight_.back();
    auto it = std::upper_bound(cum_weight_.begin(), cum_weight_.end(), u);
    int kernel = static_cast<int>(
        std::min<ptrdiff_t>(it - cum_weight_.begin(), static_cast<ptrdiff_t>(n_kernels()) - 1));
    // Skip zero-weight kernels (a zero prior weight) that upper_bound may land on.
    while (kernel > 0 && weight_[static_cast<size_t>(kernel)] == 0.0) --kernel;
    for (size_t d = 0; d < n_dims; ++d) {
      out[static_cast<size_t>(i) * n_dims + d] = draw_in_dim(dims_[d], kernel, rng);
    }
  }
  return out;
}

void ParzenEstimator::add_dim_log_pdf(size_t d, std::span<const double> x, int n,
                                      std::vector<double>& acc) const {
  const Dim& dim = dims_[d];
  const size_t n_dims = dims_.size();
  const size_t K = n_kernels();
  if (dim.kind == Kind::kContinuous) {
    const double* mu = dim.mu.data();
    const double* inv_sigma = dim.inv_sigma.data();
    for (int i = 0; i < n; ++i) {
      double t = transform(dim.log, x[static_cast<size_t>(i) * n_dims + d]);
      double* row = &acc[static_cast<size_t>(i) * K];
      for (size_t k = 0; k < K; ++k) {
        double z = (t - mu[k]) * inv_sigma[k];
        row[k] -= 0.5 * z * z;
      }
    }
    return;
  }
  if (dim.kind == Kind::kCategorical) {
    const int* pair = dim.pair.data();
    for (int i = 0; i < n; ++i) {
      size_t c = static_cast<size_t>(std::lround(x[static_cast<size_t>(i) * n_dims + d]));
      double* row = &acc[static_cast<size_t>(i) * K];
      for (size_t k = 0; k < K; ++k) {
        row[k] += dim.cat_log_p[static_cast<size_t>(pair[k]) * dim.n_choices + c];
      }
    }
    return;
  }
  // Discrete: a table of log masses over (distinct point value, kernel shape), then a gather.
  std::vector<int> point_order(static_cast<size_t>(n));
  std::iota(point_order.begin(), point_order.end(), 0);
  auto value = [&](int i) { return x[static_cast<size_t>(i) * n_dims + d]; };
  std::sort(point_order.begin(), point_order.end(),
            [&](int i, int j) { return value(i) < value(j); });
  std::vector<int> point_cell(static_cast<size_t>(n));
  std::vector<double> cell_values;
  for (int i : point_order) {
    if (cell_values.empty() || value(i) != cell_values.back()) cell_values.push_back(value(i));
    point_cell[static_cast<size_t>(i)] = static_cast<int>(cell_values.size()) - 1;
  }
  const bool merged = n_dims == 1;  // kernels are shapes
  const size_t n_shapes = merged ? K : dim.pair_mu.size();
  const double* shape_mu = merged ? dim.mu.data() : dim.pair_mu.data();
  const double* shape_sigma = merged ? dim.sigma.data() : dim.pair_sigma.data();
  std::vector<double> log_sigma(n_shapes);
  for (size_t p = 0; p < n_shapes; ++p) log_sigma[p] = std::log(shape_sigma[p]);
  std::vector<double> table(cell_values.size() * n_shapes);
  for (size_t c = 0; c < cell_values.size(); ++c) {
    double lo = transform(dim.log, cell_values[c] - 0.5 * dim.step);
    double hi = transform(dim.log, cell_values[c] + 0.5 * dim.step);
    double centre = 0.5 * (lo + hi);
    double half = 0.5 * (hi - lo);
    double log_width = std::log(2.0 * half);
    double* trow = &table[c * n_shapes];
    for (size_t p = 0; p < n_shapes; ++p) {
      size_t shape = merged ? static_cast<size_t>(dim.pair[p]) : p;
      double inv = 1.0 / shape_sigma[p];
      double z = (centre - shape_mu[p]) * inv;
      double a = half * inv;
      trow[p] = log_cell_mass(z, a, log_width - log_sigma[p]) - dim.pair_log_z[shape];
    }
  }
  for (int i = 0; i < n; ++i) {
    const double* trow = &table[static_cast<size_t>(point_cell[static_cast<size_t>(i)]) * n_shapes];
    double* row = &acc[static_cast<size_t>(i) * K];
    if (merged) {
      for (size_t k = 0; k < K; ++k) row[k] += trow[k];
    } else {
      for (size_t k = 0; k < K; ++k) row[k] += trow[dim.pair[k]];
    }
  }
}

void ParzenEstimator::sort_kernels_1d(size_t n_observations) {
  // One continuous dimension: observation kernels sorted by centre, so that log_pdf() visits
  // only those within reach of a point. The prior kernel (if any) stays last.
  Dim& dim = dims_[0];
  const std::vector<int>& perm = dim.order;  // ascending centres, from build_numeric()
  auto apply = [&](std::vector<double>& v) {
    std::vector<double> out(v);
    for (size_t i = 0; i < n_observations; ++i) out[i] = v[static_cast<size_t>(perm[i])];
    v = std::move(out);
  };
  apply(dim.mu);
  apply(dim.sigma);
  apply(dim.inv_sigma);
  apply(weight_);
  apply(kernel_const_);
  n_sorted_ = n_observations;
  max_sorted_sigma_ = 0.0;
  max_sorted_const_ = -kInf;
  for (size_t k = 0; k < n_observations; ++k) {
    max_sorted_sigma_ = std::max(max_sorted_sigma_, dim.sigma[k]);
    max_sorted_const_ = std::max(max_sorted_const_, kernel_const_[k]);
  }
}

double ParzenEstimator::log_pdf_1d(double x) const {
  const Dim& dim = dims_[0];
  const double t = transform(dim.log, x);
  const size_t K = n_kernels();
  const double* mu = dim.mu.data();
  auto term = [&](size_t k) {
    double z = (t - mu[k]) * dim.inv_sigma[k];
    return kernel_const_[k] - 0.5 * z * z;
  };
  // A lower bound of the largest term: the prior's, and the nearest observations'.
  double floor = -kInf;
  for (size_t k = n_sorted_; k < K; ++k) floor = std::max(floor, term(k));
  const double* begin = mu;
  const double* end = mu + n_sorted_;
  size_t near = static_cast<size_t>(std::lower_bound(begin, end, t) - begin);
  if (near < n_sorted_) floor = std::max(floor, term(near));
  if (near > 0) floor = std::max(floor, term(near - 1));
  // Kernels further than `reach` add less than e^-40 of the largest term.
  double reach =
      max_sorted_sigma_ * std::sqrt(2.0 * std::max(0.0, max_sorted_const_ - floor + 40.0));
  size_t lo = static_cast<size_t>(std::lower_bound(begin, end, t - reach) - begin);
  size_t hi = static_cast<size_t>(std::upper_bound(begin, end, t + reach) - begin);
  double max = floor;
  for (size_t k = lo; k < hi; ++k) max = std::max(max, term(k));
  if (std::isinf(max)) return max;
  double sum = 0.0;
  for (size_t k = lo; k < hi; ++k) {
    double e = term(k) - max;
    if (e > -40.0) sum += exp_nonpositive(e);
  }
  for (size_t k = n_sorted_; k < K; ++k) sum += exp_nonpositive(term(k) - max);
  return max + std::log(sum);
}

std::vector<double> ParzenEstimator::log_pdf(std::span<const double> x, int n) const {
  const size_t n_dims = dims_.size();
  if (n < 0 || x.size() != static_cast<size_t>(n) * n_dims) {
    fail("log_pdf got " + std::to_string(x.size()) + " values for " + std::to_string(n) +
         " points of " + std::to_string(n_dims) + " dimensions");
  }
  if (n_sorted_ > 0 || (n_dims == 1 && dims_[0].kind == Kind::kContinuous)) {
    std::vector<double> out(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) out[static_cast<size_t>(i)] = log_pdf_1d(x[static_cast<size_t>(i)]);
    return out;
  }
  const size_t K = n_kernels();
  std::vector<double> acc(static_cast<size_t>(n) * K);
  for (int i = 0; i < n; ++i) {
    std::copy(kernel_const_.begin(), kernel_const_.end(),
              acc.begin() + static_cast<ptrdiff_t>(i * K));
  }
  for (size_t d = 0; d < n_dims; ++d) add_dim_log_pdf(d, x, n, acc);
  std::vector<double> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const double* row = &acc[static_cast<size_t>(i) * K];
    double max = -kInf;
    for (size_t k = 0; k < K; ++k) max = std::max(max, row[k]);
    if (std::isinf(max)) {
      out[static_cast<size_t>(i)] = max;
      continue;
    }
    double sum = 0.0;
    for (size_t k = 0; k < K; ++k) {
      double e = row[k] - max;
      if (e > -40.0) sum += exp_nonpositive(e);  // the rest adds less than K * 4e-18
    }
    out[static_cast<size_t>(i)] = max + std::log(sum);
  }
  return out;
}

}  // namespace tuner
