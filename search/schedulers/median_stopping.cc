#include "search/schedulers/median_stopping.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <vector>

#include "trials/error.h"

namespace tuner {

namespace {

constexpr double kWorst = std::numeric_limits<double>::infinity();

// `value` as a loss (lower is better) in `direction`; non-finite values are the worst loss.
double loss(StudyDirection direction, double value) {
  if (!std::isfinite(value)) return kWorst;
  return as_loss(direction, value);
}

Error invalid(std::string_view name, std::string_view option, const std::string& message) {
  return Error(ErrorCode::kInvalidArgument,
               std::string(name) + "." + std::string(option) + ": " + message);
}

// The `percentile`-th percentile of `losses` (not empty) by linear interpolation between the
// closest ranks, numpy's default. An interpolation that touches an infinite loss is infinite.
double percentile_of(std::vector<double> losses, double percentile) {
  std::sort(losses.begin(), losses.end());
  const double position = percentile / 100.0 * static_cast<double>(losses.size() - 1);
  const size_t lower = static_cast<size_t>(std::floor(position));
  const double fraction = position - static_cast<double>(lower);
  if (fraction == 0.0 || lower + 1 >= losses.size()) return losses[lower];
  const double a = losses[lower];
  const double b = losses[lower + 1];
  if (std::isinf(a) || std::isinf(b)) return kWorst;
  return a + fraction * (b - a);
}

// True when `step` is the first report of its checking interval (see the header, condition 3).
bool is_first_in_interval(const FrozenTrial& trial, int64_t step, int64_t n_warmup_steps,
                          int64_t interval_steps) {
  const int64_t interval_start =
      n_warmup_steps + (step - n_warmup_steps) / interval_steps * interval_steps;
  auto it = trial.intermediate_values.lower_bound(step);
  if (it == trial.intermediate_values.begin()) return true;
  --it;  // the largest reported step below `step`
  return it->first < interval_start;
}

// What PercentileStopping keeps in a trial's ReportMemo: the best loss of its values at steps
// <= `through`, and how many values those were (a value added below `through` since changes the
// count, and the memo is rebuilt).
struct BestSoFar {
  bool valid = false;
  int64_t trial_id = -1;
  int64_t through = 0;
  size_t scanned = 0;
  double best = kWorst;
};

// The best loss of `trial`'s values at steps <= `step`. Scans only the values after the memo's
// `through` when the memo still describes the trial (the usual case: each report one step past
// the last), so that a report costs the same however many steps came before it.
double best_loss_through(const FrozenTrial& trial, int64_t step, StudyDirection direction,
                         ReportMemo& memo) {
  const auto& values = trial.intermediate_values;
  const auto end = values.upper_bound(step);
  BestSoFar& m = memo.get<BestSoFar>();
  if (m.valid && m.trial_id == trial.trial_id && m.through <= step) {
    double best = m.best;
    size_t added = 0;
    for (auto it = values.upper_bound(m.through); it != end; ++it, ++added) {
      best = std::min(best, loss(direction, it->second));
    }
    const auto beyond = static_cast<size_t>(std::distance(end, values.end()));
    if (m.scanned + added + beyond == values.size()) {
      m = BestSoFar{true, trial.trial_id, step, m.scanned + added, best};
      return best;
    }
  }
  double best = kWorst;
  size_t scanned = 0;
  for (auto it = values.begin(); it != end; ++it, ++scanned) {
    best = std::min(best, loss(direction, it->second));
  }
  m = BestSoFar{true, trial.trial_id, step, scanned, best};
  return best;
}

}  // namespace

PercentileStopping::PercentileStopping(const PercentileStoppingOptions& options)
    : PercentileStopping(options, "percentile_stopping") {}

PercentileStopping::PercentileStopping(const PercentileStoppingOptions& options,
                                       std::string_view name)
    : options_(options) {
  if (!(options.percentile >= 0.0 && options.percentile <= 100.0)) {
    throw invalid(name, "percentile",
                  "must be in [0, 100], got " + std::to_string(options.percentile));
  }
  if (options.n_startup_trials < 0) {
    throw invalid(name, "n_startup_trials",
                  "must be >= 0, got " + std::to_string(options.n_startup_trials));
  }
  if (options.n_warmup_steps < 0) {
    throw invalid(name, "n_warmup_steps",
                  "must be >= 0, got " + std::to_string(options.n_warmup_steps));
  }
  if (options.interval_steps < 1) {
    throw invalid(name, "interval_steps",
                  "must be >= 1, got " + std::to_string(options.interval_steps));
  }
  if (options.n_min_trials < 1) {
    throw invalid(name, "n_min_trials",
                  "must be >= 1, got " + std::to_string(options.n_min_trials));
  }
}

Decision PercentileStopping::on_report(const FrozenTrial& trial, int64_t step,
                                       const History& history) const {
  ReportMemo memo;
  return on_report_memoized(trial, step, history, memo);
}

Decision PercentileStopping::on_report_memoized(const FrozenTrial& trial, int64_t step,
                                                const History& history, ReportMemo& memo) const {
  const StudyDirection direction = history.direction();

  // 1. Startup: enough completed trials.
  int n_complete = 0;
  for (const FrozenTrial& other : history.trials) {
    if (other.number != trial.number && other.state == TrialState::kComplete) ++n_complete;
  }
  if (n_complete == 0 || n_complete < options_.n_startup_trials) return Decision::kContinue;

  // 2. Warm-up, 3. interval.
  if (step < options_.n_warmup_steps) return Decision::kContinue;
  if (!is_first_in_interval(trial, step, options_.n_warmup_steps, options_.interval_steps)) {
    return Decision::kContinue;
  }

  // The trial's best loss over its steps <= `step`.
  const double best = best_loss_through(trial, step, direction, memo);
  if (std::isinf(best)) return Decision::kStop;  // nothing finite reported: as Optuna's NaN

  // 4. Enough completed trials at `step`.
  std::vector<double> losses;
  for (const FrozenTrial& other : history.trials) {
    if (other.number == trial.number || other.state != TrialState::kComplete) continue;
    auto it = other.intermediate_values.find(step);
    if (it != other.intermediate_values.end()) losses.push_back(loss(direction, it->second));
  }
  if (losses.size() < static_cast<size_t>(options_.n_min_trials)) return Decision::kContinue;

  // 5. Strictly worse than the percentile.
  return best > percentile_of(std::move(losses), options_.percentile) ? Decision::kStop
                                                                      : Decision::kContinue;
}

MedianStopping::MedianStopping(const MedianStoppingOptions& options)
    : PercentileStopping(options, "median_stopping") {
  if (options.percentile != 50.0) {
    throw Error(ErrorCode::kInvalidArgument,
                "median_stopping.percentile: must be 50 (PercentileStopping takes another), got " +
                    std::to_string(options.percentile));
  }
}

}  // namespace tuner
