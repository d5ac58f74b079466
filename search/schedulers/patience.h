// PatienceStopping: stop a trial whose intermediate value has stopped improving (Keras's
// EarlyStopping callback, Ray Tune's TrialPlateauStopper in spirit), judged on the trial alone.
//
// The trial's values at its steps <= `step` are walked in step order, keeping the best value so
// far; the first value sets it. A later value is an improvement when it is better than the best by
// more than min_delta (for minimize: value < best - min_delta), and then becomes the best. The
// trial is stopped at `step` when its last `patience` reports (the one at `step` included) were
// all not improvements, and step >= n_warmup_steps. A non-finite value (NaN, +-inf) is the worst
// value: never an improvement, and any finite value improves on a non-finite first one.
// Other trials of the study do not matter. The study's first direction is used.
//
// Thread-safe: constant after construction.
#ifndef TUNER_SEARCH_SCHEDULERS_PATIENCE_H_
#define TUNER_SEARCH_SCHEDULERS_PATIENCE_H_

#include <cstdint>

#include "search/history.h"
#include "search/schedulers/scheduler.h"
#include "trials/frozen_trial.h"

namespace tuner {

struct PatienceOptions {
  // REQUIRED: how many consecutive reports without improvement stop the trial. Must be >= 1.
  // Default: 0 (unset, an error).
  int patience = 0;
  // The least change of the value that counts as an improvement, in the unit of the reported
  // values (strictly more than this is needed). Must be >= 0 and finite. Default: 0.
  double min_delta = 0.0;
  // No stopping at steps below this one (reports before it still count). Must be >= 0.
  // Default: 0.
  int64_t n_warmup_steps = 0;
};

class PatienceStopping final : public Scheduler {
 public:
  // Throws Error(kInvalidArgument) naming the option ("patience.patience: ...").
  explicit PatienceStopping(const PatienceOptions& options);

  Decision on_report(const FrozenTrial& trial, int64_t step, const History& history) const override;
  // The same; where the walk over the trial's values stands is kept in `memo`, so a report costs
  // the same at any step (the trial's values are walked once).
  Decision on_report_memoized(const FrozenTrial& trial, int64_t step, const History& history,
                              ReportMemo& memo) const override;

  const PatienceOptions& options() const { return options_; }

 private:
  // Constant after construction.
  PatienceOptions options_;
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SCHEDULERS_PATIENCE_H_
