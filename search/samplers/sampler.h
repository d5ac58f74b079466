// Sampler: proposes parameter values for a new trial from the trials so far.
//
// Two entry points, as in Optuna:
// - sample(): a joint proposal for a whole space. Define-and-run studies call it with their
//   SearchSpace; define-by-run studies call it with relative_space(history), the part of the space
//   the sampler wants to sample jointly (empty for independent samplers).
// - sample_independent(): one parameter on its own, for define-by-run parameters that sample()
//   did not cover.
// Implementations are thread-safe (several workers ask at once) and deterministic: the same
// history, trial number and Rng give the same values.
#ifndef TUNER_SEARCH_SAMPLERS_SAMPLER_H_
#define TUNER_SEARCH_SAMPLERS_SAMPLER_H_

#include <string>

#include "search/history.h"
#include "search/rng.h"
#include "search/space/search_space.h"
#include "trials/distribution.h"
#include "trials/param_value.h"

namespace tuner {

// The trial a proposal is for. Its record is in history.trials[number] (RUNNING, without the
// parameters being proposed) once storage has created it.
struct TrialContext {
  int number = 0;
};

class Sampler {
 public:
  virtual ~Sampler() = default;

  // Values for every parameter of `space` that is active under its conditions.
  // The default walks the space in order and calls sample_independent() for each active one.
  virtual Params sample(const SearchSpace& space, const History& history, const TrialContext& trial,
                        Rng& rng);

  // A value for one parameter, sampled on its own.
  virtual ParamValue sample_independent(const std::string& name, const Distribution& distribution,
                                        const History& history, const TrialContext& trial,
                                        Rng& rng) = 0;

  // The space that define-by-run studies sample jointly through sample(). Default: none.
  virtual SearchSpace relative_space(const History& history);

  // True when the sampler has nothing new left to propose (an exhausted grid). Default: false.
  virtual bool exhausted(const History& history) const;

  // What the study records as the origin of the trials it proposes (the "tuner:sampler" system
  // attribute; docs/samplers.md): "tpe", "gp", "random", "grid", "nsga2". Default: "custom".
  virtual std::string name() const;

  // The origin recorded for a trial proposed over `space` (the study's, or relative_space() for
  // define-by-run) from `history`. Default: name(); a sampler that hands proposals to others
  // (AutoSampler) names the one it chose.
  virtual std::string origin(const SearchSpace& space, const History& history) const;
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SAMPLERS_SAMPLER_H_
