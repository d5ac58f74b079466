// PB2's explore step: population-based bandits (Parker-Holder et al., "Provably Efficient Online
// Hyperparameter Optimization with Population-Based Bandits", NeurIPS 2020; Ray Tune's PB2).
// docs/schedulers.md, "PB2".
//
// PbtScheduler with PbtOptions::explore == kBandit calls pb2_select() where PBT would perturb an
// exploiting member's copied params. Each finished segment is an observation: its improvement
// per step (the value it started from minus its value at its end, as losses, over its steps), at
// the step it started from, with its params. A Gaussian process
// (search/samplers/gp/gaussian_process.h) on inputs (time, params) models the improvement: the
// time is the start step over the new segment's (in [0, 1], the new segment at 1), and its
// lengthscale says how fast old segments stop telling about new ones; the params are scaled to
// [0, 1] by their distributions' bounds (in log space where log). The new params maximize the
// upper confidence bound
//   mean(x) + kappa * sd(x)
// at the new segment's time, within the bounds. Segments that start at the same step and are not
// finished yet (the round's other decisions) are pending points: the variance is that of the GP
// given them too, at the mean it predicts there (so that one round's members spread out, as Ray's
// batch UCB does).
//
// Only bounded numeric params (a FloatDistribution or IntDistribution of more than one value) are
// the bandit's; pb2_select() leaves the others to the caller (PBT's explore).
//
// The fit (the GP's kernel by maximum likelihood, the expensive part) depends on the observations,
// the start step and the bandit's params, not on the member that explores: Pb2Model::fit() makes
// it once, and Pb2Model::select() chooses for each member of a round from it. pb2_select() is the
// two in one.
//
// Deterministic in its inputs and `rng`. pb2_select() is thread-compatible (no state); a Pb2Model
// is an immutable value once fitted.
#ifndef TUNER_SEARCH_SCHEDULERS_PB2_H_
#define TUNER_SEARCH_SCHEDULERS_PB2_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "search/rng.h"
#include "trials/distribution.h"
#include "trials/param_value.h"

namespace tuner {

// A segment as the bandit sees it.
struct Pb2Observation {
  int64_t start_step = 0;          // the global step it started from, >= 0
  double gain_per_step = 0;        // (start loss - end loss) / its steps; finite
  const Params* params = nullptr;  // its params; REQUIRES: not null
};

// The most observations the GP is fitted to: the latest by start step (a fit is cubic in them).
inline constexpr size_t kPb2MaxObservations = 200;
// Fewer observations than this: pb2_select() gives nullopt (the caller explores as PBT does).
inline constexpr size_t kPb2MinObservations = 2;

// Whether `distribution` is one of the bandit's: bounded, numeric, more than one value.
bool pb2_models(const Distribution& distribution);

// `params` with the values of the bandit's params (those of `params` that `distributions` gives
// a distribution pb2_models() takes) chosen by maximizing the UCB above, rounded to their steps
// and within their bounds; the other params as given. nullopt when no param is the bandit's or
// fewer than kPb2MinObservations observations have all of them. `pending`: the params of the
// segments that start at `start_step` (the new one's: the exploited checkpoint's step) and are
// not finished; an observation that starts later (a member ahead) counts as starting there.
// REQUIRES: kappa >= 0 and finite.
std::optional<Params> pb2_select(
    std::span<const Pb2Observation> observations, std::span<const Params* const> pending,
    int64_t start_step, const Params& params,
    const std::map<std::string, Distribution, std::less<>>& distributions, double kappa, Rng& rng);

// The GP of pb2_select() fitted once, for the members of a round that explore from the same start
// step over the same bandit params.
class Pb2Model {
 public:
  // The GP fitted to `observations` for segments that start at `start_step`, over the bandit's
  // params among `params` (their distributions in `distributions`). nullopt where pb2_select()
  // gives nullopt before choosing: no param is the bandit's, fewer than kPb2MinObservations
  // observations have all of them, or no kernel fits. Draws from `rng` (the fit's restarts).
  // The model keeps what it needs of the observations: it does not borrow them.
  static std::optional<Pb2Model> fit(
      std::span<const Pb2Observation> observations, int64_t start_step, const Params& params,
      const std::map<std::string, Distribution, std::less<>>& distributions, Rng& rng);

  Pb2Model(Pb2Model&&) noexcept;
  Pb2Model& operator=(Pb2Model&&) noexcept;
  ~Pb2Model();

  // Whether fit() with these `start_step`, `params` and `distributions` would have fitted on the
  // same inputs (the same start step, the same bandit params with the same distributions).
  bool fits(int64_t start_step, const Params& params,
            const std::map<std::string, Distribution, std::less<>>& distributions) const;

  // pb2_select()'s choice from this fit: `params` with the bandit's params chosen by the UCB,
  // given `pending`; nullopt when the GP given the pending points cannot be made (the caller
  // explores as PBT does). Draws from `rng` (the acquisition's candidates).
  // REQUIRES: fits(start_step, params, distributions) for the fit's start step and the
  // distributions of `params`; kappa >= 0 and finite.
  std::optional<Params> select(std::span<const Params* const> pending, const Params& params,
                               double kappa, Rng& rng) const;

 private:
  struct Impl;
  explicit Pb2Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SCHEDULERS_PB2_H_
