#include "search/samplers/auto_sampler.h"

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

AutoSampler::Choice::Choice(Sampler& sampler, const History& history)
    : sampler(sampler), history(history) {}

AutoSampler::Choice::Choice(Sampler& sampler, std::unique_ptr<BudgetTargetHistory> targets)
    : sampler(sampler), targets(std::move(targets)), history(this->targets->history()) {}

AutoSampler::Choice::~Choice() = default;

AutoSampler::Choice AutoSampler::choose_with_targets(const SearchSpace* space,
                                                     const History& history) const {
  // Past max_gp_trials the GP is not chosen with or without targets: no copy of the history.
  if (options_.multi_fidelity && history.directions.size() == 1 &&
      finished_trials(history) < options_.max_gp_trials && has_pruned_steps(history)) {
    auto targets = std::make_unique<BudgetTargetHistory>(history);
    if (&choose(space, targets->history()) == gp_.get()) return Choice(*gp_, std::move(targets));
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
