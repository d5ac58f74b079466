// The samplers and schedulers by name: the one table that sweep files, Study::load and the
// benchmarks make them from.
//
// A SamplerSpec or SchedulerSpec is a type and the options of every type (only the options of
// `type` are used); make_sampler() and make_scheduler() build the object it describes. The names
// are what Sampler::name() returns and what sweep files and stored studies say.
#ifndef TUNER_SEARCH_REGISTRY_H_
#define TUNER_SEARCH_REGISTRY_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "search/samplers/gp/gp_sampler.h"
#include "search/samplers/nsga2_sampler.h"
#include "search/samplers/sampler.h"
#include "search/samplers/tpe/tpe_sampler.h"
#include "search/schedulers/asha.h"
#include "search/schedulers/hyperband.h"
#include "search/schedulers/median_stopping.h"
#include "search/schedulers/mo_asha.h"
#include "search/schedulers/patience.h"
#include "search/schedulers/pbt.h"
#include "search/schedulers/scheduler.h"
#include "search/space/search_space.h"

namespace tuner {

enum class SamplerType {
  kTpe,     // TpeSampler, "tpe"
  kRandom,  // RandomSampler, "random"
  kGrid,    // GridSampler over the study's space, "grid"
  kGp,      // GpSampler (Bayesian optimization with a Gaussian process), "gp"
  kAuto,    // AutoSampler (the GP or TPE, by the space and the study so far), "auto"; the default
  kNsga2,   // Nsga2Sampler, "nsga2"
};

// TPE's gamma(n) as data: min(ceil(fraction * n), max), Optuna's default_gamma form. Default
// {0.1, 25} is Optuna's default.
struct TpeGamma {
  double fraction = 0.1;  // in (0, 1]
  int max = 25;           // >= 1
  bool operator==(const TpeGamma&) const = default;
};

// TPE's observation weights as data.
enum class TpeWeights {
  kOptuna,   // Optuna's default_weights (a ramp over the oldest observations); the default
  kUniform,  // every observation weighs 1
};

struct SamplerSpec {
  SamplerType type = SamplerType::kAuto;
  // kTpe. `gamma` and `weights` of TpeOptions are built from tpe_gamma and tpe_weights when
  // those are set. Defaults: TpeOptions' defaults.
  TpeOptions tpe;
  std::optional<TpeGamma> tpe_gamma;  // default: unset, TpeOptions::gamma as given
  TpeWeights tpe_weights = TpeWeights::kOptuna;
  // kGrid: the most points the grid may have. Default: GridSampler's.
  size_t grid_max_points = 10'000'000;
  // kGp. Defaults: GpSamplerOptions' defaults.
  GpSamplerOptions gp;
  // kNsga2. Defaults: Nsga2Options' defaults.
  Nsga2Options nsga2;
};

// Every type, in the order of the enum.
std::span<const SamplerType> sampler_types();
std::string_view to_string(SamplerType type);
// The type whose to_string() is `name`; nullopt for a name of no built-in sampler ("custom").
std::optional<SamplerType> sampler_type_named(std::string_view name);

// The sampler `spec` describes; `space` is the grid's (kGrid) and may be null otherwise. Throws
// Error(kInvalidArgument) naming the option when an option is out of range, and for kGrid
// without a space.
std::shared_ptr<Sampler> make_sampler(const SamplerSpec& spec, const SearchSpace* space = nullptr);

enum class SchedulerType {
  kNone,        // trials always continue, "none"; the default
  kMedian,      // MedianStopping, "median"
  kPercentile,  // PercentileStopping, "percentile"
  kAsha,        // AshaScheduler, "asha"
  kHyperband,   // HyperbandScheduler, "hyperband"
  kPatience,    // PatienceStopping, "patience"
  kMoAsha,      // MoAshaScheduler, "mo_asha"
  kPbt,         // PbtScheduler (population-based training, run by a coordinator), "pbt"
  kPb2,         // PbtScheduler exploring by PB2's GP bandit (PbtExplore::kBandit), "pb2"
};

struct SchedulerSpec {
  SchedulerType type = SchedulerType::kNone;
  // kMedian and kPercentile (kMedian at percentile 50, whatever `percentile.percentile` says).
  PercentileStoppingOptions percentile;
  AshaOptions asha;
  HyperbandOptions hyperband;
  PatienceOptions patience;
  MoAshaOptions mo_asha;
  // kPbt and kPb2; their type sets `explore` (kPerturb, kBandit), whatever it says here.
  PbtOptions pbt;
  // kMedian and kPercentile in a study of several objectives: the rule runs on the weighted sum
  // of the objectives (ScalarizedStopping), one weight per objective. Empty: the intermediate
  // value, as in a study of one objective.
  std::vector<double> scalarization_weights;
};

// Every type, in the order of the enum.
std::span<const SchedulerType> scheduler_types();
std::string_view to_string(SchedulerType type);
std::optional<SchedulerType> scheduler_type_named(std::string_view name);

// The scheduler `spec` describes; nullptr for kNone. Throws Error(kInvalidArgument) naming the
// option when an option is out of range.
std::shared_ptr<Scheduler> make_scheduler(const SchedulerSpec& spec);

}  // namespace tuner

#endif  // TUNER_SEARCH_REGISTRY_H_
