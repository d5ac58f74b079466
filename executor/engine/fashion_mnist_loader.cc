#include "executor/engine/fashion_mnist_loader.h"

#include <filesystem>

#include "executor/job_json.h"
#include "training/data/fashion_mnist.h"
#include "training/data/idx.h"
#include "trials/error.h"

namespace tuner::engine {

Splits load_fashion_mnist(const EngineJobSpec& spec, const SplitSizes& sizes,
                          const std::string& path) {
  std::string dir = spec.data_dir.empty() ? training::fashion_mnist_dir() : spec.data_dir;
  if (dir.back() != '/') dir += '/';
  auto file = [&](const char* name) {
    std::string f = dir + name;
    if (!std::filesystem::exists(f)) {
      throw Error(ErrorCode::kNotFound,
                  path + ": " + f +
                      " does not exist (install Debian's dataset-fashion-mnist, set "
                      "TUNER_FASHION_MNIST_DIR or the job's data.dir)");
    }
    return f;
  };
  const int64_t train_file_samples = sizes.train + sizes.validation;
  Splits s;
  s.name = "fashion-mnist";
  try {
    training::Dataset all = training::read_idx(
        file("train-images-idx3-ubyte.gz"), file("train-labels-idx1-ubyte.gz"), train_file_samples);
    if (all.size() < train_file_samples) {
      job_json::fail(path, "train + validation is " + std::to_string(train_file_samples) +
                               " but the training file has " + std::to_string(all.size()) +
                               " images");
    }
    s.train = all.slice(0, sizes.train);
    s.validation = all.slice(sizes.train, train_file_samples);
    if (sizes.test > 0) {
      s.test = training::read_idx(file("t10k-images-idx3-ubyte.gz"),
                                  file("t10k-labels-idx1-ubyte.gz"), sizes.test);
      if (s.test.size() < sizes.test) {
        job_json::fail(path + ".test", std::to_string(sizes.test) +
                                           " is more than the test file's " +
                                           std::to_string(s.test.size()) + " images");
      }
    }
  } catch (const training::DataError& e) {
    throw Error(ErrorCode::kDataLoss, path + ": " + e.what());
  }
  return s;
}

}  // namespace tuner::engine
