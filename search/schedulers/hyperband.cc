#include "search/schedulers/hyperband.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "trials/error.h"

namespace tuner {

namespace {

// The total budget T is kept at or below this so that sums of positions fit in int64_t.
constexpr int64_t kMaxTotalBudget = int64_t{1} << 62;

// a * b mod m without overflow. REQUIRES: 0 <= a, b < m <= kMaxTotalBudget.
int64_t multiply_mod(int64_t a, int64_t b, int64_t m) {
  int64_t result = 0;
  for (; b > 0; b >>= 1) {
    if (b & 1) result = (result + a) % m;
    a = (a * 2) % m;
  }
  return result;
}

Error invalid(std::string_view option, const std::string& message) {
  return Error(ErrorCode::kInvalidArgument, "hyperband." + std::string(option) + ": " + message);
}

}  // namespace

HyperbandScheduler::HyperbandScheduler(const HyperbandOptions& options) : options_(options) {
  if (options.min_resource < 1) {
    throw invalid("min_resource", "must be >= 1, got " + std::to_string(options.min_resource));
  }
  if (options.max_resource <= options.min_resource) {
    throw invalid("max_resource", "required, must be > min_resource (" +
                                      std::to_string(options.min_resource) + "), got " +
                                      std::to_string(options.max_resource));
  }
  if (options.reduction_factor < 2) {
    throw invalid("reduction_factor",
                  "must be >= 2, got " + std::to_string(options.reduction_factor));
  }
  if (options.bootstrap_count < 0) {
    throw invalid("bootstrap_count",
                  "must be >= 0, got " + std::to_string(options.bootstrap_count));
  }

  // eta^s for s = 0 .. s_max, the largest s with min_resource * eta^s <= max_resource.
  const int64_t eta = options.reduction_factor;
  const int64_t ratio = options.max_resource / options.min_resource;  // floor(R / r) >= 1
  std::vector<int64_t> powers{1};
  while (powers.back() <= ratio / eta) powers.push_back(powers.back() * eta);
  const int n = static_cast<int>(powers.size());
  auto too_large = [&] {
    return invalid("max_resource", "max_resource / min_resource = " + std::to_string(ratio) +
                                       " is too large for reduction_factor " + std::to_string(eta) +
                                       "; raise min_resource");
  };

  for (int b = 0; b < n; ++b) {
    brackets_.emplace_back(AshaOptions{
        .min_resource = options.min_resource,
        .reduction_factor = options.reduction_factor,
        .max_resource = options.max_resource,
        .min_early_stopping_rate = b,
        .bootstrap_count = options.bootstrap_count,
    });
    const int s = n - 1 - b;
    const int64_t configs = powers[static_cast<size_t>(s)];
    int64_t product = 0;
    if (__builtin_mul_overflow(configs, int64_t{n}, &product)) throw too_large();
    budgets_.push_back(product / (s + 1) + (product % (s + 1) != 0));  // ceil(n eta^s / (s+1))
  }
  int64_t end = 0;
  for (int64_t budget : budgets_) {
    if (__builtin_add_overflow(end, budget, &end) || end > kMaxTotalBudget) throw too_large();
    budget_ends_.push_back(end);
  }
  total_budget_ = end;
  stride_ = std::max<int64_t>(
      1, std::llround(static_cast<double>(total_budget_) * (std::sqrt(5.0) - 1.0) / 2.0));
  while (std::gcd(stride_, total_budget_) != 1) ++stride_;
}

int HyperbandScheduler::bracket_of(int trial_number) const {
  const int64_t position =
      multiply_mod(int64_t{trial_number} % total_budget_, stride_ % total_budget_, total_budget_);
  auto it = std::upper_bound(budget_ends_.begin(), budget_ends_.end(), position);
  return static_cast<int>(it - budget_ends_.begin());
}

Decision HyperbandScheduler::on_report(const FrozenTrial& trial, int64_t step,
                                       const History& history) const {
  const int b = bracket_of(trial.number);
  return brackets_[static_cast<size_t>(b)].on_report_among(
      trial, step, history,
      [this, b](const FrozenTrial& other) { return bracket_of(other.number) == b; });
}

}  // namespace tuner
