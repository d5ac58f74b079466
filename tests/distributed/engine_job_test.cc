// End-to-end: a coordinator whose study's job is an engine job, and a real ExecutorService that
// runs each trial as `tuner trial --engine-job ...` (the built binary), on a 600-image
// Fashion-MNIST slice. Both trials must end COMPLETE with the val_accuracy the engine measured.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "executor/executor_service.h"
#include "search/random_sampler.h"
#include "storage/sqlite_storage.h"
#include "training/data/fashion_mnist.h"
#include "tuner/coordinator.h"
#include "tuner/study.h"

namespace tuner {
namespace {

using std::chrono::milliseconds;
namespace fs = std::filesystem;

TEST(EngineJobEndToEnd, ACoordinatorRunsTwoEngineTrialsThroughAnExecutor) {
  if (!fs::exists(training::fashion_mnist_dir() + "train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "no Fashion-MNIST in " << training::fashion_mnist_dir();
  }
  const fs::path dir =
      fs::temp_directory_path() / ("tuner-engine-e2e-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);

  SearchSpace space;
  space.add_int("width", 8, 32);
  space.add_float("lr", 1e-3, 1e-2, /*log=*/true);
  StudyOptions study_options;
  study_options.name = "engine";
  study_options.directions = {StudyDirection::kMaximize};
  study_options.sampler = std::make_shared<RandomSampler>();
  study_options.seed = 5;
  study_options.storage = std::make_shared<SqliteStorage>((dir / "study.db").string());
  study_options.space = space;
  Study study = Study::create(study_options);

  const nlohmann::json job = nlohmann::json::parse(R"({
    "kind": "engine",
    "model": {"input": [1, 28, 28], "layers": [
      {"type": "flatten"}, {"type": "linear", "out": "{width}"}, {"type": "relu"},
      {"type": "linear", "out": 10}]},
    "data": {"dataset": "fashion-mnist", "train": 600, "validation": 200},
    "training": {"epochs": 2, "batch_size": 64, "lr": "{lr}"},
    "objective_metric": "val_accuracy"})");
  CoordinatorOptions options;
  options.endpoint = "ipc://" + (dir / "coordinator.sock").string();
  options.job_json = job.dump();  // validated here: an engine job passes
  options.n_trials = 2;
  options.heartbeat_interval = milliseconds(100);
  options.lease_timeout = milliseconds(3000);
  options.log = [](const std::string& line) { std::cerr << line << "\n"; };
  Coordinator coordinator(study, options);

  ExecutorOptions executor_options;
  executor_options.coordinator = coordinator.endpoint();
  executor_options.executor_id = "engine-executor";
  executor_options.slots = 1;
  executor_options.gpus = std::vector<int>{};
  executor_options.heartbeat_interval = milliseconds(100);
  executor_options.coordinator_timeout = milliseconds(2000);
  executor_options.stop_grace = milliseconds(1000);
  executor_options.log_dir = (dir / "logs").string();
  executor_options.tuner_path = TUNER_PATH;
  executor_options.log = [](const std::string& line) { std::cerr << line << "\n"; };
  ExecutorService executor(executor_options);
  std::jthread executor_thread([&](std::stop_token stop) { executor.run(stop); });

  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!coordinator.done() && std::chrono::steady_clock::now() < end) {
    coordinator.poll_once(milliseconds(20));
  }
  ASSERT_TRUE(coordinator.done()) << "the trials did not finish within 30 s";
  executor_thread.request_stop();
  executor_thread.join();

  const std::vector<FrozenTrial> trials = study.trials();
  ASSERT_EQ(trials.size(), 2u);
  for (const FrozenTrial& t : trials) {
    ASSERT_EQ(t.state, TrialState::kComplete) << "trial " << t.number;
    EXPECT_GT(t.value(), 0.3) << "trial " << t.number;  // val_accuracy; chance is 0.1
    EXPECT_LE(t.value(), 1.0) << "trial " << t.number;
    EXPECT_EQ(t.intermediate_values.size(), 2u) << "trial " << t.number << ": one per epoch";
  }
  EXPECT_EQ(coordinator.stats().completed, 2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tuner
