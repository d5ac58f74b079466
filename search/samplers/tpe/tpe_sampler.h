// TpeSampler: the Tree-structured Parzen Estimator (Bergstra et al. 2011), as Optuna's TPESampler.
//
// The finished trials are split into the best ("below", gamma(n) of them) and the rest
// ("above"); a Parzen estimator is fitted to each; n_ei_candidates points are drawn from the
// below estimator and the one with the largest log l(x) - log g(x) is proposed.
// - Univariate: each parameter on its own (sample_independent()).
// - Multivariate (default): one joint estimator over the parameters every finished trial has
// (Optuna's
//   IntersectionSearchSpace), or with `group`, one per group of parameters that always appear
//   together; the other parameters of a conditional space are sampled on their own.
// - The "below" trials weigh by how much they improve on the best "above" one
//   (improvement_weights), so that l(x) / g(x) follows expected improvement.
// - One objective: COMPLETE trials rank by value (history.direction()); PRUNED ones after them,
//   by their last reported step (more is better) and then its value; FAIL trials are ignored.
// - Constraints (trials/constraints.h), as Optuna's TPESampler: a COMPLETE or PRUNED trial with a
//   constraint value > 0 ranks after every feasible one, by its total violation (the sum of its
//   positive values; least first), so infeasible trials are "below" only when fewer than gamma(n)
//   trials are feasible, and the estimators draw towards the feasible region.
// - Several objectives (multi-objective TPE, Ozaki et al. 2020, as Optuna 5's TPESampler): the
//   feasible COMPLETE trials rank by non-domination (search/pareto.h); "below" takes whole ranks
//   while they fit in gamma(n) (default: ceil(0.1 n), without the cap of 25), and from the first
//   rank that does not fit, the subset of largest hypervolume (greedy, against a reference just
//   beyond that rank's worst values). PRUNED and infeasible trials follow as for one objective (a
//   PRUNED trial's intermediate values are taken as the first objective's). The "below" kernels
//   weigh alike (Optuna 5), or with hypervolume_weights by their hypervolume contributions;
//   improvement_weights is for one objective.
// - Constant liar: RUNNING trials (other than the one being sampled) join the "above" group, so
//   parallel workers spread out instead of proposing the same point.
// - Before n_startup_trials COMPLETE or PRUNED trials: RandomSampler::draw.
// - Warm start (History::prior): the prior observations come first, as if they were the study's
//   oldest finished trials: they rank, weigh (the default weights fade the oldest as the study
//   grows) and count toward n_startup_trials as those would. A parameter one of them lacks is
//   missing for that observation (its estimators leave it out; the multivariate intersection
//   then leaves the parameter to univariate estimators). A proposal may repeat a prior point.
// - No point twice: sample() draws again (up to 7 times, then up to 64 times at random) while its
//   proposal has exactly the parameters of a trial evaluated or running (not FAIL), unless the
//   objective is noisy (History::noisy).
//
// Thread-safe: several threads may call it at once. The sampler caches what it extracts from
// finished trials, keyed by trial number and checked against trial_id; it assumes that the
// histories it is given belong to one study (a history of another study resets the cache).
// Deterministic: the same history, trial and Rng give the same values.
#ifndef TUNER_SEARCH_SAMPLERS_TPE_TPE_SAMPLER_H_
#define TUNER_SEARCH_SAMPLERS_TPE_TPE_SAMPLER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "search/samplers/sampler.h"

namespace tuner {

class ParzenMemo;

enum class ConstantLiar {
  kAuto,  // on whenever the history holds RUNNING trials other than the one being sampled
  kOn,
  kOff,
};

struct TpeOptions {
  // Trials sampled at random (RandomSampler::draw) until this many trials are COMPLETE or
  // PRUNED, a warm start's observations (History::prior) included. Default: 10.
  int n_startup_trials = 10;
  // Candidates drawn from the "below" estimator per proposal. REQUIRES >= 1. Default: 24.
  int n_ei_candidates = 24;
  // Sample the parameters every finished trial has jointly. Default: true, as in Optuna 5
  // (multivariate TPE finds better points on correlated objectives; see docs/samplers.md).
  bool multivariate = true;
  // The same with several objectives. Default: false, as Optuna 5's TPESampler: univariate TPE
  // reached a larger hypervolume on the multi-objective benchmark (bench/mo; docs/samplers.md).
  // `group` implies it.
  bool multi_objective_multivariate = false;
  // With multivariate: decompose the trials' parameter sets into groups that always appear
  // together, one joint estimator per group (Optuna's group=True). Default: false.
  bool group = false;
  // RUNNING trials as bad observations. Default: kAuto.
  ConstantLiar constant_liar = ConstantLiar::kAuto;
  // Add the prior kernel to each estimator. Default: true.
  bool consider_prior = true;
  // Weight of the prior kernel against the observations' (which weigh at most 1).
  // REQUIRES >= 0. Default: 1.0.
  double prior_weight = 1.0;
  // Floor bandwidths at range / min(100, n_kernels + 1). Default: true.
  bool consider_magic_clip = true;
  // Let the outermost observations' bandwidths reach to the range's ends. Default: false.
  bool consider_endpoints = false;
  // gamma(n): how many of the n COMPLETE or PRUNED trials are "below". Empty: Optuna's default,
  // min(ceil(0.1 n), 25).
  std::function<int(int)> gamma;
  // weights(n): the weights of n observations, oldest first (at least n values, non-negative,
  // finite, not all zero). Empty: Optuna's default, 1 for n < 25, else a ramp from 1/n to 1 over
  // the oldest n - 25 and 1 for the newest 25. With improvement_weights, of the "above" group only.
  std::function<std::vector<double>(int)> weights;
  // Weight each "below" observation by its improvement over the best "above" COMPLETE value
  // (Watanabe 2023, "Tree-Structured Parzen Estimator: Understanding Its Algorithm Components",
  // its EI weighting; Song et al. 2022, "A General Recipe for Likelihood-free Bayesian
  // Optimization"). With equal weights, l(x) / g(x) ranks points by their probability of
  // improving on that threshold; weighted by improvement, by their expected improvement, so the
  // best trials pull harder than those that barely made the cut. `weights` then weighs the
  // "above" group only. Falls back to `weights` when a "below" trial is PRUNED or no "above"
  // trial is COMPLETE. Default: true (Optuna: false), which found better points on the sampler
  // benchmark (bench/sampler_quality), and tied where it did not.
  bool improvement_weights = true;
  // Several objectives: weight each "below" trial by its exclusive hypervolume contribution
  // among the feasible COMPLETE "below" trials (against a reference just beyond their worst
  // values), scaled so that the largest weighs 1, at least 1e-12; the dominated ones, PRUNED and
  // infeasible ones weigh 1e-12. This is the MOTPE paper's weighting (Ozaki et al. 2020) and
  // Optuna's before 5.0, which weighs them alike ("below" kernels of weight 1) since. Default:
  // false (docs/samplers.md, "Several objectives", has the measurements).
  bool hypervolume_weights = false;
};

// Optuna's default gamma and weights, for reference and tests.
int tpe_default_gamma(int n);
// With several objectives (Optuna 5): ceil(0.1 n).
int tpe_default_gamma_multi_objective(int n);
std::vector<double> tpe_default_weights(int n);
// The improvement weights of "below" observations with these losses (smaller is better) against
// `threshold`: max(threshold - loss, 1e-12 of the largest), scaled to a mean of 1 (so that
// prior_weight keeps its meaning, and scaling or shifting the objective changes nothing); all 1
// when no loss is below the threshold or the improvements overflow.
std::vector<double> tpe_improvement_weights(const std::vector<double>& losses, double threshold);
// Several objectives: the indices (ascending) of the n_below best of these loss vectors
// (n_objectives each, row-major; smaller is better): whole non-domination ranks while they fit,
// then the rest from the next rank by greedy hypervolume subset selection (search/pareto.h).
std::vector<size_t> tpe_multi_objective_below(std::span<const double> losses, size_t n_objectives,
                                              size_t n_below);
// Several objectives: each loss vector's weight by its exclusive hypervolume contribution to the
// Pareto front of them all (reference: nadir_reference() of them all), over the largest one,
// floored at 1e-12 (also for the dominated ones); all 1 when the volumes overflow.
std::vector<double> tpe_hypervolume_weights(std::span<const double> losses, size_t n_objectives);

class TpeSampler final : public Sampler {
 public:
  // Throws Error(kInvalidArgument) naming the field when an option is out of range.
  explicit TpeSampler(TpeOptions options = {});
  ~TpeSampler() override;

  TpeSampler(const TpeSampler&) = delete;
  TpeSampler& operator=(const TpeSampler&) = delete;

  // Multivariate: the joint part jointly (see above), the rest of the active parameters on their
  // own. Univariate: every active parameter on its own.
  Params sample(const SearchSpace& space, const History& history, const TrialContext& trial,
                Rng& rng) override;

  // Univariate TPE for one parameter; trials whose value for `name` is outside `distribution`
  // are left out.
  ParamValue sample_independent(const std::string& name, const Distribution& distribution,
                                const History& history, const TrialContext& trial,
                                Rng& rng) override;

  // Multivariate (for several objectives: multi_objective_multivariate or group): the parameters
  // present with one distribution in every COMPLETE or PRUNED trial (with `group`: the union of
  // the groups), leaving out single-valued ones; empty otherwise.
  SearchSpace relative_space(const History& history) override;

  const TpeOptions& options() const { return options_; }
  std::string name() const override { return "tpe"; }
  // "random" for a startup trial (fewer than n_startup_trials finished trials to learn from),
  // else "tpe".
  std::string origin(const SearchSpace& space, const History& history) const override;

 private:
  struct Cache;
  struct Call;
  struct Split;
  struct Kernels;  // the "below" and "above" kernels of one sample_group() call
  struct View;     // the trials the estimators see: a warm start's, then the study's

  // Whether the history's study samples jointly: multivariate, or for several objectives
  // multi_objective_multivariate or group.
  bool joint(const History& history) const;
  // REQUIRES: mutex_ held.
  void sync(const View& view);
  // `trial.number`: the trial's position in `view`.
  Call begin_call(const View& view, const TrialContext& trial);
  // `univariate`: the estimators are sample_independent()'s (one parameter on its own).
  std::vector<double> sample_group(Call& call, const std::vector<std::string>& names,
                                   const std::vector<Distribution>& dims, bool univariate,
                                   Rng& rng);
  // The kernels of `call`'s split over the parameters `names` (distributions `dims`): their
  // values, orders by value and weights; the split's shared derivations when no kernel lacks a
  // value, else only the kernels that have one in every dimension. REQUIRES: mutex_ held.
  void observe(const Call& call, const std::vector<std::string>& names,
               const std::vector<Distribution>& dims, Kernels& kernels);
  // The weights of the split's kernels (the default ones computed once per split, when
  // options_.weights is empty). REQUIRES: mutex_ held.
  void split_weights(Split& split, Kernels& kernels);
  ParamValue sample_one(Call& call, const std::string& name, const Distribution& distribution,
                        Rng& rng);
  // The weights of the `below` kernels (trial numbers) in place of `weights`: for several
  // objectives uniform or hypervolume_weights; for one, below_improvement_weights() when
  // improvement_weights is on; empty: `weights`'. REQUIRES: mutex_ held.
  std::vector<double> below_weights(const std::vector<int>& below,
                                    const std::vector<uint8_t>& role) const;
  // tpe_improvement_weights() of the `below` trials (numbers) against the best COMPLETE trial
  // whose role is above; empty when there is none or a below trial is PRUNED.
  // REQUIRES: mutex_ held.
  std::vector<double> below_improvement_weights(const std::vector<int>& below,
                                                const std::vector<uint8_t>& role) const;

  // Constant after construction.
  const TpeOptions options_;

  std::mutex mutex_;
  // State below is protected by mutex_.
  std::unique_ptr<Cache> cache_;
  // Bumped whenever sync() changes what the cache holds (a reset or an ingested trial).
  uint64_t cache_version_ = 0;
  // The split of the last begin_call(), reused while the history's finished and running trials
  // and the trial being sampled stay the same (the parameter calls of one define-by-run trial).
  std::shared_ptr<Split> last_split_;
  // Memos lent to the estimator constructions of one call at a time (two per call: one for
  // the "below" estimators, one for the "above"); returned after use.
  std::vector<std::unique_ptr<ParzenMemo>> memos_;
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SAMPLERS_TPE_TPE_SAMPLER_H_
