// End-to-end: a coordinator in this process on ipc://, executors as real processes
// (`tuner executor`) running command trials, and the failures they must survive.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/coordinator.h"
#include "search/samplers/random_sampler.h"
#include "storage/sqlite_storage.h"
#include "tuner/study.h"
#include "wire/message_socket.h"
#include "wire/protocol.h"

extern char** environ;

namespace tuner {
namespace {

using std::chrono::milliseconds;
namespace fs = std::filesystem;

constexpr milliseconds kHeartbeat{100};
constexpr milliseconds kLeaseTimeout{400};

// A `tuner executor` process; killed (SIGKILL) and reaped on destruction if still running.
class ExecutorProcess {
 public:
  ExecutorProcess(const std::string& endpoint, const std::string& id, int slots,
                  const fs::path& log_dir) {
    std::vector<std::string> args = {TUNER_PATH,
                                     "executor",
                                     "--connect",
                                     endpoint,
                                     "--id",
                                     id,
                                     "--slots",
                                     std::to_string(slots),
                                     "--heartbeat-ms",
                                     std::to_string(kHeartbeat.count()),
                                     "--timeout-ms",
                                     "1000",
                                     "--stop-grace-ms",
                                     "1000",
                                     "--log-dir",
                                     log_dir.string()};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int rc = posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ);
    if (rc != 0) throw std::runtime_error("cannot start " + args[0] + ": " + std::strerror(rc));
  }
  ~ExecutorProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  ExecutorProcess(const ExecutorProcess&) = delete;
  ExecutorProcess& operator=(const ExecutorProcess&) = delete;

  void signal(int sig) { ::kill(pid_, sig); }
  // Waits for the process to end; its wait status.
  int wait() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
};

class DistributedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Short: an ipc:// path must fit in a Unix socket address (107 bytes).
    static int test_number = 0;
    dir_ = fs::temp_directory_path() /
           ("tuner-dist-" + std::to_string(::getpid()) + "-" + std::to_string(test_number++));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "logs");
  }
  void TearDown() override {
    executors_.clear();
    coordinator_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // A study on SQLite with a define-and-run space, and a coordinator for it.
  void start(const SearchSpace& space, const std::vector<std::string>& argv,
             const std::string& metric, int n_trials, int max_retries = 3) {
    StudyOptions study_options;
    study_options.name = "distributed";
    study_options.sampler = std::make_shared<RandomSampler>();
    study_options.seed = 11;
    study_options.storage = std::make_shared<SqliteStorage>((dir_ / "study.db").string());
    study_options.space = space;
    study_.emplace(Study::create(study_options));

    nlohmann::json job = {{"kind", "command"}, {"argv", argv}, {"objective_metric", metric}};
    CoordinatorOptions options;
    options.endpoint = "ipc://" + (dir_ / "coordinator.sock").string();
    options.job_json = job.dump();
    options.n_trials = n_trials;
    options.heartbeat_interval = kHeartbeat;
    options.lease_timeout = kLeaseTimeout;
    options.max_retries = max_retries;
    options.log = [](const std::string& line) { std::cerr << line << "\n"; };
    coordinator_.emplace(*study_, options);
  }

  ExecutorProcess& add_executor(const std::string& id, int slots) {
    executors_.push_back(
        std::make_unique<ExecutorProcess>(coordinator_->endpoint(), id, slots, dir_ / "logs"));
    return *executors_.back();
  }

  // Turns the coordinator's loop until `done` holds (true) or `limit` passes (false).
  bool run_until(const std::function<bool()>& done, milliseconds limit = milliseconds(30'000)) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() > end) return false;
      coordinator_->poll_once(milliseconds(20));
    }
    return true;
  }

  std::vector<FrozenTrial> trials() { return study_->trials(); }

  fs::path dir_;
  std::optional<Study> study_;
  std::optional<Coordinator> coordinator_;
  std::vector<std::unique_ptr<ExecutorProcess>> executors_;
};

std::string source(const std::string& relative) {
  return std::string(TUNER_SOURCE_DIR) + "/" + relative;
}

// What examples/command/train_quadratic.py computes, in the same floating-point steps.
double quadratic_loss(double lr, int64_t steps) {
  double x = 0.0;
  double loss = (x - 3.0) * (x - 3.0);
  for (int64_t i = 0; i < steps; ++i) {
    x -= lr * 2.0 * (x - 3.0);
    loss = (x - 3.0) * (x - 3.0);
  }
  return loss;
}

TEST_F(DistributedTest, TwoExecutorsRunEveryTrialWithCorrectValues) {
  SearchSpace space;
  space.add_float("lr", 0.05, 0.45);
  space.add_int("steps", 3, 12);
  start(space,
        {"python3", source("examples/command/train_quadratic.py"), "--lr", "{lr}", "--steps",
         "{steps}"},
        "loss", /*n_trials=*/10);

  // A garbled message first: ERROR, and the coordinator carries on.
  ZmqContext context;
  DealerEndpoint rogue(context, coordinator_->endpoint(), {.routing_id = "rogue"});
  ASSERT_TRUE(rogue.send_frames({"not", "a", "message"}));
  std::optional<std::vector<std::string>> reply;
  ASSERT_TRUE(run_until([&] { return (reply = rogue.receive()).has_value(); }, milliseconds(5000)));
  ASSERT_TRUE(std::holds_alternative<ErrorMessage>(decode(*reply)));

  add_executor("exec-a", 2);
  add_executor("exec-b", 2);
  ASSERT_TRUE(run_until([&] { return coordinator_->done(); })) << "trials: " << trials().size();
  EXPECT_EQ(coordinator_->stats().executors, 2);

  std::vector<FrozenTrial> all = trials();
  ASSERT_EQ(all.size(), 10u);
  for (const FrozenTrial& t : all) {
    ASSERT_EQ(t.state, TrialState::kComplete) << "trial " << t.number;
    double lr = std::get<double>(t.params.at("lr"));
    int64_t steps = std::get<int64_t>(t.params.at("steps"));
    EXPECT_DOUBLE_EQ(t.value(), quadratic_loss(lr, steps)) << "trial " << t.number;
    // Every report was stored as an intermediate value.
    EXPECT_EQ(static_cast<int64_t>(t.intermediate_values.size()), steps) << "trial " << t.number;
  }
  EXPECT_EQ(coordinator_->stats().completed, 10);
  EXPECT_EQ(coordinator_->stats().errors_sent, 1);

  // SIGTERM: each executor says BYE and exits 0.
  for (auto& e : executors_) {
    e->signal(SIGTERM);
    int status = e->wait();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
  }
}

TEST_F(DistributedTest, KilledExecutorsTrialIsRunAgainWithTheSameParams) {
  SearchSpace space;
  space.add_float("x", 0.0, 1.0);
  const std::string marker = (dir_ / "first-run").string();
  start(space,
        {"python3", source("tests/distributed/trial_script.py"), "--x", "{x}", "--marker", marker,
         "--hang"},
        "loss", /*n_trials=*/1, /*max_retries=*/2);
  ExecutorProcess& a = add_executor("exec-a", 1);
  ASSERT_TRUE(run_until([&] { return coordinator_->stats().reports >= 2; }));
  a.signal(SIGKILL);
  a.wait();
  ASSERT_TRUE(run_until([&] { return coordinator_->stats().leases_expired == 1; }));
  add_executor("exec-b", 1);
  ASSERT_TRUE(run_until([&] { return coordinator_->done(); }));

  std::vector<FrozenTrial> all = trials();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].state, TrialState::kFail);
  EXPECT_NE(all[0].system_attrs.at("fail_reason").find("expired"), std::string::npos);
  EXPECT_EQ(all[1].state, TrialState::kComplete);
  EXPECT_EQ(all[1].params, all[0].params);
  EXPECT_EQ(all[1].system_attrs.at("retry_history"), "[0]");  // attempt 1
  double x = std::get<double>(all[1].params.at("x"));
  EXPECT_DOUBLE_EQ(all[1].value(), (x - 0.5) * (x - 0.5));
  EXPECT_EQ(coordinator_->stats().retries_started, 1);
}

TEST_F(DistributedTest, AfterTheRetryLimitTheTrialStaysFailed) {
  SearchSpace space;
  space.add_float("x", 0.0, 1.0);
  start(space, {"python3", source("tests/distributed/trial_script.py"), "--x", "{x}", "--hang"},
        "loss", /*n_trials=*/1, /*max_retries=*/1);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int64_t reports = coordinator_->stats().reports;
    ExecutorProcess& e = add_executor("exec-" + std::to_string(attempt), 1);
    ASSERT_TRUE(run_until([&] { return coordinator_->stats().reports >= reports + 2; }));
    e.signal(SIGKILL);
    e.wait();
    ASSERT_TRUE(run_until([&] { return coordinator_->stats().leases_expired == attempt + 1; }));
  }
  ASSERT_TRUE(run_until([&] { return coordinator_->done(); }, milliseconds(2000)));
  std::vector<FrozenTrial> all = trials();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].state, TrialState::kFail);
  EXPECT_EQ(all[1].state, TrialState::kFail);
  EXPECT_EQ(all[1].params, all[0].params);
  EXPECT_EQ(coordinator_->stats().retries_started, 1);
}

TEST_F(DistributedTest, CrashedCommandFailsWithItsExitCodeAndLogTail) {
  SearchSpace space;
  space.add_int("steps", 60, 70);
  // A learning rate this large diverges: the script prints inf, says why on stderr, exits 1.
  start(space,
        {"python3", source("examples/command/train_quadratic.py"), "--lr", "1e6", "--steps",
         "{steps}"},
        "loss", /*n_trials=*/1);
  add_executor("exec-a", 1);
  ASSERT_TRUE(run_until([&] { return coordinator_->done(); }));
  std::vector<FrozenTrial> all = trials();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, TrialState::kFail);
  EXPECT_NE(all[0].system_attrs.at("fail_reason").find("exited with code 1"), std::string::npos)
      << all[0].system_attrs.at("fail_reason");
  EXPECT_EQ(all[0].system_attrs.at("exit_code"), "1");
  EXPECT_NE(all[0].system_attrs.at("log_tail").find("is too large"), std::string::npos)
      << all[0].system_attrs.at("log_tail");
}

TEST_F(DistributedTest, AStaleResultAfterAPartitionIsRefusedAndNotCountedTwice) {
  SearchSpace space;
  space.add_float("x", 0.0, 1.0);
  const std::string marker = (dir_ / "first-run").string();
  start(space,
        {"python3", source("tests/distributed/trial_script.py"), "--x", "{x}", "--marker", marker,
         "--sleep", "0.8"},
        "loss", /*n_trials=*/1);
  ExecutorProcess& a = add_executor("exec-a", 1);
  ASSERT_TRUE(run_until([&] { return coordinator_->stats().reports >= 1; }));
  // A partition: exec-a is frozen past its lease while its job finishes.
  a.signal(SIGSTOP);
  add_executor("exec-b", 1);
  ASSERT_TRUE(run_until([&] { return coordinator_->stats().leases_expired == 1; }));
  ASSERT_TRUE(run_until([&] { return coordinator_->done(); }));
  std::this_thread::sleep_for(milliseconds(800));  // the first run has certainly ended now
  a.signal(SIGCONT);
  ASSERT_TRUE(run_until([&] { return coordinator_->stats().stale_outcomes_refused >= 1; }));

  std::vector<FrozenTrial> all = trials();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].state, TrialState::kFail);  // expired, and not rewritten by the stale outcome
  EXPECT_EQ(all[1].state, TrialState::kComplete);
  EXPECT_EQ(all[1].params, all[0].params);
  EXPECT_EQ(coordinator_->stats().completed, 1);
}

}  // namespace
}  // namespace tuner
