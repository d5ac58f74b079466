// PercentileStopping and MedianStopping: stop a trial whose best value so far is worse than a
// percentile of what completed trials had reached at the same step.
//
// Optuna's PercentilePruner / MedianPruner semantics (Ray Tune's MedianStoppingRule is the same
// idea). At a report at `step`, the trial is stopped when all of these hold:
//   1. at least max(n_startup_trials, 1) trials of the study are COMPLETE;
//   2. step >= n_warmup_steps;
//   3. `step` is the first report of its interval: with L = the largest step <= `step` of the form
//      n_warmup_steps + k * interval_steps, the trial reported nothing in [L, step). With a report
//      at every step this is (step - n_warmup_steps) % interval_steps == 0; a check whose step was
//      skipped happens at the next report instead;
//   4. at least n_min_trials COMPLETE trials have a value at exactly `step`;
//   5. the trial's best value over its steps <= `step` is strictly worse than the `percentile`-th
//      percentile (linear interpolation, as numpy's default) of those trials' values at `step`.
//      `percentile` counts from the best end: 25 keeps trials in the best quarter, 50 the better
//      half, whatever the direction.
// Only COMPLETE trials are compared against (not PRUNED, FAIL or RUNNING ones), as in Optuna.
// Non-finite values (NaN, +-inf) count as the worst possible value: a trial that has reported
// only non-finite values is stopped once conditions 1-3 hold, as Optuna stops a NaN trial.
// The study's first direction is the one used.
//
// Thread-safe: constant after construction.
#ifndef TUNER_SEARCH_SCHEDULERS_MEDIAN_STOPPING_H_
#define TUNER_SEARCH_SCHEDULERS_MEDIAN_STOPPING_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "search/history.h"
#include "search/schedulers/scheduler.h"
#include "trials/frozen_trial.h"

namespace tuner {

struct PercentileStoppingOptions {
  // Which percentile of the completed trials' values a trial must reach, counted from the best
  // end, in [0, 100]. Default: 50 (the median).
  double percentile = 50.0;
  // No stopping until this many trials are COMPLETE. Must be >= 0. Default: 5.
  int n_startup_trials = 5;
  // No stopping at steps below this one. Must be >= 0. Default: 0.
  int64_t n_warmup_steps = 0;
  // Decide once per this many steps, counted from n_warmup_steps. Must be >= 1. Default: 1.
  int64_t interval_steps = 1;
  // No stopping unless at least this many COMPLETE trials reported a value at the same step.
  // Must be >= 1. Default: 1.
  int n_min_trials = 1;
};

// MedianStopping's options: PercentileStopping's at the 50th percentile (`percentile` must stay
// 50).
using MedianStoppingOptions = PercentileStoppingOptions;

class PercentileStopping : public Scheduler {
 public:
  // Throws Error(kInvalidArgument) naming the option ("percentile_stopping.percentile: ...").
  explicit PercentileStopping(const PercentileStoppingOptions& options = {});

  Decision on_report(const FrozenTrial& trial, int64_t step, const History& history) const override;
  // The same; the trial's best value so far is kept in `memo`, so a report costs the same at any
  // step (the trial's values are scanned once).
  Decision on_report_memoized(const FrozenTrial& trial, int64_t step, const History& history,
                              ReportMemo& memo) const override;

  const PercentileStoppingOptions& options() const { return options_; }

 protected:
  // `name` prefixes error messages ("median_stopping").
  PercentileStopping(const PercentileStoppingOptions& options, std::string_view name);

 private:
  // Constant after construction.
  PercentileStoppingOptions options_;
};

// PercentileStopping with percentile 50: Optuna's MedianPruner.
class MedianStopping final : public PercentileStopping {
 public:
  // Throws Error(kInvalidArgument) naming the option ("median_stopping.interval_steps: ..."), and
  // for a percentile other than 50.
  explicit MedianStopping(const MedianStoppingOptions& options = {});
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SCHEDULERS_MEDIAN_STOPPING_H_
