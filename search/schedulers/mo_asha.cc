#include "search/schedulers/mo_asha.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "search/pareto.h"
#include "search/samplers/nsga2_sampler.h"
#include "trials/error.h"

namespace tuner {

namespace {

using Steps = std::map<int64_t, std::vector<double>>;

// AshaScheduler's rungs and option checks, its messages naming "mo_asha.".
AshaScheduler asha_of(const MoAshaOptions& options) {
  try {
    return AshaScheduler(options);
  } catch (const Error& e) {
    std::string message = e.what();
    if (message.starts_with("asha.")) message = "mo_asha." + message.substr(5);
    throw Error(e.code(), message);
  }
}

// The trial's steps: its objective vectors when the history has them, else its intermediate
// values as vectors of one. `scratch` holds the latter.
const Steps* steps_of(const FrozenTrial& trial, const History& history, Steps& scratch) {
  if (history.objective_steps != nullptr) return history.objective_steps->of(trial.number);
  if (trial.intermediate_values.empty()) return nullptr;
  scratch.clear();
  for (const auto& [step, value] : trial.intermediate_values) scratch[step] = {value};
  return &scratch;
}

// `values` as a loss vector appended to `out`: maximized objectives negated, a non-finite value
// (or a missing objective) as +infinity in every objective.
void append_loss(const std::vector<double>& values, std::span<const StudyDirection> directions,
                 std::vector<double>& out) {
  const size_t m = directions.size();
  bool finite = values.size() == m;
  for (size_t i = 0; finite && i < m; ++i) finite = std::isfinite(values[i]);
  for (size_t i = 0; i < m; ++i) {
    out.push_back(finite ? as_loss(directions[i], values[i])
                         : std::numeric_limits<double>::infinity());
  }
}

// The size of the first front of the loss vectors plus the number of the second front's
// boundary points: those of infinite crowding distance within it (nsga2_elite() takes them
// first from that front; a front of one point, or of one value per objective, has none).
size_t first_front_and_boundary(const std::vector<double>& losses, size_t m) {
  const std::vector<int> ranks = non_domination_ranks(losses, m);
  size_t first = 0;
  std::vector<double> second;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == 0) ++first;
    if (ranks[i] == 1) {
      second.insert(second.end(), losses.begin() + static_cast<ptrdiff_t>(i * m),
                    losses.begin() + static_cast<ptrdiff_t>((i + 1) * m));
    }
  }
  const std::vector<double> distance = crowding_distances(second, m);
  return first + static_cast<size_t>(std::count(distance.begin(), distance.end(),
                                                std::numeric_limits<double>::infinity()));
}

bool all_finite(const std::vector<double>& values, size_t m) {
  return values.size() == m &&
         std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); });
}

}  // namespace

MoAshaScheduler::MoAshaScheduler(const MoAshaOptions& options)
    : options_(options), rungs_(asha_of(options).rungs()) {}

Decision MoAshaScheduler::on_report(const FrozenTrial& trial, int64_t step,
                                    const History& history) const {
  const std::span<const StudyDirection> directions =
      history.objective_steps != nullptr ? history.directions : history.directions.first(1);
  const size_t m = directions.size();
  Steps own_scratch;
  const Steps* own_steps = steps_of(trial, history, own_scratch);
  if (own_steps == nullptr) return Decision::kContinue;
  auto at = own_steps->find(step);
  if (at == own_steps->end()) return Decision::kContinue;
  const int64_t previous =
      at == own_steps->begin() ? std::numeric_limits<int64_t>::min() : std::prev(at)->first;

  for (int64_t resource : rungs_) {
    if (resource <= previous) continue;
    if (resource > step) break;
    // `step` is the trial's first step >= resource: judge it at this rung.
    if (!all_finite(at->second, m)) return Decision::kStop;

    // The competitors in trial-number order (the reporting trial at its own place), so that ties
    // in the selection go to the lower number.
    std::vector<int> numbers;
    std::vector<double> losses;
    bool placed = false;
    Steps scratch;
    for (const FrozenTrial& other : history.trials) {
      if (!placed && other.number > trial.number) {
        numbers.push_back(trial.number);
        append_loss(at->second, directions, losses);
        placed = true;
      }
      if (other.number == trial.number) continue;
      const Steps* steps = steps_of(other, history, scratch);
      if (steps == nullptr) continue;
      auto reached = steps->lower_bound(resource);
      if (reached == steps->end()) continue;
      numbers.push_back(other.number);
      append_loss(reached->second, directions, losses);
    }
    if (!placed) {
      numbers.push_back(trial.number);
      append_loss(at->second, directions, losses);
    }
    const size_t n = numbers.size();
    if (n <= static_cast<size_t>(options_.bootstrap_count)) return Decision::kStop;
    // The quota, raised to the rung's first front and the second front's boundary trials but
    // leaving floor(n / eta) to stop (mo_asha.h).
    const size_t eta = static_cast<size_t>(options_.reduction_factor);
    const size_t quota = std::max<size_t>(n / eta, 1);
    const size_t k = std::max(quota, std::min(first_front_and_boundary(losses, m), n - n / eta));
    const std::vector<double> feasible(n, 0.0);
    const std::vector<size_t> kept = nsga2_elite(losses, m, feasible, k);
    const bool in =
        std::any_of(kept.begin(), kept.end(), [&](size_t i) { return numbers[i] == trial.number; });
    if (!in) return Decision::kStop;
  }
  return Decision::kContinue;
}

}  // namespace tuner
