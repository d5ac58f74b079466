// GridSampler: the full factorial of a space whose every parameter can be enumerated.
//
// Categorical parameters give their choices, integers and stepped floats every point of their
// grid; with conditions, only the combinations in which each parameter is active are points.
// Each trial takes a point that no trial of the history has taken (running ones included, so
// parallel workers never share a point), chosen with the trial's Rng as Optuna does, so a seed
// fixes the order. When every point is taken the sampler is exhausted() and the study stops.
// Thread-safe (immutable after construction).
#ifndef TUNER_SEARCH_SAMPLERS_GRID_SAMPLER_H_
#define TUNER_SEARCH_SAMPLERS_GRID_SAMPLER_H_

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "search/samplers/sampler.h"

namespace tuner {

class GridSampler final : public Sampler {
 public:
  // Throws Error(kInvalidArgument) naming the parameter when one cannot be enumerated (a float
  // without a step, a normal prior) or when the grid has more than `max_points` points.
  explicit GridSampler(SearchSpace space, size_t max_points = 10'000'000);

  size_t size() const { return points_.size(); }
  const SearchSpace& space() const { return space_; }
  // The points, in enumeration order.
  const std::vector<Params>& points() const { return points_; }

  Params sample(const SearchSpace& space, const History& history, const TrialContext& trial,
                Rng& rng) override;
  // Only for parameters of the grid: the value of the point sample() chose is used instead.
  // Throws Error(kInvalidArgument) for any call, naming the parameter.
  ParamValue sample_independent(const std::string& name, const Distribution& distribution,
                                const History& history, const TrialContext& trial,
                                Rng& rng) override;
  SearchSpace relative_space(const History& history) override;
  bool exhausted(const History& history) const override;
  std::string name() const override { return "grid"; }

 private:
  // Indices of the points no trial other than `self` (a trial number, or -1) has taken.
  std::vector<size_t> untaken(const History& history, int self) const;

  SearchSpace space_;
  std::vector<Params> points_;
  std::unordered_map<std::string, size_t> index_;  // a point's key -> its index
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SAMPLERS_GRID_SAMPLER_H_
