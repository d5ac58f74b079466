// The engine's seeded random number generator: xoshiro256** seeded through splitmix64.
#ifndef TUNER_TRAINING_RNG_H_
#define TUNER_TRAINING_RNG_H_

#include <array>
#include <cstdint>

namespace tuner::training {

// One step of splitmix64: advances `state` and returns a well-mixed 64-bit value. Also used as a
// stateless hash of a counter (dropout masks), which keeps results independent of thread count.
// Inline, so that a loop hashing its indices (a dropout mask) vectorizes.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
// splitmix64 of a value, without state.
inline uint64_t mix64(uint64_t x) { return splitmix64(x); }

// xoshiro256** (Blackman and Vigna). The same seed gives the same sequence on every platform.
// Its whole state is four words, so checkpoints store it exactly (state() / set_state()).
// Thread safety: none; give each thread its own.
class Rng {
 public:
  explicit Rng(uint64_t seed);

  uint64_t next_u64();
  // Uniform in [0, 1) with 24 bits of precision.
  float uniform();
  // Uniform in [lo, hi).
  float uniform(float lo, float hi);
  // Standard normal (Box-Muller on double precision uniforms).
  float normal();

  std::array<uint64_t, 4> state() const { return s_; }
  void set_state(const std::array<uint64_t, 4>& state) { s_ = state; }

 private:
  std::array<uint64_t, 4> s_{};
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_RNG_H_
