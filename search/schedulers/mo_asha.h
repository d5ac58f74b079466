// MoAshaScheduler: asynchronous successive halving over several objectives (Schmucker et al.,
// "Multi-objective Asynchronous Successive Halving", 2021): ASHA's rungs, with "the best
// 1/reduction_factor" taken by non-dominated sorting instead of by one value.
//
// Rungs, and when a trial is judged, are AshaScheduler's (asha.h) with the same options: rung k
// at min_resource * reduction_factor^(k + min_early_stopping_rate), below max_resource when set;
// a trial is judged at a rung once, at its first report at a step >= the rung.
//
// Values. A trial's vector at a step is its objective values there (History::objective_steps);
// without that view (a study of one objective, or a caller that gives none) it is the one
// intermediate value. A trial's vector at a rung is the one at its first step >= the rung.
//
// Decision. The competitors at a rung are every trial of the study that has reached it (any
// state), the reporting trial included, n of them. The trial is stopped when n <=
// bootstrap_count, or when it is not among the k that NSGA-II's survival selection
// (nsga2_elite(), search/samplers/nsga2_sampler.h) keeps of their loss vectors (maximized
// objectives negated): whole non-dominated fronts (search/pareto.h) while they fit, then the
// front that does not fit by crowding distance, largest first, ties to the lower trial number.
// Otherwise it continues. k is the quota max(floor(n / reduction_factor), 1), raised to the size
// of the first front (the competitors no other dominates) plus the number b of the second
// front's boundary trials (those of infinite crowding distance within it: with two objectives
// its most accurate and its cheapest, where its values differ), but not above
// n - floor(n / reduction_factor):
//   k = max(quota, min(|first front| + b, n - floor(n / reduction_factor))).
// So every trial on the rung's first front continues, and the second front's extremes with it,
// while they leave floor(n / reduction_factor) of the rung to stop; a larger first front (many
// objectives make most trials non-dominated) is cut by crowding distance to that size. A vector
// with a non-finite value ranks after every finite one (it counts as +infinity in every
// objective); the reporting trial is stopped at any rung it reaches with one.
//
// Why the first front continues: a study of several objectives returns its Pareto front of
// COMPLETE trials, and a trial no other dominates at the rung is a candidate for it; with the
// quota alone a front larger than n / reduction_factor loses members at every rung and the final
// front is left with few points (bench/sweep/run_mo_asha).
//
// Why the second front's extremes: learning curves cross, and a trial a little behind the first
// front at an early rung can pass it later (bench/sweep/run_mo_asha: the most accurate model of
// a sweep, dominated at epoch 1 by two slightly smaller, slightly more accurate ones). They are
// the trials NSGA-II's selection takes first from the second front, at most 2 per objective.
//
// Why crowding distance breaks the last front: it needs no reference point (a hypervolume
// contribution depends on one, and so on the objectives' scales and on the worst trials seen so
// far), it is invariant to each objective's scale, it keeps the front's extremes (the most
// accurate and the cheapest trial) and it costs O(n log n) per objective. It is NSGA-II's
// selection, one of the two rules Schmucker et al. evaluate.
//
// Thread-safe: constant after construction.
#ifndef TUNER_SEARCH_SCHEDULERS_MO_ASHA_H_
#define TUNER_SEARCH_SCHEDULERS_MO_ASHA_H_

#include <cstdint>
#include <vector>

#include "search/history.h"
#include "search/schedulers/asha.h"
#include "search/schedulers/scheduler.h"
#include "trials/frozen_trial.h"

namespace tuner {

// AshaOptions, with the same meanings and defaults.
using MoAshaOptions = AshaOptions;

class MoAshaScheduler final : public Scheduler {
 public:
  // Throws Error(kInvalidArgument) naming the option ("mo_asha.reduction_factor: ...").
  explicit MoAshaScheduler(const MoAshaOptions& options = {});

  Decision on_report(const FrozenTrial& trial, int64_t step, const History& history) const override;

  // Any number of objectives (one: ASHA by non-dominated sorting of single values).
  bool judges_objectives(size_t n_objectives) const override { return n_objectives >= 1; }

  // As AshaScheduler::rungs().
  const std::vector<int64_t>& rungs() const { return rungs_; }
  const MoAshaOptions& options() const { return options_; }

 private:
  // Constant after construction.
  MoAshaOptions options_;
  std::vector<int64_t> rungs_;
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SCHEDULERS_MO_ASHA_H_
