#include "coordinator/group_commit.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "coordinator/coordinator_test_support.h"
#include "coordinator/parts_test_support.h"
#include "storage/fault_injection_storage.h"
#include "storage/storage_fault.h"

namespace tuner {
namespace {

class GroupCommitTest : public testing::CoordinatorPartsTest {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tuner-group-commit-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    storage_ = std::make_shared<FaultInjectionStorage>(
        std::make_shared<SqliteStorage>((dir_ / "study.db").string()));
  }
  void TearDown() override {
    run_.reset();
    storage_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // One round: the outcome of `told` (a lease made before) and a new lease to executor "b".
  // Returns the new lease's id; checks that nothing goes out before the commit.
  uint64_t round(Lease& told) {
    uint64_t leased = 0;
    commit_.run(run_.get(), [&] {
      EXPECT_TRUE(commit_.open());
      commit_.told(told,
                   run_->tell_result(*told.work.trial, ResultMessage{.metrics = {{"loss", 0.5}}}));
      std::optional<Prepared> work = run_->next_work(commit_);
      ASSERT_TRUE(work);
      EXPECT_TRUE(work->asked_in_batch);
      const int64_t trial_id = work->trial->id();
      const int number = work->trial->number();
      Lease& lease = leases_.grant(LeaseRequest{.run = run_.get(),
                                                .executor_id = "b",
                                                .route = "b#1",
                                                .work = std::move(*work),
                                                .trial_id = trial_id,
                                                .trial_number = number},
                                   clock_->steady_now());
      commit_.lease_made(lease);
      leased = lease.id;
      EXPECT_TRUE(lease.unsent);
      EXPECT_EQ(run_->leases().finishing, 1);
      EXPECT_TRUE(listener_.acknowledged.empty());
      EXPECT_TRUE(listener_.sent.empty());
    });
    EXPECT_FALSE(commit_.open());
    return leased;
  }

  std::filesystem::path dir_;
  std::shared_ptr<FaultInjectionStorage> storage_;
  std::unique_ptr<StudyRun> run_;
};

TEST_F(GroupCommitTest, OnceTheBatchIsDurableItsAcksAndTrialsGoOut) {
  run_ = make_run(make_study("s", storage_));
  Lease& first = lease_next(*run_, "a");
  const uint64_t first_id = first.id;
  const uint64_t second = round(first);
  ASSERT_EQ(listener_.acknowledged.size(), 1u);
  EXPECT_EQ(listener_.acknowledged[0].first, first_id);
  EXPECT_EQ(listener_.acknowledged[0].second.state, TrialState::kComplete);
  EXPECT_EQ(listener_.sent, std::vector<uint64_t>{second});
  EXPECT_TRUE(listener_.credited.empty());
  EXPECT_EQ(storage_->base().get_trial(listener_.acknowledged[0].second.trial_id).state,
            TrialState::kComplete);
}

TEST_F(GroupCommitTest, WhenTheBatchFailsNothingOfItHappened) {
  run_ = make_run(make_study("s", storage_));
  Lease& first = lease_next(*run_, "a");
  const int64_t first_trial = first.trial_id;
  storage_->inject(FaultInjectionStorage::Fault::kCommit);
  const uint64_t second = round(first);
  // No ACK (the executor sends its outcome again), no TRIAL: the lease made is undone and its
  // executor gets its credit back; the trial asked in the batch does not exist.
  EXPECT_TRUE(listener_.acknowledged.empty());
  EXPECT_TRUE(listener_.sent.empty());
  EXPECT_EQ(listener_.credited, std::vector<std::string>{"b#1"});
  EXPECT_FALSE(leases_.contains(second));
  ASSERT_TRUE(leases_.contains(first.id));
  EXPECT_FALSE(leases_.find(first.id)->outcome_pending);
  EXPECT_EQ(run_->leases().leased, 1);
  EXPECT_EQ(run_->leases().finishing, 0);
  EXPECT_EQ(run_->stats.trials_started, 1);
  EXPECT_EQ(run_->study.storage().get_trial(first_trial).state, TrialState::kRunning);
  EXPECT_EQ(run_->study.trials().size(), 1u);
  EXPECT_TRUE(outbox_.logged("cannot commit this round's outcomes and new trials"));
  // The study asks again a heartbeat interval later.
  EXPECT_EQ(run_->ask_blocked_until, clock_->steady_now() + kHeartbeat);
  EXPECT_FALSE(run_->next_work(commit_));
  storage_->heal();
  clock_->advance(kHeartbeat);
  EXPECT_TRUE(run_->next_work(commit_));
}

// REPORTs are stored in the turn's batch (one commit for all of them, not one or two each), and
// each DECISION goes out only once its value is durable; a batch that fails stores none of them
// and answers none.
TEST_F(GroupCommitTest, ReportsOfABatchAreDecidedOnceDurableAndNotAtAllWhenItFails) {
  run_ = make_run(make_study("s", storage_));
  Lease& lease = lease_next(*run_, "a");
  Trial& trial = *lease.work.trial;
  auto report_in_batch = [&](int64_t step) {
    const size_t decided_before = outbox_.sent_to<DecisionMessage>("a#1").size();
    commit_.run(run_.get(), [&] {
      const bool stop = run_->report(
          trial, ReportMessage{.lease_id = lease.id, .step = step, .metrics = {{"loss", 0.5}}},
          "lease");
      commit_.decided(
          "a#1", DecisionMessage{.lease_id = lease.id,
                                 .decision = stop ? JobDecision::kStop : JobDecision::kContinue});
      // Not durable yet: not decided.
      EXPECT_EQ(outbox_.sent_to<DecisionMessage>("a#1").size(), decided_before);
    });
  };
  report_in_batch(1);
  ASSERT_EQ(outbox_.sent_to<DecisionMessage>("a#1").size(), 1u);
  EXPECT_EQ(storage_->base().get_trial(trial.id()).intermediate_values.size(), 1u);

  storage_->inject(FaultInjectionStorage::Fault::kCommit);
  report_in_batch(2);
  EXPECT_EQ(outbox_.sent_to<DecisionMessage>("a#1").size(), 1u);  // none for the lost report
  EXPECT_EQ(storage_->base().get_trial(trial.id()).intermediate_values.count(2), 0u);
  EXPECT_TRUE(outbox_.logged("REPORT(s) of this round are lost"));
}

TEST_F(GroupCommitTest, AFailedAskInABatchIsReportedOnceCommittedOrNotAtAll) {
  auto sampler = std::make_shared<testing::ScriptedSampler>(std::vector<bool>{false, false});
  run_ = make_run(make_study("s", storage_, sampler));
  std::vector<FrozenTrial> finished;
  run_->options.on_trial_finished = [&](const FrozenTrial& t) { finished.push_back(t); };
  commit_.run(run_.get(), [&] {
    EXPECT_FALSE(run_->next_work(commit_));
    EXPECT_TRUE(finished.empty());
  });
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].state, TrialState::kFail);
  EXPECT_EQ(run_->stats.failed_asks, 1);

  clock_->advance(kHeartbeat);
  storage_->inject(FaultInjectionStorage::Fault::kCommit);
  commit_.run(run_.get(), [&] { EXPECT_FALSE(run_->next_work(commit_)); });
  EXPECT_EQ(finished.size(), 1u);  // its FAIL trial was not stored
  EXPECT_EQ(run_->stats.failed_asks, 1);
}

TEST_F(GroupCommitTest, WritesFailingOnAFullDiskAreSaidAtOnceAndGivenUpAfterAFewTries) {
  run_ = make_run(make_study("s", storage_));
  const Lease& first = lease_next(*run_, "a");
  const int64_t first_trial = first.trial_id;
  storage_->inject(FaultInjectionStorage::Fault::kDiskFull);
  // Asks until the file cannot grow (a new trial may fit in a page it has): that ask fails for
  // the file's sake, which is not "no more trials".
  bool asked = true;
  for (int i = 0; i < 1000 && asked; ++i) {
    commit_.run(run_.get(), [&] { asked = run_->next_work(commit_).has_value(); });
  }
  EXPECT_FALSE(asked);
  EXPECT_FALSE(run_->exhausted);
  EXPECT_TRUE(commit_.storage_failing());
  ASSERT_EQ(listener_.warned.size(), 1u);
  EXPECT_NE(listener_.warned[0].find("the disk is full"), std::string::npos) << listener_.warned[0];
  EXPECT_NE(listener_.warned[0].find("study.db"), std::string::npos) << listener_.warned[0];
  EXPECT_FALSE(commit_.storage_failure());
  // Tried again a heartbeat later, each time; given up once it failed a few times over
  // kGiveUpAfter.
  const auto step =
      std::chrono::duration_cast<std::chrono::milliseconds>(GroupCommit::kGiveUpAfter) /
          GroupCommit::kGiveUpFailures +
      kHeartbeat;
  for (int i = 0; i < GroupCommit::kGiveUpFailures; ++i) {
    clock_->advance(step);
    commit_.run(run_.get(), [&] { EXPECT_FALSE(run_->next_work(commit_)); });
  }
  ASSERT_TRUE(commit_.storage_failure());
  EXPECT_NE(commit_.storage_failure()->find("the disk is full"), std::string::npos);
  EXPECT_EQ(listener_.warned.size(), 1u);  // said once per run of failures
  // What was committed before is there.
  storage_->heal();
  EXPECT_EQ(storage_->base().get_trial(first_trial).state, TrialState::kRunning);
}

TEST_F(GroupCommitTest, AReadOnlyFileThatIsWritableAgainEndsTheRunOfFailures) {
  run_ = make_run(make_study("s", storage_));
  Lease& first = lease_next(*run_, "a");
  storage_->inject(FaultInjectionStorage::Fault::kReadOnly);
  commit_.run(run_.get(), [&] { EXPECT_FALSE(run_->next_work(commit_)); });
  EXPECT_TRUE(commit_.storage_failing());
  ASSERT_EQ(listener_.warned.size(), 1u);
  EXPECT_NE(listener_.warned[0].find("read-only"), std::string::npos) << listener_.warned[0];
  storage_->heal();
  clock_->advance(kHeartbeat);
  round(first);
  EXPECT_FALSE(commit_.storage_failing());
  EXPECT_FALSE(commit_.storage_failure());
  ASSERT_EQ(listener_.warned.size(), 2u);
  EXPECT_NE(listener_.warned[1].find("stored again"), std::string::npos) << listener_.warned[1];
}

TEST_F(GroupCommitTest, AWriteLockHeldPastTheBusyTimeoutIsSaidAtOnceAndGivenUpAfterAFewTries) {
  SqliteStorageOptions options;
  options.busy_timeout = std::chrono::milliseconds(20);
  storage_ = std::make_shared<FaultInjectionStorage>(
      std::make_shared<SqliteStorage>((dir_ / "locked.db").string(), options));
  run_ = make_run(make_study("s", storage_));
  const int64_t first_trial = lease_next(*run_, "a").trial_id;
  // Another connection takes the write lock (at the next write) and holds it: the batch cannot
  // start, and each write in it waits out the busy timeout. That is the storage failing, not a
  // transient ask to retry for ever.
  storage_->inject(FaultInjectionStorage::Fault::kBusy);
  EXPECT_THROW(storage_->set_study_user_attr(run_->study.id(), "k", "1"), StorageFault);
  commit_.run(run_.get(), [&] { EXPECT_FALSE(run_->next_work(commit_)); });
  EXPECT_TRUE(commit_.storage_failing());
  ASSERT_EQ(listener_.warned.size(), 1u);
  EXPECT_NE(listener_.warned[0].find("lock"), std::string::npos) << listener_.warned[0];
  EXPECT_NE(listener_.warned[0].find("locked.db"), std::string::npos) << listener_.warned[0];
  const auto step =
      std::chrono::duration_cast<std::chrono::milliseconds>(GroupCommit::kGiveUpAfter) /
          GroupCommit::kGiveUpFailures +
      kHeartbeat;
  for (int i = 0; i < GroupCommit::kGiveUpFailures; ++i) {
    clock_->advance(step);
    commit_.run(run_.get(), [&] { EXPECT_FALSE(run_->next_work(commit_)); });
  }
  ASSERT_TRUE(commit_.storage_failure());
  EXPECT_NE(commit_.storage_failure()->find("busy timeout"), std::string::npos);
  storage_->heal();
  EXPECT_EQ(storage_->base().get_trial(first_trial).state, TrialState::kRunning);
}

TEST_F(GroupCommitTest, WithSeveralStudiesAWriteStoredOnItsOwnEndsTheRunOfFailures) {
  run_ = make_run(make_study("s"));
  commit_.write_failed("disk full (injected)");
  EXPECT_TRUE(commit_.storage_failing());
  commit_.run(nullptr, [&] { EXPECT_TRUE(run_->next_work(commit_)); });
  EXPECT_FALSE(commit_.storage_failing());
  EXPECT_FALSE(commit_.storage_failure());
}

TEST_F(GroupCommitTest, WithSeveralStudiesEveryWriteCommitsOnItsOwn) {
  bool ran = false;
  commit_.run(nullptr, [&] {
    ran = true;
    EXPECT_FALSE(commit_.open());
  });
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace tuner
