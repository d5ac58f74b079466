#include "search/samplers/auto_sampler.h"

#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "search/samplers/multi_fidelity/budget_targets.h"
#include "trials/error.h"

namespace tuner {
namespace {

// True when the COMPLETE trials do not all have the same parameter names: the objective branches
// (define-by-run), so one model of a fixed set of coordinates does not fit it.
bool trials_branch(const History& history) {
  const FrozenTrial* first = nullptr;
  for (const FrozenTrial& t : history.trials) {
    if (t.state != TrialState::kComplete) continue;
    if (first == nullptr) {
      first = &t;
      continue;
    }
    if (t.params.size() != first->params.size()) return true;
    for (const auto& [name, value] : t.params) {
      if (!first->params.contains(name)) return true;
    }
  }
  return false;
}

// The finished trials a delegate learns from; a warm start's observations (History::prior) count
// as finished trials: both delegates learn from them.
int finished_trials(const History& history) {
  int finished = 0;
  for (std::span<const FrozenTrial> trials : {history.prior, history.trials}) {
    for (const FrozenTrial& t : trials) finished += is_finished(t.state);
  }
  return finished;
}

// True when a PRUNED trial reported an intermediate value: a value at a lower budget that
// BudgetTargetHistory can carry to the largest one.
bool has_pruned_steps(const History& history) {
  for (const FrozenTrial& t : history.trials) {
    if (t.state == TrialState::kPruned && !t.intermediate_values.empty()) return true;
  }
  return false;
}

// True when `a` and `b` agree in everything but their state and values.
bool same_but_outcome(const FrozenTrial& a, const FrozenTrial& b) {
  return a.trial_id == b.trial_id && a.number == b.number && a.params == b.params &&
         a.distributions == b.distributions && a.intermediate_values == b.intermediate_values &&
         a.user_attrs == b.user_attrs && a.system_attrs == b.system_attrs &&
         a.datetime_start == b.datetime_start && a.datetime_complete == b.datetime_complete;
}

}  // namespace

AutoSampler::AutoSampler(AutoSamplerOptions options)
    : options_(std::move(options)),
      gp_(std::make_unique<GpSampler>(options_.gp)),
      tpe_(std::make_unique<TpeSampler>(options_.tpe)) {
  if (options_.max_gp_params < 1 || options_.max_gp_trials < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "AutoSampler: max_gp_params must be >= 1 and max_gp_trials >= 0 (got " +
                    std::to_string(options_.max_gp_params) + " and " +
                    std::to_string(options_.max_gp_trials) + ")");
  }
}

Sampler& AutoSampler::choose(const SearchSpace* space, const History& history) const {
  if (space != nullptr &&
      (space->has_conditions() || static_cast<int>(space->size()) > options_.max_gp_params)) {
    return *tpe_;
  }
  // Whether trials branch is the study's own trials' matter: the GP imputes what an observation
  // of the warm start lacks.
  int complete = 0, pruned = 0;
  for (std::span<const FrozenTrial> trials : {history.prior, history.trials}) {
    for (const FrozenTrial& t : trials) {
      complete += t.state == TrialState::kComplete;
      pruned += t.state == TrialState::kPruned;
    }
  }
  // The GP learns from COMPLETE trials only; TPE also ranks PRUNED ones by how far they got.
  if (finished_trials(history) >= options_.max_gp_trials || pruned > complete) return *tpe_;
  if (trials_branch(history)) return *tpe_;
  return *gp_;
}

AutoSampler::Choice::Choice(Sampler& delegate, const History& seen)
    : sampler(delegate), history(seen) {}

AutoSampler::Choice::Choice(Sampler& delegate, const History& seen,
                            std::shared_ptr<const BudgetTargetHistory> budget_targets)
    : sampler(delegate), targets(std::move(budget_targets)), history(seen) {
  history.trials = targets->trials();
}

AutoSampler::Choice::~Choice() = default;

std::shared_ptr<const BudgetTargetHistory> AutoSampler::targets_of(const History& history) const {
  {
    std::lock_guard lock(cache_mutex_);
    const std::span<const FrozenTrial> cached =
        cache_.targets ? cache_.targets->trials() : std::span<const FrozenTrial>();
    bool same = cache_.targets && cache_.direction == history.direction() &&
                cached.size() == history.trials.size();
    for (size_t i = 0; same && i < cached.size(); ++i) {
      const FrozenTrial& t = history.trials[i];
      same = cache_.outcomes[i].first == t.state && cache_.outcomes[i].second == t.values &&
             same_but_outcome(cached[i], t);
    }
    if (same) return cache_.targets;
  }
  // Built outside the lock: concurrent asks of other histories do not wait on each other.
  auto targets = std::make_shared<const BudgetTargetHistory>(history);
  TargetCache fresh{targets, history.direction(), {}};
  fresh.outcomes.reserve(history.trials.size());
  for (const FrozenTrial& t : history.trials) fresh.outcomes.emplace_back(t.state, t.values);
  std::lock_guard lock(cache_mutex_);
  cache_ = std::move(fresh);
  return targets;
}

AutoSampler::Choice AutoSampler::choose_with_targets(const SearchSpace* space,
                                                     const History& history) const {
  // Past max_gp_trials the GP is not chosen with or without targets: no copy of the history.
  if (options_.multi_fidelity && history.directions.size() == 1 &&
      finished_trials(history) < options_.max_gp_trials && has_pruned_steps(history)) {
    std::shared_ptr<const BudgetTargetHistory> targets = targets_of(history);
    History view = history;
    view.trials = targets->trials();
    if (&choose(space, view) == gp_.get()) {
      // With the budget as the GP's input it learns from the rungs' values themselves.
      if (options_.gp.budget_input) return Choice(*gp_, history);
      return Choice(*gp_, history, std::move(targets));
    }
  }
  return Choice(choose(space, history), history);
}

Params AutoSampler::sample(const SearchSpace& space, const History& history,
                           const TrialContext& trial, Rng& rng) {
  const Choice c = choose_with_targets(&space, history);
  return c.sampler.sample(space, c.history, trial, rng);
}

ParamValue AutoSampler::sample_independent(const std::string& name,
                                           const Distribution& distribution, const History& history,
                                           const TrialContext& trial, Rng& rng) {
  const Choice c = choose_with_targets(nullptr, history);
  return c.sampler.sample_independent(name, distribution, c.history, trial, rng);
}

SearchSpace AutoSampler::relative_space(const History& history) {
  const Choice c = choose_with_targets(nullptr, history);
  SearchSpace space = c.sampler.relative_space(c.history);
  if (&c.sampler == gp_.get() && &choose_with_targets(&space, history).sampler != gp_.get()) {
    return tpe_->relative_space(history);
  }
  return space;
}

std::string AutoSampler::origin(const SearchSpace& space, const History& history) const {
  const Choice c = choose_with_targets(&space, history);
  return c.sampler.origin(space, c.history);
}

std::string AutoSampler::delegate(const SearchSpace& space, const History& history) const {
  return choose_with_targets(&space, history).sampler.name();
}

}  // namespace tuner
