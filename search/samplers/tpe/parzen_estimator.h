// ParzenEstimator: the mixture of product kernels that TPE fits to a group of trials.
//
// One kernel per observation plus, optionally, a prior kernel; each kernel is a product over the
// dimensions of: a truncated normal (float, log float: in log space), a truncated normal
// integrated over the step cell (stepped float, int, log int: the cell in log space), a smoothed
// categorical (categorical), or an untruncated normal (NormalDistribution, in log space when
// `log`). This is the estimator of Optuna's TPESampler (neighbour-gap bandwidths, the magic clip,
// the prior kernel), written for speed: kernel constants are computed once per estimator, and
// densities are evaluated four points at a time (one per vector lane) over contiguous per-kernel
// arrays (categorical terms by compare-and-select, discrete ones from a table of cell masses per
// distinct point value and kernel shape, whose common regimes are computed without branches). A
// point's density does not depend on the other points evaluated with it, to the bit.
// Bandwidths are neighbour gaps in every dimension, for joint estimators too (as Optuna 5.0;
// Optuna 3.1 uses a Scott-like rule there, which did worse on the benchmarks); the prior's centre
// joins the neighbours only with prior_in_bandwidths.
//
// Values are internal representations (see trials/distribution.h): numbers for float, int and
// normal, choice indices for categorical. Densities are with respect to the transformed space
// (log space for log dimensions; counting measure for discrete ones), so the densities of two
// estimators over the same dimensions can be compared, which is all TPE needs.
//
// Immutable after construction; const methods may be called from several threads.
#ifndef TUNER_SEARCH_SAMPLERS_TPE_PARZEN_ESTIMATOR_H_
#define TUNER_SEARCH_SAMPLERS_TPE_PARZEN_ESTIMATOR_H_

#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <utility>
#include <vector>

#include "search/rng.h"
#include "trials/distribution.h"

namespace tuner {

struct ParzenEstimatorOptions {
  // Add a kernel at the prior (the middle of the range with the width of the range; the prior
  // N(mu, sigma) of a NormalDistribution; the uniform distribution of a categorical), weighted
  // prior_weight against observation weights. Default: true. Without observations the prior kernel
  // is always used.
  bool consider_prior = true;
  // Weight of the prior kernel, relative to the observation weights. REQUIRES >= 0. Default 1.0.
  double prior_weight = 1.0;
  // Clip bandwidths below at range / min(100, n_kernels + 1). Default: true.
  bool consider_magic_clip = true;
  // Let the outermost observations' bandwidths reach to the range's ends. Default: false.
  bool consider_endpoints = false;
  // Count the prior's centre among the neighbours when measuring the observations' bandwidths
  // (bounded numeric dimensions, with the prior), as Optuna 3.1's univariate TPE does; Optuna
  // 4 and 5 leave it out. TpeSampler sets it for its univariate estimators only, where it did
  // better on the sampler benchmark (bench/sampler_quality) or tied. Default: false.
  bool prior_in_bandwidths = false;
};

// A std::vector allocator whose resize() leaves new elements default-initialized (for doubles
// and ints: unwritten), for buffers that are filled right after they are sized.
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  using std::allocator<T>::allocator;
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
template <class T>
using UninitVector = std::vector<T, DefaultInitAllocator<T>>;

// What a ParzenEstimator computes that repeats across the estimators a sampler builds, ask after
// ask: the log normal masses of kernels over their truncation bounds (kernels keep their centre
// and bandwidth while trials are added), and the log weights of the last weight vector (the
// univariate estimators of one ask share theirs). Results are bit-identical with and without a
// memo. Lossy (a fixed-size table, about 320 KiB): a miss recomputes.
//
// Not thread-safe: one estimator construction at a time may use a memo.
class ParzenMemo {
 public:
  ParzenMemo();
  // log_gauss_mass(a, b), remembered.
  double log_gauss_mass(double a, double b);
  // std::log(x), remembered (observations in log space, bandwidths).
  double log(double x);

 private:
  friend class ParzenEstimator;
  struct Entry {
    uint64_t a = ~uint64_t{0};  // bits; all ones (a NaN) marks an empty slot
    uint64_t b = 0;
    double value = 0.0;
  };
  struct LogEntry {
    uint64_t x = ~uint64_t{0};  // bits; all ones (a NaN) marks an empty slot
    double value = 0.0;
  };
  static constexpr int kBits = 13;
  std::vector<Entry> table_;         // [1 << kBits]
  std::vector<LogEntry> log_table_;  // [1 << kBits]
  // The last weights given to an estimator with the prior weight, and their logs once normalized.
  std::vector<double> weights_;
  double prior_weight_ = -1.0;
  std::vector<double> log_weights_;
};

class ParzenEstimator {
 public:
  // `dims`: the distribution of each dimension (REQUIRES: each valid).
  // `observations`: one column per dimension, each of n internal representations inside its
  //   distribution; kernel k sits at (observations[0][k], ..., observations[D-1][k]).
  // `weights`: n non-negative finite weights, kernel k's in weights[k] (REQUIRES: a positive sum
  //   when n > 0).
  // `sorted`: optional; when not empty, sorted[d] is a permutation of 0..n-1 that orders
  //   observations[d] ascending (ties in any order). Saves the sorts.
  // `memo`: optional (borrowed for the construction only); saves recomputing what repeats across
  //   estimators. The estimator is the same with or without it.
  // Throws Error(kInvalidArgument) naming the problem when the inputs do not fit together.
  ParzenEstimator(std::span<const Distribution> dims,
                  std::span<const std::vector<double>> observations,
                  std::span<const double> weights, const ParzenEstimatorOptions& options,
                  std::span<const std::vector<int>> sorted = {}, ParzenMemo* memo = nullptr);

  size_t n_dims() const { return dims_.size(); }
  // Observations (merged where identical for a one-dimensional discrete estimator) plus prior.
  size_t n_kernels() const { return weight_.size(); }

  // `n` draws, row-major: result[i * n_dims() + d] is draw i's internal representation in
  // dimension d, always inside that dimension's distribution (on its grid; rounded to q).
  std::vector<double> sample(Rng& rng, int n) const;

  // The log density of each of the n points x[i * n_dims() + d] (row-major, internal
  // representations inside the distributions). REQUIRES: x.size() == n * n_dims().
  std::vector<double> log_pdf(std::span<const double> x, int n) const;

 private:
  enum class Kind { kContinuous, kDiscrete, kCategorical };

  // One dimension: its transform and, per kernel, the kernel's parameters.
  struct Dim {
    Kind kind = Kind::kContinuous;
    bool log = false;      // kernels live in log space
    double low = 0.0;      // truncation bounds in the kernel space (+-inf when unbounded);
    double high = 0.0;     //   discrete ones extended by half a step
    double raw_low = 0.0;  // the distribution's bounds, for clamping draws
    double raw_high = 0.0;
    double step = 0.0;  // grid step (discrete), or q of a normal (0: none)
    int n_choices = 0;  // categorical
    // Per kernel (continuous and discrete): centre and bandwidth in the kernel space.
    UninitVector<double> mu;
    UninitVector<double> sigma;
    UninitVector<double> inv_sigma;
    UninitVector<int> order;  // observation kernels by ascending centre
    // Discrete and categorical: kernel -> distinct kernel shape ("pair"), and per pair its
    // centre, bandwidth and log normalizer (discrete), or its log probabilities (categorical,
    // [pair * n_choices + choice]).
    UninitVector<int> pair;
    UninitVector<double> pair_mu;
    UninitVector<double> pair_sigma;
    UninitVector<double> pair_log_z;
    UninitVector<double> cat_log_p;
    UninitVector<double> cat_p;  // the same, not in log space: for draws
    // Categorical, for densities: per kernel its choice (-1: the uniform prior), and the three
    // log probabilities a kernel can give a point (its choice, another choice, the prior's).
    UninitVector<double> cat_choice;
    double cat_log_hit = 0.0;
    double cat_log_miss = 0.0;
    double cat_log_prior = 0.0;
    // Discrete, for densities: per kernel shape (the kernels themselves once merged) its centre,
    // 1 / bandwidth, log bandwidth and log normalizer; per kernel its shape.
    UninitVector<double> shape_mu;
    UninitVector<double> shape_inv_sigma;
    UninitVector<double> shape_log_sigma;
    UninitVector<double> shape_log_z;
    UninitVector<int> kernel_shape;
  };

  // The log masses of a discrete dimension's kernel shapes over the distinct values of n points.
  struct CellTable {
    UninitVector<int> point_cell;   // [n]: the row of point i
    UninitVector<double> log_mass;  // [cell * n_shapes + shape]
  };

  void build_numeric(Dim& dim, const Distribution& distribution, std::span<const double> column,
                     std::span<const int> order, const ParzenEstimatorOptions& options,
                     bool with_prior, ParzenMemo* memo);
  void build_categorical(Dim& dim, const CategoricalDistribution& distribution,
                         std::span<const double> column, const ParzenEstimatorOptions& options,
                         bool with_prior);
  void merge_identical_kernels();
  void prepare_densities(ParzenMemo* memo);
  void sort_kernels_1d(size_t n_observations);
  // `terms`: scratch of n_sorted_ values.
  double log_pdf_1d(double x, double* terms) const;
  double draw_in_dim(const Dim& dim, int kernel, Rng& rng) const;
  // Discrete dimension d's table for the n points x (row-major, n_dims() per point).
  CellTable cell_table(size_t d, std::span<const double> x, int n) const;

  // Constant after construction.
  std::vector<Dim> dims_;
  UninitVector<double> weight_;        // per kernel, normalized
  UninitVector<double> cum_weight_;    // per kernel, for drawing a kernel
  UninitVector<double> kernel_const_;  // per kernel: log weight + continuous log normalizers
  // One continuous dimension: the first n_sorted_ kernels are sorted by centre.
  size_t n_sorted_ = 0;
  double max_sorted_sigma_ = 0.0;
  double max_sorted_const_ = 0.0;
};

// Truncated-normal arithmetic, exposed for tests.

// log(Phi(z)), Phi the standard normal CDF; accurate in both tails.
double log_ndtr(double z);
// log(Phi(b) - Phi(a)) for a <= b; accurate in the tails; -inf when the mass underflows.
double log_gauss_mass(double a, double b);
// The inverse of Phi. REQUIRES 0 <= p <= 1 (0 and 1 map to -inf and +inf).
double ndtri(double p);
// A standard normal truncated to [a, b] (a <= b, either may be infinite), by inversion of `u` in
// [0, 1).
double truncnorm_ppf(double u, double a, double b);

}  // namespace tuner

#endif  // TUNER_SEARCH_SAMPLERS_TPE_PARZEN_ESTIMATOR_H_
