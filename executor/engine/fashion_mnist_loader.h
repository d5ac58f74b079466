// The Fashion-MNIST loader of the data-set catalogue (datasets.h; internal to executor/): its
// four IDX files (training/data/idx.h), pixels as uint8 scaled to [0, 1] by 1 / 255.
//
// Thread safety: reads files, shares no state; safe from any thread.
#ifndef TUNER_EXECUTOR_ENGINE_FASHION_MNIST_LOADER_H_
#define TUNER_EXECUTOR_ENGINE_FASHION_MNIST_LOADER_H_

#include <string>

#include "executor/engine/datasets.h"

namespace tuner::engine {

// A DatasetLoader: the files in spec.data_dir, empty: training::fashion_mnist_dir()
// (TUNER_FASHION_MNIST_DIR or Debian's dataset-fashion-mnist). A missing file's error says how to
// install the data.
Splits load_fashion_mnist(const EngineJobSpec& spec, const SplitSizes& sizes,
                          const std::string& path);

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_FASHION_MNIST_LOADER_H_
