// The data-set catalogue of engine jobs (internal to executor/): the names a job's data.dataset
// may take, what is known of each before loading (sizes, sample shape, classes, the scaling of
// its values) and the loader that reads its splits. The entries: fashion-mnist (IDX files,
// fashion_mnist_loader.h), and the user's files of data.format "csv" (csv_loader.h), "npy"
// (npy_loader.h) and "image_folder" (image_folder_loader.h), whose sizes, sample shape and
// classes only loading tells. A new kind of data
// set is one more catalogue entry in datasets.cc and its loader in a file of its own.
//
// Thread safety: the catalogue is immutable; the loaders read files and share no state.
#ifndef TUNER_EXECUTOR_ENGINE_DATASETS_H_
#define TUNER_EXECUTOR_ENGINE_DATASETS_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "executor/engine/job_spec.h"
#include "executor/engine/model_fit.h"
#include "training/data/augment.h"
#include "training/data/dataset.h"
#include "training/tensor.h"

namespace tuner::engine {

// The samples a trial takes: the first `train` of the training file, the next `validation`, and
// the first `test` of the test file (0: none).
struct SplitSizes {
  int64_t train = 0, validation = 0, test = 0;
};

// How one column of a csv file becomes input features, as the training split fixed it: a numeric
// column is one feature, a categorical one a slot per category (one-hot), in this order, or with
// an embedding one feature holding its category's index (the model's "embeddings" look it up).
struct FeatureColumn {
  std::string name;  // the header's name
  bool categorical = false;
  float fill = 0.0f;  // numeric: the value of a missing field, the training split's mean
  std::vector<std::string> categories;  // categorical: the training split's, sorted (slot order)
  bool missing_slot = false;            // categorical: one more slot, last, for a missing value
  // categorical: > 0, the dimension of its learned embedding; its one feature is the index of its
  // category (the missing value's last, -1 for a category the training split lacked). 0: one-hot.
  int64_t embedding = 0;
};

struct Splits {
  training::Dataset train, validation, test;  // test empty when there is no test split
  // For messages: the data set's name or its (training) file's name.
  std::string name;
  // The label each class index stands for, as the file writes it (csv: sorted, numerically when
  // every label is an integer; image_folder: the class folders' names, sorted); empty when the
  // labels are the indices (fashion-mnist, npy).
  std::vector<std::string> class_names;
  // A regression's targets, in output order (csv: the label column); else empty.
  std::vector<std::string> target_names;
  // A regression's target standardization, the training split's statistics (load_data; the
  // targets themselves stay in their units); else empty.
  training::TargetScaling target_scaling;
  // The name of each input feature (csv: "age", "color=red" for a one-hot slot); else empty.
  std::vector<std::string> features;
  // csv: the feature columns in file order, whose encodings make `features`; else empty.
  std::vector<FeatureColumn> columns;
  // The trial's data.augment for the training batches (load_data), padding with each channel's
  // normalized 0; null without augmentation.
  std::shared_ptr<const training::SampleTransform> augmentation;
};

// Reads the splits of one data set, its values scaled as DatasetInfo says: fashion-mnist's from
// spec.data_dir (empty: its default folder) in the counts of `sizes`; the user's csv or npy
// files (spec.files) split by their fractions, `sizes` unused. Errors name `path` (the job's
// data, e.g. "trial 3: job.data"): Error(kNotFound) for a missing file, kDataLoss for an
// unreadable or malformed one (naming the file and the place in it), kInvalidArgument when the
// files hold fewer samples than `sizes` asks for or a setting does not fit them.
using DatasetLoader = Splits (*)(const EngineJobSpec& spec, const SplitSizes& sizes,
                                 const std::string& path);

// One data set the engine can load. Sizes are -1, the sample shape empty and the classes 0 where
// only loading tells (csv, npy).
struct DatasetInfo {
  std::string_view name;    // the job's data.dataset ("csv", "npy": named by data.format)
  std::string_view format;  // the job's data.format: "idx", "csv" or "npy"
  int64_t train_size;       // samples in the training file: train + validation come from it
  int64_t test_size;        // samples in the test file
  training::Shape sample;   // one sample's shape, the model's input
  int32_t classes;          // the labels, the model's output [classes]
  // The files' values and the loader's scaling of them (EngineInputPipeline): e.g. uint8 pixels
  // divided by 255.
  bool uint8;
  float divisor;
  DatasetLoader load;
};

// Every data set, in the order messages list them.
std::span<const DatasetInfo> engine_datasets();

// Their names for messages: "fashion-mnist, ...".
std::string known_datasets();

// The data set named `name`; else Error(kInvalidArgument) at `path`:
// `job.data.dataset: unknown dataset "cifar" (known: fashion-mnist)`.
const DatasetInfo& find_dataset(std::string_view name, const std::string& path);

// The data set of `format` when it is a file format ("csv", "npy"); nullptr for "idx".
const DatasetInfo* find_file_format(std::string_view format);

// What the model must fit before loading: the data set's sample shape and classes as far as the
// catalogue knows them (a csv or npy file's: unknown).
DataShape catalogue_shape(const DatasetInfo& info);

// The splits of `config` from the job's data set, as its loader scales them. `where` is the job's
// path ("trial 3: job"); errors as DatasetLoader's, under `where`.data.
Splits load_raw_data(const EngineJobSpec& spec, const EngineTrialConfig& config,
                     const std::string& where);

// The normalization of every split, statistics of the training split: data.normalize's, by default
// one mean and standard deviation over every value, or per feature (NormalizeBy::kChannel) for a
// csv file's and per channel for an image folder's.
// A csv file's `columns` (Splits::columns) keep the features of embedded columns as they are
// (their category indices).
training::Normalizer fit_normalizer(const EngineJobSpec& spec, const training::Dataset& train,
                                    std::span<const FeatureColumn> columns = {});

// Splits normalized with the training split's statistics, and those statistics.
struct NormalizedSplits {
  Splits splits;
  std::vector<float> mean, stddev;  // [channels] (one value for normalize "all")
};

// load_raw_data's splits, each normalized with fit_normalizer's statistics of the training split:
// mapped from the data cache, shared by the trials of the machine (data_cache.h), else (no cache)
// loaded and normalized here. Errors as load_raw_data's.
NormalizedSplits load_normalized_data(const EngineJobSpec& spec, const EngineTrialConfig& config,
                                      const std::string& where);

// load_normalized_data's splits, the augmentation of
// `config` (Splits::augmentation; Error(kInvalidArgument) at data.augment when the samples are not
// images [C, H, W]), and `config`
// fitted to them: config.model_json bound to the data (model_fit.h: "input" and "out":
// "classes" filled in) and checked against it, config.train / validation / test set to the
// splits' sizes. Errors as load_raw_data's, and Error(kInvalidArgument) naming the model and the
// data when they do not fit ("trial 3: job.model.input: [784] is not the shape of iris.csv's
// samples, [4]: ...") or when training.batch_size is larger than the training split.
Splits load_data(const EngineJobSpec& spec, EngineTrialConfig& config, const std::string& where);

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_DATASETS_H_
