// End-to-end: a coordinator whose study's job is an engine job, and a real ExecutorService that
// runs each trial as `tuner trial --engine-job ...` (the built binary), on a 600-image
// Fashion-MNIST slice. Both trials must end COMPLETE with the val_accuracy the engine measured.
// Then data-parallel trials ("ranks": 2, Gloo over loopback): `tuner trial` gives the metrics of
// one rank, fails cleanly naming a rank that dies, stops every rank on SIGTERM, and a 2-rank
// trial completes through a coordinator and an executor.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "coordinator/coordinator.h"
#include "executor/child_process.h"
#include "executor/executor_service.h"
#include "tests/distributed/tiny_engine_job.h"
#include "tuner/study.h"

namespace tuner {
namespace {

using std::chrono::milliseconds;
namespace fs = std::filesystem;

// What a `tuner trial` run printed and how it ended.
struct TrialRun {
  std::vector<std::string> stdout_lines;
  std::string stderr_text;
  ExitStatus status;
  double seconds = 0;
};

// Runs `tuner trial --engine-job JOB` with `env` added; on_line sees each stdout line (with the
// process, e.g. to signal it). Killed after `limit`.
TrialRun run_tuner_trial(const nlohmann::json& job, const std::vector<std::string>& env,
                         const std::function<void(const std::string&, ChildProcess&)>& on_line = {},
                         std::chrono::seconds limit = std::chrono::seconds(60)) {
  SpawnOptions spawn;
  spawn.argv = {TUNER_PATH, "trial", "--engine-job", job.dump()};
  for (char** e = environ; *e != nullptr; ++e) spawn.env.emplace_back(*e);
  spawn.env.insert(spawn.env.end(), env.begin(), env.end());
  const auto start = std::chrono::steady_clock::now();
  ChildProcess child = ChildProcess::spawn(spawn);
  TrialRun run;
  std::string out_partial;
  auto read_all = [&](UniqueFd& fd, bool is_stdout) {
    char buffer[4096];
    ssize_t n;
    while (fd.valid() && (n = ::read(fd.get(), buffer, sizeof buffer)) != 0) {
      if (n < 0) {
        if (errno == EINTR) continue;
        return;  // EAGAIN: nothing more for now
      }
      if (!is_stdout) {
        run.stderr_text.append(buffer, static_cast<size_t>(n));
        continue;
      }
      out_partial.append(buffer, static_cast<size_t>(n));
      for (size_t end; (end = out_partial.find('\n')) != std::string::npos;) {
        run.stdout_lines.push_back(out_partial.substr(0, end));
        out_partial.erase(0, end + 1);
        if (on_line) on_line(run.stdout_lines.back(), child);
      }
    }
    if (fd.valid() && n == 0) fd.reset();
  };
  while (true) {
    pollfd fds[2] = {{child.stdout_fd().valid() ? child.stdout_fd().get() : -1, POLLIN, 0},
                     {child.stderr_fd().valid() ? child.stderr_fd().get() : -1, POLLIN, 0}};
    ::poll(fds, 2, 50);
    read_all(child.stdout_fd(), true);
    read_all(child.stderr_fd(), false);
    if (auto status = child.try_wait()) {
      read_all(child.stdout_fd(), true);
      read_all(child.stderr_fd(), false);
      run.status = *status;
      break;
    }
    if (std::chrono::steady_clock::now() - start > limit) child.signal_group(SIGKILL);
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

const std::string kParamsEnv = R"(TUNER_PARAMS={"width": 24, "lr": 0.004})";

TEST(EngineRanksEndToEnd, TwoCpuRanksGiveTheFinalMetricsOfOne) {
  if (!have_fashion_mnist())
    GTEST_SKIP() << "no Fashion-MNIST in " << training::fashion_mnist_dir();
  const TrialRun one = run_tuner_trial(tiny_engine_job(1, 2), {kParamsEnv});
  const TrialRun two = run_tuner_trial(tiny_engine_job(2, 2), {kParamsEnv});
  ASSERT_EQ(one.status.exit_code, 0) << one.stderr_text;
  ASSERT_EQ(two.status.exit_code, 0) << two.stderr_text;
  // Rank 0 alone prints: a line per epoch, then the final line.
  ASSERT_EQ(one.stdout_lines.size(), 3u) << one.stderr_text;
  ASSERT_EQ(two.stdout_lines.size(), 3u) << two.stderr_text;
  const auto a = nlohmann::json::parse(one.stdout_lines.back());
  const auto b = nlohmann::json::parse(two.stdout_lines.back());
  for (const char* name : {"train_loss", "val_loss", "val_accuracy", "best_epoch"}) {
    EXPECT_NEAR(b.at(name).get<double>(), a.at(name).get<double>(), 1e-4) << name;
  }
  EXPECT_NE(two.stderr_text.find("rank 1: tuner trial: rank 1: completed after 2 epoch(s)"),
            std::string::npos)
      << two.stderr_text;
}

TEST(EngineRanksEndToEnd, ARankThatDiesFailsTheTrialNamingIt) {
  if (!have_fashion_mnist())
    GTEST_SKIP() << "no Fashion-MNIST in " << training::fashion_mnist_dir();
  const TrialRun run =
      run_tuner_trial(tiny_engine_job(2, 20), {kParamsEnv, "TUNER_TEST_RANK_EXIT=1:1"});
  EXPECT_EQ(run.status.exit_code, 1) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("error: job: rank 1 of 2 exited with code 3; the other ranks "
                                 "were stopped"),
            std::string::npos)
      << run.stderr_text;
  EXPECT_LT(run.seconds, 15.0) << "the launcher should not wait for the collective timeout";
  EXPECT_LE(run.stdout_lines.size(), 2u);  // epoch 1, maybe 2; no final line
}

TEST(EngineRanksEndToEnd, SigtermStopsEveryRankAndPrintsTheEpochsSoFar) {
  if (!have_fashion_mnist())
    GTEST_SKIP() << "no Fashion-MNIST in " << training::fashion_mnist_dir();
  bool signalled = false;
  const TrialRun run = run_tuner_trial(
      tiny_engine_job(2, 50), {kParamsEnv}, [&](const std::string& line, ChildProcess& child) {
        if (!signalled && line.find("\"step\":1,") != std::string::npos) {
          child.signal_group(SIGTERM);  // as the executor stops a job
          signalled = true;
        }
      });
  ASSERT_TRUE(signalled) << run.stderr_text;
  EXPECT_EQ(run.status.exit_code, 0) << run.stderr_text;
  ASSERT_GE(run.stdout_lines.size(), 2u);
  EXPECT_EQ(run.stdout_lines.back().find("\"step\""), std::string::npos)
      << "the last line is the final metrics";
  EXPECT_NE(run.stderr_text.find("tuner trial: interrupted after"), std::string::npos)
      << run.stderr_text;
  EXPECT_LT(run.seconds, 15.0);
}

// A coordinator and a real executor run `n_trials` trials of `job` to the end.
void run_engine_study(const nlohmann::json& job, int n_trials, const std::string& tag) {
  const fs::path dir = fresh_test_dir("engine-e2e-" + tag);
  Study study = tiny_job_study("engine", dir);
  const CoordinatorOptions options = tiny_job_coordinator_options(job, n_trials, dir);
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
  ASSERT_EQ(trials.size(), static_cast<size_t>(n_trials));
  for (const FrozenTrial& t : trials) {
    ASSERT_EQ(t.state, TrialState::kComplete) << "trial " << t.number;
    EXPECT_GT(t.value(), 0.3) << "trial " << t.number;  // val_accuracy; chance is 0.1
    EXPECT_LE(t.value(), 1.0) << "trial " << t.number;
    EXPECT_EQ(t.intermediate_values.size(), 2u) << "trial " << t.number << ": one per epoch";
  }
  EXPECT_EQ(coordinator.stats().completed, n_trials);
  fs::remove_all(dir);
}

TEST(EngineJobEndToEnd, ACoordinatorRunsTwoEngineTrialsThroughAnExecutor) {
  if (!have_fashion_mnist())
    GTEST_SKIP() << "no Fashion-MNIST in " << training::fashion_mnist_dir();
  run_engine_study(tiny_engine_job(1, 2), 2, "one-rank");
}

TEST(EngineJobEndToEnd, ATwoRankEngineTrialCompletesThroughAnExecutor) {
  if (!have_fashion_mnist())
    GTEST_SKIP() << "no Fashion-MNIST in " << training::fashion_mnist_dir();
  run_engine_study(tiny_engine_job(2, 2), 1, "two-ranks");
}

}  // namespace
}  // namespace tuner
