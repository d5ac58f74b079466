// GaussianProcess: the regression model of the GP sampler (docs/samplers.md).
//
// A zero-mean GP on inputs in the unit cube [0, 1]^d with a Matern 5/2 kernel, one lengthscale
// per dimension (ARD), a signal variance and a noise variance:
//   k(x, x') = s2 * (1 + sqrt(5) r + 5 r^2 / 3) * exp(-sqrt(5) r),  r^2 = sum_i (x_i - x'_i)^2 /
//   l_i^2
// The outputs are standardized (mean 0, variance 1) before fitting, and predictions are given
// back in the outputs' units; the prior mean is the outputs' mean, or a given number of their
// standard deviations from it (GpFitOptions::prior_mean). The kernel parameters maximize the log
// marginal likelihood plus weak log-normal priors (lengthscales around 0.5 of the cube, signal
// variance around 1, noise small), by L-BFGS on their logarithms from several starts, or from one
// given start (a warm start: the parameters fitted to nearly the same points); the noise has a
// floor, so that repeated or noiseless points keep the kernel matrix positive definite.
//
// Thread safety: an immutable value once fitted; predict() may be called from any thread.
#ifndef TUNER_SEARCH_SAMPLERS_GP_GAUSSIAN_PROCESS_H_
#define TUNER_SEARCH_SAMPLERS_GP_GAUSSIAN_PROCESS_H_

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "search/rng.h"

namespace tuner {

struct GpKernelParams {
  std::vector<double> lengthscales;  // one per dimension, in unit-cube lengths
  double signal_variance = 1.0;      // of the standardized outputs
  double noise_variance = 1e-2;      // of the standardized outputs
};

struct GpFitOptions {
  int restarts = 3;          // starts besides the default one; each from perturbed parameters
  int max_iterations = 100;  // of L-BFGS per start
  // A start ends when a step gains less than this times (1 + |objective|): the objective is a log
  // likelihood of order n, and the parameters it picks need no more than a few digits.
  double relative_decrease = 1e-5;
  // The same for a warm start, which begins near its optimum, where every step gains little: the
  // criterion above would end it before it has moved, and the warm-started fits would do worse
  // than fits from scratch (as they did on the function suite's Rastrigin, bench/suite).
  double warm_relative_decrease = 1e-9;
  double min_noise = 1e-6;  // the noise variance's floor (standardized units)
  // The prior mean, in standard deviations of the outputs from their mean: what the model expects
  // far from every point. Default 0 (the outputs' mean).
  double prior_mean = 0.0;
  // Tied lengthscales: when not empty, one per dimension, the index of its group (0, 1, ...,
  // every index below the largest used); the dimensions of a group share one lengthscale (its
  // prior counted once). Empty (default): one lengthscale per dimension.
  std::vector<int> lengthscale_groups;
  // When set, the fit runs L-BFGS from these parameters alone (no restarts, no Rng draws); it
  // falls back to the default starts only where they give no finite objective. Their dimension
  // must be the points'. Default: none.
  std::optional<GpKernelParams> warm_start;
};

class GaussianProcess {
 public:
  // Fits the kernel parameters to `y` observed at `x` (each a point of the unit cube).
  // REQUIRES: x.size() == y.size() >= 1, every point of the same dimension >= 1, all finite.
  // Throws Error(kInvalidArgument) otherwise. Same inputs and Rng state, same fit.
  static GaussianProcess fit(const std::vector<std::vector<double>>& x,
                             const std::vector<double>& y, Rng& rng,
                             const GpFitOptions& options = {});

  GaussianProcess(GaussianProcess&&) noexcept;
  GaussianProcess& operator=(GaussianProcess&&) noexcept;
  ~GaussianProcess();

  struct Prediction {
    double mean = 0;      // in the outputs' units
    double variance = 0;  // of the latent function (noise not included), in squared units
  };
  // REQUIRES: x has the fitted dimension.
  Prediction predict(std::span<const double> x) const;
  // The predictions at `count` points, stored one after another in `points` (count x dimension
  // values), into out[0..count): one kernel block and one triangular solve for all of them.
  // REQUIRES: points.size() == count * dimension(), out.size() >= count.
  void predict(std::span<const double> points, size_t count, std::span<Prediction> out) const;
  // predict(x) and the gradients of its mean and variance with respect to x.
  // REQUIRES: x, mean_gradient and variance_gradient of the fitted dimension.
  Prediction predict_with_gradient(std::span<const double> x, std::span<double> mean_gradient,
                                   std::span<double> variance_gradient) const;

  const GpKernelParams& kernel() const;
  // The standard deviation the outputs were divided by before the fit (1 where they are all
  // equal): kernel()'s variances times its square are in the outputs' squared units.
  double output_scale() const;
  // The fit's objective at the fitted parameters: the log marginal likelihood of the standardized
  // outputs plus the log priors.
  double log_marginal_likelihood() const;

  int dimension() const;

 private:
  struct Impl;
  explicit GaussianProcess(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SAMPLERS_GP_GAUSSIAN_PROCESS_H_
