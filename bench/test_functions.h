// The classic test functions of the sampler benchmarks (sampler_quality, the function suite),
// defined once: Branin, Hartmann 3 and 6 (Dixon and Szego's constants, on the unit cube),
// Rosenbrock, Ackley and Levy, each to be minimized.
#ifndef TUNER_BENCH_TEST_FUNCTIONS_H_
#define TUNER_BENCH_TEST_FUNCTIONS_H_

#include <cmath>
#include <cstddef>
#include <numbers>
#include <vector>

namespace tuner::bench {

inline double branin(const std::vector<double>& x) {
  constexpr double kPi = std::numbers::pi;
  const double b = 5.1 / (4.0 * kPi * kPi), c = 5.0 / kPi, t = 1.0 / (8.0 * kPi);
  return std::pow(x[1] - b * x[0] * x[0] + c * x[0] - 6.0, 2) + 10.0 * (1.0 - t) * std::cos(x[0]) +
         10.0;
}

// Hartmann 3 and 6 on the unit cube (Dixon and Szego's constants).
template <size_t D>
inline double hartmann(const std::vector<double>& x, const double (&a)[4][D],
                       const double (&p)[4][D]) {
  static constexpr double kAlpha[4] = {1.0, 1.2, 3.0, 3.2};
  double v = 0.0;
  for (size_t i = 0; i < 4; ++i) {
    double e = 0.0;
    for (size_t j = 0; j < D; ++j) e += a[i][j] * (x[j] - p[i][j]) * (x[j] - p[i][j]);
    v -= kAlpha[i] * std::exp(-e);
  }
  return v;
}

inline double hartmann3(const std::vector<double>& x) {
  static constexpr double kA[4][3] = {{3, 10, 30}, {0.1, 10, 35}, {3, 10, 30}, {0.1, 10, 35}};
  static constexpr double kP[4][3] = {{0.3689, 0.1170, 0.2673},
                                      {0.4699, 0.4387, 0.7470},
                                      {0.1091, 0.8732, 0.5547},
                                      {0.0381, 0.5743, 0.8828}};
  return hartmann<3>(x, kA, kP);
}

inline double hartmann6(const std::vector<double>& x) {
  static constexpr double kA[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                      {0.05, 10, 17, 0.1, 8, 14},
                                      {3, 3.5, 1.7, 10, 17, 8},
                                      {17, 8, 0.05, 10, 0.1, 14}};
  static constexpr double kP[4][6] = {{0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886},
                                      {0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991},
                                      {0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650},
                                      {0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381}};
  return hartmann<6>(x, kA, kP);
}

inline double rosenbrock(const std::vector<double>& x) {
  double v = 0.0;
  for (size_t i = 0; i + 1 < x.size(); ++i) {
    v += 100.0 * std::pow(x[i + 1] - x[i] * x[i], 2) + std::pow(1.0 - x[i], 2);
  }
  return v;
}

inline double ackley(const std::vector<double>& x) {
  const double d = static_cast<double>(x.size());
  double s1 = 0.0, s2 = 0.0;
  for (double v : x) {
    s1 += v * v;
    s2 += std::cos(2.0 * std::numbers::pi * v);
  }
  return -20.0 * std::exp(-0.2 * std::sqrt(s1 / d)) - std::exp(s2 / d) + 20.0 + std::numbers::e;
}

inline double levy(const std::vector<double>& x) {
  constexpr double kPi = std::numbers::pi;
  const size_t d = x.size();
  auto w = [&](size_t i) { return 1.0 + (x[i] - 1.0) / 4.0; };
  double v = std::pow(std::sin(kPi * w(0)), 2);
  for (size_t i = 0; i + 1 < d; ++i) {
    v += std::pow(w(i) - 1.0, 2) * (1.0 + 10.0 * std::pow(std::sin(kPi * w(i) + 1.0), 2));
  }
  v += std::pow(w(d - 1) - 1.0, 2) * (1.0 + std::pow(std::sin(2.0 * kPi * w(d - 1)), 2));
  return v;
}

}  // namespace tuner::bench

#endif  // TUNER_BENCH_TEST_FUNCTIONS_H_
