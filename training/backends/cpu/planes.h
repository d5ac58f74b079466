// Internal to the CPU backend: the planes of x[B, C, S...] (one sample's one channel, S values),
// the unit its pooling and normalization kernels split over threads.
#ifndef TUNER_TRAINING_BACKENDS_CPU_PLANES_H_
#define TUNER_TRAINING_BACKENDS_CPU_PLANES_H_

#include <cstdint>

#include "training/tensor.h"

namespace tuner::training {

// Planes per thread below which a kernel is not split (the threads' start-up would cost more).
inline constexpr int64_t kMinPlanesPerThread = 4;

// The spatial extent S of x[B, C, S...] (1 for [B, C]).
inline int64_t spatial(const Tensor& x) {
  int64_t s = 1;
  for (int i = 2; i < x.rank(); ++i) s *= x.dim(i);
  return s;
}

}  // namespace tuner::training

#endif  // TUNER_TRAINING_BACKENDS_CPU_PLANES_H_
