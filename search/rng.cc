#include "search/rng.h"

#include <cmath>
#include <numbers>

namespace tuner {

namespace {
uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t x = seed;
  for (auto& s : state_) s = splitmix64(x);
}

Rng Rng::for_trial(uint64_t seed, int64_t number) {
  uint64_t x = seed ^ 0x5851f42d4c957f2dULL;
  uint64_t a = splitmix64(x);
  uint64_t y = static_cast<uint64_t>(number) + 0x14057b7ef767814fULL;
  return Rng(a ^ splitmix64(y));
}

uint64_t Rng::next() {
  uint64_t result = rotl(state_[1] * 5, 7) * 9;
  uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double Rng::uniform(double low, double high) { return low + (high - low) * uniform(); }

int64_t Rng::integer(int64_t low, int64_t high) {
  uint64_t span = static_cast<uint64_t>(high - low) + 1;
  if (span == 0) return static_cast<int64_t>(next());  // the full 64-bit range
  // Rejection sampling keeps every value equally likely.
  uint64_t limit = UINT64_MAX - UINT64_MAX % span;
  uint64_t r;
  do {
    r = next();
  } while (r >= limit);
  return low + static_cast<int64_t>(r % span);
}

double Rng::normal() {
  if (has_spare_normal_) {
    has_spare_normal_ = false;
    return spare_normal_;
  }
  double u1;
  do {
    u1 = uniform();
  } while (u1 <= 0.0);
  double u2 = uniform();
  double r = std::sqrt(-2.0 * std::log(u1));
  spare_normal_ = r * std::sin(2.0 * std::numbers::pi * u2);
  has_spare_normal_ = true;
  return r * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace tuner
