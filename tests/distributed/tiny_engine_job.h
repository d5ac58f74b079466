// The tiny engine job of the distributed engine tests, and whether its data is installed.
#ifndef TUNER_TESTS_DISTRIBUTED_TINY_ENGINE_JOB_H_
#define TUNER_TESTS_DISTRIBUTED_TINY_ENGINE_JOB_H_

#include <filesystem>
#include <nlohmann/json.hpp>

#include "training/data/fashion_mnist.h"

namespace tuner {

inline bool have_fashion_mnist() {
  return std::filesystem::exists(training::fashion_mnist_dir() + "train-images-idx3-ubyte.gz");
}

// A tiny engine job (no dropout or batch norm: N ranks match one to float tolerance), its ranks
// on `nodes` executors.
inline nlohmann::json tiny_engine_job(int ranks, int epochs, int nodes = 1) {
  nlohmann::json job = nlohmann::json::parse(R"({
    "kind": "engine",
    "model": {"input": [1, 28, 28], "layers": [
      {"type": "flatten"}, {"type": "linear", "out": "{width}"}, {"type": "relu"},
      {"type": "linear", "out": 10}]},
    "data": {"dataset": "fashion-mnist", "train": 600, "validation": 200},
    "training": {"batch_size": 64, "lr": "{lr}", "seed": 3},
    "objective_metric": "val_accuracy"})");
  job["training"]["epochs"] = epochs;
  job["ranks"] = ranks;
  if (nodes != 1) job["nodes"] = nodes;
  job["collective_timeout_s"] = 20;
  return job;
}

}  // namespace tuner

#endif  // TUNER_TESTS_DISTRIBUTED_TINY_ENGINE_JOB_H_
