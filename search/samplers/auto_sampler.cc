#include "search/samplers/auto_sampler.h"

#include <span>
#include <string>

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
  // A warm start's observations (History::prior) count as finished trials: both delegates
  // learn from them. Whether trials branch is the study's own trials' matter: the GP imputes
  // what an observation of the warm start lacks.
  int complete = 0, pruned = 0, finished = 0;
  for (std::span<const FrozenTrial> trials : {history.prior, history.trials}) {
    for (const FrozenTrial& t : trials) {
      complete += t.state == TrialState::kComplete;
      pruned += t.state == TrialState::kPruned;
      finished += is_finished(t.state);
    }
  }
  // The GP learns from COMPLETE trials only; TPE also ranks PRUNED ones by how far they got.
  if (finished >= options_.max_gp_trials || pruned > complete) return *tpe_;
  if (trials_branch(history)) return *tpe_;
  return *gp_;
}

Params AutoSampler::sample(const SearchSpace& space, const History& history,
                           const TrialContext& trial, Rng& rng) {
  return choose(&space, history).sample(space, history, trial, rng);
}

ParamValue AutoSampler::sample_independent(const std::string& name,
                                           const Distribution& distribution, const History& history,
                                           const TrialContext& trial, Rng& rng) {
  return choose(nullptr, history).sample_independent(name, distribution, history, trial, rng);
}

SearchSpace AutoSampler::relative_space(const History& history) {
  Sampler& delegate = choose(nullptr, history);
  SearchSpace space = delegate.relative_space(history);
  if (&delegate == gp_.get() && &choose(&space, history) != gp_.get()) {
    return tpe_->relative_space(history);
  }
  return space;
}

std::string AutoSampler::origin(const SearchSpace& space, const History& history) const {
  return choose(&space, history).origin(space, history);
}

std::string AutoSampler::delegate(const SearchSpace& space, const History& history) const {
  return choose(&space, history).name();
}

}  // namespace tuner
