#include "search/patience.h"

#include <cmath>
#include <limits>
#include <string>

#include "trials/error.h"

namespace tuner {

namespace {

Error invalid(std::string_view option, const std::string& message) {
  return Error(ErrorCode::kInvalidArgument, "patience." + std::string(option) + ": " + message);
}

}  // namespace

PatienceStopping::PatienceStopping(const PatienceOptions& options) : options_(options) {
  if (options.patience < 1) {
    throw invalid("patience", "required, must be >= 1, got " + std::to_string(options.patience));
  }
  if (!(options.min_delta >= 0.0) || !std::isfinite(options.min_delta)) {
    throw invalid("min_delta", "must be finite and >= 0, got " + std::to_string(options.min_delta));
  }
  if (options.n_warmup_steps < 0) {
    throw invalid("n_warmup_steps", "must be >= 0, got " + std::to_string(options.n_warmup_steps));
  }
}

Decision PatienceStopping::on_report(const FrozenTrial& trial, int64_t step,
                                     const History& history) const {
  if (step < options_.n_warmup_steps) return Decision::kContinue;
  const bool maximize = history.direction() == StudyDirection::kMaximize;
  // Losses: lower is better; non-finite values are the worst.
  double best = std::numeric_limits<double>::infinity();
  int without_improvement = 0;
  bool first = true;
  for (auto it = trial.intermediate_values.begin();
       it != trial.intermediate_values.end() && it->first <= step; ++it) {
    const double loss = !std::isfinite(it->second) ? std::numeric_limits<double>::infinity()
                        : maximize                 ? -it->second
                                                   : it->second;
    if (first) {
      best = loss;
      first = false;
    } else if (loss < best - options_.min_delta) {
      best = loss;
      without_improvement = 0;
    } else {
      ++without_improvement;
    }
  }
  return without_improvement >= options_.patience ? Decision::kStop : Decision::kContinue;
}

}  // namespace tuner
