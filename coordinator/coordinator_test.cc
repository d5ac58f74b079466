#include "coordinator/coordinator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <thread>

#include "coordinator/coordinator_test_support.h"
#include "storage/fault_injection_storage.h"
#include "storage/in_memory_storage.h"
#include "trials/error.h"
#include "trials/system_attrs.h"

namespace tuner {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

constexpr char kJob[] =
    R"({"kind": "command", "argv": ["true", "{x}"], "objective_metric": "loss"})";
constexpr milliseconds kHeartbeat{100};
constexpr milliseconds kLeaseTimeout{400};

// Stops every trial whose reported value is above 10.
class StopAboveTen : public Scheduler {
 public:
  Decision on_report(const FrozenTrial& trial, int64_t step, const History&) const override {
    return trial.intermediate_values.at(step) > 10 ? Decision::kStop : Decision::kContinue;
  }
};

class CoordinatorTest : public testing::CoordinatorTestBase {
 protected:
  CoordinatorTest() : CoordinatorTestBase("tuner-coordinator-test") {}

  void start(int n_trials, int max_retries = 3, std::shared_ptr<Scheduler> scheduler = nullptr,
             const std::string& job = kJob, std::shared_ptr<Storage> storage = nullptr,
             std::shared_ptr<Sampler> sampler = nullptr) {
    StudyOptions study = study_options("distributed", 0.0, 1.0);
    study.scheduler = std::move(scheduler);
    if (storage) study.storage = std::move(storage);
    if (sampler) study.sampler = std::move(sampler);
    study_.emplace(Study::create(study));

    options_ = coordinator_options(job, n_trials, max_retries, kHeartbeat, kLeaseTimeout);
    options_.on_trial_finished = [this](const FrozenTrial& t) { finished_.push_back(t); };
    coordinator_.emplace(*study_, options_);
  }

  // The coordinator dies (its trials stay RUNNING in storage) and a new one starts on the study.
  void restart() {
    coordinator_.reset();
    coordinator_.emplace(*study_, options_);
  }

  // Lets the lease of `peer`'s trials expire while the executor stays alive.
  void expire_leases(DealerEndpoint& peer) {
    clock_->advance(kLeaseTimeout * 6 / 10);
    ASSERT_TRUE(peer.send(HeartbeatMessage{}));
    pump();
    clock_->advance(kLeaseTimeout * 6 / 10);
    pump();
  }

  bool logged(const std::string& text) const {
    return std::any_of(log_.begin(), log_.end(), [&](const std::string& line) {
      return line.find(text) != std::string::npos;
    });
  }

  std::unique_ptr<DealerEndpoint> connect(const std::string& id) {
    return std::make_unique<DealerEndpoint>(context_, coordinator_->endpoint(),
                                            ZmqSocketOptions{.routing_id = id});
  }

  // The next message for `peer` other than HEARTBEAT, turning the coordinator's loop meanwhile.
  // The coordinator's time is the fake clock's, so a wait in real time only absorbs a loaded
  // machine's delays: 20 s of turns, all of them spent only when the test fails.
  Message next(DealerEndpoint& peer, bool skip_heartbeats = true) {
    std::optional<Message> m = poll_for_message(*coordinator_, peer, 4000, skip_heartbeats);
    if (m) return *m;
    ADD_FAILURE() << "no message within 20 s";
    return ByeMessage{};
  }

  // Turns the loop until `done` holds (messages in flight arrived and were handled), for up to
  // 20 s of real time.
  void pump_until(const std::function<bool()>& done) {
    for (int i = 0; i < 4000 && !done(); ++i) {
      coordinator_->poll_once(milliseconds(0));
      std::this_thread::sleep_for(milliseconds(5));
    }
    EXPECT_TRUE(done()) << "not within 20 s";
  }

  // Turns the loop a few times (lets messages in flight arrive).
  void pump() {
    for (int i = 0; i < 10; ++i) {
      coordinator_->poll_once(milliseconds(0));
      std::this_thread::sleep_for(milliseconds(5));
    }
  }

  TrialMessage hello_and_get_trial(DealerEndpoint& peer, const std::string& id, int slots = 1) {
    EXPECT_TRUE(peer.send(HelloMessage{
        .executor_id = id, .hostname = "test", .pid = 1, .resources = {.cpu_slots = slots}}));
    EXPECT_TRUE(peer.send(ReadyMessage{.free_slots = slots}));
    Message m = next(peer);
    EXPECT_TRUE(std::holds_alternative<TrialMessage>(m)) << to_string(message_type(m));
    return std::holds_alternative<TrialMessage>(m) ? std::get<TrialMessage>(m) : TrialMessage{};
  }

  CoordinatorOptions options_;         // of the last start()
  std::vector<FrozenTrial> finished_;  // what on_trial_finished was called with
};

// Calls `each` at every report (a scheduler whose decisions take the coordinator's time).
class CallbackScheduler : public Scheduler {
 public:
  explicit CallbackScheduler(std::function<void()> each) : each_(std::move(each)) {}
  Decision on_report(const FrozenTrial&, int64_t, const History&) const override {
    each_();
    return Decision::kContinue;
  }

 private:
  std::function<void()> each_;
};

TEST_F(CoordinatorTest, LeasesTrialsStoresReportsAndCommitsResultsBeforeAck) {
  start(/*n_trials=*/2);
  auto peer = connect("e1#1");
  TrialMessage trial = hello_and_get_trial(*peer, "e1");
  EXPECT_EQ(trial.number, 0);
  EXPECT_EQ(trial.attempt, 0);
  EXPECT_EQ(trial.job_json, kJob);
  EXPECT_EQ(trial.heartbeat_interval_ms, kHeartbeat.count());
  ASSERT_TRUE(trial.params.contains("x"));
  // Define-and-run: the params are stored, RUNNING, before the executor runs anything.
  FrozenTrial stored = study_->storage().get_trial(trial.trial_id);
  EXPECT_EQ(stored.state, TrialState::kRunning);
  EXPECT_EQ(stored.params, trial.params);

  ASSERT_TRUE(peer->send(ReportMessage{
      .lease_id = trial.lease_id, .step = 1, .metrics = {{"loss", 0.5}, {"acc", 0.9}}}));
  Message decision = next(*peer);
  ASSERT_TRUE(std::holds_alternative<DecisionMessage>(decision));
  EXPECT_EQ(std::get<DecisionMessage>(decision).decision, JobDecision::kContinue);
  EXPECT_EQ(study_->storage().get_trial(trial.trial_id).intermediate_values.at(1), 0.5);

  ASSERT_TRUE(peer->send(
      ResultMessage{.lease_id = trial.lease_id, .metrics = {{"loss", 0.25}}, .values = {0.25}}));
  Message ack = next(*peer);
  ASSERT_TRUE(std::holds_alternative<AckMessage>(ack));
  EXPECT_TRUE(std::get<AckMessage>(ack).accepted);
  stored = study_->storage().get_trial(trial.trial_id);
  EXPECT_EQ(stored.state, TrialState::kComplete);
  EXPECT_EQ(stored.values, std::vector<double>{0.25});
  EXPECT_EQ(stored.user_attrs.at("loss"), "0.25");  // final metrics stay with the trial

  // A resent RESULT is ACKed again, not committed twice.
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = trial.lease_id, .values = {0.25}}));
  ack = next(*peer);
  EXPECT_TRUE(std::get<AckMessage>(ack).accepted);
  EXPECT_EQ(std::get<AckMessage>(ack).reason, "already committed");

  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 1}));
  TrialMessage second = std::get<TrialMessage>(next(*peer));
  EXPECT_EQ(second.number, 1);
  EXPECT_NE(second.lease_id, trial.lease_id);
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = second.lease_id, .metrics = {{"loss", 2.0}}}));
  EXPECT_TRUE(std::get<AckMessage>(next(*peer)).accepted);
  EXPECT_EQ(study_->storage().get_trial(second.trial_id).values, std::vector<double>{2.0});
  EXPECT_TRUE(coordinator_->done());
  EXPECT_EQ(coordinator_->stats().completed, 2);
}

// Group commit: a round's outcomes and new trials are committed together; when that commit
// fails, nothing of the round is ACKed or leased, and the resent outcome commits later.
TEST_F(CoordinatorTest, ARoundWhoseCommitFailsAcksAndLeasesNothing) {
  auto storage = std::make_shared<FaultInjectionStorage>(
      std::make_shared<SqliteStorage>((dir_ / "study.db").string()));
  start(/*n_trials=*/2, 3, nullptr, kJob, storage);
  auto peer = connect("e1#1");
  TrialMessage first = hello_and_get_trial(*peer, "e1");
  storage->inject(FaultInjectionStorage::Fault::kCommit);
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = first.lease_id, .values = {0.5}}));
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 1}));
  pump();
  while (auto frames = peer->receive()) {
    const Message m = decode(*frames);
    EXPECT_FALSE(std::holds_alternative<AckMessage>(m) || std::holds_alternative<TrialMessage>(m))
        << to_string(message_type(m));
  }
  EXPECT_EQ(study_->storage().get_trial(first.trial_id).state, TrialState::kRunning);
  EXPECT_EQ(study_->trials().size(), 1u);  // the trial asked in the failed round is not stored

  storage->heal();
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = first.lease_id, .values = {0.5}}));
  const Message ack = next(*peer);
  ASSERT_TRUE(std::holds_alternative<AckMessage>(ack)) << to_string(message_type(ack));
  EXPECT_TRUE(std::get<AckMessage>(ack).accepted);
  EXPECT_EQ(study_->storage().get_trial(first.trial_id).state, TrialState::kComplete);
  clock_->advance(kHeartbeat);  // asking waits a heartbeat interval after a failed commit
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 1}));
  const Message trial = next(*peer);
  ASSERT_TRUE(std::holds_alternative<TrialMessage>(trial)) << to_string(message_type(trial));
  EXPECT_EQ(std::get<TrialMessage>(trial).number, 1);
  EXPECT_EQ(study_->storage().get_trial(std::get<TrialMessage>(trial).trial_id).state,
            TrialState::kRunning);
  EXPECT_EQ(coordinator_->stats().trials_started, 2);
}

TEST_F(CoordinatorTest, HonoursTheExecutorsSlotsAndTheTrialBudget) {
  start(/*n_trials=*/6);
  auto peer = connect("e1#1");
  ASSERT_TRUE(peer->send(HelloMessage{.executor_id = "e1", .resources = {.cpu_slots = 2}}));
  // Its slots, and as many again to take ahead (ExecutorOptions::prefetch): 4 count.
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 9}));
  std::vector<TrialMessage> trials;
  for (int i = 0; i < 4; ++i) trials.push_back(std::get<TrialMessage>(next(*peer)));
  pump();
  EXPECT_EQ(coordinator_->stats().active_leases, 4);
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = trials[0].lease_id, .values = {1.0}}));
  EXPECT_TRUE(std::get<AckMessage>(next(*peer)).accepted);
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 2}));
  EXPECT_EQ(std::get<TrialMessage>(next(*peer)).number, 4);
  pump();
  EXPECT_EQ(coordinator_->stats().active_leases, 4);  // the second offer is over the limit
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = trials[1].lease_id, .values = {1.0}}));
  EXPECT_TRUE(std::get<AckMessage>(next(*peer)).accepted);
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 1}));
  EXPECT_EQ(std::get<TrialMessage>(next(*peer)).number, 5);
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 1}));
  pump();
  EXPECT_EQ(coordinator_->stats().trials_started, 6);  // the budget is spent
  EXPECT_FALSE(coordinator_->done());                  // four still run
}

// Regression: a READY counted before the TRIALs sent to its executor arrived offered their slots
// again, so that trials waited on a busy executor (41% of them at 200 executors x 8 slots) while
// others had free slots. The credit is what the executor's capacity leaves of the leases it
// holds, TRIALs in flight included.
TEST_F(CoordinatorTest, AReadyCountedBeforeItsTrialsArrivedGetsNoTrialBeyondTheFreeSlots) {
  start(/*n_trials=*/6);
  auto peer = connect("e1#1");
  ASSERT_TRUE(peer->send(HelloMessage{.executor_id = "e1", .resources = {.cpu_slots = 2}}));
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 2}));
  std::vector<TrialMessage> trials;
  for (int i = 0; i < 2; ++i) trials.push_back(std::get<TrialMessage>(next(*peer)));
  // Sent before those TRIALs arrived: both slots look free still.
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 2}));
  pump();
  EXPECT_EQ(coordinator_->stats().active_leases, 2);
  EXPECT_EQ(coordinator_->stats().trials_started, 2);
  // A trial ends: its slot, and only it, gets the next trial.
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = trials[0].lease_id, .values = {1.0}}));
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 1}));
  EXPECT_TRUE(std::get<AckMessage>(next(*peer)).accepted);
  EXPECT_EQ(std::get<TrialMessage>(next(*peer)).number, 2);
  pump();
  EXPECT_EQ(coordinator_->stats().active_leases, 2);
  EXPECT_EQ(coordinator_->stats().trials_started, 3);
}

// An executor sends a trial's files before its RESULT, so the READY offering that trial's slot
// can be read first: its credit was lost and the executor (asked for nothing more) never got
// another trial.
TEST_F(CoordinatorTest, AReadyReadBeforeTheResultOfTheTrialItFreedGetsATrialOnceTheResultIsRead) {
  start(/*n_trials=*/3);
  auto peer = connect("e1#1");
  TrialMessage trial = hello_and_get_trial(*peer, "e1");
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 1}));
  pump();
  EXPECT_EQ(coordinator_->stats().trials_started, 1);  // its slot is still held
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = trial.lease_id, .values = {1.0}}));
  EXPECT_TRUE(std::get<AckMessage>(next(*peer)).accepted);
  EXPECT_EQ(std::get<TrialMessage>(next(*peer)).number, 1);
}

TEST_F(CoordinatorTest, ReportsAskTheSchedulerAndStoppedTrialsArePruned) {
  start(/*n_trials=*/1, 3, std::make_shared<StopAboveTen>());
  auto peer = connect("e1#1");
  TrialMessage trial = hello_and_get_trial(*peer, "e1");
  ASSERT_TRUE(peer->send(
      ReportMessage{.lease_id = trial.lease_id, .step = 1, .metrics = {{"loss", 50.0}}}));
  EXPECT_EQ(std::get<DecisionMessage>(next(*peer)).decision, JobDecision::kStop);
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = trial.lease_id, .metrics = {{"loss", 50.0}}}));
  EXPECT_TRUE(std::get<AckMessage>(next(*peer)).accepted);
  FrozenTrial stored = study_->storage().get_trial(trial.trial_id);
  EXPECT_EQ(stored.state, TrialState::kPruned);
  EXPECT_EQ(coordinator_->stats().pruned, 1);
}

// A job told to stop may report again before the stop reaches it (a loaded host, a step that
// ends as the decision travels): that report is not stored and cannot take the stop back.
TEST_F(CoordinatorTest, AReportThatArrivesAfterTheStopIsNotStoredAndKeepsTheTrialPruned) {
  start(/*n_trials=*/1, 3, std::make_shared<StopAboveTen>());
  auto peer = connect("e1#1");
  TrialMessage trial = hello_and_get_trial(*peer, "e1");
  ASSERT_TRUE(peer->send(
      ReportMessage{.lease_id = trial.lease_id, .step = 1, .metrics = {{"loss", 50.0}}}));
  EXPECT_EQ(std::get<DecisionMessage>(next(*peer)).decision, JobDecision::kStop);
  ASSERT_TRUE(
      peer->send(ReportMessage{.lease_id = trial.lease_id, .step = 2, .metrics = {{"loss", 5.0}}}));
  EXPECT_EQ(std::get<DecisionMessage>(next(*peer)).decision, JobDecision::kStop);
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = trial.lease_id, .metrics = {{"loss", 5.0}}}));
  EXPECT_TRUE(std::get<AckMessage>(next(*peer)).accepted);
  FrozenTrial stored = study_->storage().get_trial(trial.trial_id);
  EXPECT_EQ(stored.state, TrialState::kPruned);
  EXPECT_EQ(stored.intermediate_values, (std::map<int64_t, double>{{1, 50.0}}));
  EXPECT_EQ(stored.system_attrs.at("tuner:stopped_at_step"), "1");
}

// A sweep's constraints bound the job's final metrics; the coordinator stores
// the trial's constraint values from its RESULT, and fails a trial whose constraint metric is
// missing or not finite, naming it.
TEST_F(CoordinatorTest, ConstraintMetricsBecomeTheTrialsConstraintValues) {
  start(/*n_trials=*/4);
  coordinator_.reset();
  options_.constraints = {{"latency_ms", MetricConstraint::Bound::kMax, 2.0},
                          {"acc", MetricConstraint::Bound::kMin, 0.75}};
  coordinator_.emplace(*study_, options_);
  auto peer = connect("e1#1");
  TrialMessage trial = hello_and_get_trial(*peer, "e1");
  auto result = [&](const TrialMessage& t, Metrics metrics) {
    EXPECT_TRUE(peer->send(ResultMessage{.lease_id = t.lease_id, .metrics = std::move(metrics)}));
    EXPECT_TRUE(std::get<AckMessage>(next(*peer)).accepted);
    EXPECT_TRUE(peer->send(ReadyMessage{.free_slots = 1}));
    return study_->storage().get_trial(t.trial_id);
  };
  FrozenTrial stored = result(trial, {{"loss", 0.5}, {"latency_ms", 2.5}, {"acc", 1.0}});
  EXPECT_EQ(stored.state, TrialState::kComplete);
  EXPECT_EQ(stored.system_attrs.at("constraints"), "[0.5,-0.25]");  // infeasible: too slow

  trial = std::get<TrialMessage>(next(*peer));
  stored = result(trial, {{"loss", 0.5}, {"latency_ms", 1.0}});
  EXPECT_EQ(stored.state, TrialState::kFail);
  EXPECT_EQ(stored.system_attrs.at("fail_reason"),
            "\"RESULT has no value for the constraint metric 'acc' (acc >= 0.75)\"");

  trial = std::get<TrialMessage>(next(*peer));
  stored = result(trial, {{"loss", 0.5}, {"latency_ms", std::nan("")}, {"acc", 1.0}});
  EXPECT_EQ(stored.state, TrialState::kFail);
  EXPECT_EQ(stored.system_attrs.at("fail_reason"),
            "\"the constraint metric 'latency_ms' (latency_ms <= 2) is nan; a constraint needs a "
            "finite value\"");

  trial = std::get<TrialMessage>(next(*peer));
  stored = result(trial, {{"loss", 0.75}, {"latency_ms", 1.5}, {"acc", 0.75}});
  EXPECT_EQ(stored.state, TrialState::kComplete);
  EXPECT_EQ(stored.system_attrs.at("constraints"), "[-0.5,0.0]");  // feasible
  EXPECT_EQ(study_->best_trial().number, 3);  // trial 0's 0.5 is better, but infeasible
}

TEST_F(CoordinatorTest, FailKeepsTheReasonExitCodeAndLogTail) {
  start(/*n_trials=*/1);
  auto peer = connect("e1#1");
  TrialMessage trial = hello_and_get_trial(*peer, "e1");
  ASSERT_TRUE(peer->send(FailMessage{.lease_id = trial.lease_id,
                                     .reason = "exited with code 3",
                                     .exit_code = 3,
                                     .log_tail = "Traceback...\nboom\n"}));
  EXPECT_TRUE(std::get<AckMessage>(next(*peer)).accepted);
  FrozenTrial stored = study_->storage().get_trial(trial.trial_id);
  EXPECT_EQ(stored.state, TrialState::kFail);
  EXPECT_EQ(stored.system_attrs.at("fail_reason"), "\"exited with code 3\"");
  EXPECT_EQ(stored.system_attrs.at("exit_code"), "3");
  EXPECT_EQ(stored.system_attrs.at("log_tail"), "\"Traceback...\\nboom\\n\"");
  EXPECT_TRUE(coordinator_->done());
}

TEST_F(CoordinatorTest, ExpiredLeaseFailsTheTrialAndRerunsItUpToTheRetryLimit) {
  start(/*n_trials=*/1, /*max_retries=*/1);
  auto peer = connect("e1#1");
  TrialMessage first = hello_and_get_trial(*peer, "e1");

  // The executor stays alive (its heartbeats arrive) but no longer holds the lease.
  clock_->advance(kLeaseTimeout * 6 / 10);
  ASSERT_TRUE(peer->send(HeartbeatMessage{}));
  pump();
  clock_->advance(kLeaseTimeout * 6 / 10);
  pump();
  EXPECT_EQ(coordinator_->stats().leases_expired, 1);
  FrozenTrial failed = study_->storage().get_trial(first.trial_id);
  EXPECT_EQ(failed.state, TrialState::kFail);
  EXPECT_NE(failed.system_attrs.at("fail_reason").find("expired"), std::string::npos);

  // The re-run: a new trial with the same params, attempt 1.
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 1}));
  TrialMessage second = std::get<TrialMessage>(next(*peer));
  EXPECT_EQ(second.attempt, 1);
  EXPECT_EQ(second.params, first.params);
  EXPECT_NE(second.trial_id, first.trial_id);
  EXPECT_NE(second.lease_id, first.lease_id);
  FrozenTrial retry = study_->storage().get_trial(second.trial_id);
  EXPECT_EQ(retry.system_attrs.at("failed_trial"), std::to_string(first.number));
  EXPECT_EQ(retry.system_attrs.at("retry_history"), "[" + std::to_string(first.number) + "]");

  // The first lease's RESULT arrives late: refused, nothing counted twice.
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = first.lease_id, .values = {0.5}}));
  AckMessage refused = std::get<AckMessage>(next(*peer));
  EXPECT_FALSE(refused.accepted);
  EXPECT_NE(refused.reason.find("expired"), std::string::npos) << refused.reason;
  EXPECT_EQ(study_->storage().get_trial(first.trial_id).state, TrialState::kFail);
  EXPECT_EQ(coordinator_->stats().stale_outcomes_refused, 1);

  // The coordinator's heartbeat no longer lists the expired lease, but lists the live one.
  clock_->advance(kHeartbeat);
  HeartbeatMessage heartbeat = std::get<HeartbeatMessage>(next(*peer, false));
  EXPECT_EQ(heartbeat.lease_ids, std::vector<uint64_t>{second.lease_id});

  // The re-run's lease expires too: the retry limit (1) is reached, the trial is FAIL for good.
  clock_->advance(kLeaseTimeout * 6 / 10);
  ASSERT_TRUE(peer->send(HeartbeatMessage{}));
  pump();
  clock_->advance(kLeaseTimeout * 6 / 10);
  pump();
  EXPECT_EQ(study_->storage().get_trial(second.trial_id).state, TrialState::kFail);
  EXPECT_TRUE(coordinator_->done());
  EXPECT_EQ(study_->trials().size(), 2u);
}

TEST_F(CoordinatorTest, HeartbeatsKeepALeaseAndBYEExpiresIt) {
  start(/*n_trials=*/1, /*max_retries=*/0);
  auto peer = connect("e1#1");
  TrialMessage trial = hello_and_get_trial(*peer, "e1");
  for (int i = 0; i < 5; ++i) {
    clock_->advance(kLeaseTimeout / 2);
    ASSERT_TRUE(peer->send(HeartbeatMessage{.lease_ids = {trial.lease_id}}));
    pump();
  }
  EXPECT_EQ(coordinator_->stats().leases_expired, 0);
  ASSERT_TRUE(peer->send(ByeMessage{}));
  pump();
  EXPECT_EQ(coordinator_->stats().leases_expired, 1);
  EXPECT_EQ(coordinator_->stats().executors, 0);
  EXPECT_EQ(study_->storage().get_trial(trial.trial_id).state, TrialState::kFail);
}

TEST_F(CoordinatorTest, ExecutorsSaysWhichExecutorHoldsLeasesAndSinceWhenEachHoldsNone) {
  start(/*n_trials=*/1);
  EXPECT_TRUE(coordinator_->executors().empty());
  auto busy = connect("busy#1");
  const TrialMessage trial = hello_and_get_trial(*busy, "busy");
  const Clock::SteadyTime idle_from = clock_->steady_now();
  auto idle = connect("idle#1");
  ASSERT_TRUE(idle->send(
      HelloMessage{.executor_id = "idle",
                   .hostname = "node2",
                   .pid = 2,
                   .resources = {.cpu_slots = 2, .gpus = {GpuInfo{.index = 0, .name = "G"}}}}));
  ASSERT_TRUE(idle->send(ReadyMessage{.free_slots = 2}));  // the budget is spent: no trial
  pump_until([&] { return coordinator_->executors().size() == 2; });
  std::vector<ExecutorInfo> executors = coordinator_->executors();
  ASSERT_EQ(executors.size(), 2u);
  EXPECT_EQ(executors[0].executor_id, "busy");
  EXPECT_EQ(executors[0].hostname, "test");
  EXPECT_EQ(executors[0].resources.cpu_slots, 1);
  EXPECT_EQ(executors[0].leases, 1);
  EXPECT_FALSE(executors[0].idle_since);
  EXPECT_EQ(executors[1].executor_id, "idle");
  EXPECT_EQ(executors[1].hostname, "node2");
  EXPECT_EQ(executors[1].resources.cpu_slots, 2);
  ASSERT_EQ(executors[1].resources.gpus.size(), 1u);
  EXPECT_EQ(executors[1].resources.gpus[0].name, "G");
  EXPECT_EQ(executors[1].leases, 0);
  EXPECT_EQ(executors[1].idle_since, idle_from);

  // Time passes: the idle one's start stays; the busy one is idle from its RESULT's commit.
  clock_->advance(kHeartbeat);
  ASSERT_TRUE(idle->send(HeartbeatMessage{}));
  ASSERT_TRUE(busy->send(ResultMessage{.lease_id = trial.lease_id, .values = {0.5}}));
  EXPECT_TRUE(std::get<AckMessage>(next(*busy)).accepted);
  executors = coordinator_->executors();
  ASSERT_EQ(executors.size(), 2u);
  EXPECT_EQ(executors[0].leases, 0);
  EXPECT_EQ(executors[0].idle_since, idle_from + kHeartbeat);
  EXPECT_EQ(executors[1].idle_since, idle_from);

  ASSERT_TRUE(idle->send(ByeMessage{}));
  pump_until([&] { return coordinator_->executors().size() == 1; });
  EXPECT_EQ(coordinator_->executors().at(0).executor_id, "busy");
}

TEST_F(CoordinatorTest, ABYEOfAStoppedExecutorRerunsItsPreemptedTrialAtOnceWithoutARetry) {
  const std::string job = R"({"kind": "command", "argv": ["true", "{x}"],
      "artifacts_dir": "/shared/artifacts", "objective_metric": "loss"})";
  start(/*n_trials=*/1, /*max_retries=*/0, nullptr, job);
  auto stopped = connect("e1#1");
  TrialMessage first = hello_and_get_trial(*stopped, "e1");
  const std::string path =
      "/shared/artifacts/trial-" + std::to_string(first.number) + "/resume.ckpt";
  EXPECT_EQ(first.checkpoint_path, path);
  ASSERT_TRUE(
      stopped->send(ByeMessage{.preempted = {{.lease_id = first.lease_id, .checkpoint = true}}}));
  pump_until([&] { return coordinator_->stats().executors == 0; });
  EXPECT_EQ(coordinator_->stats().leases_expired, 0);
  const FrozenTrial preempted = study_->storage().get_trial(first.trial_id);
  EXPECT_EQ(preempted.state, TrialState::kFail);
  EXPECT_EQ(preempted.system_attrs.at(kFailReasonAttr),
            "\"preempted: its executor e1 on test was stopped (checkpoint saved); re-run without "
            "a retry counted\"");
  EXPECT_TRUE(logged("preempted: its executor e1 on test was stopped"));
  // The budget's one new trial has started; the re-run waits for a slot, and a launcher sees it
  // (a sweep whose executors Slurm had preempted waited for ever with no job to run it).
  EXPECT_EQ(coordinator_->stats().trials_started, 1);
  EXPECT_EQ(coordinator_->stats().waiting, 1);

  // Another executor (a requeued one) takes the re-run, from the attempt's checkpoint, though
  // max_retries is 0; it is not a new trial of the budget.
  auto requeued = connect("e2#1");
  TrialMessage rerun = hello_and_get_trial(*requeued, "e2");
  EXPECT_EQ(coordinator_->stats().waiting, 0);
  EXPECT_NE(rerun.number, first.number);
  EXPECT_EQ(rerun.attempt, 1);
  EXPECT_EQ(rerun.checkpoint_path, path);
  ASSERT_TRUE(requeued->send(ResultMessage{.lease_id = rerun.lease_id, .metrics = {{"loss", 1}}}));
  EXPECT_TRUE(std::get<AckMessage>(next(*requeued)).accepted);
  pump();
  EXPECT_TRUE(coordinator_->done());
  EXPECT_EQ(coordinator_->stats().trials_started, 1);
  EXPECT_EQ(study_->trials({.states = std::vector{TrialState::kComplete}}).size(), 1u);
}

TEST_F(CoordinatorTest, ABYEWithoutThePreemptedMarkStillCountsTheRetry) {
  start(/*n_trials=*/1, /*max_retries=*/0);
  auto peer = connect("e1#1");
  TrialMessage trial = hello_and_get_trial(*peer, "e1");
  // Another lease is listed: only the executor's own listed leases are preempted.
  ASSERT_TRUE(peer->send(ByeMessage{.preempted = {{.lease_id = trial.lease_id + 100}}}));
  pump_until([&] { return coordinator_->stats().leases_expired == 1; });
  EXPECT_THAT(study_->storage().get_trial(trial.trial_id).system_attrs.at(kFailReasonAttr),
              HasSubstr("expired: its executor e1 left (BYE)"));
  EXPECT_TRUE(coordinator_->done());  // max_retries 0: not run again
  EXPECT_EQ(study_->trials().size(), 1u);
}

TEST_F(CoordinatorTest, AReconnectedExecutorKeepsItsLeases) {
  start(/*n_trials=*/1);
  auto old_connection = connect("e1#1");
  TrialMessage trial = hello_and_get_trial(*old_connection, "e1");
  old_connection.reset();
  auto peer = connect("e1#2");
  ASSERT_TRUE(peer->send(HelloMessage{
      .executor_id = "e1",
      .hostname = "test",
      .pid = 1,
      .resources = {.cpu_slots = 1},
      .leases = {HeldLease{
          .lease_id = trial.lease_id, .study_name = "distributed", .trial_id = trial.trial_id}}}));
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = trial.lease_id, .values = {0.125}}));
  EXPECT_TRUE(std::get<AckMessage>(next(*peer)).accepted);
  EXPECT_EQ(study_->storage().get_trial(trial.trial_id).values, std::vector<double>{0.125});
  EXPECT_EQ(coordinator_->stats().executors, 1);
}

// Regression: a TRIAL sent to a connection its executor had already left (its HELLOs of several
// reconnects handled in turn after a stall) never arrived, and the lease expired, costing a retry.
TEST_F(CoordinatorTest, ALeaseAReconnectedExecutorDoesNotListGetsItsTrialAgain) {
  start(/*n_trials=*/1);
  auto left = connect("e1#1");
  TrialMessage trial = hello_and_get_trial(*left, "e1");  // as if it had never arrived
  left.reset();
  auto peer = connect("e1#2");
  ASSERT_TRUE(peer->send(HelloMessage{
      .executor_id = "e1", .hostname = "test", .pid = 1, .resources = {.cpu_slots = 1}}));
  Message again = next(*peer);
  ASSERT_TRUE(std::holds_alternative<TrialMessage>(again)) << to_string(message_type(again));
  EXPECT_EQ(std::get<TrialMessage>(again).lease_id, trial.lease_id);
  EXPECT_EQ(std::get<TrialMessage>(again).params, trial.params);
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = trial.lease_id, .values = {0.5}}));
  EXPECT_TRUE(std::get<AckMessage>(next(*peer)).accepted);
  EXPECT_EQ(coordinator_->stats().leases_expired, 0);
}

// Regression: a coordinator stopped (SIGSTOP) while it handled messages, not while it waited for
// them, expired every lease when it went on: the time it did not run was blamed on the executors.
TEST_F(CoordinatorTest, ALoopThatDidNotTurnForLongerThanALeaseTimeoutExpiresNoLease) {
  start(/*n_trials=*/1);
  auto peer = connect("e1#1");
  TrialMessage trial = hello_and_get_trial(*peer, "e1");
  pump();
  clock_->advance(kLeaseTimeout * 3);  // between two turns of the loop
  pump();
  EXPECT_TRUE(logged("this coordinator did not run for 1200 ms"));
  ASSERT_TRUE(peer->send(HeartbeatMessage{.lease_ids = {trial.lease_id}}));
  pump();
  EXPECT_EQ(coordinator_->stats().leases_expired, 0);

  // A lease that then goes unrenewed for a lease timeout, the loop turning, still expires.
  expire_leases(*peer);
  EXPECT_EQ(coordinator_->stats().leases_expired, 1);
}

// Regression: two executors started with the same --id took turns silently, each HELLO
// dropping the other's registration.
TEST_F(CoordinatorTest, ASecondLiveExecutorWithTheSameIdIsRefused) {
  start(/*n_trials=*/1);
  auto first = connect("e1#1");
  TrialMessage trial = hello_and_get_trial(*first, "e1");
  auto second = connect("e1#2");
  ASSERT_TRUE(second->send(HelloMessage{
      .executor_id = "e1", .hostname = "other-host", .pid = 4242, .resources = {.cpu_slots = 1}}));
  const Message refusal = next(*second);
  ASSERT_TRUE(std::holds_alternative<ErrorMessage>(refusal)) << to_string(message_type(refusal));
  EXPECT_TRUE(std::get<ErrorMessage>(refusal).refused);
  EXPECT_THAT(std::get<ErrorMessage>(refusal).message,
              HasSubstr("executor id 'e1' is in use by a live executor"));
  // The first keeps its registration and its lease.
  ASSERT_TRUE(first->send(ResultMessage{.lease_id = trial.lease_id, .values = {0.5}}));
  EXPECT_TRUE(std::get<AckMessage>(next(*first)).accepted);
  EXPECT_EQ(coordinator_->stats().executors, 1);
}

TEST_F(CoordinatorTest, ARestartedCoordinatorTakesBackTrialsStillRunningAndRerunsTheRest) {
  start(/*n_trials=*/2);
  auto peer = connect("e1#1");
  TrialMessage kept = hello_and_get_trial(*peer, "e1", /*slots=*/2);
  TrialMessage lost = std::get<TrialMessage>(next(*peer));
  peer.reset();

  // The coordinator dies (its trials stay RUNNING) and a new one starts on the same study, with
  // no new trials to start (both count against the budget already).
  coordinator_.reset();
  options_.n_trials = 0;
  coordinator_.emplace(*study_, options_);
  EXPECT_FALSE(coordinator_->done());

  // The executor reconnects still running `kept`; `lost` went with its executor.
  peer = connect("e1#2");
  ASSERT_TRUE(peer->send(HelloMessage{
      .executor_id = "e1",
      .resources = {.cpu_slots = 2},
      .leases = {
          {.lease_id = kept.lease_id, .study_name = "distributed", .trial_id = kept.trial_id},
          {.lease_id = 12345, .study_name = "another study", .trial_id = lost.trial_id}}}));
  pump_until([&] { return coordinator_->stats().reattached == 1; });
  clock_->advance(kHeartbeat);
  HeartbeatMessage heartbeat = std::get<HeartbeatMessage>(next(*peer, false));
  EXPECT_EQ(heartbeat.lease_ids, std::vector<uint64_t>{kept.lease_id});
  ASSERT_TRUE(
      peer->send(ReportMessage{.lease_id = kept.lease_id, .step = 3, .metrics = {{"loss", 0.5}}}));
  EXPECT_EQ(std::get<DecisionMessage>(next(*peer)).decision, JobDecision::kContinue);
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = kept.lease_id, .values = {0.25}}));
  EXPECT_TRUE(std::get<AckMessage>(next(*peer)).accepted);
  const FrozenTrial finished = study_->storage().get_trial(kept.trial_id);
  EXPECT_EQ(finished.state, TrialState::kComplete);
  EXPECT_EQ(finished.values, std::vector<double>{0.25});
  EXPECT_EQ(finished.intermediate_values.at(3), 0.5);

  // Nobody claims `lost` within 2 x lease_timeout: FAIL, and re-run with the same params.
  for (int i = 0; i < 5; ++i) {
    clock_->advance(kLeaseTimeout / 2);
    ASSERT_TRUE(peer->send(HeartbeatMessage{}));
    pump();
  }
  const FrozenTrial failed = study_->storage().get_trial(lost.trial_id);
  EXPECT_EQ(failed.state, TrialState::kFail);
  EXPECT_NE(failed.system_attrs.at("fail_reason").find("earlier coordinator"), std::string::npos)
      << failed.system_attrs.at("fail_reason");
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 2}));
  TrialMessage rerun = std::get<TrialMessage>(next(*peer));
  EXPECT_EQ(rerun.params, lost.params);
  EXPECT_EQ(rerun.attempt, 1);
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = rerun.lease_id, .values = {0.75}}));
  EXPECT_TRUE(std::get<AckMessage>(next(*peer)).accepted);
  EXPECT_TRUE(coordinator_->done());
  EXPECT_EQ(study_->trials().size(), 3u);
}

TEST_F(CoordinatorTest, StudiesShareTheExecutorsFairlyAndPauseAndDrainOnTheirOwn) {
  auto make_study = [&](const std::string& name) {
    return Study::create(study_options(name, 0.0, 1.0));
  };
  Coordinator serve(service_options("serve.sock", kHeartbeat, kLeaseTimeout));
  EXPECT_TRUE(serve.done());  // no studies
  const StudyRunId a = serve.add_study(make_study("a"), {.job_json = kJob, .n_trials = 3});
  const StudyRunId b = serve.add_study(make_study("b"), {.job_json = kJob, .n_trials = 3});
  EXPECT_THROW(serve.add_study(make_study("a"), {.job_json = kJob}), Error);

  auto peer = std::make_unique<DealerEndpoint>(context_, serve.endpoint(),
                                               ZmqSocketOptions{.routing_id = "e1#1"});
  auto next_trial = [&] {
    for (int i = 0; i < 400; ++i) {
      serve.poll_once(milliseconds(0));
      while (auto frames = peer->receive()) {
        Message m = decode(*frames);
        if (auto* t = std::get_if<TrialMessage>(&m)) return *t;
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
    ADD_FAILURE() << "no TRIAL within 2 s";
    return TrialMessage{};
  };
  auto finish = [&](const TrialMessage& t) {
    ASSERT_TRUE(peer->send(ResultMessage{.lease_id = t.lease_id, .values = {0.5}}));
  };
  ASSERT_TRUE(peer->send(HelloMessage{.executor_id = "e1", .resources = {.cpu_slots = 2}}));
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 2}));
  // Two free slots, two studies: one trial each.
  TrialMessage first = next_trial(), second = next_trial();
  EXPECT_NE(first.study_name, second.study_name);

  // Paused, study a gets no more slots; b gets both.
  serve.pause(a);
  TrialMessage of_a = first.study_name == "a" ? first : second;
  TrialMessage of_b = first.study_name == "a" ? second : first;
  finish(of_a);
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 1}));
  EXPECT_EQ(next_trial().study_name, "b");
  EXPECT_EQ(serve.stats(a).active_leases, 0);
  EXPECT_EQ(serve.stats(b).active_leases, 2);

  // Unpaused, a gets the next free slot; drained, b ends when its leases do.
  serve.unpause(a);
  serve.drain(b);
  finish(of_b);
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 1}));
  TrialMessage next = next_trial();
  EXPECT_EQ(next.study_name, "a");
  EXPECT_FALSE(serve.done(b));
  EXPECT_THROW(serve.remove_study(b), Error);
  EXPECT_EQ(serve.stats(a).completed, 1);
  EXPECT_EQ(serve.stats().completed, 2);
  EXPECT_EQ(serve.stats(b).trials_started, 2);
}

TEST_F(CoordinatorTest, GarbledAndUnexpectedMessagesGetErrorsAndTheLoopGoesOn) {
  start(/*n_trials=*/1);
  auto peer = connect("e1#1");
  auto expect_error = [&](const std::vector<std::string>& frames, const std::string& needle) {
    ASSERT_TRUE(peer->send_frames(frames));
    Message m = next(*peer);
    ASSERT_TRUE(std::holds_alternative<ErrorMessage>(m)) << to_string(message_type(m));
    EXPECT_NE(std::get<ErrorMessage>(m).message.find(needle), std::string::npos)
        << std::get<ErrorMessage>(m).message;
  };
  expect_error({"garbage"}, "cannot decode");
  expect_error({std::string("XXXX\0\1\0\1", 8), "{}"}, "cannot decode");
  expect_error({std::string("TUNR\0\1\0\x63", 8), "{}"}, "cannot decode");  // type 99
  expect_error({std::string("TUNR\0\x09\0\1", 8), "{}"}, "cannot decode");  // version 9
  expect_error({std::string("TUNR\0\1\0\4", 8), "{\"lease_id\": \"x\"}"}, "cannot decode");
  std::vector<std::string> ready = encode(ReadyMessage{.free_slots = 1});
  expect_error(ready, "say HELLO first");
  // Regression: a restart's normal "say HELLO" was logged as an error on both sides, once per
  // heartbeat: it is marked (say_hello) and logged once per connection.
  clock_->advance(kHeartbeat);
  ASSERT_TRUE(peer->send_frames(ready));
  const Message again = next(*peer);
  ASSERT_TRUE(std::holds_alternative<ErrorMessage>(again));
  EXPECT_TRUE(std::get<ErrorMessage>(again).say_hello);
  EXPECT_EQ(std::count_if(log_.begin(), log_.end(),
                          [](const std::string& l) { return l.find("to say HELLO") != l.npos; }),
            1);
  ASSERT_TRUE(peer->send(HelloMessage{.executor_id = "e1", .resources = {.cpu_slots = 1}}));
  expect_error(encode(AckMessage{.lease_id = 1}), "unexpected ACK");
  EXPECT_EQ(coordinator_->stats().errors_sent, 8);
  // Still serving.
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 1}));
  EXPECT_TRUE(std::holds_alternative<TrialMessage>(next(*peer)));
}

// An executor on another host sends a finished trial's files before its outcome: its log lands in
// the coordinator's log dir, its artifacts in the job's artifacts_dir/trial-N, and a lease that is
// not current gets no more files written.
TEST_F(CoordinatorTest, AnExecutorsTrialFilesLandWhereALocalExecutorWritesThem) {
  const std::filesystem::path artifacts = dir_ / "artifacts";
  const std::string job = R"({"kind": "command", "argv": ["true"], "objective_metric": "loss", )"
                          R"("artifacts_dir": ")" +
                          artifacts.string() + "\"}";
  study_.emplace(Study::create(study_options("distributed", 0.0, 1.0)));
  options_ = coordinator_options(job, 1, 3, kHeartbeat, kLeaseTimeout);
  options_.log_dir = (dir_ / "logs").string();
  coordinator_.emplace(*study_, options_);
  auto peer = connect("e1#1");
  const TrialMessage trial = hello_and_get_trial(*peer, "e1");
  const uint64_t lease = trial.lease_id;
  auto ack_of = [&](const FileChunkMessage& chunk) {
    EXPECT_TRUE(peer->send(chunk));
    Message m = next(*peer);
    EXPECT_TRUE(std::holds_alternative<FileAckMessage>(m)) << to_string(message_type(m));
    return std::holds_alternative<FileAckMessage>(m) ? std::get<FileAckMessage>(m)
                                                     : FileAckMessage{};
  };

  ASSERT_TRUE(peer->send(FilesLeftMessage{
      .lease_id = lease,
      .hostname = "node7",
      .limit_bytes = 1024,
      .files = {{.path = "/tmp/f/distributed/trial-0/model.ckpt", .size = 4096}}}));
  pump();
  EXPECT_TRUE(
      logged("1 file(s) of 4 KiB in all stay on host node7, past the limit of 1 KiB per "
             "trial (tuner executor --max-files-mb): "
             "/tmp/f/distributed/trial-0/model.ckpt (4 KiB)"));
  EXPECT_TRUE(ack_of({.lease_id = lease, .kind = TrialFileKind::kLog, .size = 4, .data = "log\n"})
                  .accepted);
  const FileChunkMessage first{.lease_id = lease,
                               .kind = TrialFileKind::kArtifact,
                               .path = "events.out.tfevents.1.node7",
                               .size = 6,
                               .data = "abc"};
  const FileAckMessage ack = ack_of(first);
  EXPECT_TRUE(ack.accepted);
  EXPECT_EQ(ack.path, first.path);
  FileChunkMessage second = first;
  second.offset = 3;
  second.data = "def";
  EXPECT_TRUE(ack_of(second).accepted);

  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = lease, .metrics = {{"loss", 0.5}}}));
  ASSERT_TRUE(std::get<AckMessage>(next(*peer)).accepted);
  auto read = [](const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(read(dir_ / "logs" / ("trial-0-lease-" + std::to_string(lease) + ".log")), "log\n");
  EXPECT_EQ(read(artifacts / "trial-0" / "events.out.tfevents.1.node7"), "abcdef");

  // The lease has ended: its files are refused for good.
  FileChunkMessage late = first;
  late.path = "late.txt";
  const FileAckMessage refused = ack_of(late);
  EXPECT_FALSE(refused.accepted);
  EXPECT_TRUE(refused.lease_ended);
  EXPECT_FALSE(std::filesystem::exists(artifacts / "trial-0" / "late.txt"));
  EXPECT_TRUE(logged("dropped the files executor e1 sends for lease " + std::to_string(lease)));

  // A path that could leave the trial's folder does not decode: ERROR, nothing written.
  const std::string body = R"({"lease_id":)" + std::to_string(lease) +
                           R"(,"kind":"artifact","path":"../../escape","size":1,"offset":0,)"
                           R"("data":"eA=="})";
  ASSERT_TRUE(peer->send_frames({std::string("TUNR\0\1\0\x0e", 8), body}));
  const Message error = next(*peer);
  ASSERT_TRUE(std::holds_alternative<ErrorMessage>(error));
  EXPECT_THAT(std::get<ErrorMessage>(error).message,
              HasSubstr("FILE.path: '../../escape' has a component that is empty, '.' or '..'"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "escape"));
}

TEST_F(CoordinatorTest, OptionsAreChecked) {
  start(1);
  StudyOptions study_options;
  study_options.storage = std::make_shared<InMemoryStorage>();
  Study study = Study::create(study_options);
  CoordinatorOptions options;
  options.endpoint = "ipc://" + (dir_ / "other.sock").string();
  options.job_json = R"({"kind": "command", "argv": ["a", 1], "objective_metric": "m"})";
  try {
    Coordinator c(study, options);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("job.argv[1]"), std::string::npos) << e.what();
  }
  options.job_json = kJob;
  options.lease_timeout = options.heartbeat_interval;
  EXPECT_THROW(Coordinator(study, options), Error);
}

TEST_F(CoordinatorTest, AnEndpointOtherHostsCanReachNeedsCurveOrAnExplicitInsecure) {
  start(1);
  StudyOptions study_options;
  study_options.storage = std::make_shared<InMemoryStorage>();
  Study study = Study::create(study_options);
  CoordinatorOptions options;
  options.endpoint = "tcp://0.0.0.0:*";
  options.job_json = kJob;
  options.log = [](const std::string&) {};
  try {
    Coordinator c(study, options);
    FAIL() << "bound an open endpoint without CURVE";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("can be reached from other hosts"), std::string::npos)
        << e.what();
  }
  options.security.curve_keys = generate_curve_key_pair();
  EXPECT_THROW(Coordinator(study, options), Error);  // CURVE without executor keys to accept
  options.security.executor_keys = {generate_curve_key_pair().public_key};
  { Coordinator with_curve(study, options); }
  options.security = {.allow_insecure_tcp = true};
  { Coordinator insecure(study, options); }
}

TEST_F(CoordinatorTest, DrainLetsLeasedTrialsFinishAndStartsNoMore) {
  start(/*n_trials=*/10);
  auto peer = connect("e1#1");
  TrialMessage first = hello_and_get_trial(*peer, "e1", /*slots=*/1);
  coordinator_->drain();
  EXPECT_TRUE(coordinator_->draining());
  EXPECT_FALSE(coordinator_->done());  // the leased trial runs on
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = first.lease_id, .metrics = {{"loss", 1.0}}}));
  EXPECT_TRUE(std::get<AckMessage>(next(*peer)).accepted);
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 1}));
  pump();
  EXPECT_TRUE(coordinator_->done());
  EXPECT_EQ(coordinator_->stats().trials_started, 1);
  EXPECT_EQ(study_->trials().size(), 1u);
}

TEST_F(CoordinatorTest, AbandonFailsLeasedTrialsAndRequeuesTheirParams) {
  start(/*n_trials=*/10);
  auto peer = connect("e1#1");
  TrialMessage first = hello_and_get_trial(*peer, "e1", /*slots=*/1);
  coordinator_->abandon("interrupted");
  EXPECT_TRUE(coordinator_->done());
  const std::vector<FrozenTrial> trials = study_->trials();
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].state, TrialState::kFail);
  EXPECT_EQ(trials[1].state, TrialState::kWaiting);
  // Enqueued as Optuna does it: the params wait in the "fixed_params" system attribute.
  EXPECT_TRUE(trials[1].system_attrs.contains("fixed_params"));
  // The executor's outcome, arriving late, is refused.
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = first.lease_id, .metrics = {{"loss", 1.0}}}));
  EXPECT_FALSE(std::get<AckMessage>(next(*peer)).accepted);
}

TEST_F(CoordinatorTest, AnEngineTrialsRerunContinuesFromTheLostAttemptsCheckpoint) {
  const std::string engine_job = R"({"kind": "engine",
      "model": {"input": [1, 28, 28], "layers": [{"type": "flatten"}, {"type": "linear", "out": 10}]},
      "data": {"dataset": "fashion-mnist", "train": 100, "validation": 50},
      "artifacts_dir": "/shared/artifacts", "objective_metric": "val_accuracy"})";
  start(/*n_trials=*/1, /*max_retries=*/1, nullptr, engine_job);
  auto peer = connect("e1#1");
  TrialMessage first = hello_and_get_trial(*peer, "e1");
  const std::string path =
      "/shared/artifacts/trial-" + std::to_string(first.number) + "/resume.ckpt";
  EXPECT_EQ(first.checkpoint_path, path);
  // The lease is lost; the re-run (a new trial) gets the first attempt's checkpoint.
  clock_->advance(kLeaseTimeout * 6 / 10);
  ASSERT_TRUE(peer->send(HeartbeatMessage{}));
  pump();
  clock_->advance(kLeaseTimeout * 6 / 10);
  pump();
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 1}));
  TrialMessage rerun = std::get<TrialMessage>(next(*peer));
  EXPECT_NE(rerun.number, first.number);
  EXPECT_EQ(rerun.checkpoint_path, path);
}

TEST_F(CoordinatorTest, ACudaEngineTrialGetsAGpuOfItsOwn) {
  const std::string cuda_job = R"({"kind": "engine", "backend": "cuda",
      "model": {"input": [1, 28, 28], "layers": [{"type": "flatten"}, {"type": "linear", "out": 10}]},
      "data": {"dataset": "fashion-mnist", "train": 100, "validation": 50},
      "objective_metric": "val_accuracy"})";
  start(/*n_trials=*/5, 3, nullptr, cuda_job);
  // An executor without GPUs gets no trial; one with a GPU gets one trial per GPU, not per slot.
  auto cpu_only = connect("cpu#1");
  ASSERT_TRUE(cpu_only->send(HelloMessage{
      .executor_id = "cpu", .hostname = "test", .pid = 1, .resources = {.cpu_slots = 4}}));
  ASSERT_TRUE(cpu_only->send(ReadyMessage{.free_slots = 4}));
  auto gpu = connect("gpu#1");
  ASSERT_TRUE(gpu->send(HelloMessage{.executor_id = "gpu",
                                     .hostname = "test",
                                     .pid = 2,
                                     .resources = {.cpu_slots = 2, .gpus = {{3, "H200", 1}}}}));
  ASSERT_TRUE(gpu->send(ReadyMessage{.free_slots = 2, .free_gpus = {3}}));
  Message m = next(*gpu);
  ASSERT_TRUE(std::holds_alternative<TrialMessage>(m));
  const TrialMessage first = std::get<TrialMessage>(m);
  EXPECT_EQ(first.gpus, std::vector<int>{3});
  pump();
  EXPECT_EQ(coordinator_->stats().active_leases, 1);  // the second slot waits for the GPU
  while (auto frames = cpu_only->receive()) {
    EXPECT_FALSE(std::holds_alternative<TrialMessage>(decode(*frames)));
  }
  ASSERT_TRUE(
      gpu->send(ResultMessage{.lease_id = first.lease_id, .metrics = {{"val_accuracy", 0.5}}}));
  EXPECT_TRUE(std::get<AckMessage>(next(*gpu)).accepted);
  ASSERT_TRUE(gpu->send(ReadyMessage{.free_slots = 2, .free_gpus = {3}}));
  m = next(*gpu);
  ASSERT_TRUE(std::holds_alternative<TrialMessage>(m));
  EXPECT_EQ(std::get<TrialMessage>(m).gpus, std::vector<int>{3});
}

// Regression: an ask() that kept failing (an overflowing float range: every sampled value "inf is
// not in float[...]") stored a FAIL trial every heartbeat interval for ever, and nothing counted
// them. Now three failures in a row (a success in between starts the count again) stop the study
// with the error, and every FAIL an ask stored is reported as a finished trial.
TEST_F(CoordinatorTest, AStudyWhoseAsksKeepFailingStopsWithTheErrorInsteadOfSpinning) {
  // Asks 0 and 1 fail, 2 succeeds, 3, 4 and 5 fail.
  auto sampler = std::make_shared<testing::ScriptedSampler>(
      std::vector<bool>{false, false, true, false, false, false});
  start(/*n_trials=*/10, 3, nullptr, kJob, nullptr, sampler);
  auto peer = connect("e1#1");
  ASSERT_TRUE(peer->send(HelloMessage{.executor_id = "e1", .resources = {.cpu_slots = 1}}));
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 1}));
  pump_until([&] { return sampler->asks() >= 1; });
  pump();
  EXPECT_EQ(sampler->asks(), 1u);  // asked again a heartbeat interval later, not at every turn
  clock_->advance(kHeartbeat);
  pump_until([&] { return sampler->asks() >= 2; });
  EXPECT_EQ(sampler->asks(), 2u);
  clock_->advance(kHeartbeat);
  const TrialMessage trial = std::get<TrialMessage>(next(*peer));
  EXPECT_FALSE(coordinator_->failure());
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = trial.lease_id, .values = {0.5}}));
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 1}));
  EXPECT_TRUE(std::get<AckMessage>(next(*peer)).accepted);
  for (size_t asks = 4; asks <= 6; ++asks) {
    clock_->advance(kHeartbeat);
    pump_until([&] { return sampler->asks() >= asks; });
  }
  clock_->advance(kHeartbeat);
  pump();
  EXPECT_EQ(sampler->asks(), 6u);
  EXPECT_TRUE(coordinator_->done());
  ASSERT_TRUE(coordinator_->failure());
  EXPECT_EQ(*coordinator_->failure(),
            "sampling failed 3 times in a row: scripted failure of ask 5");
  EXPECT_TRUE(logged("sampling failed 3 times in a row"));
  // The five FAIL trials the asks stored are counted and reported like any finished trial.
  EXPECT_EQ(coordinator_->stats().failed_asks, 5);
  const auto failed_asks =
      std::count_if(finished_.begin(), finished_.end(), [](const FrozenTrial& t) {
        return t.state == TrialState::kFail &&
               t.system_attrs.at("fail_reason").starts_with("\"ask() failed: scripted failure");
      });
  EXPECT_EQ(failed_asks, 5);
  EXPECT_EQ(finished_.size(), 6u);  // and the trial that ran
  EXPECT_EQ(study_->trials().size(), 6u);
  // It stays stopped: no more asks, no more FAIL trials.
  clock_->advance(10 * kHeartbeat);
  pump();
  EXPECT_EQ(sampler->asks(), 6u);
  EXPECT_EQ(study_->trials().size(), 6u);
}

// Regression: a chatty trial's REPORTs made one turn of the loop long, and the heartbeats of a
// healthy executor, waiting on the socket meanwhile, were read only after leases were expired
// and silent executors forgotten ("executor B is silent for 7411 ms: forgotten", "lease ...
// (trial 2, executor B) expired: no heartbeat for 6120 ms").
TEST_F(CoordinatorTest, AChattyTrialsLongTurnDoesNotExpireALeaseWhoseHeartbeatsWait) {
  std::unique_ptr<DealerEndpoint> healthy;
  uint64_t healthy_lease = 0;
  // Each report takes 100 ms of the coordinator's time; meanwhile the healthy executor heartbeats.
  auto scheduler = std::make_shared<CallbackScheduler>([&] {
    clock_->advance(kHeartbeat);
    if (healthy_lease != 0) {
      EXPECT_TRUE(healthy->send(HeartbeatMessage{.lease_ids = {healthy_lease}}));
      std::this_thread::sleep_for(milliseconds(2));  // it reaches the coordinator's socket
    }
  });
  start(/*n_trials=*/2, /*max_retries=*/0, scheduler);
  auto chatty = connect("chatty#1");
  const TrialMessage chatty_trial = hello_and_get_trial(*chatty, "chatty");
  healthy = connect("healthy#1");
  const TrialMessage healthy_trial = hello_and_get_trial(*healthy, "healthy");
  healthy_lease = healthy_trial.lease_id;

  // Ten reports read in one turn: a second of the coordinator's time, 2.5 lease timeouts.
  for (int step = 0; step < 10; ++step) {
    ASSERT_TRUE(chatty->send(ReportMessage{
        .lease_id = chatty_trial.lease_id, .step = step, .metrics = {{"loss", 0.5}}}));
  }
  std::this_thread::sleep_for(milliseconds(50));  // all ten wait on the socket
  coordinator_->poll_once(milliseconds(0));
  healthy_lease = 0;
  pump();
  EXPECT_EQ(coordinator_->stats().reports, 10);
  EXPECT_EQ(coordinator_->stats().leases_expired, 0);
  EXPECT_EQ(coordinator_->stats().executors, 2);
  EXPECT_FALSE(logged("expired")) << log_.back();
  EXPECT_FALSE(logged("forgotten")) << log_.back();
  // The healthy trial's outcome is taken.
  ASSERT_TRUE(healthy->send(ResultMessage{.lease_id = healthy_trial.lease_id, .values = {0.5}}));
  EXPECT_TRUE(std::get<AckMessage>(next(*healthy)).accepted);
  EXPECT_EQ(study_->storage().get_trial(healthy_trial.trial_id).state, TrialState::kComplete);
}

// Regression: however far behind the loop was, it started trials for every READY (each one
// bringing more REPORTs), and an overload ended in expired leases instead of slower dispatch.
// While more than a turn's messages wait, the loop now catches up before it starts more.
TEST_F(CoordinatorTest, WhileMoreThanATurnsMessagesWaitNoTrialIsStarted) {
  start(/*n_trials=*/10);
  auto chatty = connect("chatty#1");
  const TrialMessage chatty_trial = hello_and_get_trial(*chatty, "chatty");
  auto idle = connect("idle#1");
  ASSERT_TRUE(idle->send(HelloMessage{
      .executor_id = "idle", .hostname = "test", .pid = 2, .resources = {.cpu_slots = 1}}));
  pump();
  constexpr int kReports = 1200;  // more than the 1,000 messages of a turn
  for (int step = 0; step < kReports; ++step) {
    ASSERT_TRUE(chatty->send(ReportMessage{
        .lease_id = chatty_trial.lease_id, .step = step, .metrics = {{"loss", 0.5}}}));
  }
  ASSERT_TRUE(idle->send(ReadyMessage{.free_slots = 1}));
  std::this_thread::sleep_for(milliseconds(200));  // all of them wait on the socket
  coordinator_->poll_once(milliseconds(0));
  EXPECT_GT(coordinator_->stats().reports, 0);
  EXPECT_LT(coordinator_->stats().reports, kReports);
  std::this_thread::sleep_for(milliseconds(20));
  while (auto frames = idle->receive()) {
    const Message m = decode(*frames);
    EXPECT_FALSE(std::holds_alternative<TrialMessage>(m)) << "a TRIAL while the loop is behind";
  }
  EXPECT_EQ(coordinator_->stats().trials_started, 1);
  // Caught up, it starts the idle executor's trial.
  EXPECT_TRUE(std::holds_alternative<TrialMessage>(next(*idle)));
  EXPECT_EQ(coordinator_->stats().reports, kReports);
  EXPECT_EQ(coordinator_->stats().leases_expired, 0);
}

// Regression: the re-run a restarted coordinator made had no lineage ("failed_trial",
// "retry_history"): its attempt count started again at 0, so max_retries was not enforced across
// restarts, and it counted as a new trial of the budget.
TEST_F(CoordinatorTest, AReRunKeepsItsLineageAndTheRetryLimitAcrossACoordinatorRestart) {
  start(/*n_trials=*/1, /*max_retries=*/1);
  auto peer = connect("e1#1");
  const TrialMessage first = hello_and_get_trial(*peer, "e1");
  // The lease expires: the trial is FAIL, and its re-run waits in storage with its lineage.
  expire_leases(*peer);
  std::vector<FrozenTrial> trials = study_->trials();
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].state, TrialState::kFail);
  EXPECT_EQ(trials[1].state, TrialState::kWaiting);
  EXPECT_EQ(trials[1].system_attrs["failed_trial"], std::to_string(first.number));
  EXPECT_EQ(trials[1].system_attrs["retry_history"], "[" + std::to_string(first.number) + "]");

  // The coordinator dies before leasing the re-run; the next one has no new trials to start.
  peer.reset();
  options_.n_trials = 0;
  restart();
  EXPECT_FALSE(coordinator_->done());  // the re-run is still to run
  peer = connect("e1#2");
  const TrialMessage rerun = hello_and_get_trial(*peer, "e1");
  EXPECT_EQ(rerun.trial_id, trials[1].trial_id);
  EXPECT_EQ(rerun.params, first.params);
  EXPECT_EQ(rerun.attempt, 1);
  EXPECT_EQ(coordinator_->stats().retries_started, 1);
  EXPECT_EQ(coordinator_->stats().trials_started, 0);  // not a new trial of the budget

  // Its lease expires too: max_retries 1 holds across the restart, no third attempt.
  expire_leases(*peer);
  EXPECT_EQ(study_->storage().get_trial(rerun.trial_id).state, TrialState::kFail);
  EXPECT_TRUE(logged("is not run again: 2 attempt(s), max_retries 1"));
  EXPECT_TRUE(coordinator_->done());
  EXPECT_EQ(study_->trials().size(), 2u);
}

// Regression: after a restart, max_concurrent 2 was exceeded (3 trials at once): the new
// coordinator leased trials before the ones still running on their executors were taken back.
// Regression: a restarted coordinator credited a busy prefetching executor only its slots, so
// a slot freed by one of the trials it took back (its prefetched ones queued behind) got nothing
// while more waited. Its first READY after HELLO, read with the leases that HELLO listed, shows
// how many it takes at once.
TEST_F(CoordinatorTest, ARestartedCoordinatorCreditsABusyPrefetchingExecutorItsWholeCapacity) {
  start(/*n_trials=*/6);
  auto peer = connect("e1#1");
  // Two slots and two taken ahead (ExecutorOptions::prefetch = 2): four held.
  ASSERT_TRUE(peer->send(HelloMessage{.executor_id = "e1", .resources = {.cpu_slots = 2}}));
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 4}));
  std::vector<TrialMessage> held;
  for (int i = 0; i < 4; ++i) held.push_back(std::get<TrialMessage>(next(*peer)));
  peer.reset();

  restart();
  peer = connect("e1#2");
  HelloMessage hello{.executor_id = "e1", .resources = {.cpu_slots = 2}};
  for (const TrialMessage& t : held) {
    hello.leases.push_back(
        {.lease_id = t.lease_id, .study_name = "distributed", .trial_id = t.trial_id});
  }
  ASSERT_TRUE(peer->send(hello));
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 0}));  // all four held
  pump_until([&] { return coordinator_->stats().reattached == 4; });
  EXPECT_EQ(coordinator_->stats().active_leases, 4);
  // One ends: its place goes to the next trial, though the executor still holds more than its
  // slots.
  ASSERT_TRUE(peer->send(ResultMessage{.lease_id = held[0].lease_id, .values = {1.0}}));
  ASSERT_TRUE(peer->send(ReadyMessage{.free_slots = 1}));
  EXPECT_TRUE(std::get<AckMessage>(next(*peer)).accepted);
  const Message m = next(*peer);
  ASSERT_TRUE(std::holds_alternative<TrialMessage>(m)) << to_string(message_type(m));
  EXPECT_EQ(std::get<TrialMessage>(m).number, 4);
  pump();
  EXPECT_EQ(coordinator_->stats().active_leases, 4);
}

TEST_F(CoordinatorTest, ARestartedCoordinatorCountsTheEarlierOnesTrialsAgainstMaxConcurrency) {
  start(/*n_trials=*/10);
  options_.max_concurrency = 2;
  restart();
  auto peer = connect("e1#1");
  const TrialMessage a = hello_and_get_trial(*peer, "e1", /*slots=*/4);
  const TrialMessage b = std::get<TrialMessage>(next(*peer));
  pump();
  EXPECT_EQ(coordinator_->stats().active_leases, 2);
  peer.reset();

  // The coordinator dies; `a` and `b` may still run. An executor with free slots joins the new
  // one: nothing is leased while both may run.
  restart();
  auto other = connect("e2#1");
  ASSERT_TRUE(other->send(HelloMessage{.executor_id = "e2", .resources = {.cpu_slots = 4}}));
  ASSERT_TRUE(other->send(ReadyMessage{.free_slots = 4}));
  auto trials_to = [&](DealerEndpoint& executor) {
    std::vector<TrialMessage> got;
    pump();
    while (auto frames = executor.receive()) {
      Message m = decode(*frames);
      if (auto* t = std::get_if<TrialMessage>(&m)) got.push_back(*t);
    }
    return got;
  };
  EXPECT_TRUE(trials_to(*other).empty());

  // e1 reconnects with `a`: taken back, and still two may run (`b` is unclaimed).
  peer = connect("e1#2");
  ASSERT_TRUE(peer->send(HelloMessage{
      .executor_id = "e1",
      .resources = {.cpu_slots = 4},
      .leases = {{.lease_id = a.lease_id, .study_name = "distributed", .trial_id = a.trial_id}}}));
  EXPECT_TRUE(trials_to(*other).empty());
  EXPECT_EQ(coordinator_->stats().reattached, 1);

  // `b`'s take-back window (2 x lease_timeout) passes: FAIL, and its re-run takes the one slot.
  std::vector<TrialMessage> leased;
  for (int i = 0; i < 5; ++i) {
    clock_->advance(kLeaseTimeout / 2);
    ASSERT_TRUE(peer->send(HeartbeatMessage{.lease_ids = {a.lease_id}}));
    ASSERT_TRUE(other->send(HeartbeatMessage{}));
    for (const TrialMessage& t : trials_to(*other)) leased.push_back(t);
  }
  EXPECT_EQ(study_->storage().get_trial(b.trial_id).state, TrialState::kFail);
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_EQ(leased[0].params, b.params);
  EXPECT_EQ(leased[0].attempt, 1);
  EXPECT_EQ(coordinator_->stats().active_leases, 2);
}

TEST_F(CoordinatorTest, AnExecutorFetchesItsLeasesCheckpointFromTheCoordinatorsHostInChunks) {
  const std::string artifacts = (dir_ / "artifacts").string();
  const std::string job = R"({"kind": "command", "argv": ["true", "{x}"], "artifacts_dir": ")" +
                          artifacts + R"(", "objective_metric": "loss"})";
  start(/*n_trials=*/1, /*max_retries=*/0, nullptr, job);
  auto holder = connect("e1#1");
  TrialMessage trial = hello_and_get_trial(*holder, "e1");
  ASSERT_TRUE(trial.checkpoint_path);
  // The checkpoint an earlier attempt's files brought here: more than one chunk.
  std::string bytes(kMaxFileChunkBytes + 1000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 % 251);
  std::filesystem::create_directories(std::filesystem::path(*trial.checkpoint_path).parent_path());
  std::ofstream(*trial.checkpoint_path, std::ios::binary) << bytes;

  const CheckpointGetMessage get{
      .lease_id = trial.lease_id, .of = CheckpointOf::kOwn, .file = "resume.ckpt"};
  ASSERT_TRUE(holder->send(get));
  auto first = std::get<CheckpointDataMessage>(next(*holder));
  EXPECT_TRUE(first.found) << first.reason;
  EXPECT_EQ(first.size, bytes.size());
  EXPECT_EQ(first.data, bytes.substr(0, kMaxFileChunkBytes));
  ASSERT_TRUE(holder->send(CheckpointGetMessage{.lease_id = trial.lease_id,
                                                .of = CheckpointOf::kOwn,
                                                .file = "resume.ckpt",
                                                .offset = kMaxFileChunkBytes}));
  auto rest = std::get<CheckpointDataMessage>(next(*holder));
  EXPECT_EQ(rest.offset, kMaxFileChunkBytes);
  EXPECT_EQ(first.data + rest.data, bytes);

  // Nothing for a file that is not there, a checkpoint the lease does not have (it is no PBT
  // segment), or a lease another executor holds.
  ASSERT_TRUE(holder->send(CheckpointGetMessage{
      .lease_id = trial.lease_id, .of = CheckpointOf::kOwn, .file = "model.ckpt"}));
  auto absent = std::get<CheckpointDataMessage>(next(*holder));
  EXPECT_FALSE(absent.found);
  EXPECT_THAT(absent.reason, HasSubstr("model.ckpt: not on the coordinator's host"));
  ASSERT_TRUE(holder->send(CheckpointGetMessage{
      .lease_id = trial.lease_id, .of = CheckpointOf::kStart, .file = "resume.ckpt"}));
  EXPECT_THAT(std::get<CheckpointDataMessage>(next(*holder)).reason,
              HasSubstr("has no start checkpoint"));
  auto other = connect("e2#1");
  ASSERT_TRUE(other->send(HelloMessage{.executor_id = "e2", .hostname = "test", .pid = 2}));
  ASSERT_TRUE(other->send(get));
  auto refused = std::get<CheckpointDataMessage>(next(*other));
  EXPECT_FALSE(refused.found);
  EXPECT_TRUE(refused.data.empty());
  EXPECT_THAT(refused.reason, HasSubstr("is held by executor e1"));
}

// A stopped executor sends its preempted trial's checkpoint (FILE marked `checkpoint`) before its
// BYE; the coordinator keeps it in the lineage's checkpoint folder, where the re-run on another
// executor fetches it, and a re-run's own preemption replaces it there.
TEST_F(CoordinatorTest, APreemptedTrialsCheckpointSentBeforeByeIsWhatItsRerunFetches) {
  const std::string artifacts = (dir_ / "artifacts").string();
  const std::string job = R"({"kind": "command", "argv": ["true", "{x}"], "artifacts_dir": ")" +
                          artifacts + R"(", "objective_metric": "loss"})";
  start(/*n_trials=*/1, /*max_retries=*/0, nullptr, job);
  auto checkpoint_of = [](const TrialMessage& trial, const std::string& data) {
    return FileChunkMessage{.lease_id = trial.lease_id,
                            .kind = TrialFileKind::kArtifact,
                            .path = "resume.ckpt",
                            .size = data.size(),
                            .data = data,
                            .checkpoint = true};
  };
  auto fetch = [&](DealerEndpoint& peer, const TrialMessage& trial) {
    EXPECT_TRUE(peer.send(CheckpointGetMessage{
        .lease_id = trial.lease_id, .of = CheckpointOf::kOwn, .file = "resume.ckpt"}));
    return std::get<CheckpointDataMessage>(next(peer));
  };
  auto first_host = connect("e1#1");
  const TrialMessage first = hello_and_get_trial(*first_host, "e1");
  ASSERT_TRUE(first_host->send(checkpoint_of(first, "step 4")));
  EXPECT_TRUE(std::get<FileAckMessage>(next(*first_host)).accepted);
  ASSERT_TRUE(first_host->send(
      ByeMessage{.preempted = {{.lease_id = first.lease_id, .checkpoint = true}}}));
  pump_until([&] { return coordinator_->stats().executors == 0; });

  auto second_host = connect("e2#1");
  const TrialMessage rerun = hello_and_get_trial(*second_host, "e2");
  EXPECT_EQ(rerun.attempt, 1);
  EXPECT_EQ(rerun.checkpoint_path, first.checkpoint_path);
  const CheckpointDataMessage fetched = fetch(*second_host, rerun);
  EXPECT_TRUE(fetched.found) << fetched.reason;
  EXPECT_EQ(fetched.data, "step 4");
  EXPECT_FALSE(std::filesystem::exists(artifacts + "/trial-" + std::to_string(rerun.number) +
                                       "/resume.ckpt"))
      << "the lineage's checkpoint is in its first trial's folder only";

  // The re-run is preempted in turn: its checkpoint replaces the earlier one.
  ASSERT_TRUE(second_host->send(checkpoint_of(rerun, "step 9")));
  EXPECT_TRUE(std::get<FileAckMessage>(next(*second_host)).accepted);
  std::ifstream saved(*first.checkpoint_path);
  std::string text((std::istreambuf_iterator<char>(saved)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "step 9");
}

}  // namespace
}  // namespace tuner
