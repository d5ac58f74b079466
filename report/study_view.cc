#include "report/study_view.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <variant>

#include "search/pareto.h"
#include "trials/constraints.h"
#include "trials/json_depth.h"
#include "trials/system_attrs.h"
#include "trials/trial_origin.h"

namespace tuner::report {

namespace {

// Optuna keeps the names set with study.set_metric_names() here (a JSON list of strings).
constexpr char kMetricNamesAttr[] = "study:metric_names";

std::vector<std::string> objective_names(const StudyRecord& study) {
  const size_t n = study.directions.size();
  std::vector<std::string> names;
  if (auto it = study.system_attrs.find(kMetricNamesAttr); it != study.system_attrs.end()) {
    auto json = json_nests_deeper_than(it->second, kMaxJsonDepth)
                    ? nlohmann::json()
                    : nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
    if (json.is_array() && json.size() == n) {
      for (const auto& name : json) {
        if (!name.is_string()) break;
        names.push_back(name.get<std::string>());
      }
    }
  }
  if (names.size() == n) return names;
  names.clear();
  for (size_t k = 0; k < n; ++k) {
    names.push_back(n == 1 ? "value" : "objective " + std::to_string(k));
  }
  return names;
}

std::vector<ParamAxis> describe_params(const std::vector<const FrozenTrial*>& trials) {
  std::map<std::string, ParamAxis> by_name;
  std::map<std::string, bool> seen_value;
  for (const FrozenTrial* t : trials) {
    for (const auto& [name, value] : t->params) {
      ParamAxis& axis = by_name[name];
      axis.name = name;
      auto dist = t->distributions.find(name);
      bool categorical = std::holds_alternative<std::string>(value) ||
                         (dist != t->distributions.end() &&
                          std::holds_alternative<CategoricalDistribution>(dist->second));
      if (categorical) axis.kind = ParamAxis::Kind::kCategorical;
      if (dist == t->distributions.end()) continue;
      const Distribution& d = dist->second;
      if (const auto* c = std::get_if<CategoricalDistribution>(&d)) {
        for (const ParamValue& choice : c->choices) {
          std::string text = to_string(choice);
          if (axis.category_index.emplace(text, axis.categories.size()).second) {
            axis.categories.push_back(text);
          }
        }
      }
      bool log = false;
      if (const auto* f = std::get_if<FloatDistribution>(&d)) log = f->log;
      if (const auto* i = std::get_if<IntDistribution>(&d)) log = i->log;
      if (const auto* nd = std::get_if<NormalDistribution>(&d)) log = nd->log;
      if (log && axis.kind == ParamAxis::Kind::kLinear) axis.kind = ParamAxis::Kind::kLog;
    }
  }
  // Ranges: the bounds of the distributions and every value seen.
  for (auto& [name, axis] : by_name) {
    bool first = true;
    auto widen = [&](double v) {
      if (!std::isfinite(v) || (axis.kind == ParamAxis::Kind::kLog && v <= 0)) return;
      axis.low = first ? v : std::min(axis.low, v);
      axis.high = first ? v : std::max(axis.high, v);
      first = false;
    };
    for (const FrozenTrial* t : trials) {
      auto p = t->params.find(name);
      if (p == t->params.end()) continue;
      if (axis.kind == ParamAxis::Kind::kCategorical) {
        std::string text = to_string(p->second);
        if (axis.category_index.emplace(text, axis.categories.size()).second) {
          axis.categories.push_back(text);
        }
        continue;
      }
      widen(as_double(p->second));
      auto dist = t->distributions.find(name);
      if (dist == t->distributions.end()) continue;
      if (const auto* f = std::get_if<FloatDistribution>(&dist->second)) {
        widen(f->low);
        widen(f->high);
      } else if (const auto* i = std::get_if<IntDistribution>(&dist->second)) {
        widen(static_cast<double>(i->low));
        widen(static_cast<double>(i->high));
      }
    }
    if (first && axis.kind == ParamAxis::Kind::kLog) axis.kind = ParamAxis::Kind::kLinear;
  }
  std::vector<ParamAxis> out;
  for (auto& [name, axis] : by_name) {
    axis.index = out.size();
    out.push_back(std::move(axis));
  }
  return out;
}

}  // namespace

std::optional<double> ParamAxis::position(const FrozenTrial& trial) const {
  auto p = trial.params.find(name);
  if (p == trial.params.end()) return std::nullopt;
  if (kind == Kind::kCategorical) {
    auto c = category_index.find(to_string(p->second));
    if (c == category_index.end()) return std::nullopt;
    return static_cast<double>(c->second);
  }
  if (std::holds_alternative<std::string>(p->second)) return std::nullopt;
  double v = as_double(p->second);
  if (!std::isfinite(v) || (kind == Kind::kLog && v <= 0)) return std::nullopt;
  return v;
}

bool StudyView::better(size_t k, double a, double b) const {
  return is_better(study->directions[k], a, b);
}

std::string StudyView::objective_label(size_t k) const {
  return objective_names[k] + " (" + std::string(to_string(study->directions[k])) + ")";
}

StudyView make_study_view(const StudyRecord& study, const std::vector<FrozenTrial>& trials) {
  return make_study_view(study, trials, {});
}

StudyView make_study_view(const StudyRecord& study, const std::vector<FrozenTrial>& trials,
                          const std::map<int64_t, std::vector<StepMetrics>>& step_metrics) {
  StudyView view;
  view.study = &study;
  view.n_objectives = study.directions.size();
  view.objective_names = objective_names(study);
  for (const FrozenTrial& t : trials) view.trials.push_back(&t);
  std::stable_sort(
      view.trials.begin(), view.trials.end(),
      [](const FrozenTrial* a, const FrozenTrial* b) { return a->number < b->number; });
  for (const FrozenTrial* t : view.trials) {
    if (t->state != TrialState::kComplete || t->values.size() != view.n_objectives) continue;
    if (std::all_of(t->values.begin(), t->values.end(),
                    [](double v) { return std::isfinite(v); })) {
      view.complete.push_back(t);
    }
  }
  for (const FrozenTrial* t : view.trials) {
    view.constrained |= has_constraints(*t);
    view.samplers |= !sampler_of(*t).empty();
  }
  for (const FrozenTrial* t : view.complete) {
    view.feasible.push_back(is_feasible(*t));
    if (view.feasible.back()) ++view.n_feasible;
  }
  for (size_t k = 0; k < view.n_objectives; ++k) {
    std::vector<size_t> order(view.complete.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (view.feasible[a] != view.feasible[b]) return static_cast<bool>(view.feasible[a]);
      return view.better(k, view.complete[a]->values[k], view.complete[b]->values[k]);
    });
    view.ranked.push_back(std::move(order));
  }
  for (const FrozenTrial* t : view.complete) {
    for (size_t k = 0; k < view.n_objectives; ++k) {
      view.losses.push_back(as_loss(study.directions[k], t->values[k]));
    }
  }
  if (view.n_objectives > 1) {
    const size_t m = view.n_objectives;
    std::vector<size_t> feasible;  // indices into `complete`
    std::vector<double> points;
    for (size_t i = 0; i < view.complete.size(); ++i) {
      if (!view.feasible[i]) continue;
      feasible.push_back(i);
      points.insert(points.end(), view.losses.begin() + static_cast<std::ptrdiff_t>(i * m),
                    view.losses.begin() + static_cast<std::ptrdiff_t>((i + 1) * m));
    }
    for (size_t f : pareto_front(points, m)) view.pareto.push_back(feasible[f]);
  }
  view.params = describe_params(view.trials);
  for (size_t i = 0; i < view.trials.size(); ++i) {
    auto it = step_metrics.find(view.trials[i]->trial_id);
    view.steps.push_back(it == step_metrics.end() || it->second.empty() ? nullptr : &it->second);
    if (view.steps.back() == nullptr) continue;
    for (const StepMetrics& s : it->second) {
      for (const auto& [name, value] : s.metrics) {
        std::vector<size_t>& reported = view.step_metric_trials[name];
        if (reported.empty() || reported.back() != i) reported.push_back(i);
      }
    }
  }
  return view;
}

std::optional<int64_t> stopped_at_step(const FrozenTrial& trial) {
  if (trial.state != TrialState::kPruned) return std::nullopt;
  auto it = trial.system_attrs.find(kStoppedAtStepAttr);
  if (it == trial.system_attrs.end() || json_nests_deeper_than(it->second, kMaxJsonDepth)) {
    return std::nullopt;
  }
  const nlohmann::json step = nlohmann::json::parse(it->second, nullptr, false);
  if (!step.is_number_integer()) return std::nullopt;
  return step.get<int64_t>();
}

}  // namespace tuner::report
