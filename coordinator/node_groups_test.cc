#include "coordinator/node_groups.h"

#include <gtest/gtest.h>

#include "coordinator/parts_test_support.h"
#include "trials/system_attrs.h"

namespace tuner {
namespace {

class NodeGroupsTest : public testing::CoordinatorPartsTest {
 protected:
  void SetUp() override { run_ = make_run(make_study("nodes")); }

  // A two-node trial of run_: node 0 on executor "a", node 1 on "b". Returns the group's id
  // (node 0's lease id).
  uint64_t lease_group() {
    std::optional<Prepared> work = run_->next_work(commit_);
    EXPECT_TRUE(work);
    const uint64_t group_id = leases_.next_id();
    NodeGroup& group = groups_.open(group_id);
    trial_id_ = work->trial->id();
    auto node = [&](int n) {
      return LeaseRequest{.run = run_.get(),
                          .executor_id = n == 0 ? "a" : "b",
                          .route = n == 0 ? "a#1" : "b#1",
                          .trial_id = trial_id_,
                          .trial_number = work->trial->number(),
                          .group = group_id,
                          .node = n,
                          .nodes = 2};
    };
    LeaseRequest node0 = node(0);
    LeaseRequest node1 = node(1);
    node1.work.params = work->params;
    node0.work = std::move(*work);
    group.leases.push_back(leases_.grant(std::move(node0), clock_->steady_now()).id);
    group.leases.push_back(leases_.grant(std::move(node1), clock_->steady_now()).id);
    return group_id;
  }

  std::string fail_reason() {
    return run_->study.storage().get_trial(trial_id_).system_attrs.at(kFailReasonAttr);
  }

  std::unique_ptr<StudyRun> run_;
  int64_t trial_id_ = -1;
};

TEST_F(NodeGroupsTest, TheStoreKeepsEachKeyOnceAndCarriesItToTheOtherNodes) {
  const uint64_t group = lease_group();
  const uint64_t node1 = group + 1;
  EXPECT_EQ(groups_.store_set(*leases_.find(node1), "rank1", "addr"), std::nullopt);
  std::vector<StoreKeysMessage> to_a = outbox_.sent_to<StoreKeysMessage>("a#1");
  ASSERT_EQ(to_a.size(), 1u);
  EXPECT_EQ(to_a[0].lease_id, group);
  EXPECT_EQ(to_a[0].entries, (std::map<std::string, std::string>{{"rank1", "addr"}}));
  EXPECT_TRUE(outbox_.sent_to<StoreKeysMessage>("b#1").empty());  // not back to its sender

  // Sent again: nothing new. Another value: refused.
  EXPECT_EQ(groups_.store_set(*leases_.find(group), "rank1", "addr"), std::nullopt);
  EXPECT_EQ(outbox_.sent.size(), 1u);
  std::optional<std::string> problem = groups_.store_set(*leases_.find(group), "rank1", "other");
  ASSERT_TRUE(problem);
  EXPECT_EQ(*problem, "key 'rank1' is set already, to another value (keys are written once)");

  // A reconnected node gets the whole store.
  groups_.resend_store(*leases_.find(node1));
  std::vector<StoreKeysMessage> to_b = outbox_.sent_to<StoreKeysMessage>("b#1");
  ASSERT_EQ(to_b.size(), 1u);
  EXPECT_EQ(to_b[0].entries.size(), 1u);

  // At most kMaxStoreKeys keys.
  for (size_t k = 1; k < kMaxStoreKeys; ++k) {
    ASSERT_EQ(groups_.store_set(*leases_.find(node1), "k" + std::to_string(k), "v"), std::nullopt);
  }
  problem = groups_.store_set(*leases_.find(node1), "one more", "v");
  ASSERT_TRUE(problem);
  EXPECT_EQ(*problem, "the trial's store holds 4096 keys, its limit");
}

TEST_F(NodeGroupsTest, AOneNodeTrialHasNoStore) {
  Lease& single = lease_next(*run_, "a");
  std::optional<std::string> problem = groups_.store_set(single, "k", "v");
  ASSERT_TRUE(problem);
  EXPECT_EQ(*problem, "not a node of a multi-node trial (its job's \"nodes\" is 1)");
}

TEST_F(NodeGroupsTest, ANodesFailureWaitsForTheOtherNodesThenFailsTheTrialNamingEach) {
  const uint64_t group = lease_group();
  const uint64_t node1 = group + 1;
  const Clock::SteadyTime start = clock_->steady_now();
  groups_.node_failed(
      *leases_.find(node1),
      FailMessage{.lease_id = node1, .reason = "exited with code 3", .exit_code = 3});
  // It waits the settle time (here the lease timeout, which is shorter) for the other node.
  EXPECT_EQ(groups_.next_settle(), start + std::min(kNodeFailureSettle, kLeaseTimeout));
  groups_.settle_due(clock_->steady_now());
  EXPECT_EQ(run_->study.storage().get_trial(trial_id_).state, TrialState::kRunning);
  EXPECT_TRUE(outbox_.sent_to<AckMessage>("b#1").empty());  // ACKed once the trial is told

  // Every node ended: the trial is told now.
  groups_.node_failed(*leases_.find(group),
                      FailMessage{.lease_id = group, .reason = "a collective failed"});
  EXPECT_EQ(groups_.next_settle(), clock_->steady_now());
  groups_.settle_due(clock_->steady_now());
  const FrozenTrial trial = run_->study.storage().get_trial(trial_id_);
  EXPECT_EQ(trial.state, TrialState::kFail);
  EXPECT_EQ(fail_reason(),
            "\"trial 0 failed on its nodes: node 1 of 2 (executor b): exited with code 3; node 0 "
            "of 2 (executor a): a collective failed\"");
  EXPECT_EQ(trial.system_attrs.at("exit_code"), "3");  // the first failure's
  EXPECT_EQ(run_->stats.failed, 1);
  ASSERT_EQ(outbox_.sent_to<AckMessage>("a#1").size(), 1u);
  ASSERT_EQ(outbox_.sent_to<AckMessage>("b#1").size(), 1u);
  EXPECT_TRUE(outbox_.sent_to<AckMessage>("b#1")[0].accepted);
  EXPECT_EQ(leases_.size(), 0u);
  EXPECT_EQ(groups_.size(), 0u);
  ASSERT_NE(leases_.ended(group), nullptr);
  EXPECT_TRUE(leases_.ended(group)->committed);
}

TEST_F(NodeGroupsTest, AfterTheSettleTimeTheNodesStillRunningAreEnded) {
  const uint64_t group = lease_group();
  const uint64_t node1 = group + 1;
  groups_.node_failed(*leases_.find(node1), FailMessage{.lease_id = node1, .reason = "killed"});
  groups_.node_failed(*leases_.find(node1), FailMessage{.lease_id = node1, .reason = "killed"});
  clock_->advance(kLeaseTimeout);
  groups_.settle_due(clock_->steady_now());
  EXPECT_EQ(fail_reason(), "\"trial 0 failed on its nodes: node 1 of 2 (executor b): killed\"");
  EXPECT_EQ(outbox_.sent_to<AckMessage>("b#1").size(), 1u);  // the resend was not counted
  EXPECT_TRUE(outbox_.sent_to<AckMessage>("a#1").empty());
  // Node 0's lease ended: an outcome it sends later is refused, and its executor stops it.
  ASSERT_NE(leases_.ended(group), nullptr);
  EXPECT_FALSE(leases_.ended(group)->committed);
  EXPECT_NE(leases_.ended(group)->detail.find("ended: the trial was told on another node"),
            std::string::npos);
  EXPECT_EQ(leases_.size(), 0u);
}

TEST_F(NodeGroupsTest, ALostNodeFailsTheAttemptOnEveryNodeAndTheTrialRunsAgain) {
  const uint64_t group = lease_group();
  const uint64_t node1 = group + 1;
  groups_.expire_node(node1, "no heartbeat for 400 ms");
  EXPECT_EQ(run_->stats.leases_expired, 1);
  EXPECT_EQ(fail_reason(),
            "\"trial 0 lost a node: node 1 of 2 (executor b): lease expired: no heartbeat for "
            "400 ms\"");
  EXPECT_EQ(run_->pending_retries, 1);  // its re-run waits in storage
  EXPECT_EQ(leases_.size(), 0u);
  EXPECT_EQ(groups_.size(), 0u);
  ASSERT_NE(leases_.ended(node1), nullptr);
  EXPECT_NE(leases_.ended(node1)->detail.find("; the trial is run again as a new trial"),
            std::string::npos);
  std::optional<Prepared> rerun = run_->next_work(commit_);
  ASSERT_TRUE(rerun);
  EXPECT_EQ(rerun->attempt, 1);
}

TEST_F(NodeGroupsTest, NodesOtherThanZeroOnlyEndAndNodeZeroTellsTheTrial) {
  const uint64_t group = lease_group();
  const uint64_t node1 = group + 1;
  groups_.node_done(*leases_.find(node1));
  std::vector<AckMessage> acks = outbox_.sent_to<AckMessage>("b#1");
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].reason, "node 1 done; node 0 tells the trial");
  EXPECT_EQ(groups_.size(), 1u);
  EXPECT_EQ(leases_.size(), 1u);
  // Node 0's outcome committed (its lease ended): the group is done with.
  leases_.take(group);
  groups_.trial_told(group);
  EXPECT_EQ(groups_.size(), 0u);
}

TEST_F(NodeGroupsTest, UndoingAGroupTakesBackEveryNodeAndTheTrialWaits) {
  const uint64_t group = lease_group();
  groups_.undo(group, "executor b of another node was unreachable");
  EXPECT_EQ(leases_.size(), 0u);
  EXPECT_EQ(groups_.size(), 0u);
  ASSERT_EQ(run_->prepared.size(), 1u);
  EXPECT_EQ(run_->prepared.front().trial->id(), trial_id_);
  ASSERT_NE(leases_.ended(group + 1), nullptr);
  EXPECT_EQ(leases_.ended(group + 1)->detail,
            "lease " + std::to_string(group + 1) +
                " was taken back: executor b of another node was unreachable");
}

}  // namespace
}  // namespace tuner
