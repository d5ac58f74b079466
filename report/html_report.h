// The study report: one self-contained HTML file that explains a study (docs/report.md).
//
// Sections, each with its plots as inline SVG (`<svg class="plot" id=...>`, data in
// `<g class="marks">`; ids below are for a single objective, a multi-objective study gets one
// plot per objective with "-objK" appended):
// - summary: name, directions, trial counts by state, the best trial and its params (the Pareto
//   front for several objectives), or a note that no trial is COMPLETE;
// - optimization history (id "history"): each COMPLETE trial's value and the best so far; FAIL
//   and PRUNED trials marked along the bottom ("pt failed", "pt pruned"), why in their titles;
// - learning curves: the intermediate values ("intermediate"), PRUNED trials dashed and marked,
//   and, when trials reported step metrics, one plot per metric ("step-metric-N", N its index
//   among the metrics offered, by name), the reader choosing one with radio buttons (CSS only);
// - parallel coordinates ("parallel"): one line per COMPLETE trial across params and objectives;
// - slices ("slice-N", N the index of the param in name order): objective against each param,
//   on a log axis for log params, in bands for categorical ones;
// - importances ("importance"): fANOVA (report/importance.h);
// - Pareto front (two or more objectives): a scatter plot per pair of objectives ("pareto-A-B",
//   A < B; the first 10 pairs when there are more), infeasible trials marked, and the
//   hypervolume of the feasible front over trials ("hypervolume");
// - the trials table ("trials-table"), paged by a little inline JavaScript.
// Nothing is fetched from the network: no fonts, scripts or styles outside the file. When the
// page's script has run it sets data-ok="1" on <body> (data-js-error on failure) and data-marks
// (the count of drawn marks) on every plot.
//
// Size: every plot draws a bounded number of marks (ReportOptions), chosen by an even spread
// that always keeps the best trials, so a 100,000-trial study gives a file of a few MB.
//
// Thread safety: a pure function of its input.
#ifndef TUNER_REPORT_HTML_REPORT_H_
#define TUNER_REPORT_HTML_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/importance.h"
#include "storage/storage.h"
#include "trials/frozen_trial.h"

namespace tuner::report {

struct ReportOptions {
  // Points drawn per scatter plot (history, Pareto front). Default 5,000.
  size_t max_points = 5000;
  // Points drawn by all the slice plots together (each gets its share, at least 300 and at most
  // max_points). Default 40,000.
  size_t max_slice_points = 40000;
  // Lines of the parallel-coordinates plot. Default 1,000.
  size_t max_parallel_lines = 1000;
  // Trials whose intermediate values (or one step metric's values) are drawn, and points per
  // curve. Defaults 200 and 200.
  size_t max_curves = 200;
  size_t max_curve_points = 200;
  // Step metrics offered beside the intermediate values, a plot each: those the most trials
  // reported. Default 12.
  size_t max_step_metrics = 12;
  // Counts of COMPLETE trials at which the hypervolume over trials is computed (an even spread
  // past it). Default 2,000.
  size_t max_hypervolume_steps = 2000;
  // Rows of the trials table. Default 1,000.
  size_t max_table_rows = 1000;
  // Of each capped set above, this share is kept for the best trials. Default 0.1.
  double best_share = 0.1;
  ImportanceOptions importance;
};

// The trial that the export rule of the sweep that made the study picks (what `tuner sweep`
// exported at its end, sweep/model_export.h), said in the summary and ringed in the Pareto
// plots.
struct ExportPick {
  std::string rule;          // e.g. "the highest val_accuracy with latency_ms <= 0.03"
  std::optional<int> trial;  // its number; nullopt when no trial meets the rule
  std::string why_none;      // then, the export's reason
};

struct ReportInput {
  StudyRecord study;                // name, directions and attributes
  std::vector<FrozenTrial> trials;  // every trial of the study, any state
  // The trials' step metrics by trial id (Storage::get_step_metrics). Default none.
  std::map<int64_t, std::vector<StepMetrics>> step_metrics;
  std::optional<ExportPick> export_pick;  // none: the study has no export rule
  // When the report was made, as the reader should see it ("2024-05-01 12:00 UTC"); shown in
  // the header when not empty. (Passed in so that the output depends on its input only.)
  std::string generated_at;
  ReportOptions options;
};

// The HTML text. REQUIRES: input.study.directions is not empty.
std::string render_report(const ReportInput& input);

}  // namespace tuner::report

#endif  // TUNER_REPORT_HTML_REPORT_H_
