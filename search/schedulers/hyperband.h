// HyperbandScheduler: Hyperband (Li et al., JMLR 2018) as brackets of asynchronous successive
// halving, as Optuna's HyperbandPruner runs it.
//
// Brackets. With R = max_resource, r = min_resource and eta = reduction_factor there are
//     n_brackets = floor(log_eta(R / r)) + 1
// brackets (computed exactly in integers). Bracket b is an AshaScheduler with
// min_early_stopping_rate = b and max_resource = R: bracket 0 stops most aggressively (first rung
// at r), the last one has its first rung at r * eta^(n_brackets - 1) <= R, and none at all when
// that equals R (it runs every trial to the end, as the last bracket of the paper does). Within
// a bracket, trials compete only with trials of the same bracket.
//
// Assignment of trials to brackets: a deterministic function of the trial number alone, so that
// a resumed study (and a sampler wanting the bracket's trials) recomputes it. Each bracket b gets
// Hyperband's budget B_b = ceil(n_brackets * eta^s / (s + 1)), s = n_brackets - 1 - b, the
// number of configurations the paper's bracket s starts with (as Optuna weighs its brackets).
// With T = sum of the budgets, trial number i goes to position q = (i mod T) * m mod T, where m is
// the integer nearest T * 0.618... (the golden ratio's fraction) that is coprime with T, and
// bracket b holds the positions [B_0 + ... + B_(b-1), B_0 + ... + B_b). Multiplying by m permutes
// the positions, so every T consecutive trial numbers hold exactly B_b trials of bracket b, and
// the golden-ratio stride interleaves the brackets instead of giving the first B_0 trials to
// bracket 0. (Optuna hashes the study name and number with CRC32 instead: its assignment is
// deterministic too but not balanced over a window.)
//
// The study's first direction is used. Thread-safe: constant after construction.
#ifndef TUNER_SEARCH_SCHEDULERS_HYPERBAND_H_
#define TUNER_SEARCH_SCHEDULERS_HYPERBAND_H_

#include <cstdint>
#include <vector>

#include "search/history.h"
#include "search/schedulers/asha.h"
#include "search/schedulers/scheduler.h"
#include "trials/frozen_trial.h"

namespace tuner {

struct HyperbandOptions {
  // The resource (step) of the lowest rung of the most aggressive bracket. Must be >= 1.
  // Default: 1.
  int64_t min_resource = 1;
  // REQUIRED: the budget of a whole trial, in the unit of the reported steps (e.g. the number of
  // epochs). Must be > min_resource, and the bracket budgets must fit in 2^62 (true whenever
  // max_resource / min_resource < 2^55). Default: 0 (unset, an error).
  int64_t max_resource = 0;
  // As AshaOptions::reduction_factor. Must be >= 2. Default: 3.
  int reduction_factor = 3;
  // As AshaOptions::bootstrap_count, in every bracket. Must be >= 0. Default: 0.
  int bootstrap_count = 0;
};

class HyperbandScheduler final : public Scheduler {
 public:
  // Throws Error(kInvalidArgument) naming the option ("hyperband.max_resource: ...").
  explicit HyperbandScheduler(const HyperbandOptions& options);

  Decision on_report(const FrozenTrial& trial, int64_t step, const History& history) const override;

  // The bracket of trial `trial_number`, in [0, n_brackets()). REQUIRES: trial_number >= 0.
  int bracket_of(int trial_number) const;

  int n_brackets() const { return static_cast<int>(brackets_.size()); }
  // The successive-halving scheduler of bracket `b`. REQUIRES: 0 <= b < n_brackets().
  const AshaScheduler& bracket(int b) const { return brackets_[static_cast<size_t>(b)]; }
  // B_b above. REQUIRES: 0 <= b < n_brackets().
  int64_t budget(int b) const { return budgets_[static_cast<size_t>(b)]; }

  const HyperbandOptions& options() const { return options_; }

 private:
  // Constant after construction.
  HyperbandOptions options_;
  std::vector<AshaScheduler> brackets_;
  std::vector<int64_t> budgets_;
  std::vector<int64_t> budget_ends_;  // budget_ends_[b] = B_0 + ... + B_b
  int64_t total_budget_ = 1;          // T
  int64_t stride_ = 1;                // m
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SCHEDULERS_HYPERBAND_H_
