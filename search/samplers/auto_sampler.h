// AutoSampler: picks the GP or TPE for each proposal from the space and the study so far
// (docs/samplers.md, "auto"). The default sampler of new studies.
//
// The GP (GpSampler) models an unconditional space of a few parameters far better than TPE does
// when trials are few, with one objective or several (one GP each, expected hypervolume
// improvement); TPE (TpeSampler, multivariate; multi-objective TPE for several objectives)
// handles conditional spaces, many dimensions and long studies, where the GP's one model of the
// whole space fits badly or costs too much. The rule, chosen on the benchmark suites (bench/suite,
// and bench/mo for several objectives):
// - TPE when the space has conditions, or when the COMPLETE trials do not all have the same
//   parameters (a define-by-run study whose objective branches);
// - TPE when the space has more than max_gp_params parameters;
// - TPE once max_gp_trials trials are finished (past the GP's fit window it would forget trials
//   that TPE still uses);
// - TPE when more trials are PRUNED than COMPLETE, unless multi_fidelity gives the GP their
//   values (an early-stopping scheduler's rungs, carried to the largest budget:
//   search/samplers/multi_fidelity/budget_targets.h);
// - the GP otherwise.
// Both delegates see the whole history, so a switch from one to the other loses nothing; a warm
// start's observations (History::prior) count among the finished trials. Each
// trial records the delegate that proposed it ("gp" or "tpe", "random" for the delegate's
// startup trials) as its origin. Deterministic and
// thread-safe as its delegates are.
#ifndef TUNER_SEARCH_SAMPLERS_AUTO_SAMPLER_H_
#define TUNER_SEARCH_SAMPLERS_AUTO_SAMPLER_H_

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "search/samplers/gp/gp_sampler.h"
#include "search/samplers/sampler.h"
#include "search/samplers/tpe/tpe_sampler.h"

namespace tuner {

struct AutoSamplerOptions {
  // Default: 40, the most parameters the benchmark suites try, where the GP still did better than
  // TPE.
  int max_gp_params = 40;
  int max_gp_trials = 200;
  // Under early stopping (a PRUNED trial with intermediate values; one objective), give the GP
  // every finished trial: a PRUNED one at the value expected at the study's largest budget
  // (search/samplers/multi_fidelity/budget_targets.h), instead of handing a study whose trials
  // are mostly PRUNED to TPE. Default: true. With gp.budget_input, the GP chosen so is given
  // the trials as they are and models the budget as an input instead
  // (GpSamplerOptions::budget_input); the targets only decide whether it is chosen.
  bool multi_fidelity = true;
  GpSamplerOptions gp;
  TpeOptions tpe;
};

class BudgetTargetHistory;

class AutoSampler final : public Sampler {
 public:
  // Throws Error(kInvalidArgument) when an option is out of range (as TpeSampler's do).
  explicit AutoSampler(AutoSamplerOptions options = {});

  Params sample(const SearchSpace& space, const History& history, const TrialContext& trial,
                Rng& rng) override;
  ParamValue sample_independent(const std::string& name, const Distribution& distribution,
                                const History& history, const TrialContext& trial,
                                Rng& rng) override;
  SearchSpace relative_space(const History& history) override;
  std::string name() const override { return "auto"; }
  // The delegate's origin: "random" for its startup trials, else "gp" or "tpe".
  std::string origin(const SearchSpace& space, const History& history) const override;
  // The name of the delegate that proposes over `space` from `history`: "gp" or "tpe".
  std::string delegate(const SearchSpace& space, const History& history) const;

 private:
  // The delegate for a proposal over `space` (null: a parameter sampled on its own, whose space
  // is not known) from `history`.
  Sampler& choose(const SearchSpace* space, const History& history) const;

  // A delegate and the history it sees: the caller's, or with multi_fidelity, when the GP is
  // chosen under early stopping, the caller's with `targets`' trials (held here).
  struct Choice {
    Choice(Sampler& sampler, const History& history);
    Choice(Sampler& sampler, const History& history,
           std::shared_ptr<const BudgetTargetHistory> targets);
    ~Choice();
    Sampler& sampler;
    std::shared_ptr<const BudgetTargetHistory> targets;
    History history;
  };
  // choose() with multi_fidelity.
  Choice choose_with_targets(const SearchSpace* space, const History& history) const;
  // The budget targets of `history`'s trials: the last ones built when the trials are the same
  // (the calls of one ask see one history), else new ones.
  std::shared_ptr<const BudgetTargetHistory> targets_of(const History& history) const;

  AutoSamplerOptions options_;
  std::unique_ptr<GpSampler> gp_;
  std::unique_ptr<TpeSampler> tpe_;

  // The last budget targets built (only their trials() are read: their history() borrowed the
  // caller's), and the states and values of the trials they were built from (the targets'
  // trials differ from those in nothing else).
  struct TargetCache {
    std::shared_ptr<const BudgetTargetHistory> targets;
    StudyDirection direction = StudyDirection::kMinimize;
    std::vector<std::pair<TrialState, std::vector<double>>> outcomes;
  };
  mutable std::mutex cache_mutex_;
  mutable TargetCache cache_;
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SAMPLERS_AUTO_SAMPLER_H_
