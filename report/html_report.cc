#include "report/html_report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <set>
#include <variant>

#include "report/hypervolume_series.h"
#include "report/plots.h"
#include "report/study_view.h"
#include "report/subsample.h"
#include "report/svg_plot.h"
#include "trials/constraints.h"
#include "trials/trial_origin.h"

namespace tuner::report {

namespace {

constexpr size_t kMinSlicePoints = 300;
constexpr size_t kSummaryParetoRows = 10;
// Pair plots of the Pareto section: all pairs up to 5 objectives.
constexpr size_t kMaxParetoPairs = 10;
constexpr size_t kTablePageRows = 50;

constexpr char kStyle[] = R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
  margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:16px 24px}
header h1{margin:0;font-size:22px;font-weight:600}
header .sub{color:#b8c0cc;font-size:13px}
nav{padding:8px 24px;background:#e9ecf1;position:sticky;top:0;z-index:1}
nav a{margin-right:14px;color:#2b4c7e;text-decoration:none}
main{padding:8px 24px 40px}
section{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:12px 18px;margin:14px 0;
  overflow-x:auto}
h2{font-size:18px;margin:4px 0 10px}
h3{font-size:15px;margin:12px 0 6px}
.note,.empty{color:#5b6472;font-size:13px}
.empty{font-style:italic}
.warning{background:#fff4e0;border-left:4px solid #e0a030;padding:8px 12px}
table{border-collapse:collapse;font-size:13px}
th,td{border-bottom:1px solid #e3e6ea;padding:3px 8px;text-align:left;white-space:nowrap}
th{background:#f0f2f5}
#trials-table th{cursor:pointer}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.kv th{background:none;font-weight:600;color:#5b6472}
.state{display:inline-block;border-radius:10px;padding:1px 9px;margin:0 6px 4px 0;font-size:12px;
  background:#e9ecf1}
.state.COMPLETE{background:#d8f0dd}.state.PRUNED{background:#fde6cc}.state.FAIL{background:#f9d3d3}
.state.RUNNING{background:#d6e6fb}.state.WAITING{background:#ece0f7}
.state.infeasible{background:#fff;border:1px dashed #b03a2e;color:#b03a2e}
#trials-table tr.infeasible td{color:#8a6d6a;background:#fbf3f2}
.slices{display:flex;flex-wrap:wrap;gap:8px}
svg.plot{background:#fff;max-width:none}
svg.plot text{font-size:11px;fill:#3c4452}
svg.plot .label{font-size:12px;fill:#1d2330}
svg.plot .axis{stroke:#8a93a0}
svg.plot .grid{stroke:#eef0f3}
svg.plot .band{fill:#f3f5f8}
svg.plot .pt{fill:#3e6fb0;fill-opacity:.55}
svg.plot .pt.best{fill:#d62d20;fill-opacity:1;stroke:#fff}
svg.plot .pt.front{fill:#d62d20;fill-opacity:.9}
svg.plot .pt.infeasible{fill:#fff;fill-opacity:1;stroke:#b03a2e;stroke-width:1.2}
svg.plot .pt.failed{fill:#b03a2e;fill-opacity:.9}
svg.plot .pt.pruned{fill:#e07b00;fill-opacity:.8}
svg.plot .pick{fill:none;stroke:#1d2330;stroke-width:2}
svg.plot .best-line{fill:none;stroke:#d62d20;stroke-width:2}
svg.plot .curve{fill:none;stroke-width:1.2;stroke-opacity:.7}
svg.plot .curve.complete{stroke:#3e6fb0}
svg.plot .curve.pruned{stroke:#e07b00;stroke-dasharray:4 3}
svg.plot .curve.other{stroke:#9aa1ab}
svg.plot .prune-mark{stroke:#c0392b;stroke-width:1.6;fill:none}
svg.plot .pc-line{fill:none;stroke-width:1;stroke-opacity:.45}
svg.plot .pc-line.best{stroke-width:3;stroke-opacity:1}
svg.plot .pc-line:hover{stroke-width:3;stroke-opacity:1}
svg.plot .bar{fill:#3e6fb0}
svg.plot .legend line{stroke-width:3}
.lg-pt{stroke:#3e6fb0}.lg-best,.lg-front{stroke:#d62d20}.lg-complete{stroke:#3e6fb0}
.lg-pruned{stroke:#e07b00;stroke-dasharray:4 3}.lg-other{stroke:#9aa1ab}
.lg-infeasible{stroke:#b03a2e;stroke-dasharray:2 2}.lg-pick{stroke:#1d2330}
.lg-failed{stroke:#b03a2e}.lg-pruned-pt{stroke:#e07b00}
.pager button{margin-right:6px}
.curve-choice{display:flex;flex-wrap:wrap;align-items:center;gap:2px 4px}
.curve-choice>label{margin-right:10px;cursor:pointer}
.curve-choice>input:checked+label{font-weight:600}
.curve-choice>.curve-panel{order:1;flex-basis:100%;display:none}
.curve-choice>input:checked+label+.curve-panel{display:block}
)css";

// Pages and sorts the trials table, counts each plot's marks, and says it ran: the browser test
// reads data-ok and data-marks.
constexpr char kScript[] = R"js(
(function () {
  var body = document.body;
  window.addEventListener('error', function (e) {
    body.setAttribute('data-js-error', String(e.message));
  });
  try {
    var table = document.getElementById('trials-table');
    if (table) {
      var tbody = table.tBodies[0];
      var rows = Array.prototype.slice.call(tbody.rows);
      var pageSize = Number(table.getAttribute('data-page-rows')) || 50;
      var page = 0;
      var info = document.getElementById('trials-page');
      var show = function () {
        var pages = Math.max(1, Math.ceil(rows.length / pageSize));
        page = Math.min(Math.max(page, 0), pages - 1);
        rows.forEach(function (r, i) {
          r.style.display = i >= page * pageSize && i < (page + 1) * pageSize ? '' : 'none';
        });
        info.textContent = 'page ' + (page + 1) + ' of ' + pages;
      };
      var key = function (cell) {
        var v = cell.getAttribute('data-v');
        if (v === null) return cell.textContent;
        return v === '' ? Infinity : parseFloat(v);
      };
      document.getElementById('trials-prev').onclick = function () { page--; show(); };
      document.getElementById('trials-next').onclick = function () { page++; show(); };
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
        var ascending = true;
        th.title = 'sort';
        th.onclick = function () {
          rows.sort(function (a, b) {
            var x = key(a.cells[col]), y = key(b.cells[col]);
            return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
          });
          ascending = !ascending;
          rows.forEach(function (r) { tbody.appendChild(r); });
          page = 0;
          show();
        };
      });
      show();
    }
    Array.prototype.forEach.call(document.querySelectorAll('svg.plot'), function (svg) {
      svg.setAttribute('data-marks', String(svg.querySelectorAll('.marks > *').length));
    });
    body.setAttribute('data-ok', '1');
  } catch (e) {
    body.setAttribute('data-js-error', String(e));
    throw e;
  }
})();
)js";

// After a PRUNED trial's state: " at step N" when its scheduler stopped it there (the step of
// the rung, for the ASHA family); empty otherwise.
std::string stopped_text(const FrozenTrial& t) {
  const std::optional<int64_t> step = stopped_at_step(t);
  if (!step) return "";
  return " <span class=\"stopped\" title=\"stopped by the scheduler at step " +
         std::to_string(*step) + "\">at step " + std::to_string(*step) + "</span>";
}

std::string format_time(TimePoint t) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%d %H:%M:%S", &utc);
  return buffer;
}

// Seconds from start to completion, or nullopt when either is missing.
std::optional<double> duration_s(const FrozenTrial& t) {
  if (!t.datetime_start || !t.datetime_complete) return std::nullopt;
  return std::chrono::duration<double>(*t.datetime_complete - *t.datetime_start).count();
}

// A trial's constraint values for people: "constraints: 0.5, -1.2".
std::string constraints_text(const FrozenTrial& t) {
  std::string text;
  for (const ConstraintValue& c : constraints_of(t)) {
    text += (text.empty() ? "constraints: " : ", ") + format_number(c.value);
  }
  return text;
}

// "-objK" for a multi-objective study, nothing for a single objective.
std::string objective_suffix(const StudyView& view, size_t k) {
  return view.n_objectives > 1 ? "-obj" + std::to_string(k) : "";
}

class Page {
 public:
  Page(const ReportInput& input, const StudyView& view) : in_(input), view_(view) {
    for (size_t k = 0; k < view.n_objectives; ++k) {
      importances_.push_back(compute_importances(input.trials, k, input.options.importance));
    }
  }

  std::string render() {
    const std::string name = escape_html(in_.study.name);
    out_.reserve(1 << 20);
    out_ +=
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<title>Study " +
        name + " - tuner report</title><style>";
    out_ += kStyle;
    out_ += "</style></head><body data-ok=\"0\"><header><h1>Study " + name +
            "</h1><div class=\"sub\">tuner report";
    if (!in_.generated_at.empty()) out_ += ", generated " + escape_html(in_.generated_at);
    out_ +=
        "</div></header><nav><a href=\"#summary\">Summary</a><a href=\"#history-section\">"
        "History</a><a href=\"#intermediate-section\">Learning curves</a>"
        "<a href=\"#parallel-section\">Parallel coordinates</a><a href=\"#slice-section\">"
        "Slices</a><a href=\"#importance-section\">Importances</a>";
    if (view_.n_objectives > 1) out_ += "<a href=\"#pareto-section\">Pareto front</a>";
    out_ += "<a href=\"#trials-section\">Trials</a></nav><main>";
    summary();
    history();
    intermediate();
    parallel();
    slices();
    importance();
    if (view_.n_objectives > 1) pareto();
    trials_table();
    out_ += "</main><script>";
    out_ += kScript;
    out_ += "</script></body></html>\n";
    return std::move(out_);
  }

 private:
  void open_section(const std::string& id, const std::string& title) {
    out_ += "<section id=\"" + id + "\"><h2>" + title + "</h2>";
  }
  void close_section() { out_ += "</section>"; }

  // "trial 12" with its value(s).
  std::string values_text(const FrozenTrial& t) const {
    std::string text;
    for (size_t k = 0; k < t.values.size(); ++k) {
      if (k) text += ", ";
      text += format_number(t.values[k]);
    }
    return text;
  }

  void params_rows(const FrozenTrial& t) {
    for (const auto& [param, value] : t.params) {
      out_ += "<tr><th>" + escape_html(param) + "</th><td>" + escape_html(to_string(value)) +
              "</td></tr>";
    }
  }

  void summary() {
    open_section("summary", "Summary");
    std::map<TrialState, size_t> counts;
    for (const FrozenTrial* t : view_.trials) ++counts[t->state];
    out_ += "<table class=\"kv\"><tr><th>Study</th><td>" + escape_html(in_.study.name) +
            "</td></tr><tr><th>Direction" + std::string(view_.n_objectives > 1 ? "s" : "") +
            "</th><td>";
    for (size_t k = 0; k < view_.n_objectives; ++k) {
      if (k) out_ += ", ";
      out_ += escape_html(view_.objective_label(k));
    }
    out_ += "</td></tr><tr><th>Trials</th><td id=\"trial-count\">" +
            std::to_string(view_.trials.size()) + "</td></tr></table><p id=\"state-counts\">";
    for (TrialState s : {TrialState::kComplete, TrialState::kPruned, TrialState::kFail,
                         TrialState::kRunning, TrialState::kWaiting}) {
      std::string state(to_string(s));
      out_ += "<span class=\"state " + state + "\">" + state + " " + std::to_string(counts[s]) +
              "</span>";
    }
    if (view_.constrained) {
      out_ += "<span class=\"state infeasible\" id=\"infeasible-count\">infeasible " +
              std::to_string(view_.complete.size() - view_.n_feasible) + " of COMPLETE</span>";
    }
    out_ += "</p>";
    if (view_.complete.empty()) {
      out_ +=
          "<p class=\"warning\" id=\"no-complete\">No trial is COMPLETE yet: there is no best "
          "trial, and the history, parallel-coordinates, slice and importance plots have "
          "nothing to show. The trials table below lists every trial.</p>";
    } else if (view_.n_feasible == 0) {
      out_ +=
          "<p class=\"warning\" id=\"no-feasible\">No COMPLETE trial is feasible yet: each "
          "has a constraint value &gt; 0, so there is no best trial. The trials table marks "
          "them, with their constraint values.</p>";
    } else if (view_.n_objectives == 1) {
      const FrozenTrial& best = *view_.complete[view_.ranked[0][0]];
      out_ += "<h3>Best trial</h3><table class=\"kv\" id=\"best-trial\"><tr><th>Number</th><td>" +
              std::to_string(best.number) + "</td></tr><tr><th>" +
              escape_html(view_.objective_names[0]) + "</th><td>" + values_text(best) +
              "</td></tr>";
      if (auto d = duration_s(best)) {
        out_ += "<tr><th>Duration</th><td>" + format_number(*d) + " s</td></tr>";
      }
      if (has_constraints(best)) {
        out_ += "<tr><th>Constraints</th><td>" + escape_html(constraints_text(best)) +
                " (feasible)</td></tr>";
      }
      params_rows(best);
      out_ += "</table>";
    } else {
      out_ += "<h3>Pareto front</h3><p>" + std::to_string(view_.pareto.size()) +
              std::string(view_.constrained ? " feasible" : "") +
              " trial(s) are Pareto-optimal: no other " +
              std::string(view_.constrained ? "feasible " : "") +
              "COMPLETE trial is at least as good in every objective and better in one.";
      if (view_.pareto.size() > kSummaryParetoRows) {
        out_ += " The first " + std::to_string(kSummaryParetoRows) + " by number:";
      }
      out_ += "</p><table id=\"best-trials\"><thead><tr><th>Number</th>";
      for (size_t k = 0; k < view_.n_objectives; ++k) {
        out_ += "<th>" + escape_html(view_.objective_names[k]) + "</th>";
      }
      if (view_.constrained) out_ += "<th>Constraints (all &lt;= 0: feasible)</th>";
      out_ += "<th>Params</th></tr></thead><tbody>";
      for (size_t r = 0; r < std::min(kSummaryParetoRows, view_.pareto.size()); ++r) {
        const FrozenTrial& t = *view_.complete[view_.pareto[r]];
        out_ += "<tr><td>" + std::to_string(t.number) + "</td>";
        for (double v : t.values) out_ += "<td class=\"num\">" + format_number(v) + "</td>";
        if (view_.constrained) {
          std::string values;
          for (const ConstraintValue& c : constraints_of(t)) {
            values += (values.empty() ? "" : ", ") + format_number(c.value);
          }
          out_ += "<td>" + escape_html(values) + "</td>";
        }
        std::string params;
        for (const auto& [param, value] : t.params) {
          if (!params.empty()) params += ", ";
          params += param + "=" + to_string(value);
        }
        out_ += "<td>" + escape_html(params) + "</td></tr>";
      }
      out_ += "</tbody></table>";
    }
    if (in_.export_pick) export_pick();
    if (!in_.study.user_attrs.empty()) {
      out_ += "<h3>Study attributes</h3><table class=\"kv\">";
      for (const auto& [key, json] : in_.study.user_attrs) {
        std::string value = json.size() > 200 ? json.substr(0, 199) + "…" : json;
        out_ += "<tr><th>" + escape_html(key) + "</th><td>" + escape_html(value) + "</td></tr>";
      }
      out_ += "</table>";
    }
    close_section();
  }

  void history() {
    open_section("history-section", "Optimization history");
    for (size_t k = 0; k < view_.n_objectives; ++k) {
      if (view_.n_objectives > 1) out_ += "<h3>" + escape_html(view_.objective_label(k)) + "</h3>";
      draw_history(out_, view_, k, "history" + objective_suffix(view_, k), in_.options);
    }
    close_section();
  }

  void intermediate() {
    open_section("intermediate-section", "Learning curves");
    // The step metrics offered: those the most trials reported, by name. With one objective, the
    // intermediate values are that metric's.
    std::vector<std::pair<size_t, std::string>> reported;  // (trials, name)
    for (const auto& [name, trials] : view_.step_metric_trials) {
      if (view_.n_objectives == 1 && name == view_.objective_names[0]) continue;
      reported.emplace_back(trials.size(), name);
    }
    if (reported.empty()) {
      draw_intermediate(out_, view_, in_.options);
      close_section();
      return;
    }
    std::stable_sort(reported.begin(), reported.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<std::string> offered, left_out;
    for (const auto& [trials, name] : reported) {
      (offered.size() < in_.options.max_step_metrics ? offered : left_out).push_back(name);
    }
    std::sort(offered.begin(), offered.end());
    std::sort(left_out.begin(), left_out.end());
    out_ += "<p class=\"note\">Each trial's values per step of the metric chosen: ";
    out_ += view_.n_objectives == 1 ? "the objective's (its intermediate values)"
                                    : "the intermediate values";
    out_ += " or another metric its job reported.";
    if (!left_out.empty()) {
      out_ += "</p><p class=\"note\" id=\"step-metrics-limited\">The trials reported " +
              std::to_string(view_.step_metric_trials.size()) +
              " metrics per step; offered here: the " + std::to_string(offered.size()) +
              " reported by the most trials. Left out: ";
      constexpr size_t kNamed = 20;
      for (size_t i = 0; i < left_out.size() && i < kNamed; ++i) {
        out_ += (i ? ", " : "") + escape_html(left_out[i]);
      }
      if (left_out.size() > kNamed) {
        out_ += " and " + std::to_string(left_out.size() - kNamed) + " more";
      }
      out_ += ".";
    }
    out_ += "</p><div class=\"curve-choice\" id=\"curve-choice\"><span>Metric:</span>";
    const bool has_intermediate =
        std::any_of(view_.trials.begin(), view_.trials.end(),
                    [](const FrozenTrial* t) { return !t->intermediate_values.empty(); });
    auto choice = [&](const std::string& id, const std::string& label, const std::string& metric,
                      bool checked) {
      out_ += "<input type=\"radio\" name=\"curve-metric\" id=\"" + id + "-choice\"" +
              (checked ? " checked" : "") + "><label for=\"" + id + "-choice\">" +
              escape_html(label) + "</label><div class=\"curve-panel\" id=\"" + id +
              "-panel\" data-metric=\"" + escape_html(metric) + "\">";
    };
    choice(
        "intermediate",
        view_.n_objectives == 1 ? view_.objective_names[0] + " (objective)" : "intermediate values",
        view_.n_objectives == 1 ? view_.objective_names[0] : "", has_intermediate);
    draw_intermediate(out_, view_, in_.options);
    out_ += "</div>";
    for (size_t n = 0; n < offered.size(); ++n) {
      const std::string id = "step-metric-" + std::to_string(n);
      choice(id, offered[n], offered[n], !has_intermediate && n == 0);
      draw_step_metric(out_, view_, offered[n], id, in_.options);
      out_ += "</div>";
    }
    out_ += "</div>";
    close_section();
  }

  void parallel() {
    open_section("parallel-section", "Parallel coordinates");
    // Axes in order of importance for the first objective, the most telling next to it.
    std::map<std::string, size_t> index;
    for (const ParamAxis& p : view_.params) index[p.name] = p.index;
    std::vector<size_t> order;
    for (const ParamImportance& p : importances_[0].params) {
      if (auto it = index.find(p.name); it != index.end()) order.push_back(it->second);
    }
    for (const ParamAxis& p : view_.params) {
      if (std::find(order.begin(), order.end(), p.index) == order.end()) order.push_back(p.index);
    }
    draw_parallel(out_, view_, order, in_.options);
    close_section();
  }

  void slices() {
    open_section("slice-section", "Slices");
    if (view_.params.empty()) {
      out_ += "<p class=\"empty\">The trials have no parameters.</p>";
      close_section();
      return;
    }
    const size_t plots = view_.params.size() * view_.n_objectives;
    const size_t per_plot = std::clamp(in_.options.max_slice_points / plots, kMinSlicePoints,
                                       std::max(kMinSlicePoints, in_.options.max_points));
    out_ +=
        "<p class=\"note\">Each COMPLETE trial's value against each parameter; log-scale "
        "parameters on a log axis, categorical ones in bands (points spread sideways "
        "within their band). Colour: trial number (dark = early).";
    if (per_plot < view_.complete.size()) {
      out_ += " At most " + std::to_string(per_plot) +
              " points per plot: the best trials and an even spread of the rest.";
    }
    out_ += "</p>";
    for (size_t k = 0; k < view_.n_objectives; ++k) {
      if (view_.n_objectives > 1) out_ += "<h3>" + escape_html(view_.objective_label(k)) + "</h3>";
      out_ += "<div class=\"slices\">";
      for (const ParamAxis& p : view_.params) {
        draw_slice(out_, view_, p, k,
                   "slice-" + std::to_string(p.index) + objective_suffix(view_, k), per_plot,
                   in_.options);
      }
      out_ += "</div>";
    }
    close_section();
  }

  void importance() {
    open_section("importance-section", "Parameter importances");
    const ImportanceOptions& o = in_.options.importance;
    out_ += "<p class=\"note\">fANOVA: a random forest (" + std::to_string(o.n_trees) +
            " trees) is fit on the COMPLETE trials; a parameter's importance is the share of "
            "the variance of the objective that it explains on its own, normalized to sum to 1 "
            "(as Optuna's default FanovaImportanceEvaluator).</p>";
    for (size_t k = 0; k < view_.n_objectives; ++k) {
      const Importances& imp = importances_[k];
      if (view_.n_objectives > 1) out_ += "<h3>" + escape_html(view_.objective_label(k)) + "</h3>";
      draw_importance(out_, imp, "importance" + objective_suffix(view_, k));
      if (imp.params.empty()) continue;
      out_ += "<p class=\"note\">Fit on " + std::to_string(imp.n_trials) + " COMPLETE trials";
      if (static_cast<size_t>(imp.n_trials) < view_.complete.size()) {
        out_ += " (an even spread of the " + std::to_string(view_.complete.size()) + ")";
      }
      out_ += ".</p>";
      if (imp.degenerate) {
        out_ +=
            "<p class=\"warning\">These importances mean nothing: fewer than 2 COMPLETE "
            "trials, an objective that did not vary, or only interactions between "
            "parameters. Every parameter got an equal share.</p>";
      }
    }
    close_section();
  }

  // One line: the trial the sweep's export rule picks, or why it picks none.
  void export_pick() {
    const ExportPick& pick = *in_.export_pick;
    out_ += "<p id=\"export-pick\">The sweep's export rule (" + escape_html(pick.rule) + ") ";
    if (pick.trial) {
      out_ += "picks trial " + std::to_string(*pick.trial) +
              (view_.n_objectives > 1 ? ", ringed in the Pareto plots." : ".");
    } else {
      out_ += "picks no trial: " + escape_html(pick.why_none);
    }
    out_ += "</p>";
  }

  void pareto() {
    open_section("pareto-section", "Pareto front");
    const size_t m = view_.n_objectives;
    const size_t pairs = m * (m - 1) / 2;
    out_ += std::string(m > 2 ? "<p class=\"note\">Each pair of objectives, e"
                              : "<p class=\"note\">E") +
            "very COMPLETE trial a dot: the Pareto-optimal ones large and red";
    if (m > 2) {
      out_ += " (optimal over all " + std::to_string(m) +
              " objectives, so a front member may look dominated in one pair)";
    }
    if (view_.constrained) out_ += ", infeasible ones hollow (never on the front)";
    out_ += ".";
    if (pairs > kMaxParetoPairs) {
      out_ += " " + std::to_string(pairs) + " pairs: the first " + std::to_string(kMaxParetoPairs) +
              " are drawn (objective 0 against each other, then 1 against the rest, ...); the "
              "trials table below has every value.";
    }
    if (view_.complete.size() > in_.options.max_points) {
      out_ += " At most " + std::to_string(in_.options.max_points) +
              " points per plot: the front and an even spread of the rest.";
    }
    out_ += "</p><div class=\"slices\">";
    size_t drawn = 0;
    for (size_t a = 0; a < m && drawn < kMaxParetoPairs; ++a) {
      for (size_t b = a + 1; b < m && drawn < kMaxParetoPairs; ++b, ++drawn) {
        draw_pareto(out_, view_, a, b, in_.options,
                    in_.export_pick ? in_.export_pick->trial : std::nullopt);
      }
    }
    out_ += "</div><h3>Hypervolume over trials</h3>";
    draw_hypervolume(out_, view_, hypervolume_series(view_, in_.options.max_hypervolume_steps),
                     in_.options);
    close_section();
  }

  void trials_table() {
    open_section("trials-section", "Trials");
    const auto& trials = view_.trials;
    const size_t cap = in_.options.max_table_rows;
    std::vector<size_t> keep;
    if (trials.size() > cap && !view_.ranked.empty()) {
      std::map<const FrozenTrial*, size_t> index;
      for (size_t i = 0; i < trials.size(); ++i) index[trials[i]] = i;
      size_t quota = static_cast<size_t>(static_cast<double>(cap) * in_.options.best_share);
      for (size_t r = 0; r < std::min(quota, view_.ranked[0].size()); ++r) {
        keep.push_back(index[view_.complete[view_.ranked[0][r]]]);
      }
    }
    std::vector<size_t> rows = spread_sample(trials.size(), cap, keep);
    if (rows.size() < trials.size()) {
      out_ += "<p class=\"note\" id=\"trials-limited\">Showing " + std::to_string(rows.size()) +
              " of " + std::to_string(trials.size()) + " trials: the " +
              std::to_string(keep.size()) +
              " best and an even spread of the rest, by number. The study's storage holds "
              "them all.</p>";
    }
    out_ +=
        "<div class=\"pager\"><button id=\"trials-prev\" type=\"button\">previous</button>"
        "<button id=\"trials-next\" type=\"button\">next</button><span id=\"trials-page\">"
        "</span> (click a column to sort)</div><table id=\"trials-table\" data-page-rows=\"" +
        std::to_string(kTablePageRows) + "\"><thead><tr><th>Number</th><th>State</th>";
    for (size_t k = 0; k < view_.n_objectives; ++k) {
      out_ += "<th>" + escape_html(view_.objective_names[k]) + "</th>";
    }
    if (view_.constrained) out_ += "<th>Feasible</th>";
    const bool fronted = view_.n_objectives > 1;
    std::set<const FrozenTrial*> on_front;
    for (size_t i : view_.pareto) on_front.insert(view_.complete[i]);
    if (fronted) out_ += "<th>Pareto front</th>";
    out_ += "<th>Duration (s)</th><th>Started (UTC)</th>";
    if (view_.samplers) out_ += "<th>Sampler</th>";
    for (const ParamAxis& p : view_.params) out_ += "<th>" + escape_html(p.name) + "</th>";
    out_ += "</tr></thead><tbody>";
    for (size_t r : rows) {
      const FrozenTrial& t = *trials[r];
      std::string state(to_string(t.state));
      // Constrained: a COMPLETE or PRUNED trial is feasible or not; its values in the tooltip.
      std::string feasible;
      if (view_.constrained &&
          (t.state == TrialState::kComplete || t.state == TrialState::kPruned)) {
        feasible = is_feasible(t) ? "yes" : "no";
      }
      out_ += std::string(feasible == "no" ? "<tr class=\"infeasible\">" : "<tr>") +
              "<td class=\"num\" data-v=\"" + std::to_string(t.number) + "\">" +
              std::to_string(t.number) + "</td><td><span class=\"state " + state + "\">" + state +
              "</span>" + stopped_text(t) + "</td>";
      for (size_t k = 0; k < view_.n_objectives; ++k) {
        // A PRUNED trial holds its last intermediate value; only COMPLETE values are results.
        bool has = t.state == TrialState::kComplete && k < t.values.size();
        std::string v = has ? format_number(t.values[k]) : "";
        out_ += "<td class=\"num\" data-v=\"" + v + "\">" + v + "</td>";
      }
      if (view_.constrained) {
        const std::string values = has_constraints(t) ? constraints_text(t) : "";
        out_ += "<td title=\"" + escape_html(values.empty() ? "no constraint values" : values) +
                "\">" + feasible + "</td>";
      }
      if (fronted) out_ += on_front.contains(&t) ? "<td class=\"front\">yes</td>" : "<td></td>";
      auto d = duration_s(t);
      std::string seconds = d ? format_number(*d) : "";
      out_ += "<td class=\"num\" data-v=\"" + seconds + "\">" + seconds + "</td><td>" +
              (t.datetime_start ? format_time(*t.datetime_start) : "") + "</td>";
      if (view_.samplers) out_ += "<td>" + escape_html(sampler_of(t)) + "</td>";
      for (const ParamAxis& p : view_.params) {
        auto it = t.params.find(p.name);
        if (it == t.params.end()) {
          out_ += p.kind == ParamAxis::Kind::kCategorical ? "<td></td>"
                                                          : "<td class=\"num\" data-v=\"\"></td>";
        } else if (p.kind == ParamAxis::Kind::kCategorical) {
          out_ += "<td>" + escape_html(to_string(it->second)) + "</td>";
        } else {
          // Sorted by the exact value, shown short; the exact one is the cell's tooltip.
          std::string exact = escape_html(to_string(it->second));
          out_ += "<td class=\"num\" data-v=\"" + exact + "\" title=\"" + exact + "\">" +
                  (std::holds_alternative<double>(it->second) ? format_number(as_double(it->second))
                                                              : exact) +
                  "</td>";
        }
      }
      out_ += "</tr>";
    }
    out_ += "</tbody></table>";
    close_section();
  }

  // Constant after construction.
  const ReportInput& in_;
  const StudyView& view_;
  std::vector<Importances> importances_;  // per objective

  std::string out_;
};

}  // namespace

std::string render_report(const ReportInput& input) {
  StudyView view = make_study_view(input.study, input.trials, input.step_metrics);
  return Page(input, view).render();
}

}  // namespace tuner::report
