// The plots of the study report, each drawn as inline SVG from a StudyView. Internal to report/.
//
// Each function appends one plot, or, when there is nothing to draw, a `<p class="empty">` that
// says why. What each draws, and how it caps the number of marks, is in docs/report.md.
//
// Thread safety: pure functions.
#ifndef TUNER_REPORT_PLOTS_H_
#define TUNER_REPORT_PLOTS_H_

#include <optional>
#include <string>
#include <vector>

#include "report/html_report.h"
#include "report/hypervolume_series.h"
#include "report/importance.h"
#include "report/study_view.h"

namespace tuner::report {

// Objective k of each COMPLETE trial against its number, and the best value so far.
void draw_history(std::string& out, const StudyView& view, size_t objective, const std::string& id,
                  const ReportOptions& options);

// Intermediate values against their step (id "intermediate"); PRUNED trials dashed and marked
// at their last step.
void draw_intermediate(std::string& out, const StudyView& view, const ReportOptions& options);

// The step metric `metric` against its step (view.steps), drawn as draw_intermediate draws the
// intermediate values.
void draw_step_metric(std::string& out, const StudyView& view, const std::string& metric,
                      const std::string& id, const ReportOptions& options);

// One line per COMPLETE trial through one axis per objective, then per param in `param_order`
// (indices into view.params); coloured by the first objective.
void draw_parallel(std::string& out, const StudyView& view, const std::vector<size_t>& param_order,
                   const ReportOptions& options);

// Objective k against one param, for the COMPLETE trials that have it; at most max_points.
void draw_slice(std::string& out, const StudyView& view, const ParamAxis& param, size_t objective,
                const std::string& id, size_t max_points, const ReportOptions& options);

// Horizontal bars, most important first.
void draw_importance(std::string& out, const Importances& importances, const std::string& id);

// Objectives a (x) and b (y) of every COMPLETE trial (id "pareto-A-B"): the Pareto-optimal
// trials (optimal over every objective) highlighted, infeasible ones hollow; at most max_points,
// the front first; the COMPLETE trial numbered `ringed` (the export rule's pick), if any, in a
// ring. REQUIRES: a < b < view.n_objectives.
void draw_pareto(std::string& out, const StudyView& view, size_t a, size_t b,
                 const ReportOptions& options, std::optional<int> ringed = std::nullopt);

// The hypervolume of the feasible front against the count of COMPLETE trials (id
// "hypervolume"), its reference point stated under it. REQUIRES: view.n_objectives >= 2 and
// `series` made from `view`.
void draw_hypervolume(std::string& out, const StudyView& view, const HypervolumeSeries& series,
                      const ReportOptions& options);

}  // namespace tuner::report

#endif  // TUNER_REPORT_PLOTS_H_
