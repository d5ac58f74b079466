#include "search/samplers/sampler.h"

namespace tuner {

Params Sampler::sample(const SearchSpace& space, const History& history, const TrialContext& trial,
                       Rng& rng) {
  Params params;
  for (const auto& spec : space.params()) {
    if (!space.is_active(spec, params)) continue;
    params.emplace(spec.name,
                   sample_independent(spec.name, spec.distribution, history, trial, rng));
  }
  return params;
}

SearchSpace Sampler::relative_space(const History&) { return {}; }

std::string Sampler::name() const { return "custom"; }

std::string Sampler::origin(const SearchSpace&, const History&) const { return name(); }

bool Sampler::exhausted(const History&) const { return false; }

}  // namespace tuner
