#include "search/samplers/tpe/parzen_estimator.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <numeric>
#include <string>

#include "trials/error.h"
#include "trials/overloaded.h"

// The density loops are the sampler's hot path: on x86-64, also compile them for AVX2 and FMA and
// pick the version at load time, so one binary runs everywhere and fast where it can.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define TUNER_VECTORIZED __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define TUNER_VECTORIZED
#endif

namespace tuner {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kSqrt2 = std::numbers::sqrt2;
constexpr double kLogSqrt2Pi = 0.91893853320467274178;  // log(sqrt(2 pi))
constexpr double kEps = 1e-12;                          // the bandwidth floor without the clip
// |z| beyond which Phi(z) is 0 or 1 to double precision (relative to 1).
constexpr double kNegligibleTail = 8.5;

[[noreturn]] void fail(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, "ParzenEstimator: " + message);
}

// 0.5 * erfc(|z| / sqrt 2): the mass of the tail beyond |z|.
double upper_tail(double z) { return 0.5 * std::erfc(std::abs(z) / kSqrt2); }

// log(1 - exp(x)) for x <= 0, accurate near 0 and for very negative x.
double log1mexp(double x) {
  return x > -std::numbers::ln2 ? std::log(-std::expm1(x)) : std::log1p(-std::exp(x));
}

// Functions with vector arguments are always inlined into their callers, so that each of a
// caller's target_clones versions compiles them for its own instruction set: called out of line
// (at -O0 or -O1, in sanitizer builds), a vector would be passed in an AVX register by one side
// and in memory by the other. So the ABI note -Wpsabi gives for them does not apply.
#if defined(__GNUC__)
#define TUNER_LANES_INLINE [[gnu::always_inline]] inline
#else
#define TUNER_LANES_INLINE inline
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

// e^r - Taylor's polynomial to r^12 in Horner's form - for |r| <= ln 2 / 2; for a double or,
// lane by lane, for a vector of them (the same operations in the same order: the same bits).
template <typename T>
TUNER_LANES_INLINE T exp_polynomial(const T& r) {
  T p = T{} + 1.0 / 479001600.0;
  for (const double c :
       {1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0,
        1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0}) {
    p = p * r + c;
  }
  return p;
}

// exp(x) for x <= 0 (inputs below -700 give about 1e-304): a branch-free polynomial the compiler
// can vectorize; relative error below 1e-15.
inline double exp_nonpositive(double x) {
  constexpr double kLog2e = std::numbers::log2e;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kShifter = 0x1.8p52;
  // max(x, -700) on the bits (x <= 0: the more negative, the larger as an unsigned integer), so
  // that GCC does not turn it into a branch and the loops that call this still vectorize.
  x = std::bit_cast<double>(std::min(std::bit_cast<uint64_t>(x), std::bit_cast<uint64_t>(-700.0)));
  double shifted = x * kLog2e + kShifter;  // round to nearest: n in the low mantissa bits
  double n = shifted - kShifter;
  double r = (x - n * kLn2Hi) - n * kLn2Lo;  // |r| <= ln2 / 2
  const double p = exp_polynomial(r);
  uint64_t scale = (std::bit_cast<uint64_t>(shifted) + 1023) << 52;  // 2^n
  return p * std::bit_cast<double>(scale);
}

// Four points at once, one per lane of a vector (GCC and Clang vector extensions): the joint
// density loops evaluate a block of points against each kernel.
constexpr size_t kLanes = 4;
typedef double Lanes __attribute__((vector_size(kLanes * sizeof(double))));
typedef uint64_t LaneBits __attribute__((vector_size(kLanes * sizeof(double))));

TUNER_LANES_INLINE Lanes broadcast(double v) { return Lanes{v, v, v, v}; }
// Lanes from and to memory that need not be aligned to the vector's size.
TUNER_LANES_INLINE Lanes load_lanes(const double* p) {
  Lanes v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
TUNER_LANES_INLINE void store_lanes(double* p, const Lanes& v) { std::memcpy(p, &v, sizeof v); }

// exp_nonpositive() in each lane: the same operations, so the same bits.
TUNER_LANES_INLINE Lanes exp_nonpositive(const Lanes& in) {
  Lanes x = in;
  constexpr double kLog2e = std::numbers::log2e;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kShifter = 0x1.8p52;
  const LaneBits bits = std::bit_cast<LaneBits>(x);
  const LaneBits floor_bits = LaneBits{} + std::bit_cast<uint64_t>(-700.0);
  x = std::bit_cast<Lanes>(bits < floor_bits ? bits : floor_bits);
  Lanes shifted = x * kLog2e + kShifter;
  Lanes n = shifted - kShifter;
  Lanes r = (x - n * kLn2Hi) - n * kLn2Lo;
  const Lanes p = exp_polynomial(r);
  const LaneBits scale = (std::bit_cast<LaneBits>(shifted) + 1023) << 52;  // 2^n
  return p * std::bit_cast<Lanes>(scale);
}

// log(x) for finite x > 0 that is not subnormal: a branch-free polynomial the compiler can
// vectorize (fdlibm's reduction to [sqrt(1/2), sqrt(2)) and atanh series); error within 1 ulp.
inline double log_positive(double x) {
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  // x = m 2^e with m in [sqrt(1/2), sqrt(2)), on the bits: integer selects keep the loops that
  // call this free of branches (GCC turns a floating-point select into a branch).
  const uint64_t bits = std::bit_cast<uint64_t>(x);
  const uint64_t mantissa = bits & 0x000fffffffffffffULL;
  const uint64_t big = mantissa > (std::bit_cast<uint64_t>(kSqrt2) & 0x000fffffffffffffULL);
  const double m = std::bit_cast<double>(mantissa | (0x3ff0000000000000ULL - (big << 52)));
  const double e =
      std::bit_cast<double>(((bits >> 52) + big) | 0x4330000000000000ULL) - (0x1p52 + 1023.0);
  const double f = m - 1.0;
  const double s = f / (m + 1.0);  // |s| <= 0.172
  const double s2 = s * s;
  double p = 1.0 / 21.0;
  p = p * s2 + 1.0 / 19.0;
  p = p * s2 + 1.0 / 17.0;
  p = p * s2 + 1.0 / 15.0;
  p = p * s2 + 1.0 / 13.0;
  p = p * s2 + 1.0 / 11.0;
  p = p * s2 + 1.0 / 9.0;
  p = p * s2 + 1.0 / 7.0;
  p = p * s2 + 1.0 / 5.0;
  p = p * s2 + 1.0 / 3.0;
  // log(m) = 2 atanh(s) = 2 s + 2 s^3 p, with 2 s written f - s f for accuracy.
  return e * kLn2Hi + ((f - s * f) + (2.0 * s * s2 * p + e * kLn2Lo));
}

// The series expansion of the log mass of a narrow cell (half-width a, centre z), valid where
// log_cell_mass_series() says it is.
inline double log_cell_mass_series_value(double z, double a, double log_2a) {
  const double a2 = a * a;
  const double z2 = z * z;
  const double za = std::abs(z) * a;
  return log_2a - 0.5 * z2 - kLogSqrt2Pi + (za * za / 6.0 - za * za * za * za / 180.0) - a2 / 6.0 +
         a2 * a2 / 90.0 - z2 * a2 * a2 / 45.0;
}

// The series regime of log_cell_mass_common() alone (a narrow cell), without branches; NaN where
// it does not apply. Most cells of a fine grid (a log int over a wide range) are in it, and it
// costs a fraction of the far tail's logs: callers take it first, then log_cell_mass_common() for
// the rest. Where it applies, it equals log_cell_mass_common() bit for bit.
inline double log_cell_mass_series(double z, double a, double log_2a) {
  const double abs_z = std::abs(z);
  const double za = abs_z * a;
  const double series = log_cell_mass_series_value(z, a, log_2a);
  const bool is_series = (a <= 0.125) & ((za <= 0.5) | (abs_z > 9.0));
  const uint64_t series_mask = uint64_t{0} - static_cast<uint64_t>(is_series);
  return std::bit_cast<double>((std::bit_cast<uint64_t>(series) & series_mask) |
                               (std::bit_cast<uint64_t>(kNaN) & ~series_mask));
}

// log_cell_mass() over many cells: the two regimes that cover most cells (the series, and the
// far tail), without branches, so that the loop vectorizes; NaN where log_cell_mass() takes
// another path (the caller evaluates those one by one). The far tail's logs are log_positive()'s.
inline double log_cell_mass_common(double z, double a, double log_2a) {
  const double abs_z = std::abs(z);
  const double za = abs_z * a;
  const double series = log_cell_mass_series_value(z, a, log_2a);
  const double near = abs_z - a;
  // max(near, 1), which keeps the unused lanes finite, on the bits (ordered as integers for
  // positive doubles; a negative near is a negative integer): GCC would rewrite a floating-point
  // max into a branch around the next addition.
  const double near_c =
      std::bit_cast<double>(std::max(std::bit_cast<int64_t>(near), std::bit_cast<int64_t>(1.0)));
  const double far = near_c + 2.0 * a;
  const double log_near = -0.5 * near_c * near_c - log_positive(near_c);
  const double log_far = -0.5 * far * far - log_positive(far);
  const double x = log_far - log_near;  // < -2.2
  const double tail = log_near + log_positive(1.0 - exp_nonpositive(x)) - kLogSqrt2Pi;
  const bool is_series = (a <= 0.125) & ((za <= 0.5) | (abs_z > 9.0));
  const bool is_far = (a > 0.125) & (near > 9.0);
  // Selects on the bits: GCC would compute a selected result only where it is selected, which
  // (floating-point operations may trap) keeps the loop from vectorizing.
  const uint64_t series_mask = uint64_t{0} - static_cast<uint64_t>(is_series);
  const uint64_t known_mask = uint64_t{0} - static_cast<uint64_t>(is_series | is_far);
  const uint64_t value = (std::bit_cast<uint64_t>(series) & series_mask) |
                         (std::bit_cast<uint64_t>(tail) & ~series_mask);
  return std::bit_cast<double>((value & known_mask) |
                               (std::bit_cast<uint64_t>(kNaN) & ~known_mask));
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
    double x = log_far - log_near;  // < -2.2
    // Below -37, log1p(-e^x) is -e^x to double precision (and vanishes next to log_near).
    double log_far_part = x < -37.0 ? -exp_nonpositive(x) : std::log1p(-std::exp(x));
    return log_near + log_far_part - kLogSqrt2Pi;
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

ParzenMemo::ParzenMemo() : table_(size_t{1} << kBits), log_table_(size_t{1} << kBits) {}

double ParzenMemo::log(double x) {
  const uint64_t k = std::bit_cast<uint64_t>(x);
  const uint64_t h = k * 0x9E3779B97F4A7C15ULL;
  LogEntry& e = log_table_[static_cast<size_t>((h ^ (h >> 31)) >> (64 - kBits))];
  if (e.x != k) {
    e.value = std::log(x);
    e.x = k;
  }
  return e.value;
}

double ParzenMemo::log_gauss_mass(double a, double b) {
  const uint64_t ka = std::bit_cast<uint64_t>(a);
  const uint64_t kb = std::bit_cast<uint64_t>(b);
  const uint64_t h = (ka * 0x9E3779B97F4A7C15ULL) ^ (kb * 0xC2B2AE3D27D4EB4FULL);
  Entry& e = table_[static_cast<size_t>((h ^ (h >> 29)) >> (64 - kBits))];
  if (e.a != ka || e.b != kb) {
    e.value = tuner::log_gauss_mass(a, b);
    e.a = ka;
    e.b = kb;
  }
  return e.value;
}

ParzenEstimator::ParzenEstimator(std::span<const Distribution> dims,
                                 std::span<const std::vector<double>> observations,
                                 std::span<const double> weights,
                                 const ParzenEstimatorOptions& options,
                                 std::span<const std::vector<int>> sorted, ParzenMemo* memo) {
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
  UninitVector<int> order;
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
                  options, with_prior, memo);
  }
  if (dims_.size() == 1 && dims_[0].kind != Kind::kContinuous) merge_identical_kernels();
  prepare_densities(memo);

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
  // The logs of the normalized weights; all K of them when the memo holds this weight vector.
  const bool weights_known =
      memo && memo->prior_weight_ == prior_w && memo->log_weights_.size() == n_kernels &&
      std::equal(weights.begin(), weights.end(), memo->weights_.begin(), memo->weights_.end());
  // (Not when merge_identical_kernels() has merged the kernels.)
  const bool use_memo = memo && !(dims_.size() == 1 && dims_[0].kind != Kind::kContinuous);
  if (use_memo) {
    if (!weights_known) {
      memo->weights_.assign(weights.begin(), weights.end());
      memo->prior_weight_ = prior_w;
      memo->log_weights_.resize(K);
      double w_in = -1.0, w_out = 0.0;
      for (size_t k = 0; k < K; ++k) memo->log_weights_[k] = memo_log(weight_[k], w_in, w_out);
    }
    for (size_t k = 0; k < K; ++k) kernel_const_[k] += memo->log_weights_[k];
  } else {
    double w_in = -1.0, w_out = 0.0;
    for (size_t k = 0; k < K; ++k) kernel_const_[k] += memo_log(weight_[k], w_in, w_out);
  }
  for (const Dim& dim : dims_) {
    if (dim.kind != Kind::kContinuous) continue;
    double s_in = -1.0, s_out = 0.0;
    for (size_t k = 0; k < K; ++k) {
      double a = (dim.low - dim.mu[k]) * dim.inv_sigma[k];
      double b = (dim.high - dim.mu[k]) * dim.inv_sigma[k];
      if (a > -kNegligibleTail || b < kNegligibleTail) {
        kernel_const_[k] -= memo ? memo->log_gauss_mass(a, b) : log_gauss_mass(a, b);
      }
      if (dim.sigma[k] != s_in) {
        s_in = dim.sigma[k];
        s_out = memo ? memo->log(s_in) : std::log(s_in);
      }
      kernel_const_[k] -= s_out;
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
                                    const ParzenEstimatorOptions& options, bool with_prior,
                                    ParzenMemo* memo) {
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
  UninitVector<double> sorted_t(n);
  if (dim.log && memo) {
    for (size_t i = 0; i < n; ++i) sorted_t[i] = memo->log(column[order[i]]);
  } else {
    for (size_t i = 0; i < n; ++i) sorted_t[i] = transform(dim.log, column[order[i]]);
  }
  double lo_end = unbounded && n > 0 ? std::min(span_low, sorted_t.front()) : span_low;
  double hi_end = unbounded && n > 0 ? std::max(span_high, sorted_t.back()) : span_high;
  double max_sigma = unbounded ? prior_sigma : span_high - span_low;
  double min_sigma = options.consider_magic_clip
                         ? (span_high - span_low) / std::min(100.0, 1.0 + n_kernels)
                         : kEps;
  min_sigma = std::min(min_sigma, max_sigma);
  // With prior_in_bandwidths, the neighbours are those of the observations and the prior's
  // centre merged in ascending order (the centre before equal observations), as Optuna 3.1.
  const bool merge_prior = options.prior_in_bandwidths && with_prior && !unbounded && n > 0;
  const size_t prior_pos =
      merge_prior
          ? static_cast<size_t>(std::lower_bound(sorted_t.begin(), sorted_t.end(), prior_mu) -
                                sorted_t.begin())
          : n + 1;
  const size_t n_merged = merge_prior ? n + 1 : n;
  auto merged = [&](size_t j) {  // j-th of the merged centres
    if (j < prior_pos) return sorted_t[j];
    return j == prior_pos ? prior_mu : sorted_t[j - 1];
  };
  for (size_t i = 0; i < n; ++i) {
    const size_t j = i < prior_pos ? i : i + 1;
    double prev = j == 0 ? lo_end : merged(j - 1);
    double next = j + 1 == n_merged ? hi_end : merged(j + 1);
    double s = std::max(merged(j) - prev, next - merged(j));
    if (!options.consider_endpoints && n_merged >= 2) {
      if (j == 0) s = merged(1) - merged(0);
      if (j + 1 == n_merged) s = merged(n_merged - 1) - merged(n_merged - 2);
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
    dim.pair_log_z[p] = !(a > -kNegligibleTail || b < kNegligibleTail) ? 0.0
                        : memo                                         ? memo->log_gauss_mass(a, b)
                                                                       : log_gauss_mass(a, b);
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
    // Choice indices are whole numbers: std::round (a library call) only for the others.
    const double v = column[k];
    const bool whole = v >= 0 && v < n_choices && v == static_cast<double>(static_cast<int>(v));
    double index = whole ? v : std::round(v);
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
  UninitVector<int> kept;  // the shapes that carry weight
  for (size_t p = 0; p < n_pairs; ++p) {
    if (weight[p] > 0.0) kept.push_back(static_cast<int>(p));
  }
  weight_.clear();
  UninitVector<double> mu, sigma, inv_sigma;
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

void ParzenEstimator::prepare_densities(ParzenMemo* memo) {
  const size_t K = n_kernels();
  const bool merged = dims_.size() == 1;  // discrete and categorical kernels are their shapes
  for (Dim& dim : dims_) {
    if (dim.kind == Kind::kCategorical) {
      const size_t n = static_cast<size_t>(dim.n_choices);
      // Every observation row holds one "hit" value and n - 1 equal "miss" values.
      dim.cat_log_hit = dim.cat_log_p[0];
      dim.cat_log_miss = n > 1 ? dim.cat_log_p[1] : dim.cat_log_p[0];
      dim.cat_log_prior = dim.cat_log_p[n * n];
      dim.cat_choice.resize(K);
      for (size_t k = 0; k < K; ++k) {
        int c = dim.pair[k];
        dim.cat_choice[k] = c < dim.n_choices ? static_cast<double>(c) : -1.0;
      }
    } else if (dim.kind == Kind::kDiscrete) {
      const UninitVector<double>& mu = merged ? dim.mu : dim.pair_mu;
      const UninitVector<double>& sigma = merged ? dim.sigma : dim.pair_sigma;
      const size_t n_shapes = mu.size();
      dim.shape_mu = mu;
      dim.shape_inv_sigma.resize(n_shapes);
      dim.shape_log_sigma.resize(n_shapes);
      dim.shape_log_z.resize(n_shapes);
      for (size_t p = 0; p < n_shapes; ++p) {
        dim.shape_inv_sigma[p] = 1.0 / sigma[p];
        dim.shape_log_sigma[p] = memo ? memo->log(sigma[p]) : std::log(sigma[p]);
        dim.shape_log_z[p] = dim.pair_log_z[merged ? static_cast<size_t>(dim.pair[p]) : p];
      }
      dim.kernel_shape.resize(K);
      for (size_t k = 0; k < K; ++k) {
        dim.kernel_shape[k] = merged ? static_cast<int>(k) : dim.pair[k];
      }
    }
  }
}

TUNER_VECTORIZED ParzenEstimator::CellTable ParzenEstimator::cell_table(size_t d,
                                                                        std::span<const double> x,
                                                                        int n) const {
  const Dim& dim = dims_[d];
  const size_t n_dims = dims_.size();
  CellTable out;
  // The distinct values among the points: one row each.
  UninitVector<int> point_order(static_cast<size_t>(n));
  std::iota(point_order.begin(), point_order.end(), 0);
  auto value = [&](int i) { return x[static_cast<size_t>(i) * n_dims + d]; };
  std::sort(point_order.begin(), point_order.end(),
            [&](int i, int j) { return value(i) < value(j); });
  out.point_cell.resize(static_cast<size_t>(n));
  std::vector<double> cell_values;
  for (int i : point_order) {
    if (cell_values.empty() || value(i) != cell_values.back()) cell_values.push_back(value(i));
    out.point_cell[static_cast<size_t>(i)] = static_cast<int>(cell_values.size()) - 1;
  }
  const size_t n_shapes = dim.shape_mu.size();
  out.log_mass.resize(cell_values.size() * n_shapes);
  const double* shape_mu = dim.shape_mu.data();
  const double* shape_inv_sigma = dim.shape_inv_sigma.data();
  const double* shape_log_sigma = dim.shape_log_sigma.data();
  const double* shape_log_z = dim.shape_log_z.data();
  // log_gauss_mass(lo, hi), remembered for this table (direct-mapped by the bits of both bounds).
  struct ExactMemo {
    struct Entry {
      uint64_t lo = ~uint64_t{0};  // all ones (a NaN) marks an empty slot
      uint64_t hi = 0;
      double value = 0.0;
    };
    Entry slots[128];
    double get(double lo, double hi) {
      const uint64_t a = std::bit_cast<uint64_t>(lo);
      const uint64_t b = std::bit_cast<uint64_t>(hi);
      const uint64_t h = (a * 0x9E3779B97F4A7C15ULL) ^ (b * 0xC2B2AE3D27D4EB4FULL);
      Entry& e = slots[(h ^ (h >> 29)) >> 57];
      if (e.lo != a || e.hi != b) {
        e.value = log_gauss_mass(lo, hi);
        e.lo = a;
        e.hi = b;
      }
      return e.value;
    }
  } exact;
  // The shapes outside the series regime of one cell, packed: [rest] each.
  UninitVector<int> rest(n_shapes);
  UninitVector<double> rest_z(n_shapes), rest_a(n_shapes), rest_log_2a(n_shapes),
      rest_value(n_shapes);
  for (size_t c = 0; c < cell_values.size(); ++c) {
    double lo = transform(dim.log, cell_values[c] - 0.5 * dim.step);
    double hi = transform(dim.log, cell_values[c] + 0.5 * dim.step);
    double centre = 0.5 * (lo + hi);
    double half = 0.5 * (hi - lo);
    double log_width = std::log(2.0 * half);
    double* __restrict trow = &out.log_mass[c * n_shapes];
    // Three passes, each over fewer shapes: the series (vectorized), the far tail (vectorized,
    // over the shapes the series left), the exact forms (one by one, over what is still left).
    for (size_t p = 0; p < n_shapes; ++p) {
      double inv = shape_inv_sigma[p];
      double z = (centre - shape_mu[p]) * inv;
      double a = half * inv;
      trow[p] = log_cell_mass_series(z, a, log_width - shape_log_sigma[p]) - shape_log_z[p];
    }
    size_t n_rest = 0;
    for (size_t p = 0; p < n_shapes; ++p) {
      if (!std::isnan(trow[p])) continue;
      double inv = shape_inv_sigma[p];
      rest[n_rest] = static_cast<int>(p);
      rest_z[n_rest] = (centre - shape_mu[p]) * inv;
      rest_a[n_rest] = half * inv;
      rest_log_2a[n_rest] = log_width - shape_log_sigma[p];
      ++n_rest;
    }
    for (size_t j = 0; j < n_rest; ++j) {
      rest_value[j] = log_cell_mass_common(rest_z[j], rest_a[j], rest_log_2a[j]);
    }
    for (size_t j = 0; j < n_rest; ++j) {
      const size_t p = static_cast<size_t>(rest[j]);
      double v = rest_value[j] - shape_log_z[p];
      if (std::isnan(v)) {
        const double z = rest_z[j];
        const double a = rest_a[j];
        // The exact mass of a wide cell near the kernel: cells and kernels on one grid give few
        // distinct (z, a), so most come from the memo.
        const double m = a > 0.125 && std::abs(z) - a <= 9.0 ? exact.get(z - a, z + a)
                                                             : log_cell_mass(z, a, rest_log_2a[j]);
        v = m - shape_log_z[p];
      }
      trow[p] = v;
    }
  }
  return out;
}

void ParzenEstimator::sort_kernels_1d(size_t n_observations) {
  // One continuous dimension: observation kernels sorted by centre, so that log_pdf() visits
  // only those within reach of a point. The prior kernel (if any) stays last.
  Dim& dim = dims_[0];
  const UninitVector<int>& perm = dim.order;  // ascending centres, from build_numeric()
  auto apply = [&](UninitVector<double>& v) {
    UninitVector<double> out(v);
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

// Not inlined into log_pdf()'s clone for x86-64-v3: contracting its arithmetic into FMAs there
// would change the results' bits with the machine. Its own clone has AVX2 but not FMA, so both
// versions round every operation alike.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
__attribute__((noinline, target_clones("avx2", "default")))
#elif defined(__GNUC__)
__attribute__((noinline))
#endif
double
ParzenEstimator::log_pdf_1d(double x, double* __restrict terms) const {
  const Dim& dim = dims_[0];
  const double t = transform(dim.log, x);
  const size_t K = n_kernels();
  const double* mu = dim.mu.data();
  const double* inv_sigma = dim.inv_sigma.data();
  const double* kernel_const = kernel_const_.data();
  auto term = [&](size_t k) {
    double z = (t - mu[k]) * inv_sigma[k];
    return kernel_const[k] - 0.5 * z * z;
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
  // The terms in reach, computed once (the same values as term(k)) for the max and the sum: a
  // block of kLanes at a time, each lane the scalar's operations, then the rest one by one.
  const size_t blocks_end = lo + (hi - lo) / kLanes * kLanes;
  // The largest is kept per lane (a max is exact, so the order does not change it).
  const Lanes t_lanes = broadcast(t);
  Lanes max_of_lane = broadcast(floor);
  for (size_t k = lo; k < blocks_end; k += kLanes) {
    const Lanes z = (t_lanes - load_lanes(mu + k)) * load_lanes(inv_sigma + k);
    const Lanes v = load_lanes(kernel_const + k) - 0.5 * z * z;
    store_lanes(terms + k, v);
    max_of_lane = max_of_lane < v ? v : max_of_lane;
  }
  double max = floor;
  for (size_t j = 0; j < kLanes; ++j) max = std::max(max, max_of_lane[j]);
  for (size_t k = blocks_end; k < hi; ++k) {
    terms[k] = term(k);
    max = std::max(max, terms[k]);
  }
  if (std::isinf(max)) return max;
  // exp(term - max), 0 where it is below e^-40, in blocks; then summed in order.
  const Lanes max_lanes = broadcast(max);
  const Lanes cut = broadcast(-40.0);
  for (size_t k = lo; k < blocks_end; k += kLanes) {
    const Lanes e = load_lanes(terms + k) - max_lanes;
    const LaneBits keep = std::bit_cast<LaneBits>(e > cut);
    store_lanes(terms + k,
                std::bit_cast<Lanes>(std::bit_cast<LaneBits>(exp_nonpositive(e)) & keep));
  }
  for (size_t k = blocks_end; k < hi; ++k) {
    const double e = terms[k] - max;
    terms[k] = e > -40.0 ? exp_nonpositive(e) : 0.0;
  }
  double sum = 0.0;
  for (size_t k = lo; k < hi; ++k) sum += terms[k];
  for (size_t k = n_sorted_; k < K; ++k) sum += exp_nonpositive(term(k) - max);
  return max + std::log(sum);
}

TUNER_VECTORIZED std::vector<double> ParzenEstimator::log_pdf(std::span<const double> x,
                                                              int n) const {
  const size_t n_dims = dims_.size();
  if (n < 0 || x.size() != static_cast<size_t>(n) * n_dims) {
    fail("log_pdf got " + std::to_string(x.size()) + " values for " + std::to_string(n) +
         " points of " + std::to_string(n_dims) + " dimensions");
  }
  if (n_sorted_ > 0 || (n_dims == 1 && dims_[0].kind == Kind::kContinuous)) {
    std::vector<double> out(static_cast<size_t>(n));
    UninitVector<double> terms(n_sorted_);  // log_pdf_1d's scratch
    for (int i = 0; i < n; ++i) {
      out[static_cast<size_t>(i)] = log_pdf_1d(x[static_cast<size_t>(i)], terms.data());
    }
    return out;
  }
  const size_t K = n_kernels();
  std::vector<CellTable> tables(n_dims);
  for (size_t d = 0; d < n_dims; ++d) {
    if (dims_[d].kind == Kind::kDiscrete) tables[d] = cell_table(d, x, n);
  }
  // Points in blocks of kLanes, one per lane (a short last block repeats its last point); each
  // kernel's term for the block is one vector, rows[k]. Kernels in chunks of kChunk, whose rows
  // stay in the L1 cache while every dimension adds its part. Each lane sees the operations, in
  // the order, of one point evaluated on its own: the results do not depend on the blocking.
  constexpr size_t kChunk = 256;
  UninitVector<double> rows(K * kLanes);             // [kernel][lane]
  UninitVector<double> lane_value(n_dims * kLanes);  // [dim][lane]: transformed, or choice indices
  std::vector<UninitVector<double>> block_table(n_dims);  // discrete: [shape][lane], lanes' cells
  std::vector<double> out(static_cast<size_t>(n));
  for (size_t b = 0; b < static_cast<size_t>(n); b += kLanes) {
    size_t point[kLanes];
    for (size_t j = 0; j < kLanes; ++j) point[j] = std::min(b + j, static_cast<size_t>(n) - 1);
    for (size_t d = 0; d < n_dims; ++d) {
      const Dim& dim = dims_[d];
      for (size_t j = 0; j < kLanes; ++j) {
        double v = x[point[j] * n_dims + d];
        if (dim.kind == Kind::kContinuous) v = transform(dim.log, v);
        if (dim.kind == Kind::kCategorical) v = static_cast<double>(std::lround(v));
        lane_value[d * kLanes + j] = v;
      }
      if (dim.kind != Kind::kDiscrete) continue;
      const CellTable& t = tables[d];
      const size_t n_shapes = dim.shape_mu.size();
      UninitVector<double>& bt = block_table[d];
      bt.resize(n_shapes * kLanes);
      for (size_t j = 0; j < kLanes; ++j) {
        const double* trow = &t.log_mass[static_cast<size_t>(t.point_cell[point[j]]) * n_shapes];
        for (size_t p = 0; p < n_shapes; ++p) bt[p * kLanes + j] = trow[p];
      }
    }
    Lanes max = broadcast(-kInf);
    double* __restrict row = rows.data();
    for (size_t k0 = 0; k0 < K; k0 += kChunk) {
      const size_t k1 = std::min(K, k0 + kChunk);
      for (size_t k = k0; k < k1; ++k) store_lanes(&row[k * kLanes], broadcast(kernel_const_[k]));
      for (size_t d = 0; d < n_dims; ++d) {
        const Dim& dim = dims_[d];
        const Lanes v = load_lanes(&lane_value[d * kLanes]);
        if (dim.kind == Kind::kContinuous) {
          const double* __restrict mu = dim.mu.data();
          const double* __restrict inv_sigma = dim.inv_sigma.data();
          for (size_t k = k0; k < k1; ++k) {
            Lanes z = (v - mu[k]) * inv_sigma[k];
            store_lanes(&row[k * kLanes], load_lanes(&row[k * kLanes]) - 0.5 * z * z);
          }
        } else if (dim.kind == Kind::kCategorical) {
          const double* __restrict choice = dim.cat_choice.data();
          const Lanes hit = broadcast(dim.cat_log_hit);
          const double miss = dim.cat_log_miss;
          const double prior = dim.cat_log_prior;
          for (size_t k = k0; k < k1; ++k) {
            const Lanes other = broadcast(choice[k] < 0.0 ? prior : miss);
            const Lanes term = broadcast(choice[k]) == v ? hit : other;
            store_lanes(&row[k * kLanes], load_lanes(&row[k * kLanes]) + term);
          }
        } else {
          const int* __restrict shape = dim.kernel_shape.data();
          const double* __restrict bt = block_table[d].data();
          for (size_t k = k0; k < k1; ++k) {
            const Lanes term = load_lanes(&bt[static_cast<size_t>(shape[k]) * kLanes]);
            store_lanes(&row[k * kLanes], load_lanes(&row[k * kLanes]) + term);
          }
        }
      }
      for (size_t k = k0; k < k1; ++k) {
        const Lanes r = load_lanes(&row[k * kLanes]);
        max = max < r ? r : max;
      }
    }
    // The terms, summed in kernel order in each lane (summing in another order would change the
    // rounding); terms below e^-40 are left out: they add less than K * 4e-18.
    Lanes sum = broadcast(0.0);
    for (size_t k = 0; k < K; ++k) {
      const Lanes e = load_lanes(&row[k * kLanes]) - max;
      const LaneBits keep = std::bit_cast<LaneBits>(e > -40.0);
      sum += std::bit_cast<Lanes>(std::bit_cast<LaneBits>(exp_nonpositive(e)) & keep);
    }
    for (size_t j = 0; j < kLanes && b + j < static_cast<size_t>(n); ++j) {
      out[b + j] = std::isinf(max[j]) ? max[j] : max[j] + std::log(sum[j]);
    }
  }
  return out;
}

}  // namespace tuner
