// An engine model as an MLflow model directory (the format `mlflow.pyfunc.load_model` and
// `mlflow models serve` read), with its lineage back to the study and trial it came from.
//
// The directory (docs/registry.md lists every field):
//   MLmodel                 YAML: flavors `onnx` and `python_function` (loader mlflow.onnx),
//                           signature (tensor specs), model_uuid, utc_time_created,
//                           mlflow_version, metadata {study, trial, params, metrics, ...}
//   model.onnx              training/export/onnx_export.h's graph, checked by the ONNX checker
//   python_env.yaml, requirements.txt, conda.yaml    the Python environment MLflow recreates
//   engine/model.ckpt       the engine's checkpoint (weights and buffers)
//   engine/model_spec.json  the model spec (the trial's values substituted)
//   engine/preprocessing.json  how raw inputs become the model's input (normalization)
//
// Thread safety: pure functions over files; concurrent writes need distinct target paths.
#ifndef TUNER_REGISTRY_MLFLOW_MODEL_H_
#define TUNER_REGISTRY_MLFLOW_MODEL_H_

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "training/backend.h"
#include "training/checkpoint.h"
#include "training/model_spec.h"
#include "training/sequential.h"

namespace tuner::registry {

// The newest version of the engine/ files and of the metadata this module writes (metadata
// "tuner_format_version"); readers refuse a newer one. Version 2: model.onnx and the signature
// take the raw input (Preprocessing), version 1's model.onnx took normalized inputs. Version 3: a
// model of a table (a csv file) with per-feature normalization, its columns' encoding and its
// class labels; the other models are still written as version 2. Version 4: a model with
// per-channel normalization of a multi-dimensional input (an RGB image's [3, H, W]: normalize holds
// one mean and stddev per channel, which version 3 read as one per value); the other models are
// written as before.
inline constexpr int kMlflowModelFormatVersion = 4;

// The element type of the values an exported model takes (its MLflow signature's dtype).
enum class RawInput {
  kFloat32,  // float32 values
  kUint8,    // uint8 values: image pixels 0..255, as the dataset's files hold them
};

// How the values a dataset holds become the model's inputs, as the engine's data pipeline makes
// them (executor/engine_job.h, EngineInputPipeline): x = (float(raw) / divisor - mean) *
// (1 / stddev), the loader's scaling then the normalization with the training split's
// statistics. model.onnx computes it at its input, and ServedModel::preprocess does, so that both
// take the raw values (Fashion-MNIST: uint8 pixels 0..255). Without normalization or scaling the
// model takes its inputs as they are.
//
// `feature_mean` / `feature_stddev` normalize each channel on its own instead, a channel being an
// element of the input's first dimension: a model of a table (an engine job's csv file) takes F
// encoded features [N, F] float32, one channel each, and `table` says how a row of the table
// becomes them; a model of an image folder takes images [N, C, H, W] float32 in [0, 1], and
// `image` says how a file becomes one.
struct TableColumn {
  std::string name;  // the column's header name
  bool categorical = false;
  float fill = 0.0f;  // numeric: the value of a missing field (the training split's mean)
  std::vector<std::string> categories;  // categorical: one feature each, in this order (one-hot)
  bool missing_slot = false;  // categorical: one more feature, last, set by a missing value
  // categorical: > 0, the dimension of the model's learned embedding of the column; the column is
  // then one feature, its category's index in `categories` (a missing value's is the last, after
  // them; -1 for a category the training split lacked, whose embedding is zeros). 0: one-hot.
  int64_t embedding = 0;
};

// How a row of a table becomes the model's F features: each column of `columns` in order, a
// numeric one as its value, a categorical one as its one-hot slots (a category the training
// split lacked sets none) or, embedded, as its category's index (-1 for one the training split
// lacked). A missing value ("", NA, N/A, NaN) fails unless `missing_mean`: then
// a numeric column takes its fill, a categorical one its missing slot (none: no slot set).
struct TableEncoding {
  std::vector<TableColumn> columns;
  std::vector<std::string> features;  // [F] names: "age", "color=red", "color=(missing)"
  std::string label;                  // the label column's name in the training file
  bool missing_mean = false;
};

// How an image file becomes the input [C, H, W] of a model trained on an image folder
// (docs/engine_jobs.md, "data of format image_folder"): decoded, given C channels, resized
// bilinearly to height x width, its values in [0, 1].
struct ImageEncoding {
  int64_t height = 0, width = 0;  // data.size, >= 1
  bool grayscale = false;         // data.color "grayscale": C = 1 (BT.601 luma), else 3 (RGB)
  int64_t channels() const { return grayscale ? 1 : 3; }
};

struct Preprocessing {
  RawInput input = RawInput::kFloat32;
  float divisor = 1.0f;         // the loader's scaling, > 0: 255 for uint8 pixels
  std::optional<float> mean;    // one value over every input element; unset: no normalization
  std::optional<float> stddev;  // > 0 when set
  std::string dataset;          // e.g. "fashion-mnist"; empty when unknown
  // Per-channel normalization: one value per element of the input's first dimension (a table's
  // [F] features, an image's [C, H, W] channels), stddev > 0; when set, mean and stddev are
  // unset. Default: empty.
  std::vector<float> feature_mean, feature_stddev;
  std::optional<TableEncoding> table;  // a table's model: how its rows become the input
  std::optional<ImageEncoding> image;  // an image folder's model: how a file becomes the input
  // The label each output stands for, in output order ("setosa", "3"); empty: the indices.
  std::vector<std::string> class_labels;
  // A regression's model (an engine job's data.task "regression"): its outputs are the predicted
  // values, in the label's own units, not logits; class_labels is then empty. preprocessing.json
  // says "task": "regression". Default false.
  bool regression = false;
  // A regression's target standardization ([T] each, stddev > 0; empty: none): the trained model
  // predicts z = (y - mean) / stddev. write_mlflow_model folds y = z * stddev + mean into the
  // model's last layer (a linear layer with a bias and no activation), so that model.onnx and
  // the engine's weights predict y itself; preprocessing.json records it as "target".
  std::vector<float> target_mean, target_stddev;
};

// The format version a model of `p` is written in: 4 for per-channel normalization without a
// table (an image's channels), 3 for a table's model (or class labels, a regression), else 2.
int format_version(const Preprocessing& p);

// Where a model came from. Params and metrics keep their JSON text ("0.001", "\"relu\"").
struct Lineage {
  std::string study;                          // the study's name; empty when none
  int trial = -1;                             // the trial's number; -1 when none
  std::string storage;                        // the study database; empty when none
  std::map<std::string, std::string> params;  // name -> JSON text
  std::map<std::string, double> metrics;      // the trial's final metrics
  std::string objective_metric;               // which metric the study optimized; may be empty
};

struct MlflowModelOptions {
  // MLmodel `artifact_path`. Default "model".
  std::string artifact_path = "model";
  // The version of MLflow the MLmodel says wrote it, and the minimum requirements.txt asks for.
  // Default "2.9.2": the format here is read by MLflow 2.9 and later (3.x included).
  std::string mlflow_version = "2.9.2";
  // The Python version python_env.yaml and `python_version` state. Default "3.11".
  std::string python_version = "3.11";
  // Extra metadata entries (JSON text values), written after the lineage. Default none.
  std::map<std::string, std::string> extra_metadata;
  // UUID and creation time; empty: a random UUID and now (UTC). Tests pin them.
  std::string model_uuid;
  std::string utc_time_created;  // "YYYY-MM-DD HH:MM:SS.ffffff"
  // Called with the temporary directory once every file is in it, before it is renamed to the
  // target; an exception from it aborts the write (tests inject failures here). Default none.
  std::function<void(const std::filesystem::path&)> before_publish;
};

// Writes the MLflow model directory `out` for `checkpoint` (whose model_spec is the spec), the
// target scaling of `preprocessing` folded into its last layer.
// Everything is written to a hidden temporary directory beside `out`, checked (the spec builds,
// the checkpoint fits it, the ONNX checker accepts model.onnx), then renamed to `out`: a failure
// leaves neither `out` nor the temporary. REQUIRES: out's parent exists; `out` does not exist.
// Throws Error: kInvalidArgument for a checkpoint whose spec does not build or whose weights do
// not fit it, or a layer that has no ONNX export (the message names the layer's JSON path); an
// image encoding or per-channel normalization that does not fit the model's input;
// a target scaling that does not fit the model's outputs or last layer; kAlreadyExists when
// `out` exists; kUnavailable for I/O failures (naming the file).
void write_mlflow_model(const training::Checkpoint& checkpoint, const Lineage& lineage,
                        const Preprocessing& preprocessing, const std::filesystem::path& out,
                        const MlflowModelOptions& options = {});

// Reads the text of an engine/preprocessing.json (`where` names it in errors) for a model that
// takes samples of shape `input` and gives `output`. Throws Error(kDataLoss) naming `where` and
// what is wrong, Error(kFailedPrecondition) for a newer format version.
Preprocessing read_preprocessing(const std::string& text, const std::string& where,
                                 const training::Shape& input, const training::Shape& output);

// An MLflow model directory written by write_mlflow_model, loaded for inference with the engine.
// Thread safety: one thread at a time (the model's forward pass).
class ServedModel {
 public:
  // Reads engine/model_spec.json, engine/model.ckpt and engine/preprocessing.json of `dir`.
  // Throws Error(kNotFound) when `dir` is not such a directory, kDataLoss for corrupt files,
  // kFailedPrecondition for a newer format version, and for an MLflow model without engine/ (a
  // model a trial's own program saved, user_model.h: the message says to serve it with MLflow).
  static ServedModel load(const std::filesystem::path& dir, int threads = 1);

  const training::ModelSpec& spec() const { return spec_; }
  const Preprocessing& preprocessing() const { return preprocessing_; }
  // The MLmodel metadata as JSON text (study, trial, params, metrics, ...).
  const std::string& metadata_json() const { return metadata_json_; }

  // Logits for `inputs`, B samples of spec().input each, row-major, already preprocessed:
  // returns [B, spec().output...] row-major. REQUIRES: inputs.size() % input numel == 0.
  std::vector<float> forward(std::span<const float> inputs);
  // The label of output `index` (preprocessing().class_labels, else the index as text).
  std::string class_label(int64_t index) const;
  // Applies preprocessing() in place to raw inputs, the values model.onnx and the signature take
  // (for a uint8 model, pixel values 0..255 held as floats), as model.onnx does. Throws
  // Error(kInvalidArgument) naming the first value of a uint8 model that is not an integer in
  // [0, 255]. A format-version-1 model takes inputs in the data loader's units (Fashion-MNIST
  // pixels in [0, 1]), as it did.
  void preprocess(std::span<float> raw) const;

  ServedModel(ServedModel&&) noexcept;
  ServedModel& operator=(ServedModel&&) noexcept;
  ~ServedModel();

 private:
  ServedModel() = default;
  training::ModelSpec spec_;
  Preprocessing preprocessing_;
  std::string metadata_json_;
  std::unique_ptr<training::Backend> backend_;
  std::unique_ptr<training::Sequential> model_;
};

// The engine model of a checkpoint: builds the spec (CPU backend, batch max_batch)
// and loads the checkpoint's parameters and buffers. Throws Error(kInvalidArgument) naming the
// spec's JSON path or the mismatching sizes.
std::unique_ptr<training::Sequential> model_from_checkpoint(const training::Checkpoint& checkpoint,
                                                            const training::ModelSpec& spec,
                                                            int64_t max_batch,
                                                            training::Backend& backend);

}  // namespace tuner::registry

#endif  // TUNER_REGISTRY_MLFLOW_MODEL_H_
