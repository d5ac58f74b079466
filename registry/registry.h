// The model registry: registered models, their versions (numbered from 1, never reused),
// aliases (champion, challenger, any name), tags and descriptions, each version linked to the
// study, trial and metrics it came from. docs/registry.md is the contract.
//
// The registry directory is the source of truth, so that it alone serves a model:
//   DIR/tuner-registry.json          marks DIR as a registry ({"format", "version"})
//   DIR/MODEL/registry.json          the model: versions, aliases, tags, descriptions, decisions
//   DIR/MODEL/<version>/             the version's MLflow model directory (mlflow_model.h)
// Every change is mirrored into tables tuner_registry_* of the study database(s) the model's
// versions came from (the SQLite file of their study), so SQL over the study database sees the
// registry too; a database that cannot be written is reported through RegistryOptions::warn
// and does not undo the change.
//
// Concurrency: every change takes an exclusive flock on DIR/.lock, re-reads the model, changes
// it and writes registry.json atomically; several processes may export to one registry at once.
// A version directory is complete before it is named (written to a temporary, then renamed),
// and registry.json only names complete directories.
// Thread safety: a Registry may be used from several threads (every call takes the lock).
#ifndef TUNER_REGISTRY_REGISTRY_H_
#define TUNER_REGISTRY_REGISTRY_H_

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "registry/mlflow_model.h"
#include "registry/user_model.h"
#include "training/checkpoint.h"

namespace tuner::registry {

// The newest version of DIR/tuner-registry.json and DIR/MODEL/registry.json this tuner reads; a
// newer one is refused. A model's registry.json is written as version 2 only when a decision of
// it has limits (which version 1 cannot hold), else as 1, so older tuners keep reading it.
inline constexpr int kRegistryFormatVersion = 2;
inline constexpr char kChampion[] = "champion";

// A bound on one of a version's metrics (Lineage::metrics) that the promotion rule requires of
// a champion: kMax means metric <= limit, kMin metric >= limit.
struct MetricLimit {
  enum class Bound { kMax, kMin };
  std::string metric;
  Bound bound = Bound::kMax;
  double limit = 0;  // finite
  bool operator==(const MetricLimit&) const = default;
};

// For messages: "latency_ms <= 2", "val_accuracy >= 0.8".
std::string to_string(const MetricLimit& limit);

// A limit checked against one version's metrics.
struct LimitCheck {
  MetricLimit limit;
  std::optional<double> value;  // the version's value of limit.metric; none (or NaN): it has none
  bool met = false;             // value is a number within the bound
  bool operator==(const LimitCheck&) const = default;
};

// The promotion rule: the champion is the best version on `metric` (in its direction) among the
// versions that meet every limit. See RegisterOptions::promote_if_better.
struct PromotionRule {
  std::string metric;
  bool maximize = false;
  std::vector<MetricLimit> limits;  // default none: the single-metric rule
};

// The outcome of the promotion rule for one new version, recorded with it.
struct PromotionDecision {
  bool promoted = false;
  std::string metric;                    // the metric compared
  bool maximize = false;                 // its direction
  std::vector<LimitCheck> limits;        // the rule's limits, checked on the new version
  std::optional<double> value;           // the new version's value
  std::optional<int> champion_version;   // the champion it was compared with; none: no champion
  std::optional<double> champion_value;  // that champion's value of the metric
  std::string reason;                    // e.g. "0.91 > 0.89 (maximize)"
  std::string decided_at;                // UTC, "YYYY-MM-DD HH:MM:SS"
};

struct ModelVersion {
  int version = 0;                     // 1, 2, ...
  std::string created;                 // UTC, "YYYY-MM-DD HH:MM:SS"
  Lineage lineage;                     // study, trial, storage, params, metrics
  std::string metric;                  // the version's evaluation metric; may be empty
  bool maximize = false;               // its direction
  std::optional<double> metric_value;  // lineage.metrics[metric] when present
  std::string source;                  // the checkpoint (or the user model) it was exported from
  // What the version directory holds: nullopt for an engine model (written from a checkpoint,
  // with engine/ and model.onnx: tuner predicts with it); else a model a trial's own program
  // saved (user_model.h), with its MLflow flavors. registry.json's "model_format" ("engine",
  // "mlflow", "onnx") and "flavors".
  std::optional<UserModelFormat> user_model;
  std::vector<std::string> flavors;
  std::string description;
  std::map<std::string, std::string> tags;
  std::optional<PromotionDecision> promotion;  // when exported with the promotion rule
};

struct RegisteredModel {
  std::string name;
  std::string created;
  std::string description;
  std::map<std::string, std::string> tags;
  std::map<std::string, int> aliases;  // alias -> version
  std::vector<ModelVersion> versions;  // ascending
  int last_version = 0;                // the highest number ever given (deleted ones included)

  // The version, or nullptr.
  const ModelVersion* find(int version) const;
};

// A version found by a reference: "MODEL" (the champion, else the latest version),
// "MODEL@ALIAS" or "MODEL/VERSION".
struct ResolvedVersion {
  RegisteredModel model;
  ModelVersion version;
  std::filesystem::path dir;  // DIR/MODEL/<version>
};

struct RegisterOptions {
  // The metric that evaluates the version and its direction: its value is
  // lineage.metrics[metric]. Required by promote_if_better.
  std::string metric;
  bool maximize = false;
  // The promotion rule: the new version takes `champion` only when it meets every one of
  // `limits`, and there is no champion, or the champion breaks one of the limits (by its own
  // recorded metrics), or its metric beats the champion's (strictly: higher when maximizing,
  // lower when minimizing) on the same metric. The decision is recorded either way. Default
  // off: the champion is unchanged. As long as a model's versions are all decided by one rule,
  // its champion is the best on `metric` of those meeting the limits.
  bool promote_if_better = false;
  // The rule's limits (used only with promote_if_better). Default none. Each metric non-empty,
  // each limit finite, else Error(kInvalidArgument).
  std::vector<MetricLimit> limits;
  // Aliases the new version takes unconditionally (moved from other versions). `champion` here
  // together with promote_if_better is an error.
  std::vector<std::string> aliases;
  std::string description;
  std::map<std::string, std::string> tags;
  std::string source;  // recorded as the version's source (e.g. the checkpoint's path)
  Preprocessing preprocessing;
  MlflowModelOptions mlflow;
};

struct RegistryOptions {
  // Non-fatal problems (a study database that could not be mirrored). Default: ignored.
  std::function<void(const std::string&)> warn;
};

class Registry {
 public:
  // Opens the registry at `dir`. With `create`, a missing or empty directory becomes a registry.
  // Throws Error: kNotFound when `dir` does not exist (and !create); kFailedPrecondition when it
  // is not a registry (no DIR/tuner-registry.json: a directory of something else, or empty
  // without create) or has a newer format version.
  static Registry open(const std::filesystem::path& dir, bool create, RegistryOptions options = {});

  const std::filesystem::path& dir() const { return dir_; }

  // The registered models' names, sorted.
  std::vector<std::string> model_names() const;
  // Error(kNotFound) listing the registered models when there is no such model.
  RegisteredModel model(const std::string& name) const;
  // Resolves a reference (see ResolvedVersion). Error(kNotFound) naming the unknown model,
  // alias (listing the model's aliases) or version; kInvalidArgument for a malformed reference.
  ResolvedVersion resolve(const std::string& ref) const;

  // Writes a new version of `model_name` (registering the model when new) from `checkpoint`,
  // applies the options' aliases, tags and promotion rule, and returns it. Nothing is left
  // behind when it fails. Throws what write_mlflow_model throws, and Error(kInvalidArgument) for
  // a bad model or alias name or option.
  ModelVersion register_version(const std::string& model_name,
                                const training::Checkpoint& checkpoint, const Lineage& lineage,
                                const RegisterOptions& options);
  // The same for a model a trial's own program saved (write_user_model: an MLflow model
  // directory stored as it is, an ONNX file wrapped as one); options.preprocessing is not used.
  // Throws what write_user_model throws, and as register_version.
  ModelVersion register_user_model(const std::string& model_name, const UserModel& model,
                                   const Lineage& lineage, const RegisterOptions& options);

  // Points `alias` at `version` (moving it). Error(kNotFound) for an unknown model or version.
  void set_alias(const std::string& model_name, int version, const std::string& alias);
  // Error(kNotFound) when the model has no such alias.
  void delete_alias(const std::string& model_name, const std::string& alias);
  // A tag of a version, or of the model when `version` is nullopt.
  void set_tag(const std::string& model_name, std::optional<int> version, const std::string& key,
               const std::string& value);
  void set_description(const std::string& model_name, std::optional<int> version,
                       const std::string& text);
  // Deletes a version (its directory and its aliases) or, with nullopt, the whole model.
  void delete_version(const std::string& model_name, int version);
  void delete_model(const std::string& model_name);

  // Valid model and alias names: 1 to 128 of [A-Za-z0-9_.-], not starting with '.' or '-',
  // and an alias not all digits (so "MODEL/3" and "MODEL@3" never mean the same).
  static bool valid_model_name(const std::string& name);
  static bool valid_alias(const std::string& alias);
  // Whether `dir` is a registry's directory (it holds the registry's marker file).
  static bool is_registry(const std::filesystem::path& dir);

 private:
  Registry(std::filesystem::path dir, RegistryOptions options)
      : dir_(std::move(dir)), options_(std::move(options)) {}
  std::filesystem::path model_dir(const std::string& name) const { return dir_ / name; }
  // Writes a version's directory at the path it is given, with the MLmodel options to use.
  using VersionWriter =
      std::function<void(const std::filesystem::path& out, const MlflowModelOptions& options)>;
  // What both register_* do: `version` (its kind of model) completed, written by `write`.
  ModelVersion register_with(const std::string& model_name, ModelVersion version,
                             const VersionWriter& write, const Lineage& lineage,
                             const RegisterOptions& options);

  // Constant after construction.
  std::filesystem::path dir_;
  RegistryOptions options_;
};

// Applies the promotion rule (see RegisterOptions::promote_if_better) to a candidate with
// `metrics` (its Lineage::metrics; its value is metrics[rule.metric]) against the model's
// current champion. Pure; `decided_at` left empty.
PromotionDecision decide_promotion(const RegisteredModel& model, const PromotionRule& rule,
                                   const std::map<std::string, double>& metrics);

// `limit` checked on `metrics`.
LimitCheck check_limit(const MetricLimit& limit, const std::map<std::string, double>& metrics);

}  // namespace tuner::registry

#endif  // TUNER_REGISTRY_REGISTRY_H_
