// The engine job's spec: reading and validating its JSON (executor/engine_job.h is the overview,
// docs/engine_jobs.md the contract). Included through executor/engine_job.h.
//
// The job's JSON form (every member and default in docs/engine_jobs.md):
//   {"kind": "engine",
//    "model": {...a model spec (docs/model_spec.md)...},
//    "data": {"dataset": "fashion-mnist", "dir": "...", "train": 50000, "validation": 10000,
//             "test": 0}
//         or {"format": "csv", "path": "iris.csv", "label": "species", "validation_fraction": 0.2}
//         or {"format": "npy", "x": "x.npy", "y": "y.npy", "test_fraction": 0.1}
//         or {"format": "image_folder", "path": "pets", "size": [64, 64], "color": "rgb"},
//         (csv and npy also take "task": "classification" (the default), "binary" or
//         "regression")
//    (every data object also takes "augment": {"random_crop": {"padding": 4}, "flip": 0.5} (not
//    csv), "normalize": "all" or "channel", and "prefetch": 2)
//    "training": {"epochs": 10, "batch_size": 128, "optimizer": "adam", "lr": 0.001, ...},
//    "threads": 1, "backend": "cpu", "ranks": 1, "nodes": 1, "collective_timeout_s": 60,
//    "artifacts_dir": "...", "objective_metric": "val_accuracy"}
// Any string value under "model", "training" and data.augment (and data.train / validation / test)
// that is
// exactly "{NAME}" is a placeholder: it becomes the trial's value of parameter NAME with its JSON
// type ("{width}" -> 256, "{act}" -> "relu").
//
// Two steps: parse_engine_job() validates a job once (the coordinator and the executor do, with
// no trial at hand: placeholders are only checked for syntax); resolve_engine_job() substitutes a
// trial's parameters and checks every value.
//
// Thread safety: pure functions; safe from any thread.
#ifndef TUNER_EXECUTOR_ENGINE_JOB_SPEC_H_
#define TUNER_EXECUTOR_ENGINE_JOB_SPEC_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "executor/engine/model_fit.h"
#include "training/task.h"
#include "trials/param_value.h"

namespace tuner {

// The user's files of a job whose data.format is "csv" or "npy" (docs/engine_jobs.md, "data").
// A relative file name is taken from data.dir when the job gives one, else from the trial's
// working directory.
struct EngineDataFiles {
  // csv: the file split three ways (or `train` and `test`); npy: an .npz archive holding `x` and
  // `y` (empty: `x` and `y` are .npy files).
  std::string path;
  std::string train, test;  // csv: the training and test files, instead of `path`
  // csv: the field separator; 0 (the default) is '\t' for a .tsv or .tab file, else ','.
  char delimiter = 0;
  std::string label;                     // csv: the label column's header name (required)
  std::vector<std::string> columns;      // csv: the feature columns; empty: all but the label
  std::vector<std::string> categorical;  // csv: feature columns one-hot encoded in any case
  // csv: categorical columns encoded as a learned embedding instead of one-hot (data.embedding):
  // each named column with its dimension (>= 1), in the order given; embedding_all > 0: every
  // other categorical column too, with that dimension.
  std::vector<std::pair<std::string, int64_t>> embedding;
  int64_t embedding_all = 0;
  bool missing_mean = false;  // csv: data.missing is "mean" (default: refuse)
  // npy: the features and labels, .npy files, or array names in the .npz `path` (default "x"
  // and "y"); test_x and test_y: the test split's, likewise (both or neither).
  std::string x, y, test_x, test_y;
  // Of the training file's samples, shuffled with split_seed: the validation split's fraction
  // (default 0.2) and the test split's (default 0; not with a test file), in [0, 1).
  double validation_fraction = 0.2, test_fraction = 0.0;
  uint64_t split_seed = 0;
  // image_folder: `path` (or `train`) and `test` are folders of one sub-folder per class;
  // `validation` a folder likewise (empty: cut from the training folder by validation_fraction).
  // Every image is resized to image_height x image_width (data.size, required) and given 1
  // channel (data.color "grayscale") or 3 ("rgb", the default).
  std::string validation;
  int64_t image_height = 0, image_width = 0;
  bool grayscale = false;
};

// A validated engine job, placeholders unresolved. The members that cannot be placeholders are
// typed here; the rest stays in `json`.
struct EngineJobSpec {
  std::string json;             // the whole job, canonical compact JSON (keys sorted)
  std::string dataset;          // "fashion-mnist", "csv" or "npy" (engine/datasets.h)
  std::string format = "idx";   // data.format: "idx" (fashion-mnist), "csv" or "npy"
  std::string data_dir;         // empty: training::fashion_mnist_dir() (csv, npy: the cwd)
  EngineDataFiles files;        // format csv and npy
  int threads = 1;              // CPU backend threads; >= 1
  std::string backend = "cpu";  // "cpu" or "cuda"
  // GEMM inputs: "fp32", or "bf16" (mixed precision: bf16 products, fp32 everything else; on the
  // CPU, where it has AMX or AVX512-BF16; docs/training.md).
  std::string precision = "fp32";
  // Convolutions on "cuda": "gemm" (im2col + cuBLAS) or "cudnn" (cuDNN's, fp32 only;
  // docs/training.md).
  std::string convolution = "gemm";
  // Data-parallel ranks of each trial: CPU processes (backend cpu, each with `threads` threads)
  // or GPUs (backend cuda, one process per GPU the trial is given). Default 1; in [1, 256].
  int ranks = 1;
  // Executors the ranks are spread over, ranks / nodes on each (as torchrun's --nnodes): node n
  // runs ranks [n * ranks / nodes, (n + 1) * ranks / nodes). Default 1; in [1, 64] and dividing
  // ranks. The coordinator leases such a trial to `nodes` executors at once.
  int nodes = 1;
  // Bound on the ranks' rendezvous and on every collective, in seconds: a rank that dies or
  // stalls fails the others' next collective within it. Default 60; in (0, 86400].
  double collective_timeout_s = 60.0;
  // The batch of the per-sample inference latency figure (latency_ms_per_sample, measured after
  // training beside the batch-1 one). Default 64; in [1, 65536].
  int latency_batch = 64;
  std::string artifacts_dir;  // empty: no artifacts
  // train_loss, val_loss, val_accuracy (classification, binary), val_auc (binary), val_rmse or
  // val_mae (regression).
  std::string objective_metric;
  bool maximize = false;  // true for val_accuracy and val_auc
  // data.task (csv and npy; other data sets are classification): what the labels are, the loss
  // and the metrics (training/task.h). Default classification.
  training::Task task = training::Task::kClassification;
  // data.normalize: the statistics every split is normalized with, "all" (one mean and standard
  // deviation over every value) or "channel" (per channel of an image [C, H, W], per feature of a
  // flat sample); empty: the format's default ("channel" for csv and image_folder, else "all").
  std::string normalize;
  // data.prefetch: training batches gathered and augmented ahead of the training step on a
  // background thread (training::BatchLoaderOptions::prefetch); 0: on the training thread.
  // Default 2; in [0, 16].
  int prefetch = 2;
  // The model spec bound to the data set (canonical), when the job's model has no placeholders and
  // leaves no shape to the data's files (csv, npy, image_folder); else empty.
  std::string model_json;
  // The job's "model" is {"from": "init_from"}: the model spec of training.init_from's weights
  // (engine/init_source.h, source_model_json; docs/engine_jobs.md, "The model of the weights").
  bool model_from_init = false;
  // What the csv or npy files tell of the data's shape, read on this host before any trial
  // (read_engine_data_shape); unset: known when a trial loads the data.
  std::optional<engine::DataShape> files_shape;
};

// One trial's job: every placeholder substituted, every value typed and checked (for formats
// csv and npy, model_json is bound to the data and checked against it when the data is loaded:
// engine::load_data).
struct EngineTrialConfig {
  std::string model_json;  // the model spec, canonical (training::ModelSpec::json)
  // Data: the first `train` training images, the next `validation` ones, the first `test` test
  // images (0: none). Formats csv and npy: 0 until the data is loaded, then the splits' sizes
  // (engine::load_data).
  int64_t train = 50000, validation = 10000, test = 0;
  // data.augment (training batches only; training/data/augment.h): random_crop.padding (-1: no
  // random crop) and flip, the probability of a horizontal flip.
  int64_t crop_padding = -1;
  double flip = 0.0;
  bool augments() const { return crop_padding >= 0 || flip > 0.0; }
  // Training.
  int64_t epochs = 10, batch_size = 128;
  std::string optimizer = "adam";  // adam, adamw, sgd
  double lr = 0.001;
  double weight_decay = 0.0;          // adam: L2; adamw: decoupled; sgd: L2
  double momentum = 0.9;              // sgd only
  std::string schedule = "constant";  // constant, cosine, step
  double warmup_epochs = 0.0;         // cosine: linear warm-up, in epochs (may be fractional)
  double min_lr = 0.0;                // cosine: the final learning rate
  int64_t step_epochs = 1;            // step: decay every this many epochs
  double gamma = 0.1;                 // step: the decay factor
  double label_smoothing = 0.0;
  double clip_grad_norm = 0.0;  // 0: no clipping
  uint64_t seed = 0;            // the model's initialization, dropout and the data order
  // Starting from weights (docs/engine_jobs.md, "Starting from weights"): training.init_from, a
  // registered model ("REGISTRY/NAME@ALIAS", "REGISTRY/NAME/VERSION", "REGISTRY/NAME"), a
  // checkpoint file or an ONNX file (engine/init_source.h reads them); empty: the model starts
  // from its seed's initialization.
  std::string init_from;
  bool replace_head = false;  // the last layer with weights keeps its initialization
  // Per entry i of model.layers: trained at lr * factor; 0 freezes. `freeze` N sets the first N
  // to 0; lr_factors lists the others' (missing ones 1). Both >= 0.
  int64_t freeze = 0;
  std::vector<double> lr_factors;
  // The factor of each entry of model.layers, as freeze and lr_factors give them (1 past both).
  std::vector<float> layer_lr_factors() const;
};

// Parses and validates an engine job. Errors are Error(kInvalidArgument) whose message starts
// with `where` and names the JSON path, e.g. "job.training.lr: expected a number > 0, got -1" or
// "job.data.dataset: unknown dataset \"cifar\" (known: fashion-mnist)". A model without
// placeholders is validated in full here (shapes included), and against the dataset: its input
// must be the shape of a sample and its output [classes] ("job.model.input: [1, 32, 32] is not
// the shape of fashion-mnist's samples, [1, 28, 28]: ..."); with placeholders, a concrete
// "input" is still checked.
EngineJobSpec parse_engine_job(std::string_view json, const std::string& where = "job");

// NAME when `text` is a placeholder "{NAME}" (NAME not empty and free of braces); nullopt for
// any other string. The one definition of the grammar: sweep files check placeholders with it.
std::optional<std::string> engine_placeholder(std::string_view text);

// Substitutes `params` into the job and checks every value. Errors are Error(kInvalidArgument)
// naming the JSON path: `job.training.lr: "{learning_rate}": the trial has no parameter
// 'learning_rate'`, `job.training.epochs: expected an integer >= 1, got 2.5 (from "{epochs}")`,
// `job.model.layers[1].out: expected an integer >= 1, got "wide"` (the model spec's own errors).
EngineTrialConfig resolve_engine_job(const EngineJobSpec& spec, const Params& params,
                                     const std::string& where = "job");

// Substitutes `params` into the job's model alone and checks it as resolve_engine_job does: the
// spec builds, its input is the shape of the dataset's samples and its output [the dataset's
// classes]. The load-time probes of a sweep file (sweep/sweep_file.h), which have values for the
// model's placeholders only, call it. Errors as resolve_engine_job, e.g.
// `job.model.layers[3]: the model's output is [3], but fashion-mnist has 10 classes: ...`.
void check_engine_model(const EngineJobSpec& spec, const Params& params,
                        const std::string& where = "job");

// Reads what the files of a csv or npy data set tell of its shape without loading them (the
// loaders' read_csv_shape and read_npy_shape: an npy file's header and labels, a csv file's cells,
// no sample built) into spec.files_shape, and checks the model against it as parse_engine_job
// checks a catalogued data set's; a model with placeholders is checked on check_engine_model's
// probes, which use it. A sweep file's load calls it. Returns false, nothing read or checked, for
// another format or when a file is not named by an absolute path (nor under data.dir) or does not
// open on this host (the executors' files are elsewhere): a trial checks when it loads the data.
// Errors are the loaders' for what is read (under `where`.data), and those of parse_engine_job
// naming the model and the data: "job.model.input: [3] is not the shape of iris.csv's samples,
// [4]: make the model's input [4]".
bool read_engine_data_shape(EngineJobSpec& spec, const std::string& where = "job");

// Checks `model` (a model spec's JSON, placeholders substituted) against the job's data as far as
// it is known before loading, as check_engine_model checks the job's own model. `model_path`
// names it in errors ("job.model").
void check_engine_model_json(const EngineJobSpec& spec, const nlohmann::json& model,
                             const std::string& model_path);

// `json` (a job's JSON text) with every "{NAME}" string under model, training and data replaced by
// the parameter's value, keeping its JSON type. Errors as resolve_engine_job.
std::string substitute_engine_params(std::string_view json, const Params& params,
                                     const std::string& where = "job");

}  // namespace tuner

#endif  // TUNER_EXECUTOR_ENGINE_JOB_SPEC_H_
