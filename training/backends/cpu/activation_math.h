// Scalar activation functions and their derivatives, shared by the CPU kernels (internal).
#ifndef TUNER_TRAINING_BACKENDS_CPU_ACTIVATION_MATH_H_
#define TUNER_TRAINING_BACKENDS_CPU_ACTIVATION_MATH_H_

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "training/backend.h"

namespace tuner::training::cpu {

// The transcendental functions of the activations, written so that a loop over them vectorizes
// (straight-line float arithmetic, no calls): glibc's erff, expf and tanhf are scalar calls here.
// GELU through erff took 24 ns per value on one core of the Xeon of docs/training.md, this one
// 1.3 to 1.8 (2026-12-01, shared cores). Each is within a few 1e-7 of the
// exact value (relative; GELU's absolute error is below 3e-7 * (1 + |x|)): activation_math_test
// checks them against double precision.

// e^x: x = n ln2 + r with |r| <= ln2 / 2 (ln2 in two parts, so r is exact), e^r by its Taylor
// polynomial to degree 6, times 2^n built in the exponent bits. x is clamped to [-87, 88], where
// 2^n stays a normal float.
inline float exp_approx(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
  const float r = (x - n * 0.693145751953125f) - n * 1.42860682030941723e-6f;
  float p = 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
}

// Abramowitz and Stegun's 7.1.26 (absolute error below 1.5e-7; 5e-7 in float arithmetic).
inline float erf_approx(float x) {
  const float a = std::fabs(x);
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  return std::copysign(1.0f - p * t * exp_approx(-a * a), x);
}

// Near 0, where 1 - 2 / (e^2x + 1) would cancel, tanh's Taylor polynomial to x^9.
inline float tanh_approx(float x) {
  const float a = std::fabs(x);
  const float a2 = a * a;
  float p = 62.0f / 2835;
  p = p * a2 - 17.0f / 315;
  p = p * a2 + 2.0f / 15;
  p = p * a2 - 1.0f / 3;
  p = p * a2 * a + a;
  const float q = 1.0f - 2.0f / (exp_approx(2.0f * a) + 1.0f);
  return std::copysign(a < 0.2f ? p : q, x);
}

inline float gelu(float x) { return 0.5f * x * (1.0f + erf_approx(x * 0.70710678118654752f)); }
inline float gelu_grad(float x) {
  const float cdf = 0.5f * (1.0f + erf_approx(x * 0.70710678118654752f));
  const float pdf = 0.39894228040143268f * exp_approx(-0.5f * x * x);
  return cdf + x * pdf;
}
inline float sigmoid(float x) { return 1.0f / (1.0f + exp_approx(-x)); }

// y[i] = f(x[i]) for n values, with y == x (in place) or not overlapping it. Two loops, so that
// each vectorizes without a runtime overlap check (which fails, and falls back to scalar code,
// in place).
template <class F>
inline void map_values(const float* x, float* y, int64_t n, F f) {
  if (x == y) {
    for (int64_t i = 0; i < n; ++i) y[i] = f(y[i]);
    return;
  }
  const float* __restrict in = x;
  float* __restrict out = y;
  for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
}

// y = act(x) for n values; y may be x (in place), else they do not overlap.
inline void apply_activation(Activation act, const float* x, float* y, int64_t n) {
  switch (act) {
    case Activation::kNone:
      if (y != x) std::copy(x, x + n, y);
      return;
    case Activation::kRelu:
      map_values(x, y, n, [](float v) { return v > 0.0f ? v : 0.0f; });
      return;
    case Activation::kGelu:
      map_values(x, y, n, [](float v) { return gelu(v); });
      return;
    case Activation::kTanh:
      map_values(x, y, n, [](float v) { return tanh_approx(v); });
      return;
    case Activation::kSigmoid:
      map_values(x, y, n, [](float v) { return sigmoid(v); });
      return;
  }
}

// Applies act to n values in place.
inline void apply_activation(Activation act, float* v, int64_t n) {
  apply_activation(act, v, v, n);
}

// dz = dy * act'(.) from the activation's output y; REQUIRES: activation_fusable(act).
inline void activation_grad_from_output(Activation act, const float* y, const float* dy, float* dz,
                                        int64_t n) {
  switch (act) {
    case Activation::kNone:
    case Activation::kGelu:
      for (int64_t i = 0; i < n; ++i) dz[i] = dy[i];
      return;
    case Activation::kRelu:
      // dy is read unconditionally, so that the loop vectorizes to a compare and a mask rather
      // than a masked load.
      for (int64_t i = 0; i < n; ++i) {
        const float g = dy[i];
        dz[i] = y[i] > 0.0f ? g : 0.0f;
      }
      return;
    case Activation::kTanh:
      for (int64_t i = 0; i < n; ++i) dz[i] = dy[i] * (1.0f - y[i] * y[i]);
      return;
    case Activation::kSigmoid:
      for (int64_t i = 0; i < n; ++i) dz[i] = dy[i] * y[i] * (1.0f - y[i]);
      return;
  }
}

// Sum of n values in a fixed order that vectorizes: eight interleaved partial sums, added
// pairwise at the end. The same n values always give the same bits.
inline float sum_fixed_order(const float* v, int64_t n) {
  constexpr int kLanes = 8;
  float lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) lane[k] += v[i + k];
  }
  for (int k = 0; i < n; ++i, ++k) lane[k] += v[i];
  return ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
}

// Sums in double of term(i) for i in [0, n), and of a second term beside it, in a fixed order that
// vectorizes: eight interleaved partial sums each, added pairwise at the end. A plain loop into one
// double waits on the adder's latency for every element (4 cycles): the statistics of a batch norm
// over a CNN's feature maps took longer than its convolutions.
template <class Term>
inline double sum_fixed_order_double(int64_t n, Term term) {
  constexpr int kLanes = 8;
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) lane[k] += term(i + k);
  }
  for (int k = 0; i < n; ++i, ++k) lane[k] += term(i);
  return ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
}

struct TwoSums {
  double first = 0.0, second = 0.0;
};

template <class Terms>  // Terms(i, double& a, double& b) adds its two terms to a and b
inline TwoSums two_sums_fixed_order_double(int64_t n, Terms terms) {
  constexpr int kLanes = 8;
  double a[kLanes] = {}, b[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) terms(i + k, a[k], b[k]);
  }
  for (int k = 0; i < n; ++i, ++k) terms(i, a[k], b[k]);
  const auto total = [](const double* l) {
    return ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
  };
  return {total(a), total(b)};
}

}  // namespace tuner::training::cpu

#endif  // TUNER_TRAINING_BACKENDS_CPU_ACTIVATION_MATH_H_
