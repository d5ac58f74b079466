// PbtScheduler: population-based training (Jaderberg et al., "Population Based Training of Neural
// Networks", 2017); Ray Tune's PopulationBasedTraining, Katib's PBT. docs/schedulers.md, "PBT".
//
// A population of population_size members trains together. Each member runs in segments of
// perturbation_interval steps, one trial per segment (a trial's params are fixed, as Optuna's
// are): segment k covers the steps (k * I, (k + 1) * I], I = perturbation_interval, and its trial
// reports its values at those global steps. At its segment's end (segment_end(): the step
// (k + 1) * I, or max_steps when that comes first) on_report() answers kPause: the job saves its
// checkpoint and ends, and the coordinator stores the trial COMPLETE with its value there.
//
// Then, for every member at a segment's end, next_segments() decides its next segment:
//   - Ranking. A member at the end of segment k is ranked among the members whose segment k
//     finished at its end (the same step: members ahead count by their segment k), by their
//     value there (the study's first direction; a non-finite value is the worst; ties by member
//     index). With n ranked, q = ceil(n * quantile), at most floor(n / 2).
//   - Exploit. A member among the q worst copies one of the q best, drawn uniformly: the next
//     segment starts from that segment k trial's checkpoint, with its params, then explores
//     them. With fewer than 2 ranked (q == 0) nobody exploits. So every segment k + 1 starts
//     from a checkpoint at the end of a segment k, whoever's.
//   - Explore. Each param of the copied params, by the distribution its trial stored: with
//     probability resample_probability drawn again from the distribution's prior
//     (RandomSampler::draw); otherwise perturbed. A number is multiplied by one of
//     perturbation_factors (uniformly drawn), clipped to [low, high] and rounded to the
//     distribution's step (an integer that the rounding leaves unchanged moves one step in the
//     factor's direction, within bounds); a categorical moves to a neighbouring choice in its
//     declared order (either one, at random, or the only one at an end); a normal prior is
//     multiplied and rounded to its q. A param with a single choice keeps it.
//     With explore kBandit (PB2, search/schedulers/pb2.h), the bounded numeric params are
//     chosen by PB2's GP bandit instead (Pb2Model: fitted once per call and start step, the
//     members decided together share it), from the improvement every finished segment made; the
//     other params are explored as above. With fewer than kPb2MinObservations finished segments
//     to learn from, all are explored as above.
//   - Continue. Any other member continues from its own checkpoint with its own params.
// Asynchronous (the default): each member is decided when it reaches a segment's end, ranked
// against the others that reached that end. Synchronous: nothing is decided until every live
// member (all population_size started, none ended) is at a segment's end; then all are decided
// at once.
//
// A member ends when a segment of it ends otherwise: its job ended by itself before the segment's
// end (COMPLETE below it), at max_steps, PRUNED, or FAIL without a re-run. A lost segment's
// re-run (the coordinator's, with the failed attempt's attributes) takes its place.
//
// Everything is a function of the stored trials and the seed: the member, segment and parent
// attributes below, the trials' states, values and params. Member m's segment s draws from
// Rng::for_trial(seed ^ f(m), s), and PB2's fit for segment s from Rng::for_trial(seed ^ c, s), so
// a coordinator that restarts decides as it would have.
//
// Thread-safe: constant after construction.
#ifndef TUNER_SEARCH_SCHEDULERS_PBT_H_
#define TUNER_SEARCH_SCHEDULERS_PBT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "search/history.h"
#include "search/rng.h"
#include "search/schedulers/pb2.h"
#include "search/schedulers/scheduler.h"
#include "trials/distribution.h"
#include "trials/frozen_trial.h"
#include "trials/param_value.h"

namespace tuner {

// tuner's own trial system attributes of a PBT segment, each a JSON integer: the member (0 to
// population_size - 1), the segment (0, 1, ...), and the number of the trial whose checkpoint it
// started from (its member's previous segment, or the exploited member's; absent for segment 0).
inline constexpr char kPbtMemberAttr[] = "tuner:pbt_member";
inline constexpr char kPbtSegmentAttr[] = "tuner:pbt_segment";
inline constexpr char kPbtParentAttr[] = "tuner:pbt_parent";

// How an exploiting member explores the params it copied.
enum class PbtExplore {
  kPerturb,  // PBT: each param perturbed or drawn again, at random
  kBandit,   // PB2: the bounded numeric params chosen by a GP bandit (search/schedulers/pb2.h)
};

struct PbtOptions {
  // Members that train together. Must be >= 2. Default: 4.
  int population_size = 4;
  // Steps per segment, in the unit of the reported steps (epochs, batches). Must be >= 1.
  // Default: 0 (unset, an error).
  int64_t perturbation_interval = 0;
  // The fraction of the ranked members that is the top (and the bottom). In (0, 0.5].
  // Default: 0.25.
  double quantile = 0.25;
  // The chance that a param is drawn again instead of perturbed when exploring. In [0, 1].
  // Default: 0.25.
  double resample_probability = 0.25;
  // What a numeric param is multiplied by when perturbed. Non-empty, each finite and > 0.
  // Default: {0.8, 1.2}.
  std::vector<double> perturbation_factors = {0.8, 1.2};
  // Decide every member at once when all reached a segment's end. Default: false.
  bool synchronous = false;
  // Seeds the exploit and explore draws. Default: 0.
  uint64_t seed = 0;
  // The steps of a whole member: its last segment ends there and no next one is made. Must be
  // >= 1. Default: unset (a member ends when its job ends by itself).
  std::optional<int64_t> max_steps;
  // How an exploiting member explores. Default: kPerturb.
  PbtExplore explore = PbtExplore::kPerturb;
  // kBandit: the weight of the GP's standard deviation in the upper confidence bound that chooses
  // the params (mean + kappa * sd). Finite and >= 0. Default: 1.
  double kappa = 1.0;
};

// A segment trial's place in the population, as its system attributes say.
struct PbtLineage {
  int member = 0;
  int segment = 0;
  std::optional<int> parent;  // the trial whose checkpoint it starts from; none for segment 0
  bool operator==(const PbtLineage&) const = default;
};

// The lineage of `trial`; nullopt for a trial without (or with malformed) PBT attributes.
std::optional<PbtLineage> pbt_lineage(const FrozenTrial& trial);
// The system attributes (key, JSON text) that record `lineage`.
std::map<std::string, std::string, std::less<>> pbt_attrs(const PbtLineage& lineage);

// A member's next segment, as next_segments() decides it.
struct PbtNextSegment {
  PbtLineage lineage;      // its parent always set
  bool exploited = false;  // the parent is another member's segment
  Params params;           // the segment's params (explored when exploited)
  bool operator==(const PbtNextSegment&) const = default;
};

class PbtScheduler final : public Scheduler {
 public:
  // Throws Error(kInvalidArgument) naming the option ("pbt.quantile: ...", or "pb2.quantile: ..."
  // with explore kBandit).
  explicit PbtScheduler(PbtOptions options);

  // kPause when `trial` is a PBT segment and step >= segment_end(its segment); kContinue
  // otherwise (a trial without PBT attributes always continues).
  Decision on_report(const FrozenTrial& trial, int64_t step, const History& history) const override;

  // The last step of segment `segment`: min((segment + 1) * perturbation_interval, max_steps).
  int64_t segment_end(int segment) const;

  // The next segment of every member that finished a segment at its end and has none after it
  // yet, by member; empty when none is due (synchronous: until all live members are due).
  std::vector<PbtNextSegment> next_segments(const History& history) const;

  // The members `history` has started: one more than the highest member index, 0 for none.
  static int members(const History& history);

  // `params` explored by the rules above, each param by its distribution in `distributions`
  // (a param without one is kept). Deterministic in `rng`.
  Params explore(const Params& params,
                 const std::map<std::string, Distribution, std::less<>>& distributions,
                 Rng& rng) const;

  const PbtOptions& options() const { return options_; }

 private:
  // Constant after construction.
  PbtOptions options_;
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SCHEDULERS_PBT_H_
