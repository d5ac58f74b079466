#include "coordinator/lease_ends.h"

#include <gtest/gtest.h>

#include "coordinator/parts_test_support.h"
#include "coordinator/study_run.h"
#include "trials/error.h"
#include "trials/system_attrs.h"

namespace tuner {
namespace {

class LeaseEndsTest : public testing::CoordinatorPartsTest {
 protected:
  void SetUp() override {
    run_ = make_run(make_study("s"));
    run_->options.on_trial_finished = [this](const FrozenTrial& t) { finished_.push_back(t); };
  }
  FrozenTrial complete(Trial& trial) {
    return run_->tell_result(trial, ResultMessage{.metrics = {{"loss", 0.5}}});
  }
  std::vector<AckMessage> acks(const std::string& id) {
    return outbox_.sent_to<AckMessage>(id + "#1");
  }

  CoordinatorStats service_stats_;
  LeaseEnds ends_{leases_, groups_, commit_, outbox_, service_stats_};
  std::unique_ptr<StudyRun> run_;
  std::vector<FrozenTrial> finished_;
  const ExecutorEntry a_{.route = "a#1", .executor_id = "a"};
  const ExecutorEntry b_{.route = "b#1", .executor_id = "b"};
};

TEST_F(LeaseEndsTest, AnOutcomeIsAckedOnceCommittedAndAgainWhenSentAgain) {
  Lease& lease = lease_next(*run_, "a");
  const uint64_t id = lease.id;
  ends_.commit(a_, lease, [&](Trial& trial) { return complete(trial); });
  ASSERT_EQ(acks("a").size(), 1u);
  EXPECT_TRUE(acks("a")[0].accepted);
  EXPECT_FALSE(leases_.contains(id));
  EXPECT_EQ(run_->stats.completed, 1);
  ASSERT_EQ(finished_.size(), 1u);
  EXPECT_EQ(finished_[0].state, TrialState::kComplete);

  EXPECT_EQ(ends_.held_by(a_, id), nullptr);  // sent again
  ASSERT_EQ(acks("a").size(), 2u);
  EXPECT_TRUE(acks("a")[1].accepted);
  EXPECT_EQ(acks("a")[1].reason, "already committed");
  EXPECT_EQ(service_stats_.stale_outcomes_refused, 0);
}

TEST_F(LeaseEndsTest, AnOutcomeForALeaseHeldElsewhereExpiredOrUnknownIsRefused) {
  Lease& lease = lease_next(*run_, "a");
  const uint64_t id = lease.id;
  EXPECT_EQ(ends_.held_by(a_, id), &lease);
  EXPECT_EQ(ends_.held_by(b_, id), nullptr);
  ASSERT_EQ(acks("b").size(), 1u);
  EXPECT_FALSE(acks("b")[0].accepted);
  EXPECT_EQ(acks("b")[0].reason, "lease " + std::to_string(id) + " is held by executor a");

  ends_.expire(id, "its executor a left (BYE)");
  EXPECT_EQ(run_->stats.leases_expired, 1);
  EXPECT_EQ(run_->stats.failed, 1);
  EXPECT_EQ(run_->pending_retries, 1);
  EXPECT_EQ(finished_.size(), 1u);
  EXPECT_EQ(ends_.held_by(a_, id), nullptr);
  ASSERT_EQ(acks("a").size(), 1u);
  EXPECT_FALSE(acks("a")[0].accepted);
  EXPECT_EQ(acks("a")[0].reason, "lease " + std::to_string(id) +
                                     " of trial 0 expired (its executor a left (BYE)); the trial "
                                     "is run again as a new trial");

  EXPECT_EQ(ends_.held_by(a_, 5), nullptr);
  EXPECT_EQ(acks("a")[1].reason, "unknown lease 5");
  EXPECT_EQ(service_stats_.stale_outcomes_refused, 3);
}

TEST_F(LeaseEndsTest, APreemptedTrialIsRerunWithoutCountingTheAttempt) {
  run_ = make_run(make_study("p"), testing::kCommandJob, /*n_trials=*/1, /*max_retries=*/0);
  run_->options.on_trial_finished = [this](const FrozenTrial& t) { finished_.push_back(t); };
  const uint64_t id = lease_next(*run_, "a").id;
  ends_.preempt(id, "its executor a on node7 was stopped (checkpoint saved)");
  EXPECT_FALSE(leases_.contains(id));
  EXPECT_EQ(run_->stats.leases_expired, 0);
  EXPECT_EQ(run_->pending_retries, 1);  // max_retries 0, and still run again
  ASSERT_EQ(finished_.size(), 1u);
  EXPECT_EQ(finished_[0].system_attrs.at(kFailReasonAttr),
            "\"preempted: its executor a on node7 was stopped (checkpoint saved); re-run without "
            "a retry counted\"");
  EXPECT_EQ(finished_[0].system_attrs.at(kPreemptedAttemptsAttr), "1");
  EXPECT_TRUE(outbox_.logged("lease " + std::to_string(id) +
                             " (trial 0, attempt 0, executor a) preempted: its executor a on "
                             "node7 was stopped"));
  ASSERT_NE(leases_.ended(id), nullptr);
  EXPECT_FALSE(leases_.ended(id)->committed);
  EXPECT_NE(leases_.ended(id)->detail.find("was preempted"), std::string::npos);

  // The re-run is leased though the budget of one new trial is spent, and is no new trial.
  EXPECT_TRUE(run_->wants_slots());
  Lease& rerun = lease_next(*run_, "b");
  EXPECT_EQ(rerun.work.attempt, 1);
  EXPECT_EQ(rerun.work.history, std::vector<int>{0});
  EXPECT_EQ(run_->stats.trials_started, 1);
  EXPECT_EQ(run_->stats.retries_started, 1);
  // Its own loss still counts: with max_retries 0 it is not run again.
  ends_.expire(rerun.id, "no heartbeat");
  EXPECT_EQ(run_->pending_retries, 0);
  EXPECT_TRUE(run_->done());
}

TEST_F(LeaseEndsTest, APreemptedAttemptLeavesTheRetriesToTheLineage) {
  run_ = make_run(make_study("r"), testing::kCommandJob, /*n_trials=*/1, /*max_retries=*/1);
  ends_.preempt(lease_next(*run_, "a").id, "its executor a on node7 was stopped");
  ends_.preempt(lease_next(*run_, "b").id, "its executor b on node8 was stopped");
  // Two preempted attempts, then a lost one: max_retries 1 still re-runs it, once.
  ends_.expire(lease_next(*run_, "c").id, "no heartbeat");
  EXPECT_EQ(run_->pending_retries, 1);
  Lease& last = lease_next(*run_, "d");
  EXPECT_EQ(last.work.history, (std::vector<int>{0, 1, 2}));
  ends_.expire(last.id, "no heartbeat");
  EXPECT_EQ(run_->pending_retries, 0);
  EXPECT_EQ(run_->stats.trials_started, 1);
}

TEST_F(LeaseEndsTest, ALostLeaseOfAnExecutorThatLeftCountsAgainstMaxRetries) {
  run_ = make_run(make_study("l"), testing::kCommandJob, /*n_trials=*/1, /*max_retries=*/0);
  ends_.expire(lease_next(*run_, "a").id, "its executor a left (BYE)");
  EXPECT_EQ(run_->pending_retries, 0);
  EXPECT_TRUE(run_->done());
}

TEST_F(LeaseEndsTest, ALeaseNotRenewedForItsTimeoutExpires) {
  lease_next(*run_, "a");
  clock_->advance(kLeaseTimeout);
  ends_.expire_overdue(clock_->steady_now());
  EXPECT_EQ(leases_.size(), 0u);
  EXPECT_TRUE(outbox_.logged("expired: no heartbeat for 400 ms (lease timeout 400 ms)"));
}

TEST_F(LeaseEndsTest, AnOutcomeTheStorageCannotTakeNowIsLeftToBeSentAgain) {
  Lease& lease = lease_next(*run_, "a");
  ends_.commit(a_, lease, [](Trial&) -> FrozenTrial {
    throw Error(ErrorCode::kUnavailable, "database is locked");
  });
  EXPECT_TRUE(acks("a").empty());
  EXPECT_TRUE(leases_.contains(lease.id));
  EXPECT_TRUE(
      outbox_.logged("cannot commit the outcome (waiting for it to be resent): "
                     "database is locked"));
}

TEST_F(LeaseEndsTest, AnOutcomeStoredOutsideABatchEndsTheRunOfStorageFailures) {
  Lease& lease = lease_next(*run_, "a");
  commit_.write_failed("disk full (injected)");
  ends_.commit(a_, lease, [&](Trial& trial) { return complete(trial); });
  ASSERT_EQ(acks("a").size(), 1u);
  EXPECT_FALSE(commit_.storage_failing());
}

TEST_F(LeaseEndsTest, ATrialFinishedElsewhereRefusesTheOutcome) {
  Lease& lease = lease_next(*run_, "a");
  const uint64_t id = lease.id;
  run_->study.tell(*lease.work.trial, TrialState::kFail, "failed as stale");
  ends_.commit(a_, lease, [&](Trial& trial) { return complete(trial); });
  ASSERT_EQ(acks("a").size(), 1u);
  EXPECT_FALSE(acks("a")[0].accepted);
  EXPECT_NE(acks("a")[0].reason.find("the trial was finished elsewhere"), std::string::npos);
  EXPECT_FALSE(leases_.contains(id));
  EXPECT_EQ(run_->stats.stale_outcomes_refused, 1);
  EXPECT_TRUE(finished_.empty());
}

TEST_F(LeaseEndsTest, InsideABatchTheAckWaitsForTheCommit) {
  Lease& lease = lease_next(*run_, "a");
  const uint64_t id = lease.id;
  commit_.run(run_.get(), [&] {
    ends_.commit(a_, lease, [&](Trial& trial) { return complete(trial); });
    ends_.commit(a_, lease, [&](Trial& trial) { return complete(trial); });  // sent again
    EXPECT_TRUE(lease.outcome_pending);
  });
  EXPECT_TRUE(acks("a").empty());
  ASSERT_EQ(listener_.acknowledged.size(), 1u);  // the coordinator's listener ACKs it
  ends_.acknowledge(id, listener_.acknowledged[0].second);
  EXPECT_EQ(acks("a").size(), 1u);
  EXPECT_EQ(run_->leases().finishing, 0);
  EXPECT_EQ(run_->stats.completed, 1);
}

TEST_F(LeaseEndsTest, AbandoningFailsEveryLeasedTrialAndRequeuesIt) {
  const uint64_t first = lease_next(*run_, "a").id;
  lease_next(*run_, "b");
  ends_.abandon_all("the sweep was stopped");
  EXPECT_EQ(leases_.size(), 0u);
  EXPECT_EQ(run_->leases().leased, 0);
  EXPECT_EQ(run_->stats.failed, 2);
  EXPECT_EQ(finished_.size(), 2u);
  EXPECT_EQ(finished_[0].system_attrs.at(kFailReasonAttr), "\"abandoned: the sweep was stopped\"");
  EXPECT_EQ(run_->study.trials({.states = std::vector{TrialState::kWaiting}}).size(), 2u);
  ASSERT_NE(leases_.ended(first), nullptr);
  EXPECT_FALSE(leases_.ended(first)->committed);
  EXPECT_NE(leases_.ended(first)->detail.find("was abandoned: the sweep was stopped"),
            std::string::npos);
}

}  // namespace
}  // namespace tuner
