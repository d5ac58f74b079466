// BBOB: ten of the 24 noiseless functions of COCO's BBOB suite, for bench/suite.
//
// The definitions follow Hansen, Finck, Ros and Auger, "Real-Parameter Black-Box Optimization
// Benchmarking 2009: Noiseless Functions Definitions" (INRIA RR-6829): the same oscillation
// (T_osz), asymmetry (T_asy^beta) and conditioning (Lambda^alpha) transforms, rotations R and Q,
// penalty f_pen and constants. The instances are this suite's own, not COCO's: the optimum shift,
// the rotations, the signs and Gallagher's peaks are drawn from a SplitMix64 stream seeded by
// (function id, dimension, instance), so a problem is the same function on every machine and in
// every process, but not COCO's instance of the same number. f_opt is 0 for every function, so
// the value is the regret.
//
// Thread-safe after construction (const).
#ifndef TUNER_BENCH_SUITE_BBOB_H_
#define TUNER_BENCH_SUITE_BBOB_H_

#include <cstdint>
#include <string>
#include <vector>

namespace tuner::bench::suite {

// The BBOB ids this file implements, with their names:
//   1 sphere, 2 ellipsoid (separable), 3 rastrigin (separable), 5 linear_slope,
//   6 attractive_sector, 8 rosenbrock (original), 10 ellipsoid_rotated, 15 rastrigin_rotated,
//   20 schwefel (x sin x), 21 gallagher101 (101 peaks).
const std::vector<int>& bbob_ids();
// "sphere" for 1, ... Throws std::invalid_argument for an id not in bbob_ids().
std::string bbob_name(int id);

class BbobFunction {
 public:
  // REQUIRES: id in bbob_ids(), dim >= 2. The search domain is [-5, 5]^dim.
  BbobFunction(int id, int dim, uint64_t instance);
  // The function `id` with the optimum at `x_opt` (f5: its coordinates +-5; f20: +-4.2096874633
  // / 2, their signs the instance's 1_+-) instead of this suite's instance: another
  // implementation's instance, for comparison (bench/suite/coco_values_test.py). Only the
  // functions that need nothing more than the optimum: 1, 2, 3, 5, 8 and 20; throws
  // std::invalid_argument for the others (their rotations and peaks are not given).
  BbobFunction(int id, std::vector<double> x_opt);

  // x: dim values (any reals; outside [-5, 5] the functions with f_pen add their penalty).
  double operator()(const std::vector<double>& x) const;

  int id() const { return id_; }
  int dim() const { return dim_; }
  // The global minimizer; the value there is 0 (up to rounding).
  const std::vector<double>& x_opt() const { return x_opt_; }

 private:
  using Matrix = std::vector<double>;  // dim x dim, row-major

  std::vector<double> rotate(const Matrix& m, const std::vector<double>& v) const;

  // Constant after construction.
  int id_;
  int dim_;
  std::vector<double> x_opt_;
  Matrix r_;                       // rotation R (f6, f10, f15, f21)
  Matrix q_;                       // rotation Q (f6, f15)
  std::vector<double> signs_;      // 1_+- (f20)
  std::vector<double> peaks_;      // f21: n_peaks x dim, R y_i; peak 0 is the global optimum
  std::vector<double> peak_diag_;  // f21: n_peaks x dim, the diagonal of C_i
  std::vector<double> peak_w_;     // f21: n_peaks weights
};

}  // namespace tuner::bench::suite

#endif  // TUNER_BENCH_SUITE_BBOB_H_
