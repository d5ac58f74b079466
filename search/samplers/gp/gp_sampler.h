// GpSampler: Bayesian optimization with a Gaussian process (docs/samplers.md, "GP").
//
// After n_startup_trials random trials, each proposal fits a GaussianProcess (Matern 5/2, a
// lengthscale per dimension, noise; search/samplers/gp/gaussian_process.h) to the COMPLETE trials
// (their values through a power transform where it predicts the latest trials no worse,
// search/samplers/gp/output_warping.h; the prior mean up to one standard deviation below their
// mean, so that far from the trials it expects worse than average) and takes the point of the
// space that maximizes the log expected improvement over the best posterior mean at a trial so far
// (a noisy objective's luckiest observation is not the target).
// Parameters go to the unit cube: floats linearly or, with log, in log space; integers and stepped
// floats as a range widened by half a step on each side (as Optuna's GPSampler), each value a
// point of it; a categorical as one coordinate per choice (one-hot), the largest giving the
// choice, its coordinates sharing one lengthscale in a single objective's fit. Running trials count
// as observed at the worst value so far (a constant liar), so parallel workers spread out. The
// acquisition is maximized over random candidates and candidates near the best trials (scored in
// one batch, integers and steps at their values), then refined from the best few by L-BFGS over the
// continuous coordinates (with the acquisition's analytic gradient), by a search over the values of
// each discrete parameter and by a shrinking local search. A point a trial evaluated or running has
// is not proposed again (startup trials included) unless the study's objective is noisy
// (History::noisy): the best new point is.
//
// The kernel fit. Fitting the kernel parameters from scratch (several L-BFGS starts) costs most
// of a proposal, and they change little from one trial to the next. So they are fitted from
// scratch only at anchors: of m observed trials (in the history's order), the first a(m), a(m)
// the largest multiple of refit_every (10) at most m, and past 200 trials of 5% of m in multiples
// of it. The proposal's own fit is one L-BFGS run from the anchor's parameters. Proposals stay a
// function of the history alone: the anchor's fit depends only on its trials (its restarts seeded
// by a hash of its points and values), and the fits kept for reuse are found by those points and
// values compared in full; a fresh sampler (a resumed study, another process) recomputes the
// anchor's fit and proposes exactly what one that has run the whole study proposes.
//
// Constraints (trials/constraints.h): once a COMPLETE trial has constraint values, one GP more
// per constraint models it, and the acquisition is the log expected improvement over the best
// posterior mean at a feasible trial plus the log probability that every constraint is <= 0
// (the constraints taken as independent, as Optuna's GPSampler); while no trial is feasible, the
// probability of feasibility alone. The local candidates start from the best feasible trials,
// then the least infeasible ones.
//
// Several objectives. A study of several directions gets one GP per objective (each
// maximized: a minimized objective negated, warped, its kernel fit anchored and warm-started as
// above), and the acquisition is the log expected hypervolume improvement over the front of the
// (feasible) observed trials, against a reference 10% of each objective's range beyond its worst
// observed value: a Monte Carlo mean over 128 fixed normal samples (a Halton sequence shifted by
// uniforms drawn from the trial's Rng) of the volume the sampled point adds, from a decomposition
// of the region no front point dominates into boxes (a grid over all objectives but the last,
// about n^(m-1) boxes for a front of n; past 4096 cells the front is thinned to its points of
// largest hypervolume). The gradient is analytic, so the maximization is the one-objective one,
// its local candidates started from the front's five points of largest hypervolume. Where no
// sample improves, the acquisition is a smooth floor far below: the log probability of beating
// the front's best in every objective. Constraints and running trials as for one objective (times
// the probability of feasibility; the constant liar at each objective's worst value).
//
// Warm start (History::prior): the prior's COMPLETE observations are observed trials that came
// first (they count toward n_startup_trials and are fitted as the study's own); a parameter one
// of them lacks sits at the centre of its coordinates (0.5, or 1/k on each of a categorical's k
// one-hot ones), and one that has none of the modelled parameters is left out. A proposal may
// repeat a prior point.
//
// Define-by-run studies sample jointly the parameters every COMPLETE trial has with the same
// distribution (relative_space; every COMPLETE observation of the warm start's while the study
// has none); the others, conditional parameters and normal priors are
// sampled at random. Deterministic: the same history, trial and Rng give the same values,
// whatever the sampler has seen before. Thread-safe: its one state, the anchors' fits kept for
// reuse, is guarded by a mutex.
#ifndef TUNER_SEARCH_SAMPLERS_GP_GP_SAMPLER_H_
#define TUNER_SEARCH_SAMPLERS_GP_GP_SAMPLER_H_

#include <memory>

#include "search/samplers/sampler.h"

namespace tuner {

struct GpSamplerOptions {
  // Random trials before the GP takes over, counting a warm start's observations
  // (History::prior). Default 10 (as Optuna's GPSampler).
  int n_startup_trials = 10;
  // Random candidates per proposal, and candidates around each of the best trials. Defaults 1024
  // and 128.
  int n_candidates = 1024;
  int n_local_candidates = 128;
  // The most finished trials the GP is fitted to. Past it the fit takes the best half of them by
  // value and the most recent for the rest, so that an ask's cost stops growing (a fit is cubic
  // in its trials). Default 200.
  int max_fit_trials = 200;
  // Fit the GP to the values through a Yeo-Johnson power transform
  // (search/samplers/gp/output_warping.h); with one objective and no budget input, only where
  // it predicts the latest trials no worse (warping_predicts_no_worse, decided at each anchor).
  // false: always as they are. Default: true.
  bool warp_outputs = true;
  // How often the kernel parameters are fitted from scratch: at every refit_every-th observed
  // trial up to 200 (past it, every 5% of the trials, in multiples of it); the fits in between
  // start from the last such fit's parameters. 0: from scratch at every proposal. Default 10.
  int refit_every = 10;
  // Under early stopping (one objective, no constraints, a PRUNED trial with intermediate
  // values): fit the GP over the parameters and the budget (a coordinate more, the log of the
  // step) to every finished trial's values at its steps (a COMPLETE one's final value at the
  // largest budget; of a long curve the steps 1, 2, 4, ... from the first and its last), and
  // maximize the log expected improvement at the largest budget over the best posterior mean
  // there at a trial, plus (given 3 values at the least step) the log probability that the value
  // at the least step reaches the median of those observed there: a point a rung would stop at
  // once is discounted. PRUNED trials with intermediate values count as observed. Default: false.
  bool budget_input = false;
};

class GpSampler final : public Sampler {
 public:
  explicit GpSampler(GpSamplerOptions options = {});
  ~GpSampler() override;

  Params sample(const SearchSpace& space, const History& history, const TrialContext& trial,
                Rng& rng) override;
  ParamValue sample_independent(const std::string& name, const Distribution& distribution,
                                const History& history, const TrialContext& trial,
                                Rng& rng) override;
  SearchSpace relative_space(const History& history) override;
  std::string name() const override { return "gp"; }
  // "random" for a startup trial (fewer than n_startup_trials observed), else "gp".
  std::string origin(const SearchSpace& space, const History& history) const override;

 private:
  class FitCache;
  // sample() for a study of several objectives: expected hypervolume improvement.
  Params sample_multi(const SearchSpace& space, const History& history, const TrialContext& trial,
                      Rng& rng);
  // sample() with budget_input under early stopping.
  Params sample_budget(const SearchSpace& space, const History& history, const TrialContext& trial,
                       Rng& rng);

  GpSamplerOptions options_;
  std::unique_ptr<FitCache> fits_;  // never null
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SAMPLERS_GP_GP_SAMPLER_H_
