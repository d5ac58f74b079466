// Scalar activation functions and their derivatives, shared by the CPU kernels (internal).
#ifndef TUNER_TRAINING_BACKENDS_CPU_ACTIVATION_MATH_H_
#define TUNER_TRAINING_BACKENDS_CPU_ACTIVATION_MATH_H_

#include <cmath>

#include "training/backend.h"

namespace tuner::training::cpu {

inline float gelu(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); }
inline float gelu_grad(float x) {
  const float cdf = 0.5f * (1.0f + std::erf(x * 0.70710678118654752f));
  const float pdf = 0.39894228040143268f * std::exp(-0.5f * x * x);
  return cdf + x * pdf;
}
inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// Applies act to n values in place.
inline void apply_activation(Activation act, float* v, int64_t n) {
  switch (act) {
    case Activation::kNone:
      return;
    case Activation::kRelu:
      for (int64_t i = 0; i < n; ++i) v[i] = v[i] > 0.0f ? v[i] : 0.0f;
      return;
    case Activation::kGelu:
      for (int64_t i = 0; i < n; ++i) v[i] = gelu(v[i]);
      return;
    case Activation::kTanh:
      for (int64_t i = 0; i < n; ++i) v[i] = std::tanh(v[i]);
      return;
    case Activation::kSigmoid:
      for (int64_t i = 0; i < n; ++i) v[i] = sigmoid(v[i]);
      return;
  }
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

}  // namespace tuner::training::cpu

#endif  // TUNER_TRAINING_BACKENDS_CPU_ACTIVATION_MATH_H_
