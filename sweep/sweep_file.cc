#include "sweep/sweep_file.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>
#include <utility>
#include <vector>

#include "executor/argv_template.h"
#include "executor/engine/init_source.h"
#include "executor/trial_job.h"
#include "search/samplers/grid_sampler.h"
#include "search/space/import_nni.h"
#include "search/space/import_wandb.h"
#include "search/space/search_space_json.h"
#include "search/space/search_space_json_value.h"
#include "tracking/http_transport.h"
#include "trials/error.h"
#include "trials/json_reader.h"

namespace tuner {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// A string as JSON writes it, quoted and escaped.
std::string json_text(std::string_view s) { return Json(std::string(s)).dump(); }

// Rewrites an option error of a sampler or scheduler ("asha.max_resource: must be ...") to name
// the sweep's section ("<file>: scheduler.max_resource: must be ...").
Error section_error(const std::string& file, std::string_view section, const std::string& message) {
  size_t dot = message.find('.');
  size_t colon = message.find(": ");
  if (dot != std::string::npos && colon != std::string::npos && dot < colon) {
    return Error(ErrorCode::kInvalidArgument,
                 file + ": " + std::string(section) + "." + message.substr(dot + 1));
  }
  return Error(ErrorCode::kInvalidArgument, file + ": " + std::string(section) + ": " + message);
}

// The typed reads of a sweep file's values: each checks one value and throws
// Error(kInvalidArgument, "<file>: <path>: expected ..., got ...") when it does not fit.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(std::string_view path, const std::string& message) const {
    throw Error(ErrorCode::kInvalidArgument, file_ + ": " + std::string(path) + ": " + message);
  }

  // Runs `f`, adding the file name to an Error raised by the shared JSON helpers (which name
  // only the path).
  template <typename F>
  decltype(auto) named(F&& f) const {
    try {
      return f();
    } catch (const Error& e) {
      throw with_source(e, file_);
    }
  }

  void fields(const Json& obj, std::string_view path,
              std::initializer_list<std::string_view> allowed,
              std::string_view context = "") const {
    named([&] { check_fields(obj, path, allowed, context); });
  }
  void fields(const Json& obj, std::string_view path, const std::vector<std::string_view>& allowed,
              std::string_view context = "") const {
    named([&] { check_fields(obj, path, allowed, context); });
  }

  const Json& object(const Json& value, std::string_view path) const {
    return named([&]() -> const Json& { return expect_object(value, path); });
  }

  const Json& required(const Json& obj, std::string_view path, std::string_view key,
                       std::string_view hint = "") const {
    return named([&]() -> const Json& { return require_field(obj, path, key, hint); });
  }

  // An integer in [min, max].
  int64_t integer(const Json& value, std::string_view path, int64_t min,
                  int64_t max = kInt64Max) const {
    return named([&] { return read_integer(value, path, min, max); });
  }

  int int32(const Json& value, std::string_view path, int64_t min) const {
    return static_cast<int>(integer(value, path, min, kIntMax));
  }

  // A finite number >= min (> min when `exclusive`) and <= max.
  double number(const Json& value, std::string_view path, double min, bool exclusive,
                double max = std::numeric_limits<double>::infinity()) const {
    return named([&] {
      return read_number(value, path, NumberRange{.low = min, .high = max, .low_open = exclusive});
    });
  }

  bool boolean(const Json& value, std::string_view path) const {
    return named([&] { return read_bool(value, path); });
  }

  std::string string(const Json& value, std::string_view path) const {
    return named([&] { return read_nonempty_string(value, path); });
  }

  // One of `names`, with a did-you-mean for a typo.
  size_t one_of(const Json& value, std::string_view path,
                const std::vector<std::string>& names) const {
    return named([&] { return read_choice(value, path, names); });
  }

 protected:
  std::string file_;
};

// ---------------------------------------------------------------------------------------------
// The sampler and scheduler options, each declared once.
//
// A section's options are a table per type, in the order the file is read and written: the name,
// whether it is required, how it is read and checked into the config, how two configs compare on
// it and what to_json writes for it. The allowed fields, the parser, SamplerConfig::operator==,
// SchedulerConfig::operator== and to_json all walk these tables, and sweep_file_test checks that
// docs/sweep_file.md lists every option for its types. A new option is one entry here.

template <typename Config>
struct Option {
  std::string_view name;
  // Non-empty: the option is required, and this is the hint its "missing required field" ends with.
  std::string_view required_hint;
  // Reads `value`, found at `path`, into `config`; throws naming the file and path.
  std::function<void(const Reader&, const Json& value, const std::string& path, Config& config)>
      read;
  std::function<bool(const Config&, const Config&)> same;
  // What to_json writes for it; nullopt: nothing (an unset optional).
  std::function<std::optional<Json>(const Config&)> write;
};

// The config's field that the member pointers M... reach: field_of<&S::tpe, &T::group>(c) is
// c.tpe.group.
template <auto... M>
auto& field_of(auto& config) {
  return (config.*....*M);
}

template <typename>
struct MemberClass;
template <typename C, typename T>
struct MemberClass<T C::*> {
  using type = C;
};
// The section's config whose fields a member pointer reaches: the sections' configs add to the
// registry's specs (search/registry.h), whose members the pointers name.
template <typename C>
struct SectionOf {
  using type = C;
};
template <>
struct SectionOf<SamplerSpec> {
  using type = SamplerConfig;
};
template <>
struct SectionOf<SchedulerSpec> {
  using type = SchedulerConfig;
};
template <auto First, auto...>
struct FirstMemberClass {
  using type = typename SectionOf<typename MemberClass<decltype(First)>::type>::type;
};
template <auto... M>
using ConfigOf = typename FirstMemberClass<M...>::type;

// An option whose field compares with == and is written as itself.
template <auto... M>
Option<ConfigOf<M...>> field_option(
    std::string_view name,
    std::function<void(const Reader&, const Json&, const std::string&, ConfigOf<M...>&)> read,
    std::string_view required_hint = "") {
  using Config = ConfigOf<M...>;
  return {name, required_hint, std::move(read),
          [](const Config& a, const Config& b) { return field_of<M...>(a) == field_of<M...>(b); },
          [](const Config& c) -> std::optional<Json> { return Json(field_of<M...>(c)); }};
}

// An integer >= min that fits the field (int, int64_t or size_t).
template <auto... M>
Option<ConfigOf<M...>> int_option(std::string_view name, int64_t min,
                                  std::string_view required_hint = "") {
  return field_option<M...>(
      name,
      [min](const Reader& r, const Json& v, const std::string& path, ConfigOf<M...>& c) {
        auto& field = field_of<M...>(c);
        using T = std::remove_reference_t<decltype(field)>;
        field =
            static_cast<T>(r.integer(v, path, min, std::is_same_v<T, int> ? kIntMax : kInt64Max));
      },
      required_hint);
}

template <auto... M>
Option<ConfigOf<M...>> bool_option(std::string_view name) {
  return field_option<M...>(
      name, [](const Reader& r, const Json& v, const std::string& path, ConfigOf<M...>& c) {
        field_of<M...>(c) = r.boolean(v, path);
      });
}

// A finite number >= min (> min when `exclusive`) and <= max.
template <auto... M>
Option<ConfigOf<M...>> number_option(std::string_view name, double min, bool exclusive,
                                     double max = std::numeric_limits<double>::infinity(),
                                     std::string_view required_hint = "") {
  return field_option<M...>(
      name,
      [=](const Reader& r, const Json& v, const std::string& path, ConfigOf<M...>& c) {
        field_of<M...>(c) = r.number(v, path, min, exclusive, max);
      },
      required_hint);
}

using SamplerOption = Option<SamplerConfig>;
using SchedulerOption = Option<SchedulerConfig>;

// Every sampler type takes a seed.
SamplerOption seed_option() {
  return {"seed", "",
          [](const Reader& r, const Json& v, const std::string& path, SamplerConfig& c) {
            if (!v.is_number_unsigned())
              r.fail(path, "expected an integer >= 0, got " + shown_value(v));
            c.seed = v.get<uint64_t>();
          },
          [](const SamplerConfig& a, const SamplerConfig& b) { return a.seed == b.seed; },
          [](const SamplerConfig& c) -> std::optional<Json> {
            if (!c.seed) return std::nullopt;
            return Json(*c.seed);
          }};
}

std::vector<SamplerOption> tpe_options() {
  using S = SamplerConfig;
  using T = TpeOptions;
  return {
      seed_option(),
      int_option<&S::tpe, &T::n_startup_trials>("n_startup_trials", 0),
      int_option<&S::tpe, &T::n_ei_candidates>("n_ei_candidates", 1),
      bool_option<&S::tpe, &T::multivariate>("multivariate"),
      bool_option<&S::tpe, &T::group>("group"),
      {"constant_liar", "",
       [](const Reader& r, const Json& v, const std::string& path, S& c) {
         if (v.is_boolean()) {
           c.tpe.constant_liar = v.get<bool>() ? ConstantLiar::kOn : ConstantLiar::kOff;
         } else if (v.is_string() && v.get<std::string>() == "auto") {
           c.tpe.constant_liar = ConstantLiar::kAuto;
         } else {
           r.fail(path, "expected \"auto\", true or false, got " + shown_value(v));
         }
       },
       [](const S& a, const S& b) { return a.tpe.constant_liar == b.tpe.constant_liar; },
       [](const S& c) -> std::optional<Json> {
         if (c.tpe.constant_liar == ConstantLiar::kAuto) return Json("auto");
         return Json(c.tpe.constant_liar == ConstantLiar::kOn);
       }},
      bool_option<&S::tpe, &T::consider_prior>("consider_prior"),
      number_option<&S::tpe, &T::prior_weight>("prior_weight", 0, false),
      bool_option<&S::tpe, &T::consider_magic_clip>("consider_magic_clip"),
      bool_option<&S::tpe, &T::consider_endpoints>("consider_endpoints"),
      bool_option<&S::tpe, &T::improvement_weights>("improvement_weights"),
      {"gamma", "",
       [](const Reader& r, const Json& v, const std::string& path, S& c) {
         r.object(v, path);
         r.fields(v, path, {"fraction", "max"});
         TpeGamma gamma;
         if (auto* f = find_field(v, "fraction")) {
           gamma.fraction = r.number(*f, child_path(path, "fraction"), 0, true, 1);
         }
         if (auto* m = find_field(v, "max")) {
           gamma.max = static_cast<int>(r.integer(*m, child_path(path, "max"), 1, kIntMax));
         }
         c.tpe_gamma = gamma;
       },
       [](const S& a, const S& b) { return a.tpe_gamma == b.tpe_gamma; },
       [](const S& c) -> std::optional<Json> {
         if (!c.tpe_gamma) return std::nullopt;
         return Json{{"fraction", c.tpe_gamma->fraction}, {"max", c.tpe_gamma->max}};
       }},
      {"weights", "",
       [](const Reader& r, const Json& v, const std::string& path, S& c) {
         c.tpe_weights = r.one_of(v, path, {"optuna", "uniform"}) == 0 ? TpeWeights::kOptuna
                                                                       : TpeWeights::kUniform;
       },
       [](const S& a, const S& b) { return a.tpe_weights == b.tpe_weights; },
       [](const S& c) -> std::optional<Json> {
         return Json(c.tpe_weights == TpeWeights::kOptuna ? "optuna" : "uniform");
       }},
  };
}

// A probability in [0, 1] that may be unset (its default then depends on the study).
template <auto... M>
Option<ConfigOf<M...>> optional_number_option(std::string_view name, double min, double max) {
  using Config = ConfigOf<M...>;
  return {name, "",
          [=](const Reader& r, const Json& v, const std::string& path, Config& c) {
            field_of<M...>(c) = r.number(v, path, min, false, max);
          },
          [](const Config& a, const Config& b) { return field_of<M...>(a) == field_of<M...>(b); },
          [](const Config& c) -> std::optional<Json> {
            const auto& field = field_of<M...>(c);
            if (!field) return std::nullopt;
            return Json(*field);
          }};
}

std::vector<SamplerOption> nsga2_options() {
  using S = SamplerConfig;
  using N = Nsga2Options;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  return {
      seed_option(),
      int_option<&S::nsga2, &N::population_size>("population_size", 2),
      number_option<&S::nsga2, &N::crossover_prob>("crossover_prob", 0, false, 1),
      {"crossover", "",
       [](const Reader& r, const Json& v, const std::string& path, S& c) {
         c.nsga2.crossover = r.one_of(v, path, {"uniform", "sbx"}) == 0 ? Nsga2Crossover::kUniform
                                                                        : Nsga2Crossover::kSbx;
       },
       [](const S& a, const S& b) { return a.nsga2.crossover == b.nsga2.crossover; },
       [](const S& c) -> std::optional<Json> {
         return Json(c.nsga2.crossover == Nsga2Crossover::kUniform ? "uniform" : "sbx");
       }},
      number_option<&S::nsga2, &N::swapping_prob>("swapping_prob", 0, false, 1),
      optional_number_option<&S::nsga2, &N::mutation_prob>("mutation_prob", 0, 1),
      optional_number_option<&S::nsga2, &N::sbx_eta>("sbx_eta", 0, kInf),
      number_option<&S::nsga2, &N::sbx_use_child_gene_prob>("sbx_use_child_gene_prob", 0, false, 1),
      number_option<&S::nsga2, &N::sbx_uniform_crossover_prob>("sbx_uniform_crossover_prob", 0,
                                                               false, 1),
  };
}

// The options a sampler section of `type` takes besides "type", in the order they are read and
// written.
const std::vector<SamplerOption>& sampler_options(SamplerType type) {
  using S = SamplerConfig;
  static const std::vector<SamplerOption> kTpe = tpe_options();
  static const std::vector<SamplerOption> kSeedOnly = {seed_option()};
  static const std::vector<SamplerOption> kGrid = {
      seed_option(), int_option<&S::grid_max_points>("max_points", 1)};
  static const std::vector<SamplerOption> kGp = {
      seed_option(),
      int_option<&S::gp, &GpSamplerOptions::n_startup_trials>("n_startup_trials", 0)};
  static const std::vector<SamplerOption> kNsga2 = nsga2_options();
  // The GP's budget as an input under early stopping (GpSamplerOptions::budget_input); written
  // only when true.
  static const std::vector<SamplerOption> kAuto = {
      seed_option(),
      {"budget_input", "",
       [](const Reader& r, const Json& v, const std::string& path, S& c) {
         c.gp.budget_input = r.boolean(v, path);
       },
       [](const S& a, const S& b) { return a.gp.budget_input == b.gp.budget_input; },
       [](const S& c) -> std::optional<Json> {
         if (!c.gp.budget_input) return std::nullopt;
         return Json(true);
       }}};
  switch (type) {
    case SamplerType::kTpe:
      return kTpe;
    case SamplerType::kGrid:
      return kGrid;
    case SamplerType::kGp:
      return kGp;
    case SamplerType::kNsga2:
      return kNsga2;
    case SamplerType::kAuto:
      return kAuto;
    case SamplerType::kRandom:
      break;
  }
  return kSeedOnly;
}

// Median and percentile stopping in a sweep of several objectives: {"weights": [w, ...]}, one
// weight >= 0 per objective, not all 0 (ScalarizedStopping). Whether the sweep's objectives ask
// for it is checked once they are known (Parser::parse).
SchedulerOption scalarization_option() {
  using S = SchedulerConfig;
  return {"scalarization", "",
          [](const Reader& r, const Json& v, const std::string& path, S& c) {
            r.object(v, path);
            r.fields(v, path, {"weights"});
            const std::string weights_path = child_path(path, "weights");
            const Json& weights =
                r.required(v, path, "weights", " (one weight >= 0 per objective)");
            if (!weights.is_array() || weights.empty()) {
              r.fail(weights_path, "expected a list of numbers >= 0, one per objective, got " +
                                       shown_value(weights));
            }
            c.scalarization_weights.clear();
            for (size_t i = 0; i < weights.size(); ++i) {
              c.scalarization_weights.push_back(
                  r.number(weights[i], weights_path + "[" + std::to_string(i) + "]", 0, false));
            }
            if (std::all_of(c.scalarization_weights.begin(), c.scalarization_weights.end(),
                            [](double w) { return w == 0; })) {
              r.fail(weights_path, "every weight is 0: give at least one > 0");
            }
          },
          [](const S& a, const S& b) { return a.scalarization_weights == b.scalarization_weights; },
          [](const S& c) -> std::optional<Json> {
            if (c.scalarization_weights.empty()) return std::nullopt;
            return Json{{"weights", c.scalarization_weights}};
          }};
}

// Median and percentile stopping: PercentileStoppingOptions but the percentile.
std::vector<SchedulerOption> stopping_options() {
  using S = SchedulerConfig;
  using P = PercentileStoppingOptions;
  return {int_option<&S::percentile, &P::n_startup_trials>("n_startup_trials", 0),
          int_option<&S::percentile, &P::n_warmup_steps>("n_warmup_steps", 0),
          int_option<&S::percentile, &P::interval_steps>("interval_steps", 1),
          int_option<&S::percentile, &P::n_min_trials>("n_min_trials", 1), scalarization_option()};
}

// ASHA's options, read into the AshaOptions that `Member` names (asha, mo_asha).
template <AshaOptions SchedulerSpec::*Member>
std::vector<SchedulerOption> asha_options() {
  using S = SchedulerConfig;
  using A = AshaOptions;
  return {
      int_option<Member, &A::min_resource>("min_resource", 1),
      int_option<Member, &A::reduction_factor>("reduction_factor", 2),
      {"max_resource", "",
       [](const Reader& r, const Json& v, const std::string& path, S& c) {
         (c.*Member).max_resource = r.integer(v, path, (c.*Member).min_resource + 1);
       },
       [](const S& a, const S& b) { return (a.*Member).max_resource == (b.*Member).max_resource; },
       [](const S& c) -> std::optional<Json> {
         if (!(c.*Member).max_resource) return std::nullopt;
         return Json(*(c.*Member).max_resource);
       }},
      int_option<Member, &A::min_early_stopping_rate>("min_early_stopping_rate", 0),
      int_option<Member, &A::bootstrap_count>("bootstrap_count", 0)};
}

// Population-based training's options (PbtOptions).
std::vector<SchedulerOption> pbt_options() {
  using S = SchedulerConfig;
  using P = PbtOptions;
  return {int_option<&S::pbt, &P::population_size>("population_size", 2),
          int_option<&S::pbt, &P::perturbation_interval>("perturbation_interval", 1,
                                                         " (steps per segment, e.g. epochs)"),
          number_option<&S::pbt, &P::quantile>("quantile", 0, true, 0.5),
          number_option<&S::pbt, &P::resample_probability>("resample_probability", 0, false, 1),
          {"perturbation_factors", "",
           [](const Reader& r, const Json& v, const std::string& path, S& c) {
             if (!v.is_array() || v.empty()) {
               r.fail(path, "expected a non-empty list of numbers > 0, got " + shown_value(v));
             }
             c.pbt.perturbation_factors.clear();
             for (size_t i = 0; i < v.size(); ++i) {
               c.pbt.perturbation_factors.push_back(
                   r.number(v[i], path + "[" + std::to_string(i) + "]", 0, true));
             }
           },
           [](const S& a, const S& b) {
             return a.pbt.perturbation_factors == b.pbt.perturbation_factors;
           },
           [](const S& c) -> std::optional<Json> { return Json(c.pbt.perturbation_factors); }},
          bool_option<&S::pbt, &P::synchronous>("synchronous"),
          {"seed", "",
           [](const Reader& r, const Json& v, const std::string& path, S& c) {
             if (!v.is_number_unsigned())
               r.fail(path, "expected an integer >= 0, got " + shown_value(v));
             c.pbt.seed = v.get<uint64_t>();
           },
           [](const S& a, const S& b) { return a.pbt.seed == b.pbt.seed; },
           [](const S& c) -> std::optional<Json> { return Json(c.pbt.seed); }},
          {"max_steps", "",
           [](const Reader& r, const Json& v, const std::string& path, S& c) {
             c.pbt.max_steps = r.integer(v, path, 1);
           },
           [](const S& a, const S& b) { return a.pbt.max_steps == b.pbt.max_steps; },
           [](const S& c) -> std::optional<Json> {
             if (!c.pbt.max_steps) return std::nullopt;
             return Json(*c.pbt.max_steps);
           }}};
}

// The options a scheduler section of `type` takes besides "type", in the order they are read and
// written.
const std::vector<SchedulerOption>& scheduler_options(SchedulerType type) {
  using S = SchedulerConfig;
  using H = HyperbandOptions;
  using P = PatienceOptions;
  static const std::vector<SchedulerOption> kNone;
  static const std::vector<SchedulerOption> kMedian = stopping_options();
  static const std::vector<SchedulerOption> kPercentile = [] {
    std::vector<SchedulerOption> options = {
        number_option<&S::percentile, &PercentileStoppingOptions::percentile>(
            "percentile", 0, false, 100, " (in [0, 100], counted from the best)")};
    for (SchedulerOption& o : stopping_options()) options.push_back(std::move(o));
    return options;
  }();
  static const std::vector<SchedulerOption> kAsha = asha_options<&SchedulerSpec::asha>();
  static const std::vector<SchedulerOption> kMoAsha = asha_options<&SchedulerSpec::mo_asha>();
  static const std::vector<SchedulerOption> kHyperband = {
      int_option<&S::hyperband, &H::min_resource>("min_resource", 1),
      field_option<&S::hyperband, &H::max_resource>(
          "max_resource",
          [](const Reader& r, const Json& v, const std::string& path, S& c) {
            c.hyperband.max_resource = r.integer(v, path, c.hyperband.min_resource + 1);
          },
          " (the steps of a whole trial, e.g. epochs)"),
      int_option<&S::hyperband, &H::reduction_factor>("reduction_factor", 2),
      int_option<&S::hyperband, &H::bootstrap_count>("bootstrap_count", 0)};
  static const std::vector<SchedulerOption> kPatience = {
      int_option<&S::patience, &P::patience>("patience", 1,
                                             " (reports without improvement that stop a trial)"),
      number_option<&S::patience, &P::min_delta>("min_delta", 0, false),
      int_option<&S::patience, &P::n_warmup_steps>("n_warmup_steps", 0)};
  static const std::vector<SchedulerOption> kPbt = pbt_options();
  static const std::vector<SchedulerOption> kPb2 = [] {
    std::vector<SchedulerOption> options = pbt_options();
    options.push_back(number_option<&S::pbt, &PbtOptions::kappa>("kappa", 0, false));
    return options;
  }();
  switch (type) {
    case SchedulerType::kNone:
      return kNone;
    case SchedulerType::kMedian:
      return kMedian;
    case SchedulerType::kPercentile:
      return kPercentile;
    case SchedulerType::kAsha:
      return kAsha;
    case SchedulerType::kHyperband:
      return kHyperband;
    case SchedulerType::kPatience:
      return kPatience;
    case SchedulerType::kMoAsha:
      return kMoAsha;
    case SchedulerType::kPbt:
      return kPbt;
    case SchedulerType::kPb2:
      return kPb2;
  }
  return kNone;
}

// "type" and the names of `options`: the fields a section may have.
template <typename Config>
std::vector<std::string_view> allowed_fields(const std::vector<Option<Config>>& options) {
  std::vector<std::string_view> names = {"type"};
  for (const Option<Config>& o : options) names.push_back(o.name);
  return names;
}

// Reads the options of `section` (the JSON object at `path`) that `options` declare into `config`,
// in table order, after checking that it has no other field.
template <typename Config>
void read_options(const Reader& r, const Json& section, std::string_view path,
                  const std::vector<Option<Config>>& options, std::string_view context,
                  Config& config) {
  r.fields(section, path, allowed_fields(options), context);
  for (const Option<Config>& option : options) {
    const Json* value = find_field(section, option.name);
    if (value == nullptr && !option.required_hint.empty()) {
      value = &r.required(section, path, option.name, option.required_hint);
    }
    if (value != nullptr) option.read(r, *value, child_path(path, option.name), config);
  }
}

template <typename Config>
bool same_options(const std::vector<Option<Config>>& options, const Config& a, const Config& b) {
  return std::all_of(options.begin(), options.end(),
                     [&](const Option<Config>& o) { return o.same(a, b); });
}

// The section as to_json writes it: "type", then every option of it that has a value.
template <typename Config>
Json write_options(std::string_view type, const std::vector<Option<Config>>& options,
                   const Config& config) {
  Json section = Json::object();
  section["type"] = std::string(type);
  for (const Option<Config>& option : options) {
    std::optional<Json> value = option.write(config);
    if (value) section[std::string(option.name)] = *value;
  }
  return section;
}

// Reads one sweep file. Every error it throws names the file and the JSON path.
class Parser : Reader {
 public:
  explicit Parser(std::string file) : Reader(std::move(file)) {
    dir_ = fs::path(file_).parent_path();
  }

  SweepFile parse(std::string_view text);

 private:
  // `relative` against the sweep file's directory.
  std::string resolve(const std::string& relative) const {
    fs::path p = (dir_ / relative).lexically_normal();
    if (!p.has_filename() && p.has_relative_path()) p = p.parent_path();  // "a/b/" -> "a/b"
    return p.empty() ? "." : p.string();
  }

  SearchSpace parse_space(const Json& value);
  SearchSpace import_space(const Json& value);
  SweepObjective read_objective(const Json& value, const std::string& path);
  void parse_objective(const Json& value, SweepFile& sweep);
  void parse_objectives(const Json& value, SweepFile& sweep);
  // A list of bounds at `path` ("constraints", "export.limits").
  std::vector<MetricConstraint> parse_constraints(const Json& value, const std::string& path);
  void check_engine_metrics(const SweepFile& sweep, const Json& job) const;
  SamplerConfig parse_sampler(const Json& value, const SearchSpace& space);
  SchedulerConfig parse_scheduler(const Json& value);
  // Refuses a scheduler that cannot judge the sweep's objectives (docs/sweep_file.md, "Several
  // objectives"), and the options of several objectives in a sweep of one.
  void check_scheduler_objectives(const SweepFile& sweep) const;
  // With several objectives and a scheduler, an engine job's objectives must be metrics its
  // epochs report (EngineReport, executor/engine_job.h), or the scheduler sees none of them.
  void check_engine_step_objectives(const SweepFile& sweep) const;
  // `population`: a PBT or PB2 sweep, whose budget is its population (no "trials").
  Budget parse_budget(const Json* value, SamplerType sampler, bool population);
  void parse_job(const Json& value, SweepFile& sweep);
  std::vector<int> parse_gpu_ids(const Json& value) const;
  SlurmOptions parse_slurm(const Json& value) const;
  RayOptions parse_ray(const Json& value) const;
  ExportConfig parse_export(const Json& value, const SweepFile& sweep);
  TrackingConfig parse_tracking(const Json& value);
  WarmStartOptions parse_warm_start(const Json& value, const SweepFile& sweep) const;
  std::string tracking_uri(const Json& value, std::string_view path) const;

  fs::path dir_;
};

// The names of `types`, in their order.
template <typename Type>
std::vector<std::string> names_of(std::span<const Type> types) {
  std::vector<std::string> names;
  for (Type type : types) names.emplace_back(to_string(type));
  return names;
}

const std::vector<std::string> kSamplerTypes = names_of(sampler_types());
const std::vector<std::string> kSchedulerTypes = names_of(scheduler_types());
const std::vector<std::string> kDirections = {"minimize", "maximize"};

SweepFile Parser::parse(std::string_view text) {
  Json root = parse_json_text(text, file_);
  if (!root.is_object()) {
    throw Error(ErrorCode::kInvalidArgument,
                file_ + ": expected a sweep (a JSON object), got " + shown_value(root));
  }
  named([&] {
    check_fields(root, "",
                 {"version", "name", "description", "storage", "space", "objective", "objectives",
                  "constraints", "sampler", "scheduler", "budget", "job", "executors", "tracking",
                  "export", "warm_start"});
  });

  SweepFile sweep;
  sweep.path = file_;
  if (const Json* v = find_field(root, "version")) {
    int64_t version = integer(*v, "version", 1);
    if (version != kSweepFileVersion) {
      fail("version", "this tuner reads version " + std::to_string(kSweepFileVersion) +
                          " of the sweep file format, got " + std::to_string(version));
    }
  }
  if (const Json* v = find_field(root, "name")) {
    sweep.name = string(*v, "name");
  } else {
    sweep.name = fs::path(file_).stem().string();
    if (sweep.name.empty()) fail("name", "missing, and the file name gives none");
  }
  if (const Json* v = find_field(root, "description")) {
    if (!v->is_string()) fail("description", "expected a string, got " + shown_value(*v));
    sweep.description = v->get<std::string>();
  }
  sweep.storage_path = resolve(find_field(root, "storage") ? string(root["storage"], "storage")
                                                           : sweep.name + ".db");

  sweep.space = parse_space(required(root, "", "space"));
  if (const Json* several = find_field(root, "objectives")) {
    if (find_field(root, "objective")) {
      fail("objectives", "give \"objective\" (one) or \"objectives\" (several), not both");
    }
    parse_objectives(*several, sweep);
  } else {
    parse_objective(required(root, "", "objective"), sweep);
  }
  if (const Json* v = find_field(root, "constraints"))
    sweep.constraints = parse_constraints(*v, "constraints");
  const Json* sampler = find_field(root, "sampler");
  sweep.sampler = sampler ? parse_sampler(*sampler, sweep.space) : SamplerConfig{};
  if (const Json* v = find_field(root, "scheduler")) {
    sweep.scheduler = parse_scheduler(*v);
    check_scheduler_objectives(sweep);
  }
  sweep.budget = parse_budget(
      find_field(root, "budget"), sweep.sampler.type,
      sweep.scheduler.type == SchedulerType::kPbt || sweep.scheduler.type == SchedulerType::kPb2);
  if (const Json* v = find_field(root, "tracking")) sweep.tracking = parse_tracking(*v);
  if (const Json* v = find_field(root, "export")) sweep.export_config = parse_export(*v, sweep);
  if (const Json* v = find_field(root, "warm_start"))
    sweep.warm_start = parse_warm_start(*v, sweep);

  // The job reads threads_per_trial, which the executors' default needs.
  const Json& job = required(root, "", "job");
  const Json* executors = find_field(root, "executors");
  if (executors) {
    object(*executors, "executors");
    fields(*executors, "executors", {"local", "prefetch", "gpus", "slurm", "ray"});
    if (const Json* slurm = find_field(*executors, "slurm")) sweep.slurm = parse_slurm(*slurm);
    if (const Json* ray = find_field(*executors, "ray")) {
      if (sweep.slurm) {
        fail("executors.ray",
             "a sweep starts its executors on one cluster: give \"slurm\" or "
             "\"ray\", not both");
      }
      sweep.ray = parse_ray(*ray);
    }
  }
  // Last, so that an error of parse_trial_job (an engine job before the executor knows them)
  // comes only after everything else was found valid.
  parse_job(job, sweep);
  // A pbt or pb2 sweep of an engine job: a member's steps are the job's epochs, unless stated.
  if ((sweep.scheduler.type == SchedulerType::kPbt ||
       sweep.scheduler.type == SchedulerType::kPb2) &&
      !sweep.scheduler.pbt.max_steps && sweep.job_kind == "engine") {
    const Json* training = find_field(job, "training");
    const Json* epochs =
        training && training->is_object() ? find_field(*training, "epochs") : nullptr;
    if (epochs && epochs->is_number_integer() && epochs->get<int64_t>() >= 1) {
      sweep.scheduler.pbt.max_steps = epochs->get<int64_t>();
    }
  }
  check_engine_metrics(sweep, job);
  check_engine_step_objectives(sweep);
  if (executors && find_field(*executors, "local")) {
    sweep.local_executors = int32((*executors)["local"], "executors.local", 0);
  } else if (sweep.slurm || sweep.ray) {
    sweep.local_executors = 0;  // the trials run on the cluster, not on the login node
  } else {
    int cores = static_cast<int>(std::thread::hardware_concurrency());
    sweep.local_executors = std::max(1, cores / sweep.threads_per_trial);
  }
  if (executors && find_field(*executors, "prefetch")) {
    sweep.local_prefetch = int32((*executors)["prefetch"], "executors.prefetch", 0);
    if (sweep.local_prefetch > sweep.local_executors) {
      fail("executors.prefetch", "must be at most the local slots (" +
                                     std::to_string(sweep.local_executors) + "), got " +
                                     std::to_string(sweep.local_prefetch));
    }
  }
  if (executors) {
    if (const Json* gpus = find_field(*executors, "gpus")) sweep.local_gpus = parse_gpu_ids(*gpus);
  }
  return sweep;
}

std::vector<int> Parser::parse_gpu_ids(const Json& value) const {
  if (!value.is_array()) {
    fail("executors.gpus",
         "expected an array of GPU ids such as [0, 1] ([] for none), got " + shown_value(value));
  }
  std::vector<int> gpus;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string at = "executors.gpus[" + std::to_string(i) + "]";
    const int id = int32(value[i], at, 0);
    if (std::find(gpus.begin(), gpus.end(), id) != gpus.end()) {
      fail(at, "GPU " + std::to_string(id) + " is listed twice");
    }
    gpus.push_back(id);
  }
  return gpus;
}

// Slurm's time limits: "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS", "UNLIMITED".
bool is_slurm_time(const std::string& text) {
  static const std::regex kForm(R"((\d+|\d+:\d+|\d+:\d+:\d+|\d+-\d+(:\d+){0,2}))");
  return text == "UNLIMITED" || text == "INFINITE" || std::regex_match(text, kForm);
}

SlurmOptions Parser::parse_slurm(const Json& value) const {
  const std::string at = "executors.slurm";
  object(value, at);
  fields(value, at,
         {"partition", "account", "time", "gpus", "cpus_per_executor", "mem", "slots",
          "min_executors", "max_executors", "idle_grace", "sbatch_args", "tuner", "endpoint"});
  SlurmOptions slurm;
  auto text = [&](const char* name, std::string& into) {
    if (const Json* v = find_field(value, name)) into = string(*v, at + "." + name);
  };
  text("partition", slurm.partition);
  text("account", slurm.account);
  text("time", slurm.time);
  if (!slurm.time.empty() && !is_slurm_time(slurm.time)) {
    fail(at + ".time",
         "expected a Slurm time limit such as \"30\" (minutes), \"2:00:00\" or "
         "\"1-12:00:00\" (days-hours:minutes:seconds), got " +
             json_text(slurm.time));
  }
  if (const Json* v = find_field(value, "gpus")) {
    if (v->is_string()) {
      slurm.gres = string(*v, at + ".gpus");
    } else if (v->is_number_integer() || v->is_number()) {
      slurm.gpus = int32(*v, at + ".gpus", 1);
    } else {
      fail(at + ".gpus",
           "expected a number of GPUs (sbatch --gpus) or a gres such as "
           "\"gpu:a100:2\" (sbatch --gres), got " +
               shown_value(*v));
    }
  }
  if (const Json* v = find_field(value, "cpus_per_executor")) {
    slurm.cpus_per_executor = int32(*v, at + ".cpus_per_executor", 1);
  }
  text("mem", slurm.mem);
  static const std::regex kMem(R"(\d+[KMGT]?)");
  if (!slurm.mem.empty() && !std::regex_match(slurm.mem, kMem)) {
    fail(at + ".mem", "expected a memory size such as \"8G\" or \"512M\" (sbatch --mem), got " +
                          json_text(slurm.mem));
  }
  if (const Json* v = find_field(value, "slots")) slurm.slots = int32(*v, at + ".slots", 1);
  if (const Json* v = find_field(value, "min_executors")) {
    slurm.min_executors = int32(*v, at + ".min_executors", 0);
  }
  if (const Json* v = find_field(value, "max_executors")) {
    slurm.max_executors = int32(*v, at + ".max_executors", 1);
  }
  if (slurm.min_executors > slurm.max_executors) {
    fail(at + ".min_executors", "must be at most max_executors (" +
                                    std::to_string(slurm.max_executors) + "), got " +
                                    std::to_string(slurm.min_executors));
  }
  if (const Json* v = find_field(value, "idle_grace")) {
    if (v->is_string()) {
      try {
        slurm.idle_grace = parse_duration(v->get<std::string>());
      } catch (const Error& e) {
        fail(at + ".idle_grace", e.what());
      }
    } else {
      slurm.idle_grace = std::chrono::seconds(integer(*v, at + ".idle_grace", 0));
    }
  }
  if (const Json* v = find_field(value, "sbatch_args")) {
    if (!v->is_array()) {
      fail(at + ".sbatch_args",
           "expected a list of sbatch arguments such as [\"--qos=long\"], got " + shown_value(*v));
    }
    for (size_t i = 0; i < v->size(); ++i) {
      const std::string arg = string((*v)[i], at + ".sbatch_args[" + std::to_string(i) + "]");
      if (arg.rfind("-", 0) != 0) {
        fail(at + ".sbatch_args[" + std::to_string(i) + "]",
             "expected an option such as \"--qos=long\" (one word, with its value after =), "
             "got " +
                 json_text(arg));
      }
      slurm.extra_args.push_back(arg);
    }
  }
  if (const Json* v = find_field(value, "tuner")) {
    slurm.tuner_path =
        fs::absolute(fs::path(resolve(string(*v, at + ".tuner")))).lexically_normal().string();
  }
  text("endpoint", slurm.endpoint);
  if (!slurm.endpoint.empty()) {
    static const std::regex kTcp(R"(tcp://[^:/*]+:\d+)");
    if (!std::regex_match(slurm.endpoint, kTcp)) {
      fail(at + ".endpoint",
           "expected the address the executors connect to, tcp://HOST:PORT (a host name or "
           "address the cluster's nodes reach, and a port), got " +
               json_text(slurm.endpoint));
    }
  }
  return slurm;
}

RayOptions Parser::parse_ray(const Json& value) const {
  const std::string at = "executors.ray";
  object(value, at);
  fields(value, at,
         {"address", "cpus_per_executor", "gpus_per_executor", "memory", "slots", "min_executors",
          "max_executors", "idle_grace", "python", "tuner", "endpoint", "runtime_env"});
  RayOptions ray;
  ray.address = string(required(value, at, "address",
                                "the cluster as ray.init takes it: \"ray://HOST:10001\", "
                                "\"HOST:6379\" or \"auto\""),
                       at + ".address");
  if (const Json* v = find_field(value, "cpus_per_executor")) {
    ray.cpus_per_executor = number(*v, at + ".cpus_per_executor", 0, false);
  }
  if (const Json* v = find_field(value, "gpus_per_executor")) {
    ray.gpus_per_executor = number(*v, at + ".gpus_per_executor", 0, false);
  }
  if (const Json* v = find_field(value, "memory")) ray.memory = string(*v, at + ".memory");
  try {
    (void)ray_memory_bytes(ray.memory);
  } catch (const Error&) {
    fail(at + ".memory",
         "expected a memory size such as \"8G\" or \"512M\" (Ray's memory "
         "resource), got " +
             json_text(ray.memory));
  }
  if (const Json* v = find_field(value, "slots")) ray.slots = int32(*v, at + ".slots", 1);
  if (const Json* v = find_field(value, "min_executors")) {
    ray.min_executors = int32(*v, at + ".min_executors", 0);
  }
  if (const Json* v = find_field(value, "max_executors")) {
    ray.max_executors = int32(*v, at + ".max_executors", 1);
  }
  if (ray.min_executors > ray.max_executors) {
    fail(at + ".min_executors", "must be at most max_executors (" +
                                    std::to_string(ray.max_executors) + "), got " +
                                    std::to_string(ray.min_executors));
  }
  if (const Json* v = find_field(value, "idle_grace")) {
    if (v->is_string()) {
      try {
        ray.idle_grace = parse_duration(v->get<std::string>());
      } catch (const Error& e) {
        fail(at + ".idle_grace", e.what());
      }
    } else {
      ray.idle_grace = std::chrono::seconds(integer(*v, at + ".idle_grace", 0));
    }
  }
  if (const Json* v = find_field(value, "python")) {
    // A path is the sweep file's directory's; a bare name is looked up in PATH.
    ray.python = string(*v, at + ".python");
    if (ray.python.find('/') != std::string::npos) {
      ray.python = fs::absolute(fs::path(resolve(ray.python))).lexically_normal().string();
    }
  }
  if (const Json* v = find_field(value, "tuner")) {
    ray.tuner_path =
        fs::absolute(fs::path(resolve(string(*v, at + ".tuner")))).lexically_normal().string();
  }
  if (const Json* v = find_field(value, "endpoint")) ray.endpoint = string(*v, at + ".endpoint");
  if (!ray.endpoint.empty()) {
    static const std::regex kTcp(R"(tcp://[^:/*]+:\d+)");
    if (!std::regex_match(ray.endpoint, kTcp)) {
      fail(at + ".endpoint",
           "expected the address the executors connect to, tcp://HOST:PORT (a host name or "
           "address the cluster's nodes reach, and a port), got " +
               json_text(ray.endpoint));
    }
  }
  if (const Json* v = find_field(value, "runtime_env")) {
    if (!v->is_object()) {
      fail(at + ".runtime_env",
           "expected an object as ray.init(runtime_env=...) takes it, such as {\"env_vars\": "
           "{\"OMP_NUM_THREADS\": \"1\"}}, got " +
               shown_value(*v));
    }
    ray.runtime_env = v->dump();
  }
  return ray;
}

SearchSpace Parser::parse_space(const Json& value) {
  object(value, "space");
  SearchSpace space;
  if (find_field(value, "import")) {
    space = import_space(value);
  } else if (find_field(value, "file")) {
    fields(value, "space", {"file"}, "next to \"file\"");
    fs::path file = resolve(string(value["file"], "space.file"));
    try {
      space = load_search_space(file);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kNotFound) throw;  // it names the space file and its path
      throw Error(e.code(), file_ + ": space.file: " + e.what());
    }
  } else {
    space = named([&] { return search_space_from_json(value, "space"); });
  }
  if (space.empty()) fail("space", "has no parameters to tune");
  return space;
}

SearchSpace Parser::import_space(const Json& value) {
  size_t kind = one_of(value["import"], "space.import", {"nni", "wandb"});
  // An inline space sits under the key its tool gives it: W&B's "parameters" block, NNI's
  // "search_space" (the searchSpace of an NNI experiment config).
  const char* inline_key = kind == 0 ? "search_space" : "parameters";
  if (kind == 0) {
    fields(value, "space", {"import", "file", "search_space"}, "for an NNI import");
  } else {
    fields(value, "space", {"import", "file", "parameters"}, "for a W&B import");
  }
  const Json* file = find_field(value, "file");
  const Json* inline_space = find_field(value, inline_key);
  if ((file != nullptr) == (inline_space != nullptr)) {
    fail("space",
         std::string("an import needs exactly one of \"file\" and \"") + inline_key + "\"");
  }
  if (file) {
    fs::path path = resolve(string(*file, "space.file"));
    try {
      return kind == 0 ? load_nni_search_space(path) : load_wandb_parameters(path);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kNotFound) throw;
      throw Error(e.code(), file_ + ": space.file: " + e.what());
    }
  }
  object(*inline_space, child_path("space", inline_key));
  // The importers read text and name their errors "<source>: <path in the imported block>".
  std::string source = file_ + ": " + child_path("space", inline_key);
  std::string text = inline_space->dump();
  return kind == 0 ? import_nni_search_space(text, source) : import_wandb_parameters(text, source);
}

SweepObjective Parser::read_objective(const Json& value, const std::string& path) {
  object(value, path);
  fields(value, path, {"metric", "direction", "noisy"});
  SweepObjective objective;
  objective.metric = string(required(value, path, "metric"), child_path(path, "metric"));
  const Json& direction = required(value, path, "direction", " (minimize or maximize)");
  objective.direction = one_of(direction, child_path(path, "direction"), kDirections) == 0
                            ? StudyDirection::kMinimize
                            : StudyDirection::kMaximize;
  if (const Json* noisy = find_field(value, "noisy")) {
    objective.noisy = boolean(*noisy, child_path(path, "noisy"));
  }
  return objective;
}

void Parser::parse_objective(const Json& value, SweepFile& sweep) {
  sweep.objectives = {read_objective(value, "objective")};
}

void Parser::parse_objectives(const Json& value, SweepFile& sweep) {
  if (!value.is_array() || value.empty()) {
    fail("objectives",
         "expected a non-empty list such as [{\"metric\": \"val_accuracy\", "
         "\"direction\": \"maximize\"}, {\"metric\": \"latency_ms\", "
         "\"direction\": \"minimize\"}], got " +
             shown_value(value));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    SweepObjective objective = read_objective(value[i], index_path("objectives", i));
    for (const SweepObjective& earlier : sweep.objectives) {
      if (earlier.metric == objective.metric) {
        fail(index_path("objectives", i) + ".metric",
             json_text(objective.metric) + " is an objective already; name each metric once");
      }
    }
    sweep.objectives.push_back(std::move(objective));
  }
}

std::vector<MetricConstraint> Parser::parse_constraints(const Json& value,
                                                        const std::string& path) {
  if (!value.is_array()) {
    fail(path,
         "expected a list of bounds such as [{\"metric\": \"latency_ms\", \"max\": 2}], got " +
             shown_value(value));
  }
  std::vector<MetricConstraint> constraints;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string at = index_path(path, i);
    object(value[i], at);
    fields(value[i], at, {"metric", "max", "min"});
    MetricConstraint c;
    c.metric = string(required(value[i], at, "metric", " (the job's metric to bound)"),
                      child_path(at, "metric"));
    const Json* max = find_field(value[i], "max");
    const Json* min = find_field(value[i], "min");
    if ((max != nullptr) == (min != nullptr)) {
      fail(at,
           std::string(max ? "has both \"max\" and \"min\"" : "has neither \"max\" nor \"min\"") +
               "; a bound is one of them (bound a metric on both sides with two entries)");
    }
    c.bound = max ? MetricConstraint::Bound::kMax : MetricConstraint::Bound::kMin;
    const std::string limit_path = child_path(at, max ? "max" : "min");
    const Json& limit = max ? *max : *min;
    if (!limit.is_number() || !std::isfinite(limit.get<double>())) {
      fail(limit_path, "expected a finite number, got " + shown_value(limit));
    }
    c.limit = limit.get<double>();
    for (size_t j = 0; j < constraints.size(); ++j) {
      if (constraints[j].metric == c.metric && constraints[j].bound == c.bound) {
        fail(at, "bounds " + json_text(c.metric) + " as " + index_path(path, j) + " does (" +
                     to_string(constraints[j]) + "); state each bound once");
      }
    }
    constraints.push_back(std::move(c));
  }
  return constraints;
}

// An engine job reports a known set of final metrics (docs/engine_jobs.md): a constraint or an
// objective on another one would fail every trial. A command job's metrics are whatever it
// prints. (The first objective is the job's objective_metric, which the job itself checks.)
void Parser::check_engine_metrics(const SweepFile& sweep, const Json& job) const {
  if (sweep.job_kind != "engine") return;
  const std::vector<std::string>& metrics = engine_final_metrics();
  std::vector<std::pair<std::string, std::string>> named;  // (metric, its JSON path)
  for (size_t i = 1; i < sweep.objectives.size(); ++i) {
    named.emplace_back(sweep.objectives[i].metric,
                       child_path(index_path("objectives", i), "metric"));
  }
  for (size_t i = 0; i < sweep.constraints.size(); ++i) {
    named.emplace_back(sweep.constraints[i].metric,
                       child_path(index_path("constraints", i), "metric"));
  }
  for (const auto& [metric, at] : named) {
    if (std::find(metrics.begin(), metrics.end(), metric) == metrics.end()) {
      fail(at, json_text(metric) + " is not a metric of an engine job (it reports " +
                   choice_list(metrics) + ")" + did_you_mean(metric, metrics));
    }
    if (metric.starts_with("test_")) {
      const Json* data = job.is_object() ? find_field(job, "data") : nullptr;
      const Json* test = data && data->is_object() ? find_field(*data, "test") : nullptr;
      if (!test || (test->is_number() && test->get<double>() <= 0)) {
        fail(at, json_text(metric) +
                     " is reported only when the job's data.test is > 0 (the "
                     "test images to evaluate the best epoch on)");
      }
    }
  }
}

SamplerConfig Parser::parse_sampler(const Json& value, const SearchSpace& space) {
  object(value, "sampler");
  SamplerConfig config;
  if (const Json* type = find_field(value, "type")) {
    config.type = sampler_types()[one_of(*type, "sampler.type", kSamplerTypes)];
    config.type_given = true;
  } else if (value.size() > (find_field(value, "seed") ? 1u : 0u)) {
    // Options without a type are TPE's, as in files written while TPE was the default.
    config.type = SamplerType::kTpe;
    config.type_given = true;
  }
  read_options(*this, value, "sampler", sampler_options(config.type),
               "for sampler type " + json_text(to_string(config.type)), config);
  auto at = [&](std::string_view key) { return child_path("sampler", key); };

  if (config.type == SamplerType::kTpe && config.tpe.group && !config.tpe.multivariate) {
    fail(at("group"), "true needs \"multivariate\": true (groups are joint estimators)");
  }
  if (config.type == SamplerType::kGrid) {
    // Builds the grid once so that a space it cannot enumerate fails now, naming the parameter.
    try {
      GridSampler check(space, config.grid_max_points);
    } catch (const Error& e) {
      fail("sampler.type", std::string("\"grid\" over this space: ") + e.what());
    }
  } else {
    // The samplers check their options again (cross-field limits); their messages start with
    // the sampler's name where ours say "sampler".
    try {
      tuner::make_sampler(config, &space);
    } catch (const Error& e) {
      throw section_error(file_, "sampler", e.what());
    }
  }
  return config;
}

void Parser::check_scheduler_objectives(const SweepFile& sweep) const {
  const size_t n = sweep.objectives.size();
  const SchedulerConfig& scheduler = sweep.scheduler;
  const bool stopping =
      scheduler.type == SchedulerType::kMedian || scheduler.type == SchedulerType::kPercentile;
  const size_t weights = scheduler.scalarization_weights.size();
  if (n > 1) {
    const std::string many = "early stopping judges trials by one metric, but this sweep has " +
                             std::to_string(n) + " objectives: ";
    if (stopping && weights == 0) {
      fail("scheduler", many +
                            "give \"scalarization\": {\"weights\": [...]} (one weight per "
                            "objective) to judge their weighted sum, or use \"mo_asha\"");
    }
    if (!stopping && scheduler.type != SchedulerType::kNone &&
        scheduler.type != SchedulerType::kMoAsha) {
      fail("scheduler", many + "\"" + std::string(to_string(scheduler.type)) +
                            "\" judges one; use \"mo_asha\", or \"median\" or \"percentile\" "
                            "with \"scalarization\", or remove \"scheduler\"");
    }
    if (weights != 0 && weights != n) {
      fail("scheduler.scalarization.weights",
           "has " + std::to_string(weights) + " weight(s), but this sweep has " +
               std::to_string(n) + " objectives: give one per objective, in their order");
    }
    return;
  }
  if (weights != 0) {
    fail("scheduler.scalarization", "weighs several objectives, but this sweep has one: remove it");
  }
  if (scheduler.type == SchedulerType::kMoAsha) {
    fail("scheduler.type",
         "\"mo_asha\" ranks several objectives, but this sweep has one: use \"asha\"");
  }
}

void Parser::check_engine_step_objectives(const SweepFile& sweep) const {
  if (sweep.job_kind != "engine" || sweep.objectives.size() < 2 ||
      sweep.scheduler.type == SchedulerType::kNone) {
    return;
  }
  // What an engine job knows only after its epochs (EngineOutcome::final_metrics): the rest of
  // engine_final_metrics(), the model's figures included, is reported at every epoch too.
  static const std::vector<std::string> kOnlyAtTheEnd = {"best_epoch", "test_loss", "test_accuracy",
                                                         "test_auc",   "test_rmse", "test_mae"};
  for (size_t i = 0; i < sweep.objectives.size(); ++i) {
    const std::string& metric = sweep.objectives[i].metric;
    if (std::find(kOnlyAtTheEnd.begin(), kOnlyAtTheEnd.end(), metric) != kOnlyAtTheEnd.end()) {
      fail(child_path(index_path("objectives", i), "metric"),
           json_text(metric) +
               " is known only after the last epoch, so the scheduler cannot judge it at each "
               "epoch: with \"scheduler\", give objectives an engine job reports every epoch "
               "(val_accuracy, val_loss, num_params, latency_ms, ...), or remove \"scheduler\"");
    }
  }
}

SchedulerConfig Parser::parse_scheduler(const Json& value) {
  object(value, "scheduler");
  SchedulerConfig config;
  const Json& type =
      required(value, "scheduler", "type", " (" + choice_list(kSchedulerTypes) + ")");
  config.type = scheduler_types()[one_of(type, "scheduler.type", kSchedulerTypes)];
  read_options(*this, value, "scheduler", scheduler_options(config.type),
               "for scheduler type " + json_text(to_string(config.type)), config);
  // The schedulers check their options again (cross-field limits such as Hyperband's budgets);
  // their messages start with the scheduler's name where ours say "scheduler".
  try {
    tuner::make_scheduler(config);
  } catch (const Error& e) {
    throw section_error(file_, "scheduler", e.what());
  }
  return config;
}

Budget Parser::parse_budget(const Json* value, SamplerType sampler, bool population) {
  Budget budget;
  if (!value) {
    // A grid ends when every point has been tried, a population when its members have; anything
    // else would run forever.
    if (sampler == SamplerType::kGrid || population) return budget;
    throw Error(ErrorCode::kInvalidArgument,
                file_ +
                    ": missing required field \"budget\" (e.g. {\"trials\": 50} or "
                    "{\"time\": \"2h\"})");
  }
  object(*value, "budget");
  fields(*value, "budget", {"trials", "time", "trial_time", "max_concurrent", "max_failures"});
  if (const Json* v = find_field(*value, "trials")) budget.trials = int32(*v, "budget.trials", 1);
  auto duration = [&](const Json& v, const std::string& path) {
    std::chrono::seconds d{0};
    if (v.is_string()) {
      try {
        d = parse_duration(v.get<std::string>());
      } catch (const Error& e) {
        fail(path, e.what());
      }
    } else {
      d = std::chrono::seconds(integer(v, path, 1));
    }
    if (d.count() <= 0) fail(path, "must be longer than 0 s");
    return d;
  };
  if (const Json* v = find_field(*value, "time")) budget.time = duration(*v, "budget.time");
  if (const Json* v = find_field(*value, "trial_time")) {
    budget.trial_time = duration(*v, "budget.trial_time");
    if (budget.trial_time->count() > static_cast<int64_t>(kMaxJobTimeoutSeconds)) {
      fail("budget.trial_time",
           "must be at most a year (365d), got " + format_duration(*budget.trial_time));
    }
  }
  if (const Json* v = find_field(*value, "max_concurrent")) {
    budget.max_concurrent = int32(*v, "budget.max_concurrent", 0);
  }
  if (const Json* v = find_field(*value, "max_failures")) {
    budget.max_failures = v->is_null() ? 0 : int32(*v, "budget.max_failures", 0);
  }
  if (population && budget.trials) {
    fail("budget.trials",
         "a pbt or pb2 sweep's trials are its members' segments: its budget is "
         "scheduler.population_size "
         "(and scheduler.max_steps); remove \"trials\"");
  }
  if (!budget.trials && !budget.time && sampler != SamplerType::kGrid && !population) {
    fail("budget", "needs \"trials\", \"time\" or both (only a grid sampler ends by itself)");
  }
  return budget;
}

// Throws unless placeholder `name`, found at `path`, names a parameter every trial has: an
// unknown name is a typo, and a conditional parameter is absent from the trials where it is
// inactive; either would fail trials at run time instead of the sweep at load time.
void check_placeholder(const std::string& name, const std::string& path, const SearchSpace& space,
                       const std::string& file, std::string_view remedy) {
  const ParamSpec* spec = space.find(name);
  if (!spec) {
    std::vector<std::string> names;
    for (const ParamSpec& p : space.params()) names.push_back(p.name);
    throw Error(ErrorCode::kInvalidArgument, file + ": " + path + ": placeholder {" + name +
                                                 "} names no parameter of the space" +
                                                 did_you_mean(name, names));
  }
  if (spec->condition) {
    throw Error(ErrorCode::kInvalidArgument,
                file + ": " + path + ": placeholder {" + name +
                    "} names a conditional parameter (" + "active only for some values of " +
                    json_text(spec->condition->parent) + "), which the other trials do not have; " +
                    std::string(remedy));
  }
}

// Reads a command argv's {name} placeholders as the executor will (executor/argv_template.h) and
// refuses a broken template or a name that is neither built-in nor a parameter: either would fail
// every trial at run time instead of the sweep at load time.
void check_placeholders(const Json& argv, const SearchSpace& space, const std::string& file) {
  if (!argv.is_array()) return;  // parse_trial_job says what is wrong with it
  for (size_t i = 0; i < argv.size(); ++i) {
    if (!argv[i].is_string()) continue;
    std::vector<std::string> names;
    try {
      names = argv_placeholders(argv[i].get_ref<const std::string&>(), i);
    } catch (const Error& e) {
      throw Error(ErrorCode::kInvalidArgument, file + ": job." + e.what());
    }
    for (const std::string& name : names) {
      check_placeholder(name, index_path("job.argv", i), space, file,
                        "read it from the TUNER_PARAMS environment variable instead");
    }
  }
}

// Engine jobs: every string value under model, training and data that is exactly "{NAME}" is a
// placeholder (executor/engine_job.h); NAME must be a parameter, or every trial would fail.
void check_engine_placeholders(const Json& value, const std::string& path, const SearchSpace& space,
                               const std::string& file) {
  if (value.is_string()) {
    if (auto name = engine_placeholder(value.get_ref<const std::string&>())) {
      check_placeholder(*name, path, space, file,
                        "make it unconditional (a job may ignore a value it does not use)");
    }
  } else if (value.is_object()) {
    for (const auto& [key, child] : value.items()) {
      check_engine_placeholders(child, child_path(path, key), space, file);
    }
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      check_engine_placeholders(value[i], index_path(path, i), space, file);
    }
  }
}

// A parameter's value in the load-time probes: the lowest value of a range, the first choice of a
// categorical, the mean of a normal (rounded to its q).
ParamValue probe_value(const Distribution& distribution) {
  return std::visit(
      [](const auto& d) -> ParamValue {
        using T = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<T, FloatDistribution>) {
          return d.low;
        } else if constexpr (std::is_same_v<T, IntDistribution>) {
          return d.low;
        } else if constexpr (std::is_same_v<T, CategoricalDistribution>) {
          return d.choices.front();
        } else {
          double v = d.log ? std::exp(d.mu) : d.mu;
          if (d.q) v = std::round(v / *d.q) * *d.q;
          return v;
        }
      },
      distribution);
}

// The parameters a job probes (TrialJob::probed_params: an engine model's placeholders) are
// checked at load on probe trials (docs/sweep_file.md): at probe_value(), then each other choice
// of each categorical one at a time. A probe the job refuses (an engine model that does not
// build or does not fit the dataset, check_engine_model) refuses the sweep: every trial with
// those values would fail at its start.
void probe_job(const TrialJob& job, const SearchSpace& space, const std::string& where) {
  const std::vector<std::string> names = job.probed_params();
  if (names.empty()) return;  // parsing the job checked it in full
  Params base;
  for (const std::string& name : names) {
    const ParamSpec* spec = space.find(name);
    if (spec == nullptr) return;  // check_engine_placeholders refused it already
    base[name] = probe_value(spec->distribution);
  }
  std::vector<Params> probes = {base};
  for (const std::string& name : names) {
    const auto* categorical = std::get_if<CategoricalDistribution>(&space.find(name)->distribution);
    if (categorical == nullptr) continue;
    for (size_t i = 1; i < categorical->choices.size(); ++i) {
      Params probe = base;
      probe[name] = categorical->choices[i];
      probes.push_back(std::move(probe));
    }
  }
  for (const Params& probe : probes) {
    try {
      job.check_probe(probe, where);
    } catch (const Error& e) {
      std::string values;
      for (const std::string& name : names) {
        values += (values.empty() ? "" : ", ") + name + " = " + to_string(probe.at(name));
      }
      throw Error(ErrorCode::kInvalidArgument,
                  std::string(e.what()) + "; every trial with " + values +
                      " would fail (the sweep tries the model with its parameters at their "
                      "lowest values or first choices, and each categorical choice in turn): "
                      "fix the model or the parameters' ranges and choices");
    }
  }
}

void Parser::parse_job(const Json& value, SweepFile& sweep) {
  object(value, "job");
  Json job = value;
  sweep.job_kind = string(required(job, "job", "kind", " (\"command\" or \"engine\")"), "job.kind");
  one_of(job["kind"], "job.kind", {"command", "engine"});
  if (const Json* metric = find_field(job, "objective_metric")) {
    std::string stated = string(*metric, "job.objective_metric");
    if (stated != sweep.objective_metric()) {
      fail("job.objective_metric",
           json_text(stated) + " differs from objective.metric " +
               json_text(sweep.objective_metric()) +
               "; state the metric once, in \"objective\", or make the two the same");
    }
  } else {
    job["objective_metric"] = sweep.objective_metric();
  }
  // budget.trial_time is the job's timeout_s: the executor enforces it.
  if (sweep.budget.trial_time) {
    const auto seconds = sweep.budget.trial_time->count();
    if (const Json* stated = find_field(job, "timeout_s")) {
      // (One that is not a number is refused by parse_trial_job below.)
      if (stated->is_number() && stated->get<double>() != static_cast<double>(seconds)) {
        fail("job.timeout_s", stated->dump() + " differs from budget.trial_time " +
                                  json_text(format_duration(*sweep.budget.trial_time)) + " (" +
                                  std::to_string(seconds) +
                                  " s); state the limit once, in \"budget\", or make the two "
                                  "the same");
      }
    } else {
      job["timeout_s"] = seconds;
    }
  }
  sweep.threads_per_trial = 1;
  // The job runs in other processes, in other directories: its paths are made absolute here,
  // relative ones against the sweep file's directory like every path of the file.
  auto absolute_path = [&](Json& field, const std::string& path) {
    fs::path p = fs::absolute(fs::path(resolve(string(field, path)))).lexically_normal();
    if (!p.has_filename() && p.has_relative_path()) p = p.parent_path();  // "/a/b/" -> "/a/b"
    field = p.string();
  };
  if (sweep.job_kind == "engine") {
    if (const Json* threads = find_field(job, "threads")) {
      sweep.threads_per_trial = int32(*threads, "job.threads", 1);
    }
    for (const char* key : {"model", "training", "data"}) {
      if (const Json* v = find_field(job, key)) {
        check_engine_placeholders(*v, child_path("job", key), sweep.space, file_);
      }
    }
    if (job.contains("data") && job["data"].is_object() && job["data"].contains("dir")) {
      absolute_path(job["data"]["dir"], "job.data.dir");
    }
    if (job.contains("training") && job["training"].is_object() &&
        job["training"].contains("init_from") && job["training"]["init_from"].is_string() &&
        !engine_placeholder(job["training"]["init_from"].get<std::string>())) {
      absolute_path(job["training"]["init_from"], "job.training.init_from");
    }
  } else {
    fields(job, "job", kCommandJobMembers);  // a misspelt member gets a did-you-mean
    if (const Json* argv = find_field(job, "argv")) check_placeholders(*argv, sweep.space, file_);
    // A command's relative program and files then mean what they mean beside the sweep file.
    if (!find_field(job, "working_dir")) job["working_dir"] = ".";
    absolute_path(job["working_dir"], "job.working_dir");
  }
  if (find_field(job, "artifacts_dir")) absolute_path(job["artifacts_dir"], "job.artifacts_dir");
  sweep.job_json = job.dump();
  // The full check of the job is the executor's own.
  std::unique_ptr<TrialJob> trial_job = parse_trial_job(sweep.job_json, file_ + ": job");
  if (const auto* engine = dynamic_cast<const EngineTrialJob*>(trial_job.get())) {
    // The data's files, where this host can read them: the model must fit their shape.
    EngineJobSpec spec = engine->spec();
    if (read_engine_data_shape(spec, file_ + ": job")) {
      trial_job = std::make_unique<EngineTrialJob>(std::move(spec));
    }
  }
  probe_job(*trial_job, sweep.space, file_ + ": job");
  if (const auto* engine = dynamic_cast<const EngineTrialJob*>(trial_job.get())) {
    engine::check_engine_init_from(engine->spec(), file_ + ": job");  // the weights it starts from
  }
}

std::string Parser::tracking_uri(const Json& value, std::string_view path) const {
  const std::string uri = string(value, path);
  try {
    tracking::parse_http_url(uri);
  } catch (const Error& e) {
    fail(path, e.what());
  }
  return uri;
}

WarmStartOptions Parser::parse_warm_start(const Json& value, const SweepFile& sweep) const {
  object(value, "warm_start");
  fields(value, "warm_start", {"study", "storage", "allow_other_objective"});
  WarmStartOptions options;
  options.study = string(required(value, "warm_start", "study", " (the earlier study's name)"),
                         "warm_start.study");
  if (const Json* v = find_field(value, "storage")) {
    options.storage_path = resolve(string(*v, "warm_start.storage"));
  }
  if (const Json* v = find_field(value, "allow_other_objective")) {
    options.allow_other_objective = boolean(*v, "warm_start.allow_other_objective");
  }
  if (options.study == sweep.name &&
      (options.storage_path.empty() || options.storage_path == sweep.storage_path)) {
    fail("warm_start.study", "is this sweep's own study; name an earlier one");
  }
  return options;
}

TrackingConfig Parser::parse_tracking(const Json& value) {
  object(value, "tracking");
  fields(value, "tracking", {"mlflow"});
  const Json& mlflow = object(required(value, "tracking", "mlflow",
                                       " (the MLflow tracking server: "
                                       "{\"uri\": \"http://127.0.0.1:5000\"})"),
                              "tracking.mlflow");
  fields(mlflow, "tracking.mlflow", {"uri", "experiment", "interval", "log_model"});
  TrackingConfig config;
  config.mlflow_uri =
      tracking_uri(required(mlflow, "tracking.mlflow", "uri", " (e.g. \"http://127.0.0.1:5000\")"),
                   "tracking.mlflow.uri");
  if (const Json* v = find_field(mlflow, "experiment")) {
    config.experiment = string(*v, "tracking.mlflow.experiment");
  }
  if (const Json* v = find_field(mlflow, "interval")) {
    if (v->is_string()) {
      try {
        config.interval = parse_duration(v->get<std::string>());
      } catch (const Error& e) {
        fail("tracking.mlflow.interval", e.what());
      }
    } else {
      config.interval = std::chrono::seconds(integer(*v, "tracking.mlflow.interval", 1));
    }
    if (config.interval.count() < 1) fail("tracking.mlflow.interval", "must be at least 1 s");
  }
  if (const Json* v = find_field(mlflow, "log_model")) {
    config.log_model = boolean(*v, "tracking.mlflow.log_model");
  }
  return config;
}

ExportConfig Parser::parse_export(const Json& value, const SweepFile& sweep) {
  object(value, "export");
  fields(value, "export", {"registry", "name", "metric", "direction", "limits", "mlflow"});
  ExportConfig config;
  config.registry_path = resolve(string(
      required(value, "export", "registry", " (the registry directory)"), "export.registry"));
  config.model_name = find_field(value, "name") ? string(value["name"], "export.name") : sweep.name;
  config.metric = find_field(value, "metric") ? string(value["metric"], "export.metric")
                                              : sweep.objective_metric();
  const auto objective =
      std::find_if(sweep.objectives.begin(), sweep.objectives.end(),
                   [&](const SweepObjective& o) { return o.metric == config.metric; });
  if (const Json* d = find_field(value, "direction")) {
    config.direction = one_of(*d, "export.direction", kDirections) == 0 ? StudyDirection::kMinimize
                                                                        : StudyDirection::kMaximize;
  } else if (objective != sweep.objectives.end()) {
    config.direction = objective->direction;
  } else if (config.metric == sweep.objective_metric()) {
    config.direction = sweep.direction();
  } else {
    fail("export", "missing required field \"direction\" (the metric " + json_text(config.metric) +
                       " is no objective's, so its direction is not known)");
  }
  if (const Json* v = find_field(value, "limits")) {
    config.limits = parse_constraints(*v, "export.limits");
    for (size_t i = 0; i < config.limits.size(); ++i) {
      if (config.limits[i].metric == config.metric) {
        fail(child_path(index_path("export.limits", i), "metric"),
             json_text(config.metric) +
                 " is the primary metric (export.metric), which the "
                 "export maximizes or minimizes; bound the other metrics");
      }
    }
  }
  if (const Json* v = find_field(value, "mlflow")) {
    object(*v, "export.mlflow");
    fields(*v, "export.mlflow", {"uri"});
    MlflowExportConfig mlflow;
    if (const Json* uri = find_field(*v, "uri")) {
      mlflow.uri = tracking_uri(*uri, "export.mlflow.uri");
    } else if (!sweep.tracking) {
      fail("export.mlflow",
           "missing required field \"uri\" (the MLflow server whose model "
           "registry gets the version), and the sweep has no tracking.mlflow.uri "
           "to take it from");
    }
    config.mlflow = mlflow;
  }
  return config;
}

// [{"metric": "latency_ms", "max": 2}, ...], as parse_constraints reads it.
Json constraints_json(const std::vector<MetricConstraint>& constraints) {
  Json out = Json::array();
  for (const MetricConstraint& c : constraints) {
    out.push_back({{"metric", c.metric},
                   {c.bound == MetricConstraint::Bound::kMax ? "max" : "min", c.limit}});
  }
  return out;
}

// `resolved` as the sweep file at `sweep_path` would write it: relative to its directory.
std::string relative_to_sweep(const std::string& resolved, const std::string& sweep_path) {
  fs::path dir = fs::path(sweep_path).parent_path();
  if (dir.empty()) return resolved;
  fs::path relative = fs::path(resolved).lexically_relative(dir);
  return relative.empty() ? resolved : relative.string();
}

}  // namespace

bool SamplerConfig::operator==(const SamplerConfig& other) const {
  return type == other.type && same_options(sampler_options(type), *this, other);
}

bool SchedulerConfig::operator==(const SchedulerConfig& other) const {
  return type == other.type && same_options(scheduler_options(type), *this, other);
}

std::vector<std::string_view> sampler_option_names(SamplerType type) {
  std::vector<std::string_view> names = allowed_fields(sampler_options(type));
  names.erase(names.begin());  // "type"
  return names;
}

std::vector<std::string_view> scheduler_option_names(SchedulerType type) {
  std::vector<std::string_view> names = allowed_fields(scheduler_options(type));
  names.erase(names.begin());
  return names;
}

SweepFile load_sweep_file(const std::string& path) {
  std::string text = read_text_file(path);
  return parse_sweep_file(text, path);
}

SweepFile parse_sweep_file(std::string_view json, const std::string& path) {
  return Parser(path).parse(json);
}

std::shared_ptr<Sampler> make_sampler(const SweepFile& sweep) {
  return make_sampler(sweep.sampler, &sweep.space);
}

std::shared_ptr<Scheduler> make_scheduler(const SweepFile& sweep) {
  return make_scheduler(sweep.scheduler);
}

StudyOptions make_study_options(const SweepFile& sweep) {
  StudyOptions options;
  options.name = sweep.name;
  options.directions.clear();
  options.noisy_objective = false;
  for (const SweepObjective& objective : sweep.objectives) {
    options.directions.push_back(objective.direction);
    if (objective.noisy) options.noisy_objective = true;
  }
  options.sampler = make_sampler(sweep);
  options.scheduler = make_scheduler(sweep);
  options.seed = sweep.sampler.seed;
  options.space = sweep.space;
  options.load_if_exists = true;
  if (sweep.warm_start) {
    options.warm_start = *sweep.warm_start;
    for (const SweepObjective& objective : sweep.objectives) {
      options.warm_start->metric_names.push_back(objective.metric);
    }
  }
  return options;
}

namespace {

// Every member stated, the defaults too, but the unset ones.
Json slurm_json(const SlurmOptions& slurm) {
  Json out = Json::object();
  if (!slurm.partition.empty()) out["partition"] = slurm.partition;
  if (!slurm.account.empty()) out["account"] = slurm.account;
  if (!slurm.time.empty()) out["time"] = slurm.time;
  if (slurm.gpus) out["gpus"] = *slurm.gpus;
  if (!slurm.gres.empty()) out["gpus"] = slurm.gres;
  if (slurm.cpus_per_executor > 0) out["cpus_per_executor"] = slurm.cpus_per_executor;
  if (!slurm.mem.empty()) out["mem"] = slurm.mem;
  out["slots"] = slurm.slots;
  out["min_executors"] = slurm.min_executors;
  out["max_executors"] = slurm.max_executors;
  out["idle_grace"] = format_duration(slurm.idle_grace);
  if (!slurm.extra_args.empty()) out["sbatch_args"] = slurm.extra_args;
  if (!slurm.tuner_path.empty()) out["tuner"] = slurm.tuner_path;
  if (!slurm.endpoint.empty()) out["endpoint"] = slurm.endpoint;
  return out;
}

// Every member stated, the defaults too, but the unset ones.
Json ray_json(const RayOptions& ray) {
  Json out = Json::object();
  out["address"] = ray.address;
  out["cpus_per_executor"] = ray.cpus_per_executor;
  out["gpus_per_executor"] = ray.gpus_per_executor;
  if (!ray.memory.empty()) out["memory"] = ray.memory;
  out["slots"] = ray.slots;
  out["min_executors"] = ray.min_executors;
  out["max_executors"] = ray.max_executors;
  out["idle_grace"] = format_duration(ray.idle_grace);
  out["python"] = ray.python;
  if (!ray.tuner_path.empty()) out["tuner"] = ray.tuner_path;
  if (!ray.endpoint.empty()) out["endpoint"] = ray.endpoint;
  if (!ray.runtime_env.empty()) out["runtime_env"] = Json::parse(ray.runtime_env);
  return out;
}

}  // namespace

std::string to_json(const SweepFile& sweep) {
  Json root = Json::object();
  root["version"] = kSweepFileVersion;
  root["name"] = sweep.name;
  if (!sweep.description.empty()) root["description"] = sweep.description;
  root["storage"] = relative_to_sweep(sweep.storage_path, sweep.path);
  root["space"] = search_space_to_json_value(sweep.space);
  auto objective_json = [](const SweepObjective& o) {
    Json json{{"metric", o.metric}, {"direction", std::string(to_string(o.direction))}};
    if (o.noisy) json["noisy"] = true;
    return json;
  };
  if (sweep.objectives.size() == 1) {
    root["objective"] = objective_json(sweep.objectives.front());
  } else {
    Json objectives = Json::array();
    for (const SweepObjective& o : sweep.objectives) objectives.push_back(objective_json(o));
    root["objectives"] = objectives;
  }
  if (!sweep.constraints.empty()) root["constraints"] = constraints_json(sweep.constraints);

  root["sampler"] = write_options(to_string(sweep.sampler.type),
                                  sampler_options(sweep.sampler.type), sweep.sampler);
  root["scheduler"] = write_options(to_string(sweep.scheduler.type),
                                    scheduler_options(sweep.scheduler.type), sweep.scheduler);

  Json budget = Json::object();
  if (sweep.budget.trials) budget["trials"] = *sweep.budget.trials;
  if (sweep.budget.time) budget["time"] = format_duration(*sweep.budget.time);
  if (sweep.budget.trial_time) budget["trial_time"] = format_duration(*sweep.budget.trial_time);
  budget["max_concurrent"] = sweep.budget.max_concurrent;
  if (sweep.budget.max_failures) budget["max_failures"] = *sweep.budget.max_failures;
  root["budget"] = budget;

  root["job"] = Json::parse(sweep.job_json);
  root["executors"] = {{"local", sweep.local_executors}, {"prefetch", sweep.local_prefetch}};
  if (sweep.local_gpus) root["executors"]["gpus"] = *sweep.local_gpus;
  if (sweep.slurm) root["executors"]["slurm"] = slurm_json(*sweep.slurm);
  if (sweep.ray) root["executors"]["ray"] = ray_json(*sweep.ray);
  if (sweep.export_config) {
    const ExportConfig& e = *sweep.export_config;
    root["export"] = {{"registry", relative_to_sweep(e.registry_path, sweep.path)},
                      {"name", e.model_name},
                      {"metric", e.metric},
                      {"direction", std::string(to_string(e.direction))}};
    if (!e.limits.empty()) root["export"]["limits"] = constraints_json(e.limits);
    if (e.mlflow) {
      root["export"]["mlflow"] = Json::object();
      if (!e.mlflow->uri.empty()) root["export"]["mlflow"]["uri"] = e.mlflow->uri;
    }
  }
  if (sweep.tracking) {
    const TrackingConfig& t = *sweep.tracking;
    Json mlflow = {{"uri", t.mlflow_uri},
                   {"interval", format_duration(t.interval)},
                   {"log_model", t.log_model}};
    if (!t.experiment.empty()) mlflow["experiment"] = t.experiment;
    root["tracking"] = {{"mlflow", mlflow}};
  }
  if (sweep.warm_start) {
    const WarmStartOptions& w = *sweep.warm_start;
    root["warm_start"] = {{"study", w.study}};
    if (!w.storage_path.empty()) {
      root["warm_start"]["storage"] = relative_to_sweep(w.storage_path, sweep.path);
    }
    root["warm_start"]["allow_other_objective"] = w.allow_other_objective;
  }
  return root.dump(2) + "\n";
}

std::string SweepFile::export_mlflow_uri() const {
  if (!export_config || !export_config->mlflow) return "";
  if (!export_config->mlflow->uri.empty()) return export_config->mlflow->uri;
  return tracking ? tracking->mlflow_uri : "";
}

std::chrono::seconds parse_duration(std::string_view text) {
  auto bad = [&]() -> Error {
    return Error(ErrorCode::kInvalidArgument,
                 "expected a duration such as \"90s\", \"30m\", \"2h\" or \"1h30m\" (units d, h, "
                 "m, s, largest first) or a number of seconds, got " +
                     json_text(text));
  };
  if (text.empty()) throw bad();
  constexpr std::string_view kUnits = "dhms";
  constexpr int64_t kUnitSeconds[] = {86400, 3600, 60, 1};
  int64_t total = 0;
  size_t next_unit = 0;  // units must come largest first, each at most once
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    int64_t n = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (n > (kInt64Max - 9) / 10) throw bad();
      n = n * 10 + (text[i] - '0');
      ++i;
    }
    if (i == start) throw bad();
    if (i == text.size()) {
      if (start != 0) throw bad();  // "1h30" : a bare number only on its own
      return std::chrono::seconds(n);
    }
    size_t unit = kUnits.find(text[i]);
    if (unit == std::string_view::npos || unit < next_unit) throw bad();
    if (n > kInt64Max / kUnitSeconds[unit] || total > kInt64Max - n * kUnitSeconds[unit]) {
      throw bad();
    }
    total += n * kUnitSeconds[unit];
    next_unit = unit + 1;
    ++i;
  }
  return std::chrono::seconds(total);
}

std::string format_duration(std::chrono::seconds duration) {
  int64_t s = duration.count();
  if (s <= 0) return std::to_string(s) + "s";
  std::string out;
  constexpr int64_t kUnitSeconds[] = {86400, 3600, 60, 1};
  constexpr char kUnits[] = "dhms";
  for (int u = 0; u < 4; ++u) {
    if (s >= kUnitSeconds[u]) {
      out += std::to_string(s / kUnitSeconds[u]) + kUnits[u];
      s %= kUnitSeconds[u];
    }
  }
  return out;
}

}  // namespace tuner
