#include "service/model_export.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "executor/engine_job.h"
#include "service/sweep_runner.h"
#include "storage/sqlite_storage.h"
#include "trials/error.h"

namespace tuner {

using registry::Lineage;
using registry::Preprocessing;
using registry::RawInput;
using registry::RegisterOptions;
using registry::Registry;
using registry::RegistryOptions;

namespace fs = std::filesystem;

namespace {

std::string param_json(const ParamValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, double>) {
          return std::isfinite(v) ? nlohmann::json(v).dump() : nlohmann::json(nullptr).dump();
        } else {
          return nlohmann::json(v).dump();
        }
      },
      value);
}

// The trial's final metrics: its user attributes that are JSON numbers.
std::map<std::string, double> trial_metrics(const FrozenTrial& trial) {
  std::map<std::string, double> out;
  for (const auto& [key, text] : trial.user_attrs) {
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_discarded() && j.is_number()) out[key] = j.get<double>();
  }
  return out;
}

std::optional<SweepFile> sweep_of(const StudyRecord& study, const std::string& storage) {
  if (!study.system_attrs.contains(kSweepAttr)) return std::nullopt;
  return stored_sweep(study.name, storage);
}

// The engine job's input pipeline (the loader's scaling, the normalization with the statistics
// of the trial's training split, recomputed from the dataset), which the exported model does
// at its input.
Preprocessing engine_preprocessing(const SweepFile& sweep, const FrozenTrial& trial) {
  const EngineJobSpec spec = parse_engine_job(sweep.job_json);
  const EngineTrialConfig config = resolve_engine_job(spec, trial.params);
  EngineInputPipeline pipeline;
  try {
    pipeline = engine_input_pipeline(spec, config);
  } catch (const Error& e) {
    throw Error(
        ErrorCode::kNotFound,
        std::string("the model's input normalization needs its training data: ") + e.what());
  }
  Preprocessing p;
  p.dataset = pipeline.dataset;
  p.input = pipeline.uint8 ? RawInput::kUint8 : RawInput::kFloat32;
  p.divisor = pipeline.divisor;
  p.mean = pipeline.mean;
  p.stddev = pipeline.stddev;
  return p;
}

std::optional<bool> direction_from_name(const std::string& metric) {
  if (metric.ends_with("accuracy")) return true;
  if (metric.ends_with("loss")) return false;
  return std::nullopt;
}

}  // namespace

ExportResult export_trial(const ExportRequest& request, const RegistryOptions& options) {
  if (!fs::exists(request.storage)) {
    throw Error(ErrorCode::kNotFound, "no study database at '" + request.storage + "'");
  }
  SqliteStorageOptions storage_options;
  storage_options.read_only = true;
  SqliteStorage storage(request.storage, storage_options);
  const std::optional<StudyRecord> study = storage.find_study(request.study);
  if (!study) {
    std::string names;
    for (const StudyRecord& s : storage.list_studies()) names += (names.empty() ? "" : ", ") + s.name;
    throw Error(ErrorCode::kNotFound, "no study '" + request.study + "' in '" + request.storage +
                                          "' (its studies: " + (names.empty() ? "none" : names) +
                                          ")");
  }
  const std::optional<SweepFile> sweep = sweep_of(*study, request.storage);
  const std::string objective = sweep ? sweep->objective_metric : "value";
  const bool objective_max =
      !study->directions.empty() && study->directions[0] == StudyDirection::kMaximize;
  const std::string metric = request.metric.empty() ? objective : request.metric;
  std::optional<bool> maximize = request.maximize;
  if (!maximize) maximize = metric == objective ? std::optional(objective_max) : direction_from_name(metric);
  if (!maximize) {
    throw Error(ErrorCode::kInvalidArgument,
                "the direction of metric '" + metric + "' is unknown: state it (maximize or "
                "minimize)");
  }

  const std::vector<FrozenTrial> complete =
      storage.get_trials(study->study_id, {.states = std::vector{TrialState::kComplete}});
  auto metrics_of = [&](const FrozenTrial& t) {
    std::map<std::string, double> m = trial_metrics(t);
    if (!t.values.empty() && !m.contains(objective)) m[objective] = t.values[0];
    return m;
  };
  const FrozenTrial* chosen = nullptr;
  if (request.trial) {
    const std::vector<FrozenTrial> all = storage.get_trials(study->study_id);
    auto it = std::find_if(all.begin(), all.end(),
                           [&](const FrozenTrial& t) { return t.number == *request.trial; });
    if (it == all.end()) {
      throw Error(ErrorCode::kNotFound, "study '" + request.study + "' has no trial " +
                                            std::to_string(*request.trial));
    }
    if (it->state != TrialState::kComplete) {
      throw Error(ErrorCode::kFailedPrecondition,
                  "trial " + std::to_string(*request.trial) + " of study '" + request.study +
                      "' is " + std::string(to_string(it->state)) +
                      ", not COMPLETE: only a finished trial's model is exported");
    }
    chosen = &*std::find_if(complete.begin(), complete.end(),
                            [&](const FrozenTrial& t) { return t.number == *request.trial; });
  } else {
    std::optional<double> best;
    for (const FrozenTrial& t : complete) {
      const auto m = metrics_of(t);
      const auto it = m.find(metric);
      if (it == m.end() || std::isnan(it->second)) continue;
      if (!best || (*maximize ? it->second > *best : it->second < *best)) {
        best = it->second;
        chosen = &t;
      }
    }
    if (chosen == nullptr) {
      throw Error(ErrorCode::kNotFound, "study '" + request.study + "' has no COMPLETE trial " +
                                            "with a value of '" + metric + "' yet");
    }
  }

  std::string checkpoint_path = request.checkpoint;
  if (checkpoint_path.empty()) {
    if (sweep) {
      if (auto p = trial_model_path(*sweep, chosen->number)) checkpoint_path = *p;
    }
    if (checkpoint_path.empty()) {
      throw Error(ErrorCode::kNotFound,
                  "trial " + std::to_string(chosen->number) + " of study '" + request.study +
                      "' has no model checkpoint: only engine jobs keep one, in "
                      "<artifacts_dir>/trial-" + std::to_string(chosen->number) +
                      "/model.ckpt (docs/engine_jobs.md); give the file with --checkpoint");
    }
  }
  training::Checkpoint checkpoint;
  try {
    checkpoint = training::load_checkpoint(checkpoint_path);
  } catch (const training::CheckpointError& e) {
    throw Error(fs::exists(checkpoint_path) ? ErrorCode::kDataLoss : ErrorCode::kNotFound, e.what());
  }

  Lineage lineage;
  lineage.study = request.study;
  lineage.trial = chosen->number;
  lineage.storage = fs::absolute(request.storage).string();
  lineage.objective_metric = objective;
  for (const auto& [name, value] : chosen->params) lineage.params[name] = param_json(value);
  lineage.metrics = metrics_of(*chosen);

  RegisterOptions register_options;
  register_options.metric = metric;
  register_options.maximize = *maximize;
  register_options.promote_if_better = request.promote_if_better;
  register_options.aliases = request.aliases;
  register_options.description = request.description;
  register_options.source = fs::absolute(checkpoint_path).string();
  if (sweep && sweep->job_kind == "engine") {
    register_options.preprocessing = engine_preprocessing(*sweep, *chosen);
  }

  Registry registry = Registry::open(request.registry_dir, /*create=*/true, options);
  ExportResult result;
  result.model_name = request.model_name.empty() ? request.study : request.model_name;
  result.version =
      registry.register_version(result.model_name, checkpoint, lineage, register_options);
  result.dir = fs::path(request.registry_dir) / result.model_name /
               std::to_string(result.version.version);
  for (const auto& [alias, v] : registry.model(result.model_name).aliases) {
    if (v == result.version.version) {
      result.alias_summary += (result.alias_summary.empty() ? "" : ", ") + alias;
    }
  }
  return result;
}

std::optional<ExportResult> export_best_of_sweep(const SweepFile& sweep,
                                                 const RegistryOptions& options) {
  if (!sweep.export_config) return std::nullopt;
  const ExportConfig& e = *sweep.export_config;
  ExportRequest request;
  request.study = sweep.name;
  request.storage = sweep.storage_path;
  request.registry_dir = e.registry_path;
  request.model_name = e.model_name.empty() ? sweep.name : e.model_name;
  request.metric = e.metric.empty() ? sweep.objective_metric : e.metric;
  request.maximize = (e.metric.empty() ? sweep.direction : e.direction) == StudyDirection::kMaximize;
  request.promote_if_better = true;
  return export_trial(request, options);
}

}  // namespace tuner
