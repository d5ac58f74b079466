// ScalarizedStopping: the median or percentile rule (median_stopping.h) over one number made from
// a study's several objectives.
//
// Scalarization: the weighted sum of the objective values made "larger is better",
//     s = sum_i w_i * (v_i if objective i is maximized, else -v_i),
// with weights w_i >= 0, one per objective, not all 0. A weighted sum is what a user writes when
// trading accuracy against latency ("accuracy - 0.01 * latency_ms") and a fixed function of one
// trial's own values, so the rule judges it exactly as it judges a single objective. (A Chebyshev
// scalarization needs an ideal point, which moves as trials arrive: a trial's scalar would
// change with the rest of the study.) The weights also set the objectives' relative scale: give
// accuracy in [0, 1] and latency in ms weights that make their changes comparable.
// An objective of weight 0 is ignored; a step where an objective of positive weight is NaN,
// infinite or missing has a NaN scalar, which the rule counts as the worst value.
//
// Values: each trial's objective vectors per step from History::objective_steps; without that
// view, nothing is judged (the trial continues). The rule (`rule`, a MedianStopping or a
// PercentileStopping) then runs on a study whose one maximized objective is s at every step,
// with its own options, and decides as documented there.
//
// Thread-safe: constant after construction.
#ifndef TUNER_SEARCH_SCHEDULERS_SCALARIZED_STOPPING_H_
#define TUNER_SEARCH_SCHEDULERS_SCALARIZED_STOPPING_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "search/history.h"
#include "search/schedulers/median_stopping.h"
#include "search/schedulers/scheduler.h"
#include "trials/frozen_trial.h"

namespace tuner {

class ScalarizedStopping final : public Scheduler {
 public:
  // Throws Error(kInvalidArgument) for no rule, no weights, a weight negative or not finite, or
  // all 0 ("scalarization.weights: ...").
  ScalarizedStopping(std::shared_ptr<const PercentileStopping> rule, std::vector<double> weights);

  Decision on_report(const FrozenTrial& trial, int64_t step, const History& history) const override;

  // The studies with one objective per weight.
  bool judges_objectives(size_t n_objectives) const override {
    return n_objectives == weights_.size();
  }

  // The scalar of `values` (one per direction): NaN when one of positive weight is not finite.
  // REQUIRES: values.size() == directions.size() == weights().size().
  double scalarize(std::span<const double> values,
                   std::span<const StudyDirection> directions) const;

  const std::vector<double>& weights() const { return weights_; }
  const PercentileStopping& rule() const { return *rule_; }

 private:
  // Constant after construction.
  std::shared_ptr<const PercentileStopping> rule_;
  std::vector<double> weights_;
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SCHEDULERS_SCALARIZED_STOPPING_H_
