#include "search/samplers/multi_fidelity/budget_targets.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>

namespace tuner {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kFinal = std::numeric_limits<int64_t>::max();

// The budget a finished trial reached: a PRUNED trial's last step; a COMPLETE trial's last step,
// or kFinal when it reported none. Empty for other trials and a PRUNED one without steps.
std::optional<int64_t> budget(const FrozenTrial& t) {
  if (t.state == TrialState::kComplete) {
    return t.intermediate_values.empty() ? kFinal : t.intermediate_values.rbegin()->first;
  }
  if (t.state == TrialState::kPruned && !t.intermediate_values.empty()) {
    return t.intermediate_values.rbegin()->first;
  }
  return std::nullopt;
}

// The trial's value at budget `s`: the intermediate value at the first step at or past s (as
// ASHA reads a rung), else a COMPLETE trial's final value. Empty when it has none.
std::optional<double> value_at(const FrozenTrial& t, int64_t s) {
  auto it = t.intermediate_values.lower_bound(s);
  if (it != t.intermediate_values.end() && std::isfinite(it->second)) return it->second;
  if (t.state == TrialState::kComplete && t.values.size() == 1) return t.values.front();
  return std::nullopt;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::vector<double> max_budget_targets(std::span<const FrozenTrial> trials,
                                       StudyDirection direction) {
  const double sign = direction == StudyDirection::kMaximize ? -1.0 : 1.0;
  // Losses (smaller is better) from here on.
  std::vector<double> target(trials.size(), kNan);
  std::vector<std::optional<int64_t>> budgets(trials.size());
  // The largest budget: the COMPLETE trials' (the finished trials' while none is COMPLETE).
  std::optional<int64_t> top_complete, top_finished;
  for (size_t i = 0; i < trials.size(); ++i) {
    budgets[i] = budget(trials[i]);
    if (!budgets[i]) continue;
    top_finished = std::max(top_finished.value_or(*budgets[i]), *budgets[i]);
    if (trials[i].state != TrialState::kComplete) continue;
    top_complete = std::max(top_complete.value_or(*budgets[i]), *budgets[i]);
    if (trials[i].values.size() == 1 && std::isfinite(trials[i].values.front())) {
      target[i] = sign * trials[i].values.front();
    }
  }
  if (!top_finished) return target;
  const int64_t top = top_complete.value_or(*top_finished);
  // PRUNED trials that reached the largest budget, and the lower budgets, largest first.
  std::vector<int64_t> levels;
  for (size_t i = 0; i < trials.size(); ++i) {
    if (!budgets[i] || trials[i].state != TrialState::kPruned) continue;
    if (*budgets[i] >= top) {
      std::optional<double> v = value_at(trials[i], top);
      if (v) target[i] = sign * *v;
    } else {
      levels.push_back(*budgets[i]);
    }
  }
  std::sort(levels.begin(), levels.end(), std::greater<>());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  for (int64_t s : levels) {
    // The references: trials that went on past s, with a target and a value at s.
    std::vector<double> gaps;
    for (size_t i = 0; i < trials.size(); ++i) {
      if (!budgets[i] || *budgets[i] <= s || !std::isfinite(target[i])) continue;
      std::optional<double> v = value_at(trials[i], s);
      if (v) gaps.push_back(target[i] - sign * *v);
    }
    if (gaps.empty()) continue;
    const double gap = median(std::move(gaps));
    for (size_t i = 0; i < trials.size(); ++i) {
      if (!budgets[i] || *budgets[i] != s || trials[i].state != TrialState::kPruned) continue;
      std::optional<double> v = value_at(trials[i], s);
      if (v) target[i] = sign * *v + gap;
    }
  }
  for (double& t : target) t *= sign;
  return target;
}

BudgetTargetHistory::BudgetTargetHistory(const History& history)
    : trials_(history.trials.begin(), history.trials.end()), history_(history) {
  const std::vector<double> targets = max_budget_targets(history.trials, history.direction());
  for (size_t i = 0; i < trials_.size(); ++i) {
    FrozenTrial& t = trials_[i];
    if (t.state != TrialState::kPruned || !std::isfinite(targets[i])) continue;
    t.state = TrialState::kComplete;
    t.values = {targets[i]};
    ++pruned_with_targets_;
  }
  history_.trials = trials_;
}

}  // namespace tuner
