// Small synthetic datasets for the engine's tests (header-only; tests include it).
#ifndef TUNER_TRAINING_TEST_DATASETS_H_
#define TUNER_TRAINING_TEST_DATASETS_H_

#include <cstdint>
#include <vector>

#include "training/data/dataset.h"
#include "training/rng.h"

namespace tuner::training {

// n images [1, 8, 8] of 4 classes: class c brightens quadrant c, plus noise. Learnable to >90%
// in a few epochs by a small CNN or MLP.
inline Dataset quadrant_images(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(static_cast<size_t>(n * 64));
  std::vector<int32_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int32_t c = static_cast<int32_t>(rng.next_u64() % 4);
    y[static_cast<size_t>(i)] = c;
    for (int64_t r = 0; r < 8; ++r) {
      for (int64_t q = 0; q < 8; ++q) {
        const bool hot = (r / 4) * 2 + (q / 4) == c;
        x[static_cast<size_t>(i * 64 + r * 8 + q)] = (hot ? 0.6f : 0.0f) + 0.5f * rng.normal();
      }
    }
  }
  return Dataset(Shape{1, 8, 8}, std::move(x), std::move(y), 4);
}

}  // namespace tuner::training

#endif  // TUNER_TRAINING_TEST_DATASETS_H_
