// End-to-end: an engine trial whose two ranks span two executors ("ranks": 2, "nodes": 2), with a
// coordinator and two real ExecutorServices in this process, each running its node's
// `tuner trial` (the built binary) on a 600-image Fashion-MNIST slice; the nodes meet through the
// coordinator's store (Gloo over loopback). It gives the metrics of the same trial on one executor
// with two ranks (and node 0's checkpoint its weights); and a node that dies mid-trial fails the
// attempt on the other node too, within the collective timeout, with a reason naming the node.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "coordinator/coordinator.h"
#include "coordinator/study_run.h"
#include "executor/executor_service.h"
#include "tests/distributed/tiny_engine_job.h"
#include "training/checkpoint.h"
#include "tuner/study.h"

namespace tuner {
namespace {

using std::chrono::milliseconds;
namespace fs = std::filesystem;

// Called on every turn of the coordinator's loop with the study and the executors' threads;
// true ends the run there.
using OnTurn = std::function<bool(const Study&, std::vector<std::jthread>&)>;

struct TrialRun {
  FrozenTrial trial;                // the first
  std::vector<FrozenTrial> trials;  // all of them (one, unless the run was ended by on_turn)
  std::vector<float> weights;       // node 0's last checkpoint's parameters
};

// Runs one trial of `job` (its checkpoints in a folder of the run's) through a coordinator and
// `executors` executors, until the study is done or `on_turn` ends it.
TrialRun run_one_trial(nlohmann::json job, int executors, const std::string& tag,
                       const OnTurn& on_turn = {},
                       std::chrono::seconds limit = std::chrono::seconds(60)) {
  const fs::path dir = fresh_test_dir("nodes-e2e-" + tag);
  job["artifacts_dir"] = (dir / "artifacts").string();
  Study study = tiny_job_study("nodes", dir);
  CoordinatorOptions options = tiny_job_coordinator_options(job, /*n_trials=*/1, dir);
  options.max_retries = 0;
  Coordinator coordinator(study, options);

  std::vector<std::unique_ptr<ExecutorService>> services;
  std::vector<std::jthread> threads;
  for (int i = 0; i < executors; ++i) {
    ExecutorOptions executor_options;
    executor_options.coordinator = coordinator.endpoint();
    executor_options.executor_id = "node-" + std::string(1, static_cast<char>('a' + i));
    executor_options.slots = 1;
    executor_options.gpus = std::vector<int>{};
    executor_options.heartbeat_interval = milliseconds(100);
    executor_options.coordinator_timeout = milliseconds(2000);
    executor_options.stop_grace = milliseconds(1000);
    executor_options.log_dir = (dir / "logs").string();
    executor_options.tuner_path = TUNER_PATH;
    executor_options.rank_host = "127.0.0.1";
    executor_options.log = [](const std::string& line) { std::cerr << line << "\n"; };
    services.push_back(std::make_unique<ExecutorService>(executor_options));
    ExecutorService* service = services.back().get();
    threads.emplace_back([service](std::stop_token stop) { service->run(stop); });
  }

  const auto end = std::chrono::steady_clock::now() + limit;
  bool ended = false;
  while (!ended && !coordinator.done() && std::chrono::steady_clock::now() < end) {
    coordinator.poll_once(milliseconds(20));
    if (on_turn) ended = on_turn(study, threads);
  }
  EXPECT_TRUE(ended || coordinator.done())
      << "the trial did not finish within " << limit.count() << " s";
  for (std::jthread& t : threads) t.request_stop();
  threads.clear();  // joins
  const std::vector<FrozenTrial> trials = study.trials();
  TrialRun run;
  run.trials = trials;
  if (trials.size() == 1 || (ended && !trials.empty())) {
    run.trial = trials.front();
    const fs::path checkpoint = dir / "artifacts" / "trial-0" / "resume.ckpt";
    if (fs::exists(checkpoint)) run.weights = training::load_checkpoint(checkpoint).parameters;
  } else {
    ADD_FAILURE() << trials.size() << " trials";
  }
  fs::remove_all(dir);
  return run;
}

double attr(const FrozenTrial& trial, const std::string& name) {
  return std::stod(trial.user_attrs.at(name));
}

TEST(EngineNodesEndToEnd, TwoRanksOnTwoExecutorsGiveTheMetricsAndWeightsOfTwoRanksOnOne) {
  if (!have_fashion_mnist())
    GTEST_SKIP() << "no Fashion-MNIST in " << training::fashion_mnist_dir();
  const TrialRun run_one = run_one_trial(tiny_engine_job(2, 2, 1), 1, "one-executor");
  const TrialRun run_two = run_one_trial(tiny_engine_job(2, 2, 2), 2, "two-executors");
  const FrozenTrial& one = run_one.trial;
  const FrozenTrial& two = run_two.trial;
  ASSERT_EQ(one.state, TrialState::kComplete);
  ASSERT_EQ(two.state, TrialState::kComplete) << two.system_attrs.at("fail_reason");
  EXPECT_EQ(one.params, two.params);
  EXPECT_NEAR(two.value(), one.value(), 1e-4);  // val_accuracy
  for (const char* name : {"train_loss", "val_loss", "val_accuracy", "best_epoch"}) {
    EXPECT_NEAR(attr(two, name), attr(one, name), 1e-4) << name;
  }
  EXPECT_EQ(two.intermediate_values.size(), 2u) << "node 0 reports every epoch";
  for (const auto& [step, value] : one.intermediate_values) {
    EXPECT_NEAR(two.intermediate_values.at(step), value, 1e-4) << "epoch " << step;
  }
  // The weights node 0 saved after the last epoch.
  ASSERT_FALSE(run_one.weights.empty());
  ASSERT_EQ(run_two.weights.size(), run_one.weights.size());
  for (size_t i = 0; i < run_one.weights.size(); ++i) {
    ASSERT_NEAR(run_two.weights[i], run_one.weights[i], 1e-5) << "parameter " << i;
  }
}

TEST(EngineNodesEndToEnd, ANodeThatDiesFailsTheTrialOnEveryNodeNamingIt) {
  if (!have_fashion_mnist())
    GTEST_SKIP() << "no Fashion-MNIST in " << training::fashion_mnist_dir();
  // Rank 1 is node 1's first rank, its launcher: after epoch 1 the whole node exits with code 3.
  ::setenv("TUNER_TEST_RANK_EXIT", "1:1", 1);
  const auto start = std::chrono::steady_clock::now();
  const FrozenTrial trial = run_one_trial(tiny_engine_job(2, 30, 2), 2, "dying-node").trial;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::unsetenv("TUNER_TEST_RANK_EXIT");
  ASSERT_EQ(trial.state, TrialState::kFail);
  const std::string reason = trial.system_attrs.at("fail_reason");
  EXPECT_NE(reason.find("failed on its nodes"), std::string::npos) << reason;
  EXPECT_NE(reason.find("node 1 of 2 (executor node-b): exited with code 3"), std::string::npos)
      << reason;
  // Node 0 did not wait for the collective timeout (20 s): its next collective failed at once.
  EXPECT_NE(reason.find("node 0 of 2 (executor node-a)"), std::string::npos) << reason;
  EXPECT_LT(seconds, 20.0);
}

// An executor stopped mid-trial (SIGTERM: a Slurm preemption) says BYE with its node's lease as
// preempted: the attempt fails on every node, and the trial runs again without a retry counted
// (max_retries is 0 here).
TEST(EngineNodesEndToEnd, AnExecutorStoppedMidTrialFailsTheAttemptOnEveryNodeAndItRunsAgain) {
  if (!have_fashion_mnist())
    GTEST_SKIP() << "no Fashion-MNIST in " << training::fashion_mnist_dir();
  const auto start = std::chrono::steady_clock::now();
  bool stopped = false;
  // Node 1's executor stops (BYE, its job stopped) once node 0 has reported an epoch; the run
  // ends once the attempt is told and its re-run is made.
  const TrialRun run =
      run_one_trial(tiny_engine_job(2, 30, 2), 2, "leaving-executor",
                    [&](const Study& study, std::vector<std::jthread>& threads) {
                      const std::vector<FrozenTrial> trials = study.trials();
                      if (!stopped) {
                        if (trials.empty() || trials.front().intermediate_values.empty())
                          return false;
                        threads[1].request_stop();
                        stopped = true;
                      }
                      return trials.size() == 2 && trials.front().state == TrialState::kFail;
                    });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(stopped);
  ASSERT_EQ(run.trials.size(), 2u);
  ASSERT_EQ(run.trial.state, TrialState::kFail);
  const std::string reason = run.trial.system_attrs.at("fail_reason");
  EXPECT_NE(reason.find("lost a node: "), std::string::npos) << reason;
  // Beside node 0's own failure, when its collective failed first.
  EXPECT_NE(reason.find("node 1 of 2 (executor node-b): preempted: its executor node-b"),
            std::string::npos)
      << reason;
  EXPECT_NE(reason.find("re-run without a retry counted"), std::string::npos) << reason;
  const FrozenTrial& rerun = run.trials[1];
  EXPECT_EQ(rerun.params, run.trial.params);
  EXPECT_EQ(rerun.system_attrs.at(kPreemptedAttemptsAttr), "1");
  EXPECT_LT(seconds, 20.0);
}

}  // namespace
}  // namespace tuner
