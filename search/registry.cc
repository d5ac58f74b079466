#include "search/registry.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "search/samplers/auto_sampler.h"
#include "search/samplers/grid_sampler.h"
#include "search/samplers/random_sampler.h"
#include "search/schedulers/scalarized_stopping.h"
#include "trials/error.h"

namespace tuner {

namespace {

constexpr std::array<std::pair<SamplerType, std::string_view>, 6> kSamplerNames = {{
    {SamplerType::kTpe, "tpe"},
    {SamplerType::kRandom, "random"},
    {SamplerType::kGrid, "grid"},
    {SamplerType::kGp, "gp"},
    {SamplerType::kAuto, "auto"},
    {SamplerType::kNsga2, "nsga2"},
}};

constexpr std::array<std::pair<SchedulerType, std::string_view>, 9> kSchedulerNames = {{
    {SchedulerType::kNone, "none"},
    {SchedulerType::kMedian, "median"},
    {SchedulerType::kPercentile, "percentile"},
    {SchedulerType::kAsha, "asha"},
    {SchedulerType::kHyperband, "hyperband"},
    {SchedulerType::kPatience, "patience"},
    {SchedulerType::kMoAsha, "mo_asha"},
    {SchedulerType::kPbt, "pbt"},
    {SchedulerType::kPb2, "pb2"},
}};

template <typename Type, size_t N>
std::span<const Type> types_of(const std::array<std::pair<Type, std::string_view>, N>& names) {
  static const std::array<Type, N> types = [&] {
    std::array<Type, N> out{};
    for (size_t i = 0; i < N; ++i) out[i] = names[i].first;
    return out;
  }();
  return types;
}

template <typename Type, size_t N>
std::string_view name_of(const std::array<std::pair<Type, std::string_view>, N>& names, Type type) {
  for (const auto& [t, name] : names) {
    if (t == type) return name;
  }
  return "?";
}

template <typename Type, size_t N>
std::optional<Type> type_named(const std::array<std::pair<Type, std::string_view>, N>& names,
                               std::string_view name) {
  for (const auto& [t, n] : names) {
    if (n == name) return t;
  }
  return std::nullopt;
}

TpeOptions tpe_options(const SamplerSpec& spec) {
  TpeOptions options = spec.tpe;
  if (spec.tpe_gamma) {
    TpeGamma g = *spec.tpe_gamma;
    options.gamma = [g](int n) {
      return std::min(static_cast<int>(std::ceil(g.fraction * static_cast<double>(n))), g.max);
    };
  }
  if (spec.tpe_weights == TpeWeights::kUniform) {
    options.weights = [](int n) { return std::vector<double>(static_cast<size_t>(n), 1.0); };
  }
  return options;
}

}  // namespace

std::span<const SamplerType> sampler_types() { return types_of(kSamplerNames); }

std::string_view to_string(SamplerType type) { return name_of(kSamplerNames, type); }

std::optional<SamplerType> sampler_type_named(std::string_view name) {
  return type_named(kSamplerNames, name);
}

std::shared_ptr<Sampler> make_sampler(const SamplerSpec& spec, const SearchSpace* space) {
  switch (spec.type) {
    case SamplerType::kTpe:
      return std::make_shared<TpeSampler>(tpe_options(spec));
    case SamplerType::kRandom:
      return std::make_shared<RandomSampler>();
    case SamplerType::kGrid:
      if (space == nullptr) {
        throw Error(ErrorCode::kInvalidArgument, "the grid sampler needs the study's search space");
      }
      return std::make_shared<GridSampler>(*space, spec.grid_max_points);
    case SamplerType::kGp:
      return std::make_shared<GpSampler>(spec.gp);
    case SamplerType::kAuto: {
      AutoSamplerOptions options;
      options.gp.budget_input = spec.gp.budget_input;
      return std::make_shared<AutoSampler>(options);
    }
    case SamplerType::kNsga2:
      return std::make_shared<Nsga2Sampler>(spec.nsga2);
  }
  throw Error(ErrorCode::kInvalidArgument, "no such sampler type");
}

std::span<const SchedulerType> scheduler_types() { return types_of(kSchedulerNames); }

std::string_view to_string(SchedulerType type) { return name_of(kSchedulerNames, type); }

std::optional<SchedulerType> scheduler_type_named(std::string_view name) {
  return type_named(kSchedulerNames, name);
}

std::shared_ptr<Scheduler> make_scheduler(const SchedulerSpec& spec) {
  switch (spec.type) {
    case SchedulerType::kNone:
      return nullptr;
    case SchedulerType::kMedian:
    case SchedulerType::kPercentile: {
      std::shared_ptr<PercentileStopping> rule;
      if (spec.type == SchedulerType::kMedian) {
        MedianStoppingOptions median = spec.percentile;
        median.percentile = 50.0;
        rule = std::make_shared<MedianStopping>(median);
      } else {
        rule = std::make_shared<PercentileStopping>(spec.percentile);
      }
      if (spec.scalarization_weights.empty()) return rule;
      return std::make_shared<ScalarizedStopping>(std::move(rule), spec.scalarization_weights);
    }
    case SchedulerType::kAsha:
      return std::make_shared<AshaScheduler>(spec.asha);
    case SchedulerType::kHyperband:
      return std::make_shared<HyperbandScheduler>(spec.hyperband);
    case SchedulerType::kPatience:
      return std::make_shared<PatienceStopping>(spec.patience);
    case SchedulerType::kMoAsha:
      return std::make_shared<MoAshaScheduler>(spec.mo_asha);
    case SchedulerType::kPbt:
    case SchedulerType::kPb2: {
      PbtOptions options = spec.pbt;
      options.explore =
          spec.type == SchedulerType::kPb2 ? PbtExplore::kBandit : PbtExplore::kPerturb;
      return std::make_shared<PbtScheduler>(std::move(options));
    }
  }
  throw Error(ErrorCode::kInvalidArgument, "no such scheduler type");
}

}  // namespace tuner
