// The tiny engine job of the distributed engine tests, whether its data is installed, and the
// study and coordinator that run it end to end.
#ifndef TUNER_TESTS_DISTRIBUTED_TINY_ENGINE_JOB_H_
#define TUNER_TESTS_DISTRIBUTED_TINY_ENGINE_JOB_H_

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "coordinator/coordinator.h"
#include "search/samplers/random_sampler.h"
#include "storage/sqlite_storage.h"
#include "training/data/fashion_mnist.h"
#include "tuner/study.h"

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

// An empty folder "tuner-<name>-<pid>" in the temporary directory.
inline std::filesystem::path fresh_test_dir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tuner-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A study over the tiny job's parameters (width, lr) in `dir`/study.db, sampled at random from a
// fixed seed: the same params in every run.
inline Study tiny_job_study(const std::string& name, const std::filesystem::path& dir) {
  SearchSpace space;
  space.add_int("width", 8, 32);
  space.add_float("lr", 1e-3, 1e-2, /*log=*/true);
  StudyOptions o;
  o.name = name;
  o.directions = {StudyDirection::kMaximize};
  o.sampler = std::make_shared<RandomSampler>();
  o.seed = 5;
  o.storage = std::make_shared<SqliteStorage>((dir / "study.db").string());
  o.space = space;
  return Study::create(o);
}

// A coordinator on `dir`/coordinator.sock for `n_trials` trials of `job`, logging to stderr.
inline CoordinatorOptions tiny_job_coordinator_options(const nlohmann::json& job, int n_trials,
                                                       const std::filesystem::path& dir) {
  CoordinatorOptions o;
  o.endpoint = "ipc://" + (dir / "coordinator.sock").string();
  o.job_json = job.dump();
  o.n_trials = n_trials;
  o.heartbeat_interval = std::chrono::milliseconds(100);
  o.lease_timeout = std::chrono::milliseconds(3000);
  o.log = [](const std::string& line) { std::cerr << line << "\n"; };
  return o;
}

}  // namespace tuner

#endif  // TUNER_TESTS_DISTRIBUTED_TINY_ENGINE_JOB_H_
