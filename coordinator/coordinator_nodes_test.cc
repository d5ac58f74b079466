// The coordinator's side of multi-node trials (an engine job's "nodes"; docs/engine_jobs.md,
// "Nodes"): all-or-nothing leasing to distinct executors, the per-attempt store (STORE_SET,
// STORE_KEYS), and a trial that fails on every node when one node fails or is lost. Fake
// executors (DEALER sockets) and a FakeClock.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "coordinator/coordinator_test_support.h"
#include "coordinator/study_run.h"

namespace tuner {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kHeartbeat{100};
constexpr milliseconds kLeaseTimeout{2000};

std::string engine_job(int ranks, int nodes, const std::string& backend = "cpu") {
  return R"({"kind": "engine", "backend": ")" + backend + R"(", "ranks": )" +
         std::to_string(ranks) + R"(, "nodes": )" + std::to_string(nodes) + R"(,
      "model": {"input": [1, 28, 28], "layers": [{"type": "flatten"}, {"type": "linear", "out": 10}]},
      "data": {"dataset": "fashion-mnist", "train": 100, "validation": 50},
      "training": {"lr": "{x}"}, "objective_metric": "val_accuracy"})";
}

class CoordinatorNodesTest : public testing::CoordinatorTestBase {
 protected:
  CoordinatorNodesTest() : CoordinatorTestBase("tuner-coordinator-nodes-test") {}

  Study make_study(const std::string& name) {
    StudyOptions o = study_options(name, 0.001, 0.01);
    o.directions = {StudyDirection::kMaximize};
    return Study::create(o);
  }

  void start(const std::string& job, int n_trials = 1, int max_retries = 0) {
    study_.emplace(make_study("nodes"));
    coordinator_.emplace(
        *study_, coordinator_options(job, n_trials, max_retries, kHeartbeat, kLeaseTimeout));
  }

  std::unique_ptr<DealerEndpoint> join(const std::string& id, int slots = 1,
                                       std::vector<GpuInfo> gpus = {}) {
    auto peer = std::make_unique<DealerEndpoint>(context_, coordinator_->endpoint(),
                                                 ZmqSocketOptions{.routing_id = id + "#1"});
    EXPECT_TRUE(peer->send(HelloMessage{.executor_id = id,
                                        .hostname = "test",
                                        .pid = 1,
                                        .resources = {.cpu_slots = slots, .gpus = gpus}}));
    EXPECT_TRUE(peer->send(ReadyMessage{.free_slots = slots}));
    return peer;
  }

  // The next message for `peer` other than HEARTBEAT; nullopt when none comes within `turns`.
  std::optional<Message> next(DealerEndpoint& peer, int turns = 400) {
    return poll_for_message(*coordinator_, peer, turns);
  }

  template <typename T>
  T expect(DealerEndpoint& peer) {
    std::optional<Message> m = next(peer);
    if (!m) {
      ADD_FAILURE() << "no message within 2 s";
      return T{};
    }
    if (!std::holds_alternative<T>(*m)) {
      ADD_FAILURE() << "got " << to_string(message_type(*m));
      return T{};
    }
    return std::get<T>(*m);
  }

  // Both fake executors join and get the two nodes of trial 0.
  std::pair<TrialMessage, TrialMessage> lease_both() {
    a_ = join("a");
    b_ = join("b");
    TrialMessage first = expect<TrialMessage>(*a_);
    TrialMessage second = expect<TrialMessage>(*b_);
    return {first, second};
  }

  std::unique_ptr<DealerEndpoint> a_, b_;
};

TEST_F(CoordinatorNodesTest, ATrialGoesToAsManyExecutorsAtOnceOrWaits) {
  start(engine_job(2, 2));
  a_ = join("a", /*slots=*/2);
  EXPECT_EQ(next(*a_, 20), std::nullopt) << "one executor cannot hold two nodes";
  EXPECT_EQ(coordinator_->stats().trials_started, 0);
  EXPECT_EQ(std::count_if(log_.begin(), log_.end(),
                          [](const std::string& line) {
                            return line.find(
                                       "each trial runs on 2 executors (the job's "
                                       "\"nodes\"), and 1 have joined") != std::string::npos;
                          }),
            1)
      << "said once";
  b_ = join("b");
  const TrialMessage first = expect<TrialMessage>(*a_);
  const TrialMessage second = expect<TrialMessage>(*b_);
  EXPECT_EQ(first.trial_id, second.trial_id);
  EXPECT_EQ(first.params, second.params);
  EXPECT_NE(first.lease_id, second.lease_id);
  EXPECT_EQ(first.node, 0);
  EXPECT_EQ(second.node, 1);
  EXPECT_EQ(first.nodes, 2);
  EXPECT_EQ(second.nodes, 2);
  EXPECT_EQ(coordinator_->stats().trials_started, 1);
  EXPECT_EQ(coordinator_->stats(0).active_leases, 1) << "a study counts trials, not nodes";
}

TEST_F(CoordinatorNodesTest, SingleNodeTrialsDoNotStarveAMultiNodeTrial) {
  start(engine_job(1, 1), /*n_trials=*/100);
  a_ = join("a", 1, {{0, "H200", 1}});
  b_ = join("b", 1, {{0, "H200", 1}});
  auto c = join("c");  // no GPU
  const TrialMessage on_a = expect<TrialMessage>(*a_);
  const TrialMessage on_b = expect<TrialMessage>(*b_);
  const TrialMessage on_c = expect<TrialMessage>(*c);
  const StudyRunId groups = coordinator_->add_study(
      make_study("groups"), {.job_json = engine_job(2, 2, "cuda"), .n_trials = 1});

  auto finish = [&](DealerEndpoint& peer, const TrialMessage& trial) {
    ASSERT_TRUE(peer.send(ResultMessage{
        .lease_id = trial.lease_id, .metrics = {{"val_accuracy", 0.5}}, .values = {0.5}}));
    ASSERT_TRUE(peer.send(ReadyMessage{.free_slots = 1}));
    EXPECT_TRUE(expect<AckMessage>(peer).accepted);
  };
  // The multi-node study has its turn (no trial leased): a and b, which have its GPUs, are kept
  // for it; c runs single-node trials on.
  finish(*a_, on_a);
  EXPECT_EQ(next(*a_, 20), std::nullopt) << "a is kept for the multi-node trial";
  finish(*c, on_c);
  EXPECT_EQ(expect<TrialMessage>(*c).nodes, 1) << "c, without GPUs, is not kept";
  finish(*b_, on_b);
  const TrialMessage node0 = expect<TrialMessage>(*a_);
  const TrialMessage node1 = expect<TrialMessage>(*b_);
  EXPECT_EQ(node0.nodes, 2);
  EXPECT_EQ(node1.trial_id, node0.trial_id);
  EXPECT_EQ(coordinator_->stats(groups).trials_started, 1);
  // Its budget spent, nothing is kept: a free slot goes to the single-node study again.
  finish(*b_, node1);
  EXPECT_EQ(expect<TrialMessage>(*b_).nodes, 1);
}

TEST_F(CoordinatorNodesTest, CudaNodesEachGetTheGpusOfTheirRanks) {
  start(engine_job(4, 2, "cuda"));
  a_ = join("a", 1, {{0, "H200", 1}, {1, "H200", 1}});
  b_ = join("b", 1, {{0, "H200", 1}});  // too few GPUs for a node of two ranks
  EXPECT_EQ(next(*a_, 20), std::nullopt);
  auto c = join("c", 1, {{2, "H200", 1}, {5, "H200", 1}});
  const TrialMessage first = expect<TrialMessage>(*a_);
  const TrialMessage second = expect<TrialMessage>(*c);
  EXPECT_EQ(first.gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(second.gpus, (std::vector<int>{2, 5}));
  EXPECT_EQ(next(*b_, 20), std::nullopt);
}

TEST_F(CoordinatorNodesTest, TheStoreCarriesKeysToTheOtherNodes) {
  start(engine_job(2, 2));
  const auto [first, second] = lease_both();
  ASSERT_TRUE(a_->send(StoreSetMessage{.lease_id = first.lease_id, .key = "0", .value = "addr-a"}));
  const StoreKeysMessage keys = expect<StoreKeysMessage>(*b_);
  EXPECT_EQ(keys.lease_id, second.lease_id);
  EXPECT_EQ(keys.entries, (std::map<std::string, std::string>{{"0", "addr-a"}}));
  // A resend is harmless; another value for the key is refused.
  ASSERT_TRUE(a_->send(StoreSetMessage{.lease_id = first.lease_id, .key = "0", .value = "addr-a"}));
  EXPECT_EQ(next(*b_, 20), std::nullopt);
  ASSERT_TRUE(b_->send(StoreSetMessage{.lease_id = second.lease_id, .key = "0", .value = "x"}));
  const ErrorMessage error = expect<ErrorMessage>(*b_);
  EXPECT_NE(error.message.find("key '0' is set already"), std::string::npos) << error.message;
  // Another executor's lease, and a one-node lease, have no store for it.
  ASSERT_TRUE(b_->send(StoreSetMessage{.lease_id = first.lease_id, .key = "1", .value = "y"}));
  EXPECT_NE(expect<ErrorMessage>(*b_).message.find("held by executor a"), std::string::npos);
  // A reconnected node gets the whole store again.
  auto b_again = std::make_unique<DealerEndpoint>(context_, coordinator_->endpoint(),
                                                  ZmqSocketOptions{.routing_id = "b#2"});
  ASSERT_TRUE(b_again->send(HelloMessage{
      .executor_id = "b", .hostname = "test", .pid = 1, .resources = {.cpu_slots = 1}}));
  EXPECT_EQ(expect<StoreKeysMessage>(*b_again).entries.at("0"), "addr-a");
}

TEST_F(CoordinatorNodesTest, NodeZeroTellsTheTrialAndTheOtherNodesOnlyEnd) {
  start(engine_job(2, 2));
  const auto [first, second] = lease_both();
  ASSERT_TRUE(b_->send(ResultMessage{.lease_id = second.lease_id}));
  const AckMessage done = expect<AckMessage>(*b_);
  EXPECT_TRUE(done.accepted);
  EXPECT_EQ(study_->storage().get_trial(first.trial_id).state, TrialState::kRunning);
  ASSERT_TRUE(a_->send(ResultMessage{
      .lease_id = first.lease_id, .metrics = {{"val_accuracy", 0.75}}, .values = {0.75}}));
  EXPECT_TRUE(expect<AckMessage>(*a_).accepted);
  const FrozenTrial trial = study_->storage().get_trial(first.trial_id);
  EXPECT_EQ(trial.state, TrialState::kComplete);
  EXPECT_EQ(trial.values, std::vector<double>{0.75});
  EXPECT_EQ(coordinator_->stats().completed, 1);
  EXPECT_TRUE(coordinator_->done());
}

TEST_F(CoordinatorNodesTest, ANodesFailureFailsTheTrialNamingEveryNodeThatFailed) {
  start(engine_job(2, 2));
  const auto [first, second] = lease_both();
  ASSERT_TRUE(b_->send(FailMessage{.lease_id = second.lease_id,
                                   .reason = "exited with code 3",
                                   .exit_code = 3,
                                   .log_tail = "rank 1 crashed"}));
  EXPECT_EQ(next(*b_, 20), std::nullopt) << "ACKed once the trial's FAIL is committed";
  ASSERT_TRUE(a_->send(
      FailMessage{.lease_id = first.lease_id, .reason = "exited with code 1", .exit_code = 1}));
  EXPECT_TRUE(expect<AckMessage>(*b_).accepted);
  EXPECT_TRUE(expect<AckMessage>(*a_).accepted);
  const FrozenTrial trial = study_->storage().get_trial(first.trial_id);
  EXPECT_EQ(trial.state, TrialState::kFail);
  const std::string reason = trial.system_attrs.at("fail_reason");
  EXPECT_NE(reason.find("node 1 of 2 (executor b): exited with code 3; node 0 of 2 (executor a): "
                        "exited with code 1"),
            std::string::npos)
      << reason;
  EXPECT_EQ(trial.system_attrs.at("exit_code"), "3");  // the first node's
  EXPECT_EQ(coordinator_->stats().failed, 1);
  EXPECT_TRUE(coordinator_->done());
}

TEST_F(CoordinatorNodesTest, ANodesFailureEndsTheOtherNodesAfterTheSettleTime) {
  start(engine_job(2, 2));
  const auto [first, second] = lease_both();
  ASSERT_TRUE(b_->send(FailMessage{.lease_id = second.lease_id, .reason = "exited with code 3"}));
  EXPECT_EQ(next(*b_, 20), std::nullopt);
  clock_->advance(milliseconds(1000));
  EXPECT_TRUE(expect<AckMessage>(*b_).accepted);
  EXPECT_EQ(study_->storage().get_trial(first.trial_id).state, TrialState::kFail);
  // Node 0's lease is given up: its executor stops it, and its late outcome is refused.
  ASSERT_TRUE(a_->send(FailMessage{.lease_id = first.lease_id, .reason = "exited with code 1"}));
  const AckMessage refused = expect<AckMessage>(*a_);
  EXPECT_FALSE(refused.accepted);
  EXPECT_NE(refused.reason.find("told on another node"), std::string::npos) << refused.reason;
}

TEST_F(CoordinatorNodesTest, ALostNodeFailsTheAttemptOnEveryNodeAndTheTrialRunsAgain) {
  start(engine_job(2, 2), /*n_trials=*/1, /*max_retries=*/1);
  const auto [first, second] = lease_both();
  ASSERT_TRUE(b_->send(ByeMessage{}));
  for (int i = 0;
       i < 20 && study_->storage().get_trial(first.trial_id).state == TrialState::kRunning; ++i) {
    next(*a_, 1);
  }
  const FrozenTrial trial = study_->storage().get_trial(first.trial_id);
  EXPECT_EQ(trial.state, TrialState::kFail);
  EXPECT_NE(trial.system_attrs.at("fail_reason").find("lost a node: node 1 of 2 (executor b)"),
            std::string::npos)
      << trial.system_attrs.at("fail_reason");
  // Node 0's lease is no longer honoured; the re-run waits for two executors again.
  clock_->advance(kHeartbeat);
  for (int i = 0; i < 40; ++i) {
    coordinator_->poll_once(milliseconds(0));
    std::this_thread::sleep_for(milliseconds(2));
  }
  bool heartbeat_without_lease = false;
  while (auto frames = a_->receive()) {
    const Message m = decode(*frames);
    if (auto* h = std::get_if<HeartbeatMessage>(&m)) {
      heartbeat_without_lease =
          std::find(h->lease_ids.begin(), h->lease_ids.end(), first.lease_id) == h->lease_ids.end();
    }
  }
  EXPECT_TRUE(heartbeat_without_lease);
  ASSERT_TRUE(a_->send(ReadyMessage{.free_slots = 1}));
  b_ = join("b");
  const TrialMessage rerun = expect<TrialMessage>(*a_);
  EXPECT_EQ(rerun.attempt, 1);
  EXPECT_EQ(rerun.params, first.params);
  EXPECT_EQ(expect<TrialMessage>(*b_).trial_id, rerun.trial_id);
}

TEST_F(CoordinatorNodesTest, APreemptedNodeRerunsItsTrialWithoutCountingARetry) {
  start(engine_job(2, 2), /*n_trials=*/1, /*max_retries=*/0);
  const auto [first, second] = lease_both();
  ASSERT_TRUE(b_->send(ByeMessage{.preempted = {{.lease_id = second.lease_id}}}));
  for (int i = 0;
       i < 20 && study_->storage().get_trial(first.trial_id).state == TrialState::kRunning; ++i) {
    next(*a_, 1);
  }
  const FrozenTrial trial = study_->storage().get_trial(first.trial_id);
  EXPECT_EQ(trial.state, TrialState::kFail);
  EXPECT_NE(trial.system_attrs.at("fail_reason").find("node 1 of 2 (executor b): preempted"),
            std::string::npos)
      << trial.system_attrs.at("fail_reason");
  EXPECT_EQ(coordinator_->stats().leases_expired, 0);
  // max_retries is 0, yet the trial runs again: a preempted attempt is not a retry.
  ASSERT_TRUE(a_->send(ReadyMessage{.free_slots = 1}));
  b_ = join("b");
  const TrialMessage rerun = expect<TrialMessage>(*a_);
  EXPECT_EQ(rerun.params, first.params);
  EXPECT_EQ(expect<TrialMessage>(*b_).trial_id, rerun.trial_id);
  EXPECT_EQ(study_->storage().get_trial(rerun.trial_id).system_attrs.at(kPreemptedAttemptsAttr),
            "1");
}

}  // namespace
}  // namespace tuner
