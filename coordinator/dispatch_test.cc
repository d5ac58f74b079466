#include "coordinator/dispatch.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "coordinator/parts_test_support.h"
#include "coordinator/placement.h"

namespace tuner {
namespace {

std::string engine_job(int nodes, const std::string& artifacts_dir = "") {
  return R"({"kind": "engine", "backend": "cpu", "ranks": )" + std::to_string(nodes) +
         R"(, "nodes": )" + std::to_string(nodes) +
         (artifacts_dir.empty() ? "" : R"(, "artifacts_dir": ")" + artifacts_dir + R"(")") + R"(,
      "model": {"input": [1, 28, 28], "layers": [{"type": "flatten"}, {"type": "linear", "out": 10}]},
      "data": {"dataset": "fashion-mnist", "train": 100, "validation": 50},
      "training": {"lr": "{x}"}, "objective_metric": "val_accuracy"})";
}

class DispatchTest : public testing::CoordinatorPartsTest {
 protected:
  StudyRun& add(std::unique_ptr<StudyRun> run) {
    StudyRun& added = *run;
    runs_.emplace(run->id, std::move(run));
    return added;
  }
  ExecutorEntry& join(const std::string& id, int slots, int credit) {
    ExecutorEntry* e =
        executors_
            .admit(
                id + "#1",
                HelloMessage{.executor_id = id, .hostname = "h", .resources = {.cpu_slots = slots}},
                clock_->steady_now())
            .entry;
    e->credit = credit;  // as a READY offering `credit` slots leaves it, capacity included
    e->capacity = std::max(e->capacity, std::min(credit, lease_limit(slots)));
    return *e;
  }
  std::vector<TrialMessage> trials_to(const std::string& id) {
    return outbox_.sent_to<TrialMessage>(id + "#1");
  }

  StudyRuns runs_;
  ExecutorRegistry executors_{kLeaseTimeout};
  Dispatcher dispatcher_{runs_,   executors_, leases_, groups_,
                         commit_, outbox_,    *clock_, kHeartbeat};
};

TEST_F(DispatchTest, FillsEachExecutorsCreditWithTrialsAndSendsThem) {
  add(make_run(make_study("s")));
  ExecutorEntry& a = join("a", 2, 2);
  ExecutorEntry& b = join("b", 1, 3);  // its credit is more than its limit (2)
  dispatcher_.dispatch();
  const std::vector<TrialMessage> to_a = trials_to("a");
  ASSERT_EQ(to_a.size(), 2u);
  EXPECT_EQ(trials_to("b").size(), 2u);
  EXPECT_EQ(a.credit, 0);
  EXPECT_EQ(b.credit, 1);
  EXPECT_EQ(leases_.size(), 4u);
  EXPECT_EQ(to_a[0].study_name, "s");
  EXPECT_EQ(to_a[0].number, 0);
  EXPECT_EQ(to_a[1].number, 1);
  EXPECT_EQ(to_a[0].heartbeat_interval_ms, kHeartbeat.count());
  EXPECT_EQ(to_a[0].job_json, testing::kCommandJob);
  EXPECT_EQ(to_a[0].nodes, 1);
  EXPECT_EQ(to_a[0].checkpoint_path, std::nullopt);
  EXPECT_TRUE(leases_.contains(to_a[0].lease_id));
}

TEST_F(DispatchTest, StudiesShareTheSlotsFairly) {
  add(make_run(make_study("s")));
  add(make_run(make_study("t")));
  join("a", 4, 4);
  dispatcher_.dispatch();
  std::vector<std::string> studies;
  for (const TrialMessage& t : trials_to("a")) studies.push_back(t.study_name);
  EXPECT_EQ(studies, (std::vector<std::string>{"s", "t", "s", "t"}));
}

TEST_F(DispatchTest, AnUnreachableExecutorGetsNoMoreAndItsTrialGoesToAnother) {
  StudyRun& run = add(make_run(make_study("s"), testing::kCommandJob, /*n_trials=*/1));
  ExecutorEntry& a = join("a", 1, 1);
  join("b", 1, 1);
  outbox_.unreachable = {"a#1"};
  dispatcher_.dispatch();
  EXPECT_EQ(a.credit, 0);
  EXPECT_TRUE(outbox_.logged("executor a is unreachable; trial 0 waits for another"));
  const std::vector<TrialMessage> to_b = trials_to("b");
  ASSERT_EQ(to_b.size(), 1u);
  EXPECT_EQ(to_b[0].number, 0);  // the same trial, asked once
  EXPECT_EQ(run.study.trials().size(), 1u);
  EXPECT_EQ(leases_.size(), 1u);
}

TEST_F(DispatchTest, AMultiNodeTrialIsLeasedToItsNodesAtOnceOrNotAtAll) {
  StudyRun& run = add(make_run(make_study("nodes"), engine_job(2), /*n_trials=*/1));
  join("a", 1, 1);
  dispatcher_.dispatch();
  EXPECT_TRUE(outbox_.sent.empty());
  EXPECT_TRUE(
      outbox_.logged("each trial runs on 2 executors (the job's \"nodes\"), and 1 have "
                     "joined: its trials wait for more"));
  join("b", 1, 1);
  outbox_.unreachable = {"b#1"};
  dispatcher_.dispatch();
  // Node 1 could not be reached: the whole attempt is taken back, and the trial waits.
  EXPECT_EQ(leases_.size(), 0u);
  EXPECT_EQ(groups_.size(), 0u);
  ASSERT_EQ(run.prepared.size(), 1u);
  ASSERT_EQ(trials_to("a").size(), 1u);
  const uint64_t undone = trials_to("a")[0].lease_id;
  ASSERT_NE(leases_.ended(undone), nullptr);
  EXPECT_EQ(leases_.ended(undone)->detail,
            "lease " + std::to_string(undone) +
                " was taken back: executor b of another node was unreachable");

  outbox_.unreachable.clear();
  executors_.find("a#1")->credit = 1;
  executors_.find("b#1")->credit = 1;
  dispatcher_.dispatch();
  ASSERT_EQ(trials_to("a").size(), 2u);
  ASSERT_EQ(trials_to("b").size(), 1u);
  const TrialMessage node0 = trials_to("a")[1];
  const TrialMessage node1 = trials_to("b")[0];
  EXPECT_EQ(node0.number, 0);
  EXPECT_EQ(node1.trial_id, node0.trial_id);
  EXPECT_EQ(node0.node, 0);
  EXPECT_EQ(node1.node, 1);
  EXPECT_EQ(node1.nodes, 2);
  EXPECT_EQ(run.leases().leased, 1);  // one trial
  ASSERT_NE(groups_.find(node0.lease_id), nullptr);
  EXPECT_EQ(groups_.find(node0.lease_id)->leases,
            (std::vector<uint64_t>{node0.lease_id, node1.lease_id}));
}

TEST_F(DispatchTest, ARerunContinuesFromItsLineagesFirstCheckpoint) {
  StudyRun& run = add(make_run(make_study("s"), engine_job(1, "/runs")));
  join("a", 1, 1);
  dispatcher_.dispatch();
  ASSERT_EQ(trials_to("a").size(), 1u);
  EXPECT_EQ(trials_to("a")[0].checkpoint_path, "/runs/trial-0/resume.ckpt");
  Lease lost = leases_.take(trials_to("a")[0].lease_id);
  ASSERT_TRUE(run.fail_and_rerun(lost.work, "lease expired"));
  executors_.find("a#1")->credit = 1;
  dispatcher_.dispatch();
  ASSERT_EQ(trials_to("a").size(), 2u);
  const TrialMessage rerun = trials_to("a")[1];
  EXPECT_EQ(rerun.number, 1);
  EXPECT_EQ(rerun.attempt, 1);
  EXPECT_EQ(rerun.checkpoint_path, "/runs/trial-0/resume.ckpt");
}

TEST_F(DispatchTest, InsideABatchTheTrialsWaitForTheCommit) {
  StudyRun& run = add(make_run(make_study("s")));
  join("a", 2, 2);
  commit_.run(&run, [&] { dispatcher_.dispatch(); });
  EXPECT_TRUE(outbox_.sent.empty());  // the listener sends them: here it only records
  ASSERT_EQ(listener_.sent.size(), 2u);
  for (uint64_t id : listener_.sent) EXPECT_TRUE(leases_.find(id)->unsent);
  dispatcher_.send_trial(*leases_.find(listener_.sent[0]));
  EXPECT_EQ(trials_to("a").size(), 1u);
  EXPECT_FALSE(leases_.find(listener_.sent[0])->unsent);
}

TEST_F(DispatchTest, TakesBackTheTrialsAnExecutorRunsForAnEarlierCoordinator) {
  Study study = make_study("s");
  const int64_t orphan = study.ask().id();  // RUNNING, and held by nobody here
  StudyRun& run = add(make_run(study));
  ExecutorEntry& a = join("a", 1, 0);
  dispatcher_.take_back(
      a, {HeldLease{.lease_id = 5, .study_name = "other", .trial_id = orphan},
          HeldLease{.lease_id = 6, .study_name = "s", .trial_id = orphan, .node = 1},
          HeldLease{.lease_id = 7, .study_name = "s", .trial_id = orphan, .gpus = {1}}});
  EXPECT_EQ(leases_.size(), 1u);
  const Lease* lease = leases_.find(7);
  ASSERT_NE(lease, nullptr);
  EXPECT_EQ(lease->executor_id, "a");
  EXPECT_EQ(lease->trial_id, orphan);
  EXPECT_EQ(lease->gpus, std::vector<int>{1});
  EXPECT_EQ(run.stats.reattached, 1);
  EXPECT_TRUE(run.orphans.empty());
  EXPECT_TRUE(outbox_.logged("lease 7 (trial 0, attempt 0, executor a) taken back"));
}

}  // namespace
}  // namespace tuner
