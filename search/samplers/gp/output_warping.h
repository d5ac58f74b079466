// OutputWarping: a Yeo-Johnson power transform of a GP's observations (docs/samplers.md, "GP").
//
// A stationary GP fits badly to values whose spread is dominated by a long tail (an
// ill-conditioned quadratic, a loss that explodes in part of the space): standardized, most
// trials sit in a sliver near the best and the model sees only the tail. The transform is the
// member of the Yeo-Johnson family (Yeo and Johnson 2000) whose output is closest to normal by
// maximum likelihood, applied to the values centred on their median and scaled by their
// interquartile range. It is strictly increasing, so the best trial stays the best and expected
// improvement ranks in the warped units. Values already near normal get lambda near 1, a
// near-identity.
#ifndef TUNER_SEARCH_SAMPLERS_GP_OUTPUT_WARPING_H_
#define TUNER_SEARCH_SAMPLERS_GP_OUTPUT_WARPING_H_

#include <functional>
#include <vector>

#include "search/samplers/gp/gaussian_process.h"

namespace tuner {

class OutputWarping {
 public:
  // Fits lambda to `y` (at least 2 values, all finite; fewer leave the identity).
  static OutputWarping fit(const std::vector<double>& y);

  // The warped value of an observation in y's units (strictly increasing in v).
  double operator()(double v) const;
  double lambda() const { return lambda_; }
  // The log of the warping's derivative at v (finite: the transform is strictly increasing).
  double log_derivative(double v) const;

 private:
  OutputWarping(double mean, double scale, double lambda)
      : mean_(mean), scale_(scale), lambda_(lambda) {}
  double mean_ = 0;
  double scale_ = 1;
  double lambda_ = 1;
};

// Whether a GP should see the values y, observed at x in this order, through the warping
// (OutputWarping::fit) rather than standardized as they are. The forward check: both models are
// fitted by `fit` to all but the last quarter of the trials (at least 3 held out) and scored by
// the log predictive density of the held-out values in y's own units (the warped model's density
// times the warping's derivative; the fitted noise included). The values go as they are only
// when their model scores higher by more than half a nat per held-out trial. The warping fits a
// distribution, not the GP: where the values span decades down to a narrow valley (an
// ill-conditioned quadratic), it bends the walls whose shape the GP extrapolates to the floor,
// and the later trials, proposed near the floor, show it. Fewer than 7 values: true.
bool warping_predicts_no_worse(
    const std::vector<std::vector<double>>& x, const std::vector<double>& y,
    const std::function<GaussianProcess(const std::vector<std::vector<double>>&,
                                        const std::vector<double>&)>& fit);

}  // namespace tuner

#endif  // TUNER_SEARCH_SAMPLERS_GP_OUTPUT_WARPING_H_
