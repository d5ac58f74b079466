// The fixed random stream of the suite's instances (bench/suite): BBOB's shifts and rotations,
// the tables of the mixed problems, the observation noise. SplitMix64 (Steele, Lea and Flood,
// 2014), so the same seed gives the same numbers on every machine and compiler.
//
// Not thread-safe: one stream per user.
#ifndef TUNER_BENCH_SUITE_INSTANCE_RNG_H_
#define TUNER_BENCH_SUITE_INSTANCE_RNG_H_

#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

namespace tuner::bench::suite {

class InstanceRng {
 public:
  explicit InstanceRng(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double low, double high) { return low + (high - low) * uniform(); }
  double normal() {                     // Box-Muller, the cosine half
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  double sign() { return (next() >> 63) ? 1.0 : -1.0; }

 private:
  uint64_t state_;
};

// A random rotation of `dim` dimensions, row-major: Gram-Schmidt on the rows of a matrix of
// standard normals.
inline std::vector<double> random_rotation(int dim, InstanceRng& rng) {
  const size_t d = static_cast<size_t>(dim);
  std::vector<double> m(d * d);
  for (double& v : m) v = rng.normal();
  for (size_t i = 0; i < d; ++i) {
    double* row = &m[i * d];
    for (size_t j = 0; j < i; ++j) {
      const double* prev = &m[j * d];
      double dot = 0.0;
      for (size_t k = 0; k < d; ++k) dot += row[k] * prev[k];
      for (size_t k = 0; k < d; ++k) row[k] -= dot * prev[k];
    }
    double norm = 0.0;
    for (size_t k = 0; k < d; ++k) norm += row[k] * row[k];
    norm = std::sqrt(norm);
    for (size_t k = 0; k < d; ++k) row[k] /= norm;
  }
  return m;
}

}  // namespace tuner::bench::suite

#endif  // TUNER_BENCH_SUITE_INSTANCE_RNG_H_
