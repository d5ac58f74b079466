#include "search/schedulers/asha.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "trials/error.h"

namespace tuner {

namespace {

constexpr double kWorst = std::numeric_limits<double>::infinity();

// `value` as a loss (lower is better) in `direction`; non-finite values are the worst loss.
double loss(StudyDirection direction, double value) {
  if (!std::isfinite(value)) return kWorst;
  return as_loss(direction, value);
}

Error invalid(std::string_view option, const std::string& message) {
  return Error(ErrorCode::kInvalidArgument, "asha." + std::string(option) + ": " + message);
}

// r * factor, or nothing when it does not fit in int64_t.
std::optional<int64_t> times(int64_t r, int64_t factor) {
  if (r > std::numeric_limits<int64_t>::max() / factor) return std::nullopt;
  return r * factor;
}

// The value of `trial` at the rung at `resource`: its value at the first step >= resource.
std::optional<double> rung_value(const FrozenTrial& trial, int64_t resource) {
  auto it = trial.intermediate_values.lower_bound(resource);
  if (it == trial.intermediate_values.end()) return std::nullopt;
  return it->second;
}

}  // namespace

AshaScheduler::AshaScheduler(const AshaOptions& options) : options_(options) {
  if (options.min_resource < 1) {
    throw invalid("min_resource", "must be >= 1, got " + std::to_string(options.min_resource));
  }
  if (options.reduction_factor < 2) {
    throw invalid("reduction_factor",
                  "must be >= 2, got " + std::to_string(options.reduction_factor));
  }
  if (options.max_resource && *options.max_resource <= options.min_resource) {
    throw invalid("max_resource", "must be > min_resource (" +
                                      std::to_string(options.min_resource) + "), got " +
                                      std::to_string(*options.max_resource));
  }
  if (options.min_early_stopping_rate < 0) {
    throw invalid("min_early_stopping_rate",
                  "must be >= 0, got " + std::to_string(options.min_early_stopping_rate));
  }
  if (options.bootstrap_count < 0) {
    throw invalid("bootstrap_count",
                  "must be >= 0, got " + std::to_string(options.bootstrap_count));
  }

  std::optional<int64_t> r = options.min_resource;
  for (int i = 0; i < options.min_early_stopping_rate && r; ++i) {
    r = times(*r, options.reduction_factor);
  }
  while (r && (!options.max_resource || *r < *options.max_resource)) {
    rungs_.push_back(*r);
    r = times(*r, options.reduction_factor);
  }
}

Decision AshaScheduler::on_report(const FrozenTrial& trial, int64_t step,
                                  const History& history) const {
  return on_report_among(trial, step, history, [](const FrozenTrial&) { return true; });
}

Decision AshaScheduler::on_report_among(
    const FrozenTrial& trial, int64_t step, const History& history,
    const std::function<bool(const FrozenTrial&)>& competes) const {
  const StudyDirection direction = history.direction();
  auto at = trial.intermediate_values.find(step);
  if (at == trial.intermediate_values.end()) return Decision::kContinue;
  // The trial's previous report: rungs at or below it were judged then.
  const int64_t previous = at == trial.intermediate_values.begin()
                               ? std::numeric_limits<int64_t>::min()
                               : std::prev(at)->first;
  const double own = loss(direction, at->second);

  for (int64_t resource : rungs_) {
    if (resource <= previous) continue;
    if (resource > step) break;
    // `step` is the trial's first step >= resource: judge it at this rung.
    if (std::isinf(own)) return Decision::kStop;

    std::vector<double> competitors{own};
    for (const FrozenTrial& other : history.trials) {
      if (other.number == trial.number || !competes(other)) continue;
      if (std::optional<double> value = rung_value(other, resource)) {
        competitors.push_back(loss(direction, *value));
      }
    }
    const size_t n = competitors.size();
    if (n <= static_cast<size_t>(options_.bootstrap_count)) return Decision::kStop;

    // The loss ranked k-th best, k = max(n / reduction_factor, 1): the bar of the top fraction.
    const size_t k = std::max<size_t>(n / static_cast<size_t>(options_.reduction_factor), 1);
    std::nth_element(competitors.begin(), competitors.begin() + static_cast<ptrdiff_t>(k - 1),
                     competitors.end());
    if (own > competitors[k - 1]) return Decision::kStop;
  }
  return Decision::kContinue;
}

}  // namespace tuner
