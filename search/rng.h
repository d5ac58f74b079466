// Rng: the seeded random source handed to samplers and schedulers.
//
// Its sequences are defined here (SplitMix64 seeding, xoshiro256** generation, Box-Muller normals),
// not by the standard library, so a seed gives the same trials with any compiler. Not thread-safe:
// each trial gets its own Rng, derived from the study seed and the trial number.
#ifndef TUNER_SEARCH_RNG_H_
#define TUNER_SEARCH_RNG_H_

#include <cstdint>

namespace tuner {

class Rng {
 public:
  explicit Rng(uint64_t seed);

  // The generator for trial `number` of a study seeded with `seed`.
  static Rng for_trial(uint64_t seed, int64_t number);

  uint64_t next();
  double uniform();                            // [0, 1)
  double uniform(double low, double high);     // [low, high)
  int64_t integer(int64_t low, int64_t high);  // [low, high], uniform
  double normal();                             // standard normal

 private:
  uint64_t state_[4];
  bool has_spare_normal_ = false;
  double spare_normal_ = 0.0;
};

}  // namespace tuner

#endif  // TUNER_SEARCH_RNG_H_
