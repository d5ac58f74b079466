// StudyView: a study's trials arranged for drawing (ordered, ranked, params described), built
// once per report. Internal to report/.
//
// Thread safety: immutable after make_study_view(); it borrows the input, which must outlive it.
#ifndef TUNER_REPORT_STUDY_VIEW_H_
#define TUNER_REPORT_STUDY_VIEW_H_

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "storage/storage.h"
#include "trials/frozen_trial.h"

namespace tuner::report {

// How one parameter is laid along an axis.
struct ParamAxis {
  enum class Kind { kLinear, kLog, kCategorical };
  std::string name;
  size_t index = 0;  // in name order; plot ids use it
  Kind kind = Kind::kLinear;
  double low = 0.0, high = 0.0;         // numeric: the distributions' bounds and values seen
  std::vector<std::string> categories;  // categorical: readable choices, in choice order
  std::map<std::string, size_t> category_index;

  // The trial's value on this axis (the number, or the category's index), or nullopt when the
  // trial does not have the parameter.
  std::optional<double> position(const FrozenTrial& trial) const;
};

struct StudyView {
  const StudyRecord* study = nullptr;
  size_t n_objectives = 1;
  std::vector<std::string> objective_names;  // the study's metric names, or "value"/"objective K"
  std::vector<const FrozenTrial*> trials;    // every trial, by number
  // COMPLETE trials with one finite value per objective, by number.
  std::vector<const FrozenTrial*> complete;
  // Constrained optimization (trials/constraints.h): whether any trial has constraint values,
  // and, per `complete` trial, whether it is feasible (every value <= 0; all true otherwise).
  bool constrained = false;
  // Whether any trial records the sampler it came from (trials/trial_origin.h).
  bool samplers = false;
  std::vector<bool> feasible;
  size_t n_feasible = 0;
  // Per objective: indices into `complete`, best first (ties by number), the feasible trials
  // before the infeasible ones: ranked[k][0] is the best feasible trial when there is one.
  std::vector<std::vector<size_t>> ranked;
  // The loss vector of each `complete` trial (its values, maximized objectives negated: smaller
  // is better in every objective, as search/pareto.h takes them): complete[i]'s at
  // losses[i * n_objectives, (i + 1) * n_objectives).
  std::vector<double> losses;
  // Indices into `complete` of the Pareto-optimal feasible trials (several objectives only), by
  // number: search/pareto.h's pareto_front() of the feasible trials, the same front as
  // pareto_front_trials() (`tuner best`).
  std::vector<size_t> pareto;
  std::vector<ParamAxis> params;  // every param any trial has, by name
  // The step metrics of trials[i] (trials/step_metrics.h), nullptr when it has none, and, for
  // each metric name any trial reported, the indices into `trials` of those that did, ascending.
  std::vector<const std::vector<StepMetrics>*> steps;
  std::map<std::string, std::vector<size_t>, std::less<>> step_metric_trials;

  // True when `a` is a better value than `b` for objective k.
  bool better(size_t k, double a, double b) const;
  // The text of an objective for axis labels: "value (minimize)".
  std::string objective_label(size_t k) const;
};

// REQUIRES: study.directions is not empty.
StudyView make_study_view(const StudyRecord& study, const std::vector<FrozenTrial>& trials);
// With the trials' step metrics, by trial id (Storage::get_step_metrics), borrowed too.
StudyView make_study_view(const StudyRecord& study, const std::vector<FrozenTrial>& trials,
                          const std::map<int64_t, std::vector<StepMetrics>>& step_metrics);

// The step a PRUNED trial's scheduler stopped it at (trials/system_attrs.h,
// kStoppedAtStepAttr); nullopt for a trial without it (not pruned by a scheduler, or stored by
// Optuna).
std::optional<int64_t> stopped_at_step(const FrozenTrial& trial);

}  // namespace tuner::report

#endif  // TUNER_REPORT_STUDY_VIEW_H_
