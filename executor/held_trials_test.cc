#include "executor/held_trials.h"

#include <gtest/gtest.h>

#include <memory>

namespace tuner {
namespace {

std::unique_ptr<HeldJob> job(uint64_t lease, std::vector<int> gpus = {}) {
  auto j = std::make_unique<HeldJob>();
  j->trial = TrialMessage{.lease_id = lease,
                          .study_name = "s",
                          .trial_id = int64_t(lease) * 10,
                          .gpus = std::move(gpus)};
  return j;
}

TEST(HeldTrialsTest, ListsRunningQueuedAndUnackedLeases) {
  HeldTrials held;
  held.running[3] = job(3, {0});
  held.queued.push_back(job(1, {1}));
  held.unacked[2] =
      HeldTrials::Unacked{ResultMessage{.lease_id = 2}, HeldLease{.lease_id = 2, .trial_id = 20}};
  EXPECT_EQ(held.jobs(), 2);
  EXPECT_EQ(held.lease_ids(), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_TRUE(held.contains(1) && held.contains(2) && held.contains(3));
  EXPECT_FALSE(held.contains(4));
  const std::vector<HeldLease> leases = held.leases();
  ASSERT_EQ(leases.size(), 3u);
  EXPECT_EQ(leases[0], (HeldLease{.lease_id = 3, .study_name = "s", .trial_id = 30, .gpus = {0}}));
  // The GPUs of running and queued trials are taken; an unacked trial's are free again.
  EXPECT_EQ(held.free_gpus({GpuInfo{.index = 0}, GpuInfo{.index = 1}, GpuInfo{.index = 2}}),
            std::vector<int>{2});
}

TEST(HeldTrialsTest, ATrialSendingItsFilesHoldsItsLeaseButNoSlotOrGpu) {
  HeldTrials held;
  held.sending[4] = HeldTrials::Sending{
      .outcome = ResultMessage{.lease_id = 4},
      .lease = HeldLease{.lease_id = 4, .study_name = "s", .trial_id = 40, .gpus = {0}},
      .files = std::make_unique<FileSender>(4, std::vector<TrialFile>{})};
  EXPECT_EQ(held.jobs(), 0);
  EXPECT_TRUE(held.contains(4));
  EXPECT_EQ(held.lease_ids(), std::vector<uint64_t>{4});
  ASSERT_EQ(held.leases().size(), 1u);
  EXPECT_EQ(held.leases()[0].trial_id, 40);
  EXPECT_EQ(held.free_gpus({GpuInfo{.index = 0}}), std::vector<int>{0});
}

TEST(HeldTrialsTest, DropsTheQueuedTrialsTheCoordinatorNoLongerHolds) {
  HeldTrials held;
  held.queued.push_back(job(1));
  held.queued.push_back(job(2));
  held.drop_queued_except({2});
  ASSERT_EQ(held.queued.size(), 1u);
  EXPECT_EQ(held.queued[0]->trial.lease_id, 2u);
}

TEST(HeldTrialsTest, KnowsWhetherARunningTrialIsANodeOfAMultiNodeTrial) {
  HeldTrials held;
  held.running[1] = job(1);
  EXPECT_FALSE(held.has_node_stores());
  held.running[1]->node_store = std::make_unique<NodeStoreRelay>();
  EXPECT_TRUE(held.has_node_stores());
}

TEST(HeldJobTest, TheFirstStopReasonIsKeptAndADecisionToStopStopsTheJob) {
  HeldJob j;
  j.decide(JobDecision::kContinue);
  EXPECT_FALSE(j.stop_source.stop_requested());
  j.stop("the coordinator gave up lease 1");
  j.stop("the executor is shutting down");
  EXPECT_EQ(j.stop_reason(), "the coordinator gave up lease 1");
  HeldJob paused;
  paused.decide(JobDecision::kPause);
  EXPECT_TRUE(paused.stop_source.stop_requested());
  EXPECT_EQ(paused.decision.load(), JobDecision::kPause);
  EXPECT_TRUE(paused.stop_reason().empty());
}

// The continue that answers an earlier report, arriving after the job was paused at its last
// step, left it looking neither paused nor stopped: a pause the job had taken ended as a FAIL.
TEST(HeldJobTest, ALateContinueDoesNotTakeBackAPause) {
  HeldJob j;
  j.decide(JobDecision::kPause);
  j.decide(JobDecision::kContinue);
  EXPECT_EQ(j.decision.load(), JobDecision::kPause);
}

}  // namespace
}  // namespace tuner
