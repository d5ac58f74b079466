// Nsga2Sampler: NSGA-II (Deb et al. 2002, "A fast and elitist multiobjective genetic algorithm"),
// as Optuna's NSGAIISampler (docs/samplers.md, "Several objectives").
//
// - Generations from trial numbers: trial t belongs to generation t / population_size. Generation
//   0 is drawn at random (RandomSampler::draw).
// - The parents of generation g are the elite of generation g - 1's COMPLETE trials together with
//   generation g - 1's parents: whole fronts by rank (search/pareto.h) while they fit in
//   population_size, then the members of the next front of largest crowding distance (ties by
//   trial number). They are computed from the history at each call, from the trials finished by
//   then (with parallel workers, a generation's first children may see fewer parents than its
//   last), and remembered by the trial ids they came from (a pool of the same trials: the same
//   parents; like TpeSampler's cache, this assumes that the histories one sampler is given belong
//   to one study).
// - A child: with crossover_prob, a crossover of two parents, each the winner of a binary
//   tournament (two parents drawn at random, the one that constrained-dominates wins, else the
//   second); else a copy of a parent drawn at random. Then each parameter is mutated (resampled
//   from its distribution at random) with mutation_prob (default 1 / the number of parameters).
// - Crossover: uniform (each parameter from either parent, the first with swapping_prob), or SBX
//   (simulated binary crossover, bounded, on float and int parameters in their internal
//   representation, log-scaled where the distribution is, widened by half a step on stepped ones;
//   categorical and normal parameters cross uniformly).
// - Constraints (trials/constraints.h): ranks and tournaments by constrained domination (feasible
//   first; of two infeasible, the smaller total violation).
// - Which parameters: those every COMPLETE trial has with the same distribution (relative_space(),
//   Optuna's IntersectionSearchSpace); the others, conditional ones and single-valued ones are
//   drawn at random.
//
// Thread-safe. Deterministic: the same history, trial and Rng give the same values.
#ifndef TUNER_SEARCH_SAMPLERS_NSGA2_SAMPLER_H_
#define TUNER_SEARCH_SAMPLERS_NSGA2_SAMPLER_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "search/samplers/sampler.h"

namespace tuner {

enum class Nsga2Crossover {
  kUniform,  // each parameter from one parent or the other (Optuna's UniformCrossover)
  kSbx,      // simulated binary crossover (Optuna's SBXCrossover)
};

struct Nsga2Options {
  // Trials a generation. REQUIRES >= 2. Default: 50.
  int population_size = 50;
  // Probability that a child is a crossover of two parents rather than a copy of one.
  // REQUIRES in [0, 1]. Default: 0.9.
  double crossover_prob = 0.9;
  Nsga2Crossover crossover = Nsga2Crossover::kUniform;
  // Uniform crossover (and, with SBX, categorical and normal parameters): the probability that a
  // parameter comes from the first parent. REQUIRES in [0, 1]. Default: 0.5.
  double swapping_prob = 0.5;
  // Probability that each parameter of a child is resampled at random. REQUIRES in [0, 1] when
  // set. Default (empty): 1 / the number of parameters crossed.
  std::optional<double> mutation_prob;
  // SBX: the distribution index (larger keeps children nearer their parents). REQUIRES >= 0 when
  // set. Default (empty): 20 with several objectives, 2 with one (as Optuna).
  std::optional<double> sbx_eta;
  // SBX: per parameter, the probability of taking the SBX children's values rather than the
  // parents', and of swapping the two. REQUIRES in [0, 1]. Defaults: 0.5 and 0.5.
  double sbx_use_child_gene_prob = 0.5;
  double sbx_uniform_crossover_prob = 0.5;
};

// The crowding distance of each of n points (m objectives, row-major): for each objective with
// more than one value, the gap between a point's neighbours in it over the objective's range
// (the outermost points: infinite), summed over the objectives.
std::vector<double> crowding_distances(std::span<const double> points, size_t m);

// NSGA-II's elite of n points (loss vectors, m objectives, row-major; `violations`: each one's
// total constraint violation, 0 when feasible): whole ranks by constrained domination while they
// fit in `size`, then the rest by crowding distance within the next rank (largest first, ties to
// the lower index). Returns the indices, ascending; all of them when n <= size.
std::vector<size_t> nsga2_elite(std::span<const double> points, size_t m,
                                std::span<const double> violations, size_t size);

class Nsga2Sampler final : public Sampler {
 public:
  // Throws Error(kInvalidArgument) naming the field when an option is out of range.
  explicit Nsga2Sampler(Nsga2Options options = {});

  Params sample(const SearchSpace& space, const History& history, const TrialContext& trial,
                Rng& rng) override;
  // At random (the parameters NSGA-II does not cross).
  ParamValue sample_independent(const std::string& name, const Distribution& distribution,
                                const History& history, const TrialContext& trial,
                                Rng& rng) override;
  SearchSpace relative_space(const History& history) override;

  const Nsga2Options& options() const { return options_; }
  std::string name() const override { return "nsga2"; }

  // The numbers of the parents of generation `generation` in `history`, ascending (empty for
  // generation 0).
  std::vector<int> parents(const History& history, int generation) const;

 private:
  // One generation's parents, and the trial ids of the pool they were chosen from (the objective
  // count first): a pool of the same trials gives the same parents.
  struct Memo {
    std::vector<int64_t> pool_ids;
    std::vector<int> parents;
  };

  // Constant after construction.
  const Nsga2Options options_;

  mutable std::mutex mutex_;
  // State below is protected by mutex_.
  mutable std::vector<Memo> memo_;  // by generation
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SAMPLERS_NSGA2_SAMPLER_H_
