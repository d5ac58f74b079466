#include "search/schedulers/patience.h"

#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <string>

#include "trials/error.h"

namespace tuner {

namespace {

Error invalid(std::string_view option, const std::string& message) {
  return Error(ErrorCode::kInvalidArgument, "patience." + std::string(option) + ": " + message);
}

// What PatienceStopping keeps in a trial's ReportMemo: where the walk over the trial's values
// stands after the values at steps <= `through` (`scanned` of them).
struct Walk {
  bool valid = false;
  int64_t trial_id = -1;
  int64_t through = 0;
  size_t scanned = 0;
  double best = std::numeric_limits<double>::infinity();
  int without_improvement = 0;
};

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
  ReportMemo memo;
  return on_report_memoized(trial, step, history, memo);
}

Decision PatienceStopping::on_report_memoized(const FrozenTrial& trial, int64_t step,
                                              const History& history, ReportMemo& memo) const {
  if (step < options_.n_warmup_steps) return Decision::kContinue;
  const bool maximize = history.direction() == StudyDirection::kMaximize;
  const auto& values = trial.intermediate_values;
  const auto end = values.upper_bound(step);
  // Walks the values from `from` to `end` in step order on top of `walk`.
  auto advance = [&](Walk& walk, std::map<int64_t, double>::const_iterator from) {
    for (auto it = from; it != end; ++it, ++walk.scanned) {
      // Losses: lower is better; non-finite values are the worst.
      const double loss = !std::isfinite(it->second) ? std::numeric_limits<double>::infinity()
                          : maximize                 ? -it->second
                                                     : it->second;
      if (walk.scanned == 0) {
        walk.best = loss;
      } else if (loss < walk.best - options_.min_delta) {
        walk.best = loss;
        walk.without_improvement = 0;
      } else {
        ++walk.without_improvement;
      }
    }
    walk.through = step;
  };
  Walk& m = memo.get<Walk>();
  bool extended = false;
  if (m.valid && m.trial_id == trial.trial_id && m.through <= step) {
    Walk walk = m;
    advance(walk, values.upper_bound(m.through));
    // Values added below `through` since the memo was made change the count: walk again.
    if (walk.scanned + static_cast<size_t>(std::distance(end, values.end())) == values.size()) {
      m = walk;
      extended = true;
    }
  }
  if (!extended) {
    Walk walk{.valid = true, .trial_id = trial.trial_id};
    advance(walk, values.begin());
    m = walk;
  }
  return m.without_improvement >= options_.patience ? Decision::kStop : Decision::kContinue;
}

}  // namespace tuner
