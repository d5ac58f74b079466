// AshaScheduler: asynchronous successive halving (Li et al., "A System for Massively Parallel
// Hyperparameter Tuning", 2018/2020); Optuna's SuccessiveHalvingPruner, Ray Tune's ASHAScheduler.
//
// Rungs. Rung k (k = 0, 1, ...) sits at resource (step)
//     r_k = min_resource * reduction_factor^(k + min_early_stopping_rate),
// and, when max_resource is set, only rungs with r_k < max_resource exist (a trial that reaches
// max_resource has finished its budget; the scheduler does not end it).
//
// Rung values, derived from stored intermediate values only. A trial has reached rung k when it
// has a value at some step >= r_k; its value at the rung is its intermediate value at the first
// such step. With a report at every step that is the value at step r_k exactly. (Optuna records
// the value in a system attribute when the trial passes the rung, which is the same value; here
// it is recomputed from the intermediate values so that a resumed study decides the same.)
//
// Decision. A report at `step` is evaluated at every rung k whose first step >= r_k is `step`,
// i.e. the trial's previous report was below r_k and this one is at or above it: each rung is
// judged once per trial, when the trial first reaches it; reports between rungs continue. At each
// such rung, from the lowest up, the competitors are every trial of the study that has reached
// the rung (any state: running, complete, pruned, failed), the reporting trial included, n of
// them. The trial is stopped when
//   - n <= bootstrap_count (the first bootstrap_count trials to reach a rung end there and set
//     its bar, as in Optuna), or
//   - its rung value is worse than the value ranked max(floor(n / reduction_factor), 1)-th best
//     among the competitors (ties continue): it is not in the top 1/reduction_factor.
// Otherwise it continues. A non-finite value (NaN, +-inf) is the worst value: the reporting trial
// is stopped at any rung it reaches with one; other trials' non-finite rung values rank last.
//
// Differences from Optuna, by design: when a trial jumps over several rungs in one report and is
// stopped at the lower one, Optuna records no value at the higher rungs, while here the trial
// counts at every rung its steps reach (membership is a function of the stored values alone).
// A pause-based (promotion) ASHA, which pauses at a rung instead of stopping and resumes the
// paused trial that later ranks in the top 1/reduction_factor, would return Decision::kPause here
// and leave the promotion to the coordinator; this scheduler only continues or stops.
//
// The study's first direction is used. Thread-safe: constant after construction.
#ifndef TUNER_SEARCH_SCHEDULERS_ASHA_H_
#define TUNER_SEARCH_SCHEDULERS_ASHA_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "search/history.h"
#include "search/schedulers/scheduler.h"
#include "trials/frozen_trial.h"

namespace tuner {

struct AshaOptions {
  // The resource (step) of the lowest possible rung, in the unit of the reported steps (epochs,
  // batches). Must be >= 1. Default: 1.
  int64_t min_resource = 1;
  // The base of the rung spacing; a trial continues past a rung when it is in the best
  // 1/reduction_factor of the trials there. Must be >= 2. Default: 3.
  int reduction_factor = 3;
  // When set, only rungs below it exist (the budget of a whole trial). Must be > min_resource.
  // Default: unset (rungs without end).
  std::optional<int64_t> max_resource;
  // Skips the first rungs: rung 0 is at min_resource * reduction_factor^min_early_stopping_rate.
  // Must be >= 0. Default: 0.
  int min_early_stopping_rate = 0;
  // The first bootstrap_count trials to reach each rung are stopped there. Must be >= 0.
  // Default: 0.
  int bootstrap_count = 0;
};

class AshaScheduler final : public Scheduler {
 public:
  // Throws Error(kInvalidArgument) naming the option ("asha.reduction_factor: ...").
  explicit AshaScheduler(const AshaOptions& options = {});

  Decision on_report(const FrozenTrial& trial, int64_t step, const History& history) const override;

  // As on_report(), but the competitors at a rung are only the other trials for which
  // `competes(other)` is true (Hyperband's brackets). The reporting trial always competes.
  Decision on_report_among(const FrozenTrial& trial, int64_t step, const History& history,
                           const std::function<bool(const FrozenTrial&)>& competes) const;

  // The rung resources r_0 < r_1 < ..., all below max_resource when it is set; when it is not,
  // every rung that fits in int64_t.
  const std::vector<int64_t>& rungs() const { return rungs_; }

  const AshaOptions& options() const { return options_; }

 private:
  // Constant after construction.
  AshaOptions options_;
  std::vector<int64_t> rungs_;
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SCHEDULERS_ASHA_H_
