// RandomSampler: every parameter independently from its distribution's prior.
//
// Uniform (or log-uniform) for floats and ints, respecting steps; uniform over categorical
// choices; Normal(mu, sigma) for normal priors. Stateless and thread-safe.
#ifndef TUNER_SEARCH_SAMPLERS_RANDOM_SAMPLER_H_
#define TUNER_SEARCH_SAMPLERS_RANDOM_SAMPLER_H_

#include "search/samplers/sampler.h"

namespace tuner {

class RandomSampler final : public Sampler {
 public:
  ParamValue sample_independent(const std::string& name, const Distribution& distribution,
                                const History& history, const TrialContext& trial,
                                Rng& rng) override;
  std::string name() const override { return "random"; }

  // A draw from the prior of `distribution`, as RandomSampler makes it; other samplers use it
  // for their startup trials.
  static ParamValue draw(const Distribution& distribution, Rng& rng);
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SAMPLERS_RANDOM_SAMPLER_H_
