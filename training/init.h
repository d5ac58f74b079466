// Parameter initializers (He, Xavier) drawn from the engine's seeded Rng.
#ifndef TUNER_TRAINING_INIT_H_
#define TUNER_TRAINING_INIT_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "training/rng.h"

namespace tuner::training {

enum class Init {
  kZeros,
  kOnes,
  kHeNormal,       // N(0, 2 / fan_in)
  kHeUniform,      // U(-sqrt(6 / fan_in), +sqrt(6 / fan_in))
  kXavierNormal,   // N(0, 2 / (fan_in + fan_out))
  kXavierUniform,  // U(-sqrt(6 / (fan_in + fan_out)), +...)
};
std::string_view init_name(Init init);

// Fills `values` by `init`, drawing from `rng` in index order.
// REQUIRES: fan_in > 0 (and fan_out > 0 for Xavier) for the random initializers.
void initialize(Init init, int64_t fan_in, int64_t fan_out, Rng& rng, std::span<float> values);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_INIT_H_
