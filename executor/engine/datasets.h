// The data-set catalogue of engine jobs (internal to executor/): the names a job's data.dataset
// may take, what is known of each before loading (sizes, sample shape, classes, the scaling of
// its values) and the loader that reads its splits. A new kind of data set (a CSV or NPY file) is
// one more catalogue entry in datasets.cc and its loader in a file of its own, as
// fashion_mnist_loader.{h,cc}; nothing else names a data set.
//
// Thread safety: the catalogue is immutable; the loaders read files and share no state.
#ifndef TUNER_EXECUTOR_ENGINE_DATASETS_H_
#define TUNER_EXECUTOR_ENGINE_DATASETS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "executor/engine/job_spec.h"
#include "training/data/dataset.h"
#include "training/tensor.h"

namespace tuner::engine {

// The samples a trial takes: the first `train` of the training file, the next `validation`, and
// the first `test` of the test file (0: none).
struct SplitSizes {
  int64_t train = 0, validation = 0, test = 0;
};

struct Splits {
  training::Dataset train, validation, test;  // test empty when SplitSizes::test is 0
};

// Reads the splits of one data set from `dir` (empty: the data set's default folder), its values
// scaled as DatasetInfo says. Errors name `path` (the job's data, e.g. "trial 3: job.data"):
// Error(kNotFound) for a missing file, kDataLoss for an unreadable one, kInvalidArgument when the
// files hold fewer samples than `sizes` asks for.
using DatasetLoader = Splits (*)(const std::string& dir, const SplitSizes& sizes,
                                 const std::string& path);

// One data set the engine can load. Sizes are -1, the sample shape empty and the classes 0 where
// only loading tells (a CSV file, later).
struct DatasetInfo {
  std::string_view name;   // the job's data.dataset
  int64_t train_size;      // samples in the training file: train + validation come from it
  int64_t test_size;       // samples in the test file
  training::Shape sample;  // one sample's shape, the model's input
  int32_t classes;         // the labels, the model's output [classes]
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

// The splits of `config` from the job's data set, as its loader scales them. `where` is the job's
// path ("trial 3: job"); errors as DatasetLoader's, under `where`.data.
Splits load_raw_data(const EngineJobSpec& spec, const EngineTrialConfig& config,
                     const std::string& where);

// The normalization of every split: one mean and standard deviation over the training split.
training::Normalizer fit_normalizer(const training::Dataset& train);

// load_raw_data's splits, each normalized with the training split's statistics.
Splits load_data(const EngineJobSpec& spec, const EngineTrialConfig& config,
                 const std::string& where);

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_DATASETS_H_
