#include "report/plots.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "report/subsample.h"
#include "report/svg_plot.h"
#include "trials/system_attrs.h"

namespace tuner::report {

namespace {

void append_circle(std::string& out, std::string_view css_class, double cx, double cy, double r,
                   std::string_view fill, std::string_view title) {
  out += "<circle class=\"";
  out += css_class;
  out += "\" cx=\"";
  append_px(out, cx);
  out += "\" cy=\"";
  append_px(out, cy);
  out += "\" r=\"";
  append_px(out, r);
  out += "\"";
  if (!fill.empty()) {  // a style, since the class's fill would win over a fill attribute
    out += " style=\"fill:";
    out += fill;
    out += "\"";
  }
  out += "><title>";
  out += title;
  out += "</title></circle>";
}

void append_empty(std::string& out, std::string_view id, std::string_view why) {
  out += "<p class=\"empty\" id=\"";
  out += escape_html(id);
  out += "-empty\">";
  out += escape_html(why);
  out += "</p>";
}

// "trial 12: 0.5321" (already escaped).
std::string point_title(const FrozenTrial& t, double value) {
  return "trial " + std::to_string(t.number) + ": " + format_number(value);
}

// A system attribute that holds a JSON string, as text; empty when absent.
std::string string_attr(const FrozenTrial& t, const char* key) {
  auto it = t.system_attrs.find(key);
  if (it == t.system_attrs.end()) return "";
  const nlohmann::json value = nlohmann::json::parse(it->second, nullptr, false);
  return value.is_string() ? value.get<std::string>() : it->second;
}

// The last line a FAIL trial's program wrote (its log tail without tuner's "[tuner]" notes).
std::string last_program_line(const FrozenTrial& t) {
  const std::string tail = string_attr(t, "log_tail");
  std::string last;
  size_t begin = 0;
  while (begin < tail.size()) {
    size_t end = tail.find('\n', begin);
    if (end == std::string::npos) end = tail.size();
    const std::string line = tail.substr(begin, end - begin);
    if (!line.empty() && !line.starts_with("[tuner]")) last = line;
    begin = end + 1;
  }
  return last;
}

// The title of a FAIL or PRUNED trial's mark in the history: why it has no value (escaped).
std::string ended_title(const FrozenTrial& t) {
  std::string title = "trial " + std::to_string(t.number) + " " + std::string(to_string(t.state));
  if (t.state == TrialState::kFail) {
    const std::string reason = string_attr(t, kFailReasonAttr);
    const std::string last = last_program_line(t);
    if (!reason.empty()) title += ": " + reason;
    if (!last.empty()) title += ": " + last;
  } else if (const std::optional<int64_t> stopped = stopped_at_step(t)) {
    title += " by its scheduler at step " + std::to_string(*stopped);
  } else if (!t.intermediate_values.empty()) {
    const auto& [step, value] = *t.intermediate_values.rbegin();
    title += " at step " + std::to_string(step) + " (last value " + format_number(value) + ")";
  }
  return escape_html(title);
}

// How many of `cap` go to the best trials.
size_t best_quota(size_t cap, const ReportOptions& options) {
  return static_cast<size_t>(static_cast<double>(cap) * std::clamp(options.best_share, 0.0, 1.0));
}

// The first `count` of `ranked`.
std::vector<size_t> head(const std::vector<size_t>& ranked, size_t count) {
  return {ranked.begin(),
          ranked.begin() + static_cast<std::ptrdiff_t>(std::min(count, ranked.size()))};
}

// The min and max of objective k over the COMPLETE trials at `indices` (all when empty).
std::pair<double, double> value_range(const StudyView& view, size_t k) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const FrozenTrial* t : view.complete) {
    lo = std::min(lo, t->values[k]);
    hi = std::max(hi, t->values[k]);
  }
  return {lo, hi};
}

// A scale for `axis` from `from_px` to `to_px`, with a little room at the ends of numbers.
Scale param_scale(const ParamAxis& axis, double from_px, double to_px) {
  switch (axis.kind) {
    case ParamAxis::Kind::kCategorical:
      return Scale::bands(axis.categories, from_px, to_px);
    case ParamAxis::Kind::kLog: {
      double pad = std::pow(axis.high / axis.low, 0.03);
      return Scale::log(axis.low / pad, axis.high * pad, from_px, to_px);
    }
    case ParamAxis::Kind::kLinear:
      break;
  }
  double pad = (axis.high - axis.low) * 0.03;
  return Scale::linear(axis.low - pad, axis.high + pad, from_px, to_px);
}

Scale value_scale(double lo, double hi, double from_px, double to_px) {
  double pad = (hi - lo) * 0.05;
  return Scale::linear(lo - pad, hi + pad, from_px, to_px);
}

}  // namespace

void draw_history(std::string& out, const StudyView& view, size_t k, const std::string& id,
                  const ReportOptions& options) {
  if (view.complete.empty()) {
    append_empty(out, id, "No trial is COMPLETE: there is no history to draw.");
    return;
  }
  const auto& complete = view.complete;
  // The feasible trials that improved on every earlier one: the best-so-far line steps at each.
  std::vector<size_t> improvements;
  for (size_t i = 0; i < complete.size(); ++i) {
    if (!view.feasible[i]) continue;
    if (improvements.empty() ||
        view.better(k, complete[i]->values[k], complete[improvements.back()]->values[k])) {
      improvements.push_back(i);
    }
  }
  const size_t quota = best_quota(options.max_points, options);
  std::vector<size_t> keep = head(view.ranked[k], quota);
  if (!improvements.empty()) {
    for (size_t i : spread_sample(improvements.size(), quota, {improvements.size() - 1})) {
      keep.push_back(improvements[i]);
    }
  }
  // A tenth of the points at most go to the FAIL and PRUNED trials.
  std::vector<const FrozenTrial*> ended;
  for (const FrozenTrial* t : view.trials) {
    if (t->state == TrialState::kFail || t->state == TrialState::kPruned) ended.push_back(t);
  }
  const size_t ended_quota = std::min(ended.size(), options.max_points / 10);
  std::vector<size_t> drawn =
      spread_sample(complete.size(), options.max_points - ended_quota, keep);

  Frame frame;
  frame.width = 760;
  frame.height = 320;
  auto [lo, hi] = value_range(view, k);
  double last_number = view.trials.back()->number;
  Scale x = Scale::linear(0, std::max(1.0, last_number), frame.x0() + 4, frame.x1() - 4);
  Scale y = value_scale(lo, hi, frame.y0() - 4, frame.y1() + 4);
  open_plot(out, id, "history", "", frame, "Optimization history of " + view.objective_names[k]);
  draw_x_axis(out, frame, x, "trial number");
  draw_y_axis(out, frame, y, view.objective_label(k));
  out += "<g class=\"marks\">";
  for (size_t i : drawn) {
    const FrozenTrial& t = *complete[i];
    // Infeasible trials (a constraint value > 0) are hollow: never the best.
    append_circle(out, view.feasible[i] ? "pt" : "pt infeasible", x(t.number), y(t.values[k]), 2.5,
                  "", (view.feasible[i] ? "" : "infeasible: ") + point_title(t, t.values[k]));
  }
  // FAIL and PRUNED trials have no value: marks along the bottom, with why in their titles.
  for (size_t i : spread_sample(ended.size(), ended_quota, {})) {
    const FrozenTrial& t = *ended[i];
    append_circle(out, t.state == TrialState::kFail ? "pt failed" : "pt pruned", x(t.number),
                  frame.y0() - 3, 2.5, "", ended_title(t));
  }
  if (!improvements.empty()) {
    // The best-so-far line: a step at each improvement (thinned evenly when there are very
    // many), and the best trial; none while no trial is feasible.
    out += "<path class=\"best-line\" d=\"";
    std::vector<size_t> steps =
        spread_sample(improvements.size(), options.max_points, {0, improvements.size() - 1});
    for (size_t s = 0; s < steps.size(); ++s) {
      const FrozenTrial& t = *complete[improvements[steps[s]]];
      out += s == 0 ? "M" : "H";
      append_px(out, x(t.number));
      out += s == 0 ? " " : "V";
      append_px(out, y(t.values[k]));
    }
    out += "H";
    append_px(out, x(last_number));
    out += "\"/>";
    const FrozenTrial& best = *complete[view.ranked[k][0]];
    append_circle(out, "pt best", x(best.number), y(best.values[k]), 5, "",
                  "best: " + point_title(best, best.values[k]));
  }
  out += "</g>";
  if (view.constrained) {
    draw_legend_entry(out, frame.x1() - 370, frame.y1() + 12, "lg-infeasible", "infeasible");
  }
  if (!ended.empty()) {
    draw_legend_entry(out, frame.x0(), frame.y1() + 12, "lg-failed", "failed (bottom)");
    draw_legend_entry(out, frame.x0() + 130, frame.y1() + 12, "lg-pruned-pt", "pruned (bottom)");
  }
  draw_legend_entry(out, frame.x1() - 250, frame.y1() + 12, "lg-pt", "objective value");
  draw_legend_entry(out, frame.x1() - 130, frame.y1() + 12, "lg-best", "best so far");
  close_plot(out);
  if (drawn.size() < complete.size()) {
    out += "<p class=\"note\">Drawn: " + std::to_string(drawn.size()) + " of " +
           std::to_string(complete.size()) +
           " COMPLETE trials (the best ones, every improvement, and an even spread of the "
           "rest); the best-so-far line uses them all.</p>";
  }
}

namespace {

// What a learning-curve plot draws: its id and words, the trials (indices into view.trials)
// that have points, and each one's (step, value) points, in step order.
struct CurveSource {
  std::string id;
  std::string title;    // the plot's
  std::string y_label;  // the value axis's
  std::string empty;    // the sentence that stands for a plot with no trial
  std::string of;       // the note's "trials with ..." / "trials that reported ..."
  std::vector<size_t> trials;
  std::function<std::vector<std::pair<double, double>>(const FrozenTrial&, size_t)> points;
};

void draw_curves(std::string& out, const StudyView& view, const CurveSource& source,
                 const ReportOptions& options) {
  const std::string& id = source.id;
  const std::vector<size_t>& with_curves = source.trials;
  if (with_curves.empty()) {
    append_empty(out, id, source.empty);
    return;
  }
  // Keep the curves of the best COMPLETE trials; spread the rest over the study.
  std::vector<size_t> keep;
  if (!view.ranked.empty()) {
    std::map<const FrozenTrial*, size_t> index;
    for (size_t i = 0; i < with_curves.size(); ++i) index[view.trials[with_curves[i]]] = i;
    for (size_t r : view.ranked[0]) {
      if (keep.size() >= best_quota(options.max_curves, options)) break;
      if (auto it = index.find(view.complete[r]); it != index.end()) keep.push_back(it->second);
    }
  }
  std::vector<size_t> drawn = spread_sample(with_curves.size(), options.max_curves, keep);

  // Per drawn curve: its points, thinned evenly (keeping the first and last step).
  std::vector<std::vector<std::pair<double, double>>> curves;
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  size_t n_pruned = 0;
  for (size_t i : drawn) {
    const FrozenTrial& t = *view.trials[with_curves[i]];
    std::vector<std::pair<double, double>> all;
    for (const auto& point : source.points(t, with_curves[i])) {
      if (std::isfinite(point.second)) all.push_back(point);
    }
    std::vector<std::pair<double, double>> points;
    if (!all.empty()) {
      for (size_t p : spread_sample(all.size(), std::max<size_t>(2, options.max_curve_points),
                                    {0, all.size() - 1})) {
        points.push_back(all[p]);
        x_lo = std::min(x_lo, all[p].first);
        x_hi = std::max(x_hi, all[p].first);
        y_lo = std::min(y_lo, all[p].second);
        y_hi = std::max(y_hi, all[p].second);
      }
    }
    n_pruned += t.state == TrialState::kPruned;
    curves.push_back(std::move(points));
  }
  if (!std::isfinite(x_lo)) {
    append_empty(out, id, "Every value is NaN or infinite.");
    return;
  }

  Frame frame;
  frame.width = 760;
  frame.height = 320;
  Scale x = Scale::linear(x_lo, x_hi, frame.x0() + 4, frame.x1() - 4);
  Scale y = value_scale(y_lo, y_hi, frame.y0() - 4, frame.y1() + 4);
  open_plot(out, id, "intermediate", "", frame, source.title);
  draw_x_axis(out, frame, x, "step");
  draw_y_axis(out, frame, y, source.y_label);
  out += "<g class=\"marks\">";
  for (size_t c = 0; c < curves.size(); ++c) {
    const FrozenTrial& t = *view.trials[with_curves[drawn[c]]];
    const auto& points = curves[c];
    if (points.empty()) continue;
    const char* state_class = t.state == TrialState::kPruned     ? "pruned"
                              : t.state == TrialState::kComplete ? "complete"
                                                                 : "other";
    out += "<path class=\"curve ";
    out += state_class;
    out += "\" d=\"";
    for (size_t p = 0; p < points.size(); ++p) {
      out += p == 0 ? "M" : "L";
      append_px(out, x(points[p].first));
      out += " ";
      append_px(out, y(points[p].second));
    }
    if (points.size() == 1) out += "h1";  // a visible dot for a single report
    out += "\"><title>trial " + std::to_string(t.number) + " (" + std::string(to_string(t.state)) +
           ")</title></path>";
    if (t.state == TrialState::kPruned) {
      // An x where the trial was stopped.
      out += "<path class=\"prune-mark\" d=\"M";
      append_px(out, x(points.back().first) - 3.5);
      out += " ";
      append_px(out, y(points.back().second) - 3.5);
      out += "l7 7m0 -7l-7 7\"><title>trial " + std::to_string(t.number) + " pruned at step " +
             format_number(points.back().first) + "</title></path>";
    }
  }
  out += "</g>";
  draw_legend_entry(out, frame.x1() - 330, frame.y1() + 12, "lg-complete", "COMPLETE");
  draw_legend_entry(out, frame.x1() - 230, frame.y1() + 12, "lg-pruned", "PRUNED (x: stopped)");
  draw_legend_entry(out, frame.x1() - 80, frame.y1() + 12, "lg-other", "other");
  close_plot(out);
  out += "<p class=\"note\">" + std::to_string(drawn.size()) + " of " +
         std::to_string(with_curves.size()) + " trials " + source.of + " drawn (" +
         std::to_string(n_pruned) + " of them PRUNED)";
  if (drawn.size() < with_curves.size()) out += ": the best COMPLETE ones and an even spread";
  out += "; at most " + std::to_string(options.max_curve_points) + " points per curve.</p>";
}

}  // namespace

void draw_intermediate(std::string& out, const StudyView& view, const ReportOptions& options) {
  CurveSource source{.id = "intermediate",
                     .title = "Intermediate values",
                     .y_label = "intermediate value",
                     .empty = "No trial reported intermediate values.",
                     .of = "with intermediate values"};
  for (size_t i = 0; i < view.trials.size(); ++i) {
    if (!view.trials[i]->intermediate_values.empty()) source.trials.push_back(i);
  }
  source.points = [](const FrozenTrial& t, size_t) {
    std::vector<std::pair<double, double>> points;
    for (const auto& [step, v] : t.intermediate_values) {
      points.emplace_back(static_cast<double>(step), v);
    }
    return points;
  };
  draw_curves(out, view, source, options);
}

void draw_step_metric(std::string& out, const StudyView& view, const std::string& metric,
                      const std::string& id, const ReportOptions& options) {
  const std::string name = escape_html(metric);
  CurveSource source{.id = id,
                     .title = metric + " per step",
                     .y_label = metric,
                     .empty = "No trial reported " + metric + ".",
                     .of = "that reported " + name};
  if (auto it = view.step_metric_trials.find(metric); it != view.step_metric_trials.end()) {
    source.trials = it->second;
  }
  source.points = [&](const FrozenTrial&, size_t i) {
    std::vector<std::pair<double, double>> points;
    if (view.steps[i] == nullptr) return points;
    for (const StepMetrics& s : *view.steps[i]) {
      if (auto m = s.metrics.find(metric); m != s.metrics.end()) {
        points.emplace_back(static_cast<double>(s.step), m->second);
      }
    }
    return points;
  };
  draw_curves(out, view, source, options);
}

void draw_parallel(std::string& out, const StudyView& view, const std::vector<size_t>& param_order,
                   const ReportOptions& options) {
  const std::string id = "parallel";
  if (view.complete.empty()) {
    append_empty(out, id, "No trial is COMPLETE: there is nothing to draw.");
    return;
  }
  const size_t n_axes = view.n_objectives + param_order.size();
  Frame frame;
  frame.width = std::max(760.0, 120.0 * static_cast<double>(n_axes) + 60);
  frame.height = 360;
  frame.top = 40;
  frame.bottom = 34;  // room for the "n/a" slot of conditional params
  const double na_y = frame.y0() + 18;
  frame.left = 50;
  frame.right = 70;
  auto axis_x = [&](size_t a) {
    return n_axes == 1 ? frame.x0()
                       : frame.x0() + (frame.x1() - frame.x0()) * static_cast<double>(a) /
                                          static_cast<double>(n_axes - 1);
  };
  std::vector<Scale> scales;
  std::vector<std::string> labels;
  std::vector<char> has_na(n_axes, 0);  // a trial lacks this param: the axis gets an n/a slot
  for (size_t k = 0; k < view.n_objectives; ++k) {
    auto [lo, hi] = value_range(view, k);
    scales.push_back(value_scale(lo, hi, frame.y0(), frame.y1()));
    labels.push_back(view.objective_names[k]);
  }
  for (size_t p : param_order) {
    scales.push_back(param_scale(view.params[p], frame.y0(), frame.y1()));
    labels.push_back(view.params[p].name);
    has_na[scales.size() - 1] =
        std::any_of(view.complete.begin(), view.complete.end(),
                    [&](const FrozenTrial* t) { return !view.params[p].position(*t).has_value(); });
  }

  std::vector<size_t> drawn =
      spread_sample(view.complete.size(), options.max_parallel_lines,
                    head(view.ranked[0], best_quota(options.max_parallel_lines, options)));
  // Worst first, so that the best lines lie on top.
  std::vector<size_t> rank_of(view.complete.size());
  for (size_t r = 0; r < view.ranked[0].size(); ++r) rank_of[view.ranked[0][r]] = r;
  std::sort(drawn.begin(), drawn.end(),
            [&](size_t a, size_t b) { return rank_of[a] > rank_of[b]; });
  auto [lo0, hi0] = value_range(view, 0);
  const double best0 = view.complete[view.ranked[0].front()]->values[0];

  open_plot(out, id, "parallel", "", frame, "Parallel coordinates");
  out += "<g class=\"axes\">";
  for (size_t a = 0; a < n_axes; ++a) {
    double ax = axis_x(a);
    out += "<line class=\"axis\" x1=\"";
    append_px(out, ax);
    out += "\" y1=\"";
    append_px(out, frame.y1());
    out += "\" x2=\"";
    append_px(out, ax);
    out += "\" y2=\"";
    append_px(out, frame.y0());
    out += "\"/>";
    for (const Scale::Tick& t : scales[a].ticks(5)) {
      out += "<text class=\"tick\" x=\"";
      append_px(out, ax + 4);
      out += "\" y=\"";
      append_px(out, t.px + 3);
      out += "\">" + escape_html(t.label) + "</text>";
    }
    if (has_na[a]) {
      out += "<text class=\"tick na\" x=\"";
      append_px(out, ax + 4);
      out += "\" y=\"";
      append_px(out, na_y + 3);
      out += "\">n/a</text>";
    }
    std::string label = labels[a];
    if (label.size() > 18) label = label.substr(0, 17) + "…";
    out += "<text class=\"label";
    out += a < view.n_objectives ? " objective" : "";
    out += "\" text-anchor=\"middle\" x=\"";
    append_px(out, ax);
    out += "\" y=\"";
    append_px(out, frame.y1() - 14);
    out += "\"><title>" + escape_html(labels[a]) + "</title>" + escape_html(label) + "</text>";
  }
  out += "</g><g class=\"marks\">";
  for (size_t i : drawn) {
    const FrozenTrial& t = *view.complete[i];
    // Darkest for the best value, yellow for the worst.
    double span = std::abs(hi0 - lo0);
    double color_t = span > 0 ? std::abs(t.values[0] - best0) / span : 0.0;
    out += "<path class=\"pc-line";
    out += i == view.ranked[0].front() && view.feasible[i] ? " best" : "";
    out += "\" stroke=\"" + ramp_color(color_t) + "\" d=\"";
    for (size_t a = 0; a < n_axes; ++a) {
      std::optional<double> v;
      if (a < view.n_objectives) {
        v = t.values[a];
      } else {
        v = view.params[param_order[a - view.n_objectives]].position(t);
      }
      out += a == 0 ? "M" : "L";
      append_px(out, axis_x(a));
      out += " ";
      append_px(out, v ? scales[a](*v) : na_y);
    }
    out += "\"><title>" + point_title(t, t.values[0]) + "</title></path>";
  }
  out += "</g>";
  close_plot(out);
  std::string note =
      "Colour: " + escape_html(view.objective_names[0]) +
      " (dark = best). A trial without a (conditional) param crosses its axis at n/a.";
  if (drawn.size() < view.complete.size()) {
    note += " Drawn: " + std::to_string(drawn.size()) + " of " +
            std::to_string(view.complete.size()) +
            " COMPLETE trials (the best ones and an even spread of the rest).";
  }
  out += "<p class=\"note\">" + note + "</p>";
}

void draw_slice(std::string& out, const StudyView& view, const ParamAxis& param, size_t k,
                const std::string& id, size_t max_points, const ReportOptions& options) {
  // Indices into view.complete of the trials that have the param.
  std::vector<size_t> having;
  std::vector<size_t> position_of(view.complete.size(), SIZE_MAX);
  for (size_t i = 0; i < view.complete.size(); ++i) {
    if (param.position(*view.complete[i])) {
      position_of[i] = having.size();
      having.push_back(i);
    }
  }
  if (having.empty()) {
    append_empty(out, id, "No COMPLETE trial has " + param.name + ".");
    return;
  }
  std::vector<size_t> keep;
  for (size_t r : view.ranked[k]) {
    if (keep.size() >= best_quota(max_points, options)) break;
    if (position_of[r] != SIZE_MAX) keep.push_back(position_of[r]);
  }
  std::vector<size_t> drawn = spread_sample(having.size(), max_points, keep);

  Frame frame;
  frame.width = 370;
  frame.height = 270;
  frame.left = 58;
  double y_lo = std::numeric_limits<double>::infinity(), y_hi = -y_lo;
  for (size_t i : having) {
    y_lo = std::min(y_lo, view.complete[i]->values[k]);
    y_hi = std::max(y_hi, view.complete[i]->values[k]);
  }
  Scale x = param_scale(param, frame.x0() + 2, frame.x1() - 2);
  Scale y = value_scale(y_lo, y_hi, frame.y0() - 4, frame.y1() + 4);
  std::string label = param.name;
  if (param.kind == ParamAxis::Kind::kLog) label += " (log scale)";
  open_plot(out, id, "slice", "slice", frame,
            "Slice: " + view.objective_names[k] + " by " + param.name);
  if (x.is_bands()) {
    // Alternate shading marks each category's band.
    out += "<g class=\"axes\">";
    for (size_t c = 0; c < param.categories.size(); c += 2) {
      out += "<rect class=\"band\" x=\"";
      append_px(out, x(static_cast<double>(c)) - x.band_width() / 2);
      out += "\" y=\"";
      append_px(out, frame.y1());
      out += "\" width=\"";
      append_px(out, x.band_width());
      out += "\" height=\"";
      append_px(out, frame.y0() - frame.y1());
      out += "\"/>";
    }
    out += "</g>";
  }
  draw_x_axis(out, frame, x, label);
  draw_y_axis(out, frame, y, view.objective_label(k));
  out += "<g class=\"marks\">";
  const double last_number = std::max(1, view.trials.back()->number);
  for (size_t d : drawn) {
    const FrozenTrial& t = *view.complete[having[d]];
    double px = x(*param.position(t));
    if (x.is_bands()) {
      // Spread the points of a band sideways, the same way every time (by trial number).
      uint64_t h = static_cast<uint64_t>(t.number) * 0x9E3779B97F4A7C15ull;
      px += (static_cast<double>(h >> 40) / static_cast<double>(1ull << 24) - 0.5) *
            x.band_width() * 0.6;
    }
    append_circle(out, "pt", px, y(t.values[k]), 2.5,
                  ramp_color(static_cast<double>(t.number) / last_number),
                  "trial " + std::to_string(t.number) + ": " + escape_html(param.name) + "=" +
                      escape_html(to_string(t.params.find(param.name)->second)) + ", " +
                      format_number(t.values[k]));
  }
  out += "</g>";
  close_plot(out);
}

void draw_importance(std::string& out, const Importances& importances, const std::string& id) {
  if (importances.params.empty()) {
    append_empty(out, id, "No COMPLETE trial has parameters: there is nothing to rank.");
    return;
  }
  const auto& params = importances.params;
  Frame frame;
  frame.width = 760;
  frame.left = 170;
  frame.right = 70;
  frame.top = 10;
  frame.bottom = 40;
  frame.height = frame.top + frame.bottom + 24.0 * static_cast<double>(params.size());
  double top = 0;
  for (const auto& p : params) top = std::max(top, p.importance);
  Scale x = Scale::linear(0, std::max(top, 1e-9) * 1.05, frame.x0(), frame.x1());
  open_plot(out, id, "importance", "", frame, "Parameter importances");
  draw_x_axis(out, frame, x, "importance (share of the explained variance; sums to 1)");
  out += "<g class=\"axes\">";
  for (size_t i = 0; i < params.size(); ++i) {
    std::string name = params[i].name;
    if (name.size() > 24) name = name.substr(0, 23) + "…";
    out += "<text class=\"tick\" text-anchor=\"end\" x=\"";
    append_px(out, frame.x0() - 6);
    out += "\" y=\"";
    append_px(out, frame.top + 24.0 * static_cast<double>(i) + 16);
    out += "\">" + escape_html(name) + "</text>";
  }
  out += "</g><g class=\"marks\">";
  for (size_t i = 0; i < params.size(); ++i) {
    double w = x(params[i].importance) - frame.x0();
    double y = frame.top + 24.0 * static_cast<double>(i) + 4;
    out += "<rect class=\"bar\" x=\"";
    append_px(out, frame.x0());
    out += "\" y=\"";
    append_px(out, y);
    out += "\" width=\"";
    append_px(out, std::max(w, 1.0));
    out += "\" height=\"16\"><title>" + escape_html(params[i].name) + ": " +
           format_number(params[i].importance) + "</title></rect>";
    out += "<text class=\"bar-label\" x=\"";
    append_px(out, frame.x0() + std::max(w, 1.0) + 4);
    out += "\" y=\"";
    append_px(out, y + 12);
    char percent[32];
    std::snprintf(percent, sizeof(percent), "%.1f%%", params[i].importance * 100);
    out += "\">";
    out += percent;
    out += "</text>";
  }
  out += "</g>";
  close_plot(out);
}

void draw_pareto(std::string& out, const StudyView& view, size_t a, size_t b,
                 const ReportOptions& options, std::optional<int> ringed) {
  const std::string id = "pareto-" + std::to_string(a) + "-" + std::to_string(b);
  if (view.complete.empty()) {
    append_empty(out, id, "No trial is COMPLETE: there is no Pareto front.");
    return;
  }
  std::vector<size_t> drawn = spread_sample(view.complete.size(), options.max_points, view.pareto);
  // 0: infeasible, 1: feasible and dominated, 2: on the front; drawn in that order, front on top.
  std::vector<int> kind(view.complete.size(), 1);
  for (size_t i = 0; i < kind.size(); ++i) kind[i] = view.feasible[i] ? 1 : 0;
  for (size_t i : view.pareto) kind[i] = 2;
  Frame frame;
  frame.width = 440;
  frame.height = 360;
  frame.top = 30;  // room for the legend above the plotting area
  auto [x_lo, x_hi] = value_range(view, a);
  auto [y_lo, y_hi] = value_range(view, b);
  Scale x = value_scale(x_lo, x_hi, frame.x0() + 4, frame.x1() - 4);
  Scale y = value_scale(y_lo, y_hi, frame.y0() - 4, frame.y1() + 4);
  open_plot(out, id, "pareto", "pareto", frame,
            "Pareto front: " + view.objective_names[a] + " against " + view.objective_names[b]);
  draw_x_axis(out, frame, x, view.objective_label(a));
  draw_y_axis(out, frame, y, view.objective_label(b));
  out += "<g class=\"marks\">";
  static constexpr const char* kClass[] = {"pt infeasible", "pt", "pt front"};
  static constexpr const char* kPrefix[] = {"infeasible: ", "", "Pareto-optimal: "};
  for (int pass = 0; pass < 3; ++pass) {
    for (size_t i : drawn) {
      if (kind[i] != pass) continue;
      const FrozenTrial& t = *view.complete[i];
      append_circle(out, kClass[pass], x(t.values[a]), y(t.values[b]), pass == 2 ? 4 : 2.5, "",
                    std::string(kPrefix[pass]) + "trial " + std::to_string(t.number) + ": " +
                        escape_html(view.objective_names[a]) + " " + format_number(t.values[a]) +
                        ", " + escape_html(view.objective_names[b]) + " " +
                        format_number(t.values[b]));
    }
  }
  out += "</g>";
  const FrozenTrial* pick = nullptr;
  if (ringed) {
    for (const FrozenTrial* t : view.complete) {
      if (t->number == *ringed) pick = t;
    }
  }
  if (pick != nullptr) {
    out += "<g class=\"ring\">";
    append_circle(out, "pick", x(pick->values[a]), y(pick->values[b]), 8, "",
                  "the export rule's pick: trial " + std::to_string(pick->number));
    out += "</g>";
  }
  const double legend_y = frame.y1() - 12;
  double legend_x = frame.x0();
  draw_legend_entry(out, legend_x, legend_y, "lg-pt", "dominated");
  legend_x += 100;
  draw_legend_entry(out, legend_x, legend_y, "lg-front", "Pareto-optimal");
  legend_x += 125;
  if (view.constrained) {
    draw_legend_entry(out, legend_x, legend_y, "lg-infeasible", "infeasible");
    legend_x += 90;
  }
  if (pick != nullptr) draw_legend_entry(out, legend_x, legend_y, "lg-pick", "export pick");
  close_plot(out);
}

void draw_hypervolume(std::string& out, const StudyView& view, const HypervolumeSeries& series,
                      const ReportOptions& options) {
  const std::string id = "hypervolume";
  if (view.complete.empty()) {
    append_empty(out, id, "No trial is COMPLETE: there is no hypervolume to draw.");
    return;
  }
  if (series.too_large) {
    append_empty(out, id,
                 "Not drawn: the front has " + std::to_string(view.pareto.size()) + " trials of " +
                     std::to_string(view.n_objectives) +
                     " objectives, too many to compute its hypervolume at several counts within "
                     "seconds. `tuner status` gives the whole front's.");
    return;
  }
  if (series.steps.empty()) {
    append_empty(out, id, "No COMPLETE trial is feasible: the front is empty, its volume 0.");
    return;
  }
  const auto& steps = series.steps;
  double top = steps.back().hypervolume;
  Frame frame;
  frame.width = 760;
  frame.height = 320;
  frame.left = 72;
  Scale x =
      Scale::linear(0, static_cast<double>(view.complete.size()), frame.x0() + 4, frame.x1() - 4);
  Scale y = Scale::linear(0, top > 0 ? top * 1.05 : 1.0, frame.y0(), frame.y1() + 4);
  open_plot(out, id, "hypervolume", "", frame, "Hypervolume over trials");
  draw_x_axis(out, frame, x, "COMPLETE trials (by number)");
  draw_y_axis(out, frame, y, "hypervolume of the feasible front");
  out += "<g class=\"marks\">";
  // A step line through every computed step, and a dot where the front changed (thinned
  // evenly, the last change kept).
  out += "<path class=\"best-line\" d=\"M";
  append_px(out, x(static_cast<double>(steps.front().k)));
  out += " ";
  append_px(out, y(steps.front().hypervolume));
  for (const HypervolumeSeries::Step& s : steps) {
    out += "H";
    append_px(out, x(static_cast<double>(s.k)));
    out += "V";
    append_px(out, y(s.hypervolume));
  }
  out += "\"/>";
  std::vector<size_t> changes;
  for (size_t s = 0; s < steps.size(); ++s) {
    if (steps[s].front_changed) changes.push_back(s);
  }
  std::vector<size_t> dots;
  if (!changes.empty()) {
    dots = spread_sample(changes.size(), options.max_points, {changes.size() - 1});
  }
  for (size_t c : dots) {
    const HypervolumeSeries::Step& s = steps[changes[c]];
    append_circle(out, "pt", x(static_cast<double>(s.k)), y(s.hypervolume), 2.5, "",
                  "after " + std::to_string(s.k) + " COMPLETE trial" + (s.k == 1 ? "" : "s") +
                      " (up to trial " + std::to_string(view.complete[s.k - 1]->number) +
                      "): " + format_number(s.hypervolume));
  }
  out += "</g>";
  close_plot(out);
  // The reference point in the objectives' own terms.
  std::string reference;
  for (size_t k = 0; k < view.n_objectives; ++k) {
    const bool maximize = view.study->directions[k] == StudyDirection::kMaximize;
    if (k) reference += ", ";
    reference += escape_html(view.objective_names[k]) + " " +
                 format_number(maximize ? -series.reference[k] : series.reference[k]);
  }
  out += "<p class=\"note\" id=\"hypervolume-reference\">Reference point: " + reference +
         ", just beyond the worst value of each objective among all the feasible COMPLETE trials "
         "(by 10% of its magnitude). It is the same for every count, so the line never falls; "
         "the hypervolume is the volume of the region between the front and this point, "
         "which some feasible trial beats or equals in every objective. Last value " +
         format_number(steps.back().hypervolume) + ", as <code>tuner status</code> gives it.";
  if (steps.size() < view.complete.size()) {
    out += " Computed after " + std::to_string(steps.size()) + " of the " +
           std::to_string(view.complete.size()) +
           " counts (an even spread, the last kept: fewer, the larger the front).";
  }
  out += "</p>";
}

}  // namespace tuner::report
