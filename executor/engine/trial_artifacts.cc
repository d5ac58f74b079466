#include "executor/engine/trial_artifacts.h"

#include <nlohmann/json.hpp>
#include <system_error>

#include "executor/engine/epoch_metrics.h"
#include "executor/engine/placeholders.h"
#include "trials/error.h"

namespace tuner::engine {

namespace fs = std::filesystem;

TrialArtifacts TrialArtifacts::open(const EngineJobSpec& spec, const EngineTrial& trial,
                                    std::string model_json, const std::vector<EpochRecord>& resumed,
                                    const std::string& where) {
  TrialArtifacts a;
  if (spec.artifacts_dir.empty() || trial.rank != 0) return a;
  a.dir_ = fs::path(spec.artifacts_dir) / ("trial-" + std::to_string(trial.number));
  a.trial_number_ = trial.number;
  a.params_ = trial.params;
  a.objective_metric_ = spec.objective_metric;
  a.model_json_ = std::move(model_json);
  std::error_code ec;
  fs::create_directories(a.dir_, ec);
  if (ec) {
    throw Error(ErrorCode::kUnavailable,
                where + ".artifacts_dir: cannot create " + a.dir_.string() + ": " + ec.message());
  }
  bool continues = false;
  for (const auto& entry : fs::directory_iterator(a.dir_)) {
    continues |= entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
  }
  a.tensorboard_ = std::make_unique<TensorBoardWriter>(a.dir_);
  if (!continues) {
    for (const EpochRecord& e : resumed) a.add_epoch(e);
  }
  return a;
}

std::optional<training::Checkpoint> TrialArtifacts::saved_best_model() const {
  if (!active() || !fs::exists(dir_ / "model.ckpt")) return std::nullopt;
  try {
    training::Checkpoint saved = training::load_checkpoint((dir_ / "model.ckpt").string());
    if (saved.model_spec != model_json_) return std::nullopt;
    return saved;
  } catch (const training::CheckpointError&) {
    return std::nullopt;
  }
}

void TrialArtifacts::add_epoch(const EpochRecord& epoch) {
  if (tensorboard_) tensorboard_->add_scalars(epoch.epoch, epoch.metrics, wall_seconds());
}

void TrialArtifacts::save_best_model(const training::Checkpoint& checkpoint) const {
  if (active()) training::save_checkpoint((dir_ / "model.ckpt").string(), checkpoint);
}

void TrialArtifacts::write_data_description(const std::string& name,
                                            const std::vector<std::string>& classes,
                                            const std::vector<std::string>& targets,
                                            const std::vector<std::string>& features) const {
  if (!active() || (classes.empty() && targets.empty() && features.empty())) return;
  nlohmann::json doc = {{"version", 1}, {"data", name}};
  if (targets.empty()) {
    doc["classes"] = classes;
  } else {
    doc["task"] = "regression";
    doc["targets"] = targets;
  }
  doc["features"] = features;
  write_file_atomically((dir_ / "data.json").string(), doc.dump(2) + "\n");
}

void TrialArtifacts::write_metrics(const Metrics& final,
                                   const std::vector<EpochRecord>& history) const {
  if (!active()) return;
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [name, value] : params_) params[name] = param_json(value);
  nlohmann::json doc = {{"version", kHistoryVersion},
                        {"trial", trial_number_},
                        {"params", params},
                        {"objective_metric", objective_metric_},
                        {"metrics", metrics_json(final)},
                        {"epochs", history_json(history)},
                        {"model", nlohmann::json::parse(model_json_)}};
  write_file_atomically((dir_ / "metrics.json").string(), doc.dump(2) + "\n");
}

}  // namespace tuner::engine
