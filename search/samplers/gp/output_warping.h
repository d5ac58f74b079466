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

#include <vector>

namespace tuner {

class OutputWarping {
 public:
  // Fits lambda to `y` (at least 2 values, all finite; fewer leave the identity).
  static OutputWarping fit(const std::vector<double>& y);

  // The warped value of an observation in y's units (strictly increasing in v).
  double operator()(double v) const;
  double lambda() const { return lambda_; }

 private:
  OutputWarping(double mean, double scale, double lambda)
      : mean_(mean), scale_(scale), lambda_(lambda) {}
  double mean_ = 0;
  double scale_ = 1;
  double lambda_ = 1;
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SAMPLERS_GP_OUTPUT_WARPING_H_
