#include "sweep/model_export.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "executor/artifact_files.h"
#include "executor/engine_job.h"
#include "search/pareto.h"
#include "storage/sqlite_storage.h"
#include "sweep/mlflow_export.h"
#include "sweep/sweep_runner.h"
#include "sweep/trial_folder.h"
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

// The engine job's input pipeline of a trial (see engine_preprocessing in model_export.h).
Preprocessing engine_preprocessing(const SweepFile& sweep, const FrozenTrial& trial) {
  const EngineJobSpec spec = parse_engine_job(sweep.job_json);
  return engine_preprocessing(spec, resolve_engine_job(spec, trial.params));
}

registry::MetricLimit registry_limit(const MetricConstraint& c) {
  return {c.metric,
          c.bound == MetricConstraint::Bound::kMax ? registry::MetricLimit::Bound::kMax
                                                   : registry::MetricLimit::Bound::kMin,
          c.limit};
}

std::string format_number(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

// "latency_ms <= 2, num_params <= 1e+06", as the promotion decisions write them.
std::string limits_text(const std::vector<MetricConstraint>& limits) {
  std::string out;
  for (const MetricConstraint& c : limits) {
    out += (out.empty() ? "" : ", ") + registry::to_string(registry_limit(c));
  }
  return out;
}

std::optional<bool> direction_from_name(const std::string& metric) {
  if (metric.ends_with("accuracy")) return true;
  if (metric.ends_with("loss")) return false;
  return std::nullopt;
}

}  // namespace

Preprocessing engine_preprocessing(const EngineJobSpec& spec, const EngineTrialConfig& config) {
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
  p.class_labels = pipeline.class_labels;
  p.regression = pipeline.task == training::Task::kRegression;
  p.target_mean = pipeline.target_scaling.mean;
  p.target_stddev = pipeline.target_scaling.stddev;
  if (spec.format == "image_folder") {
    p.image = registry::ImageEncoding{.height = spec.files.image_height,
                                      .width = spec.files.image_width,
                                      .grayscale = spec.files.grayscale};
  }
  if (pipeline.feature_mean.empty()) {
    p.mean = pipeline.mean;
    p.stddev = pipeline.stddev;
    return p;
  }
  p.feature_mean = pipeline.feature_mean;
  p.feature_stddev = pipeline.feature_stddev;
  if (p.image) return p;  // per channel
  registry::TableEncoding& table = p.table.emplace();
  table.features = pipeline.features;
  table.label = pipeline.label;
  table.missing_mean = pipeline.missing_mean;
  for (const engine::FeatureColumn& c : pipeline.columns) {
    table.columns.push_back(registry::TableColumn{.name = c.name,
                                                  .categorical = c.categorical,
                                                  .fill = c.fill,
                                                  .categories = c.categories,
                                                  .missing_slot = c.missing_slot,
                                                  .embedding = c.embedding});
  }
  return p;
}

ExportChoice choose_export_trial(const ExportRequest& request) {
  if (!fs::exists(request.storage)) {
    throw Error(ErrorCode::kNotFound, "no study database at '" + request.storage + "'");
  }
  SqliteStorageOptions storage_options;
  storage_options.read_only = true;
  SqliteStorage storage(request.storage, storage_options);
  const std::optional<StudyRecord> study = storage.find_study(request.study);
  if (!study) {
    std::string names;
    for (const StudyRecord& s : storage.list_studies())
      names += (names.empty() ? "" : ", ") + s.name;
    throw Error(ErrorCode::kNotFound, "no study '" + request.study + "' in '" + request.storage +
                                          "' (its studies: " + (names.empty() ? "none" : names) +
                                          ")");
  }
  const std::optional<SweepFile> sweep = sweep_of(*study, request.storage);
  const std::string objective = sweep ? sweep->objective_metric() : "value";
  // The objectives' metrics, in the order of the trials' values.
  std::vector<std::string> objective_metrics = {objective};
  if (sweep && sweep->objectives.size() > 1) {
    objective_metrics.clear();
    for (const SweepObjective& o : sweep->objectives) objective_metrics.push_back(o.metric);
  }
  const std::string metric = request.metric.empty() ? objective : request.metric;
  std::optional<bool> maximize = request.maximize;
  if (!maximize) {
    const auto it = std::find(objective_metrics.begin(), objective_metrics.end(), metric);
    const size_t i = it - objective_metrics.begin();
    if (it != objective_metrics.end() && i < study->directions.size()) {
      maximize = study->directions[i] == StudyDirection::kMaximize;
    } else {
      maximize = direction_from_name(metric);
    }
  }
  if (!maximize) {
    throw Error(ErrorCode::kInvalidArgument, "the direction of metric '" + metric +
                                                 "' is unknown: state it (maximize or "
                                                 "minimize)");
  }
  for (const MetricConstraint& limit : request.limits) {
    if (limit.metric == metric) {
      throw Error(ErrorCode::kInvalidArgument,
                  "limit " + limits_text({limit}) + " bounds the primary metric '" + metric +
                      "', which the export " + (*maximize ? "maximizes" : "minimizes") +
                      "; bound the other metrics");
    }
  }

  const std::vector<FrozenTrial> complete =
      storage.get_trials(study->study_id, {.states = std::vector{TrialState::kComplete}});
  auto metrics_of = [&](const FrozenTrial& t) {
    std::map<std::string, double> m = trial_metrics(t);
    for (size_t i = 0; i < objective_metrics.size() && i < t.values.size(); ++i) {
      if (!m.contains(objective_metrics[i])) m[objective_metrics[i]] = t.values[i];
    }
    return m;
  };
  const bool several = study->directions.size() > 1;
  const FrozenTrial* chosen = nullptr;
  std::vector<FrozenTrial> candidates;  // owns what `chosen` points at by default
  if (request.trial) {
    const std::vector<FrozenTrial> all = storage.get_trials(study->study_id);
    auto it = std::find_if(all.begin(), all.end(),
                           [&](const FrozenTrial& t) { return t.number == *request.trial; });
    if (it == all.end()) {
      throw Error(ErrorCode::kNotFound,
                  "study '" + request.study + "' has no trial " + std::to_string(*request.trial));
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
    // The candidates: the COMPLETE trials with a value of the metric that meet the limits; of
    // several objectives, the Pareto front of those (the trade-offs no other candidate
    // beats on every objective). The best of them on the metric is also the best of all the
    // trials meeting the limits (the front only breaks ties), as the promotion rule wants.
    size_t with_value = 0;
    // The best value of each limit's metric among the trials with a value, for the error below.
    std::vector<std::optional<double>> closest(request.limits.size());
    for (const FrozenTrial& t : complete) {
      const auto m = metrics_of(t);
      const auto it = m.find(metric);
      if (it == m.end() || std::isnan(it->second)) continue;
      ++with_value;
      bool meets = true;
      for (size_t i = 0; i < request.limits.size(); ++i) {
        const MetricConstraint& limit = request.limits[i];
        const auto v = m.find(limit.metric);
        if (v == m.end() || std::isnan(v->second)) {
          meets = false;
          continue;
        }
        const bool is_max = limit.bound == MetricConstraint::Bound::kMax;
        if (!closest[i] || (is_max ? v->second < *closest[i] : v->second > *closest[i])) {
          closest[i] = v->second;
        }
        meets = meets && constraint_value(limit, v->second) <= 0;
      }
      if (meets) candidates.push_back(t);
    }
    if (several) candidates = pareto_front_trials(std::move(candidates), study->directions);
    std::optional<double> best;
    for (const FrozenTrial& t : candidates) {
      const double v = metrics_of(t).at(metric);
      if (!best || (*maximize ? v > *best : v < *best)) {
        best = v;
        chosen = &t;
      }
    }
    if (chosen == nullptr && with_value == 0) {
      throw Error(ErrorCode::kNotFound, "study '" + request.study + "' has no COMPLETE trial " +
                                            "with a value of '" + metric + "' yet");
    }
    if (chosen == nullptr && !request.limits.empty()) {
      std::string seen;
      for (size_t i = 0; i < request.limits.size(); ++i) {
        const MetricConstraint& limit = request.limits[i];
        seen += (seen.empty() ? "" : ", ") +
                std::string(limit.bound == MetricConstraint::Bound::kMax ? "lowest " : "highest ") +
                limit.metric + " " +
                (closest[i] ? format_number(*closest[i]) : std::string("none reported"));
      }
      throw Error(ErrorCode::kNotFound, "no COMPLETE trial of study '" + request.study +
                                            "' meets the limits " + limits_text(request.limits) +
                                            " (of " + std::to_string(with_value) +
                                            " with a value of '" + metric + "': " + seen +
                                            "); loosen the limits, or name the trial with --trial");
    }
    if (chosen == nullptr) {
      // Every trial with a value is infeasible under the study's own constraints.
      throw Error(
          ErrorCode::kNotFound,
          "study '" + request.study +
              "' has no feasible COMPLETE trial on its Pareto "
              "front (its trials break the sweep's constraints); name the trial with --trial");
    }
  }

  ExportChoice choice;
  choice.trial = *chosen;
  choice.metric = metric;
  choice.maximize = *maximize;
  choice.objective = objective;
  choice.metrics = metrics_of(*chosen);
  choice.sweep = sweep;
  return choice;
}

namespace {

// What an export writes, the trial chosen and its model read (see export_trial): an engine
// checkpoint, or a model the trial's own program saved.
struct PreparedExport {
  FrozenTrial trial;
  std::optional<training::Checkpoint> checkpoint;
  std::optional<registry::UserModel> user_model;
  Lineage lineage;
  RegisterOptions register_options;
  std::optional<SweepFile> sweep;
};

std::string trial_text(const ExportRequest& request, int number) {
  return "trial " + std::to_string(number) + " of study '" + request.study + "'";
}

// The engine checkpoint of the request's trial and its path.
std::pair<training::Checkpoint, std::string> engine_checkpoint(const ExportRequest& request,
                                                               const ExportChoice& choice) {
  std::string checkpoint_path = request.checkpoint;
  if (checkpoint_path.empty()) {
    if (auto p = trial_model_path(*choice.sweep, choice.trial.number)) checkpoint_path = *p;
    if (checkpoint_path.empty()) {
      throw Error(ErrorCode::kNotFound,
                  trial_text(request, choice.trial.number) +
                      " has no model checkpoint: an engine job keeps it in "
                      "<artifacts_dir>/trial-" +
                      std::to_string(choice.trial.number) +
                      "/model.ckpt (docs/engine_jobs.md); give the file with --checkpoint");
    }
  }
  try {
    return {training::load_checkpoint(checkpoint_path), checkpoint_path};
  } catch (const training::CheckpointError& e) {
    throw Error(fs::exists(checkpoint_path) ? ErrorCode::kDataLoss : ErrorCode::kNotFound,
                e.what());
  }
}

// "model (MLflow: sklearn, python_function)", "model.onnx (ONNX)".
std::string model_text(const registry::UserModel& model, const fs::path& folder) {
  std::error_code ec;
  const fs::path relative = fs::relative(model.path, folder, ec);
  std::string text = (ec || relative.empty() ? model.path : relative).generic_string();
  if (model.format == registry::UserModelFormat::kOnnx) return text + " (ONNX)";
  std::string flavors;
  for (const std::string& f : model.flavors) flavors += (flavors.empty() ? "" : ", ") + f;
  return text + " (MLflow" + (flavors.empty() ? "" : ": " + flavors) + ")";
}

// The model the request's trial saved with its own program (see ExportRequest::artifact).
registry::UserModel trial_user_model(const ExportRequest& request, const ExportChoice& choice) {
  const int number = choice.trial.number;
  const std::optional<fs::path> folder =
      choice.sweep ? trial_folder(*choice.sweep, number) : std::nullopt;
  if (!request.artifact.empty()) {
    const fs::path given = request.artifact;
    return registry::read_user_model(given.is_relative() && folder ? *folder / given : given);
  }
  if (!folder) {
    throw Error(ErrorCode::kNotFound,
                trial_text(request, number) +
                    " has no folder of artifacts (its study was not run by a sweep with an "
                    "artifacts_dir): give its model with --artifact PATH or --checkpoint FILE");
  }
  const std::vector<registry::UserModel> found = registry::find_user_models(*folder);
  std::vector<registry::UserModel> mlflow, onnx;
  for (const registry::UserModel& m : found) {
    (m.format == registry::UserModelFormat::kMlflow ? mlflow : onnx).push_back(m);
  }
  const std::vector<registry::UserModel>& candidates = mlflow.empty() ? onnx : mlflow;
  if (candidates.size() == 1) return candidates.front();
  if (candidates.empty()) {
    const ArtifactListing listing = list_artifact_files(*folder, 5);
    std::string holds;
    for (const ArtifactFile& f : listing.files) holds += (holds.empty() ? "" : ", ") + f.path;
    if (listing.truncated) holds += ", ...";
    throw Error(ErrorCode::kNotFound,
                trial_text(request, number) + " saved no model in " + folder->string() + " (" +
                    (holds.empty() ? "it holds no files" : "it holds " + holds) +
                    "): save an MLflow model directory "
                    "(mlflow.sklearn.save_model(model, os.environ['TUNER_ARTIFACTS_DIR'] + "
                    "'/model')) or an .onnx file in $TUNER_ARTIFACTS_DIR "
                    "(docs/command_jobs.md, \"Models\")");
  }
  std::string names;
  for (const registry::UserModel& m : candidates) {
    names += (names.empty() ? "" : ", ") + model_text(m, *folder);
  }
  throw Error(ErrorCode::kInvalidArgument, trial_text(request, number) + " saved " +
                                               std::to_string(candidates.size()) + " models in " +
                                               folder->string() + " (" + names +
                                               "): name the one to export with --artifact PATH");
}

PreparedExport prepare_export(const ExportRequest& request) {
  if (!request.checkpoint.empty() && !request.artifact.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "give the model to export as an engine checkpoint (--checkpoint) or as the "
                "trial's own saved model (--artifact), not both");
  }
  ExportChoice choice = choose_export_trial(request);
  const FrozenTrial& chosen = choice.trial;
  PreparedExport prepared;
  std::string source;
  const bool engine = !request.checkpoint.empty() || (request.artifact.empty() && choice.sweep &&
                                                      choice.sweep->job_kind == "engine");
  if (engine) {
    auto [checkpoint, path] = engine_checkpoint(request, choice);
    prepared.checkpoint = std::move(checkpoint);
    source = path;
  } else {
    prepared.user_model = trial_user_model(request, choice);
    source = prepared.user_model->path.string();
  }

  Lineage& lineage = prepared.lineage;
  lineage.study = request.study;
  lineage.trial = chosen.number;
  lineage.storage = fs::absolute(request.storage).string();
  lineage.objective_metric = choice.objective;
  for (const auto& [name, value] : chosen.params) lineage.params[name] = param_json(value);
  lineage.metrics = choice.metrics;

  RegisterOptions& register_options = prepared.register_options;
  register_options.metric = choice.metric;
  register_options.maximize = choice.maximize;
  register_options.promote_if_better = request.promote_if_better;
  for (const MetricConstraint& c : request.limits) {
    register_options.limits.push_back(registry_limit(c));
  }
  register_options.aliases = request.aliases;
  register_options.description = request.description;
  register_options.source = fs::absolute(source).lexically_normal().string();
  if (engine && choice.sweep && choice.sweep->job_kind == "engine") {
    register_options.preprocessing = engine_preprocessing(*choice.sweep, chosen);
  }

  prepared.trial = std::move(choice.trial);
  prepared.sweep = std::move(choice.sweep);
  return prepared;
}

}  // namespace

int write_trial_model(const ExportRequest& request, const fs::path& out) {
  PreparedExport p = prepare_export(request);
  if (p.user_model) {
    registry::write_user_model(*p.user_model, p.lineage, out, p.register_options.mlflow);
  } else {
    registry::write_mlflow_model(*p.checkpoint, p.lineage, p.register_options.preprocessing, out,
                                 p.register_options.mlflow);
  }
  return p.trial.number;
}

ExportResult export_trial(const ExportRequest& request, const RegistryOptions& options) {
  PreparedExport p = prepare_export(request);
  const Lineage& lineage = p.lineage;
  const RegisterOptions& register_options = p.register_options;
  Registry registry = Registry::open(request.registry_dir, /*create=*/true, options);
  ExportResult result;
  result.model_name = request.model_name.empty() ? request.study : request.model_name;
  result.version = p.user_model ? registry.register_user_model(result.model_name, *p.user_model,
                                                               lineage, register_options)
                                : registry.register_version(result.model_name, *p.checkpoint,
                                                            lineage, register_options);
  result.dir =
      fs::path(request.registry_dir) / result.model_name / std::to_string(result.version.version);
  for (const auto& [alias, v] : registry.model(result.model_name).aliases) {
    if (v == result.version.version) {
      result.alias_summary += (result.alias_summary.empty() ? "" : ", ") + alias;
    }
  }
  if (!request.mlflow_uri.empty()) {
    // The file registry has the version whatever MLflow answers: its failure is reported, and
    // `tuner sync-mlflow --registry` adds the version later.
    try {
      result.mlflow =
          register_in_mlflow(request, p.sweep, p.trial.number, result, registry, options);
    } catch (const std::exception& e) {
      result.mlflow_error = e.what();
    }
  }
  return result;
}

std::optional<ExportRequest> sweep_export_request(const SweepFile& sweep) {
  if (!sweep.export_config) return std::nullopt;
  const ExportConfig& e = *sweep.export_config;
  ExportRequest request;
  request.study = sweep.name;
  request.storage = sweep.storage_path;
  request.registry_dir = e.registry_path;
  request.model_name = e.model_name.empty() ? sweep.name : e.model_name;
  request.metric = e.metric.empty() ? sweep.objective_metric() : e.metric;
  request.maximize =
      (e.metric.empty() ? sweep.direction() : e.direction) == StudyDirection::kMaximize;
  request.limits = e.limits;
  request.promote_if_better = true;
  request.mlflow_uri = sweep.export_mlflow_uri();
  return request;
}

std::optional<ExportResult> export_best_of_sweep(const SweepFile& sweep,
                                                 const RegistryOptions& options) {
  const std::optional<ExportRequest> request = sweep_export_request(sweep);
  if (!request) return std::nullopt;
  return export_trial(*request, options);
}

}  // namespace tuner
