#include "search/samplers/grid_sampler.h"

#include <cmath>

#include "trials/error.h"

namespace tuner {

namespace {

std::vector<ParamValue> enumerate(const ParamSpec& spec) {
  auto cannot = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, "grid: parameter '" + spec.name + "' " +
                                                  to_string(spec.distribution) +
                                                  " cannot be enumerated: " + why);
  };
  std::vector<ParamValue> values;
  if (const auto* c = std::get_if<CategoricalDistribution>(&spec.distribution)) {
    values = c->choices;
  } else if (const auto* i = std::get_if<IntDistribution>(&spec.distribution)) {
    for (int64_t v = i->low; v <= i->high; v += i->step) values.emplace_back(v);
  } else if (const auto* f = std::get_if<FloatDistribution>(&spec.distribution)) {
    if (!f->step) throw cannot("give the float a step");
    auto n = static_cast<int64_t>(std::llround((f->high - f->low) / *f->step));
    for (int64_t k = 0; k <= n; ++k) {
      values.push_back(
          from_internal(spec.distribution, f->low + static_cast<double>(k) * *f->step));
    }
  } else {
    throw cannot("a normal prior has no grid");
  }
  return values;
}

// A key that identifies a point by the values of the grid's parameters in `params`.
std::string point_key(const SearchSpace& space, const Params& params) {
  std::string key;
  for (const ParamSpec& spec : space.params()) {
    auto it = params.find(spec.name);
    if (it == params.end()) continue;
    key += spec.name;
    key += '=';
    key += std::to_string(it->second.index());
    key += to_string(it->second);
    key += '\x1f';
  }
  return key;
}

}  // namespace

GridSampler::GridSampler(SearchSpace space, size_t max_points) : space_(std::move(space)) {
  std::vector<std::vector<ParamValue>> values;
  for (const ParamSpec& spec : space_.params()) values.push_back(enumerate(spec));

  // Depth-first over the parameters in order; inactive ones do not branch.
  Params current;
  auto expand = [&](auto& self, size_t i) -> void {
    if (i == space_.params().size()) {
      if (points_.size() >= max_points) {
        throw Error(ErrorCode::kInvalidArgument,
                    "grid: more than " + std::to_string(max_points) + " points; narrow the space");
      }
      points_.push_back(current);
      return;
    }
    const ParamSpec& spec = space_.params()[i];
    if (!space_.is_active(spec, current)) return self(self, i + 1);
    for (const ParamValue& v : values[i]) {
      current[spec.name] = v;
      self(self, i + 1);
    }
    current.erase(spec.name);
  };
  expand(expand, 0);
  for (size_t i = 0; i < points_.size(); ++i) index_.emplace(point_key(space_, points_[i]), i);
}

std::vector<size_t> GridSampler::untaken(const History& history, int self) const {
  std::vector<bool> taken(points_.size(), false);
  for (const FrozenTrial& t : history.trials) {
    if (t.number == self || t.state == TrialState::kWaiting) continue;
    auto it = index_.find(point_key(space_, t.params));
    if (it != index_.end()) taken[it->second] = true;
  }
  std::vector<size_t> free;
  for (size_t i = 0; i < points_.size(); ++i) {
    if (!taken[i]) free.push_back(i);
  }
  return free;
}

Params GridSampler::sample(const SearchSpace& space, const History& history,
                           const TrialContext& trial, Rng& rng) {
  if (!(space == space_)) {
    throw Error(ErrorCode::kInvalidArgument,
                "grid: asked to sample a space other than the grid's own");
  }
  std::vector<size_t> free = untaken(history, trial.number);
  if (free.empty()) {
    throw Error(ErrorCode::kFailedPrecondition,
                "grid: all " + std::to_string(points_.size()) + " points have been taken");
  }
  return points_[free[static_cast<size_t>(rng.integer(0, static_cast<int64_t>(free.size()) - 1))]];
}

ParamValue GridSampler::sample_independent(const std::string& name,
                                           const Distribution& distribution, const History&,
                                           const TrialContext&, Rng&) {
  const ParamSpec* spec = space_.find(name);
  throw Error(ErrorCode::kInvalidArgument,
              "grid: parameter '" + name + "' " + to_string(distribution) +
                  (spec ? " differs from the grid's " + to_string(spec->distribution)
                        : std::string(" is not in the grid")));
}

SearchSpace GridSampler::relative_space(const History&) { return space_; }

bool GridSampler::exhausted(const History& history) const { return untaken(history, -1).empty(); }

}  // namespace tuner
