#include "coordinator/lease_table.h"

#include <gtest/gtest.h>

#include "coordinator/parts_test_support.h"

namespace tuner {
namespace {

using std::chrono::milliseconds;

class LeaseTableTest : public testing::CoordinatorPartsTest {};

TEST_F(LeaseTableTest, LeaseIdsNeverRepeatNotEvenAfterOnesTakenBack) {
  auto run = make_run(make_study("s"));
  EXPECT_EQ(leases_.next_id(), kFirstLeaseId);
  EXPECT_EQ(lease_next(*run, "a").id, kFirstLeaseId);
  EXPECT_EQ(lease_next(*run, "a").id, kFirstLeaseId + 1);
  // A lease an earlier coordinator granted keeps its id; the next ones come after it.
  Lease& taken_back = leases_.grant(LeaseRequest{.run = run.get(), .executor_id = "b", .id = 5000},
                                    clock_->steady_now());
  EXPECT_EQ(taken_back.id, 5000u);
  EXPECT_EQ(leases_.next_id(), 5001u);
  // One with an id below the next keeps it and moves nothing.
  leases_.grant(LeaseRequest{.run = run.get(), .executor_id = "b", .id = 10}, clock_->steady_now());
  EXPECT_EQ(lease_next(*run, "a").id, 5001u);
  EXPECT_EQ(leases_.size(), 5u);
}

TEST_F(LeaseTableTest, CountsTheLeasesEachExecutorHolds) {
  auto run = make_run(make_study("s"));
  const uint64_t first = lease_next(*run, "a").id;
  lease_next(*run, "a");
  lease_next(*run, "b");
  EXPECT_EQ(leases_.held_count("a"), 2);
  EXPECT_EQ(leases_.held_count("b"), 1);
  EXPECT_EQ(leases_.held_count("c"), 0);
  leases_.take(first);
  EXPECT_EQ(leases_.held_count("a"), 1);
  // A lease granted again under its id replaces the one it had.
  leases_.grant(LeaseRequest{.run = run.get(), .executor_id = "b", .id = first + 1},
                clock_->steady_now());
  EXPECT_EQ(leases_.held_count("a"), 0);
  EXPECT_EQ(leases_.held_count("b"), 2);
  leases_.clear();
  EXPECT_EQ(leases_.held_count("b"), 0);
}

TEST_F(LeaseTableTest, ALeaseLivesItsTimeoutPastItsLastRenewal) {
  auto run = make_run(make_study("s"));
  const Clock::SteadyTime start = clock_->steady_now();
  Lease& lease = lease_next(*run, "a");
  EXPECT_EQ(lease.deadline, start + kLeaseTimeout);
  EXPECT_EQ(leases_.next_deadline(), start + kLeaseTimeout);

  clock_->advance(milliseconds(300));
  leases_.renew_if_held(lease.id, "someone else", clock_->steady_now());  // not theirs
  EXPECT_EQ(lease.deadline, start + kLeaseTimeout);
  leases_.renew_if_held(lease.id, "a", clock_->steady_now());
  EXPECT_EQ(lease.deadline, start + milliseconds(300) + kLeaseTimeout);
  leases_.renew(lease, start);  // a deadline never moves earlier
  EXPECT_EQ(lease.deadline, start + milliseconds(300) + kLeaseTimeout);

  EXPECT_TRUE(leases_.overdue(clock_->steady_now()).empty());
  clock_->advance(milliseconds(450));  // 50 ms past the deadline: 450 ms unrenewed
  const auto overdue = leases_.overdue(clock_->steady_now());
  ASSERT_EQ(overdue.size(), 1u);
  EXPECT_EQ(overdue[0].first, lease.id);
  EXPECT_EQ(overdue[0].second, milliseconds(450));
}

TEST_F(LeaseTableTest, ACoordinatorThatDidNotRunPostponesEveryDeadlineByThatLong) {
  auto run = make_run(make_study("s"));
  const Clock::SteadyTime start = clock_->steady_now();
  Lease& a = lease_next(*run, "a");
  clock_->advance(milliseconds(100));
  Lease& b = lease_next(*run, "b");
  leases_.postpone_all(milliseconds(8000));
  EXPECT_EQ(a.deadline, start + kLeaseTimeout + milliseconds(8000));
  EXPECT_EQ(b.deadline, start + milliseconds(100) + kLeaseTimeout + milliseconds(8000));
  clock_->advance(milliseconds(8000));  // the stall: nothing overdue after it
  EXPECT_TRUE(leases_.overdue(clock_->steady_now()).empty());
}

TEST_F(LeaseTableTest, CountsEachStudysTrialsLeasedAndFinishing) {
  auto a = make_run(make_study("a"));
  auto b = make_run(make_study("b"));
  Lease& one = lease_next(*a, "e1");
  // A two-node trial of `a` counts once, by node 0.
  Lease& node0 = lease_next(*a, "e1");
  node0.group = node0.id;
  leases_.grant(
      LeaseRequest{.run = a.get(), .executor_id = "e2", .group = node0.id, .node = 1, .nodes = 2},
      clock_->steady_now());
  EXPECT_EQ(leases_.counts(a.get()).leased, 2);
  EXPECT_EQ(a->leases().leased, 2);
  EXPECT_EQ(leases_.counts(b.get()).leased, 0);

  leases_.set_outcome_pending(one, true);
  leases_.set_outcome_pending(one, true);  // once
  EXPECT_EQ(leases_.counts(a.get()).finishing, 1);
  const uint64_t one_id = one.id;
  leases_.take(one_id);  // its outcome committed: neither leased nor finishing
  EXPECT_EQ(leases_.counts(a.get()).leased, 1);
  EXPECT_EQ(leases_.counts(a.get()).finishing, 0);

  leases_.clear();
  EXPECT_EQ(leases_.counts(a.get()).leased, 0);
  EXPECT_EQ(leases_.size(), 0u);
}

TEST_F(LeaseTableTest, SlotsAndGpusHeldOnAConnection) {
  auto run = make_run(make_study("s"));
  Lease& first = lease_next(*run, "a");
  first.gpus = {0};
  Lease& second = lease_next(*run, "a");
  second.gpus = {2};
  lease_next(*run, "b");
  const std::vector<GpuInfo> gpus = {{.index = 0}, {.index = 1}, {.index = 2}};
  EXPECT_EQ(leases_.held_on("a#1"), 2);
  EXPECT_EQ(leases_.free_gpus("a#1", gpus), std::vector<int>{1});
  EXPECT_EQ(leases_.free_gpus("b#1", gpus), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(leases_.held_by("a"), (std::vector<uint64_t>{first.id, second.id}));
  // A lease whose outcome is being committed frees its slot and GPUs already.
  leases_.set_outcome_pending(second, true);
  EXPECT_EQ(leases_.held_on("a#1"), 1);
  EXPECT_EQ(leases_.free_gpus("a#1", gpus), (std::vector<int>{1, 2}));
  EXPECT_EQ(leases_.held_by("a").size(), 2u);  // it is still held
  // A reconnect moves the executor's leases to its new connection.
  leases_.move_to(first, "a#2");
  EXPECT_EQ(first.route, "a#2");
  EXPECT_EQ(leases_.held_on("a#1"), 0);
  EXPECT_EQ(leases_.held_on("a#2"), 1);
  EXPECT_EQ(leases_.free_gpus("a#2", gpus), (std::vector<int>{1, 2}));
  EXPECT_EQ(leases_.held_by("a"), (std::vector<uint64_t>{first.id, second.id}));
  leases_.take(first.id);
  EXPECT_EQ(leases_.held_on("a#2"), 0);
  EXPECT_EQ(leases_.held_by("a"), std::vector<uint64_t>{second.id});
}

TEST_F(LeaseTableTest, SharesOfAGpuAddUpAndAGpuHeldWholeIsNotShared) {
  auto run = make_run(make_study("s"));
  const std::vector<GpuInfo> gpus = {{.index = 0}, {.index = 1}, {.index = 2}};
  for (int i = 0; i < 2; ++i) {
    Lease& half = lease_next(*run, "a");
    half.gpus = {1};
    half.gpu_share = kWholeGpu / 2;
  }
  Lease& quarter = lease_next(*run, "a");
  quarter.gpus = {2};
  quarter.gpu_share = kWholeGpu / 4;
  Lease& whole = lease_next(*run, "a");
  whole.gpus = {0};
  EXPECT_EQ(leases_.free_gpus("a#1", gpus), std::vector<int>{});
  EXPECT_EQ(leases_.shared_gpus("a#1", gpus),
            (std::vector<SharedGpu>{{.index = 1, .used = kWholeGpu},
                                    {.index = 2, .used = kWholeGpu / 4}}));
  EXPECT_TRUE(leases_.shared_gpus("b#1", gpus).empty());
  // An outcome being committed gives its share back.
  leases_.set_outcome_pending(quarter, true);
  EXPECT_EQ(leases_.free_gpus("a#1", gpus), std::vector<int>{2});
  EXPECT_EQ(leases_.shared_gpus("a#1", gpus),
            (std::vector<SharedGpu>{{.index = 1, .used = kWholeGpu}}));
}

TEST_F(LeaseTableTest, RemembersTheLatestEndedLeases) {
  LeaseTable table(1, kLeaseTimeout, /*max_ended=*/2);
  table.remember_end(1, true, "");
  table.remember_end(2, false, "lease 2 expired");
  table.remember_end(3, false, "lease 3 expired");
  EXPECT_EQ(table.ended(1), nullptr);
  ASSERT_NE(table.ended(2), nullptr);
  EXPECT_FALSE(table.ended(2)->committed);
  EXPECT_EQ(table.ended(2)->detail, "lease 2 expired");
  EXPECT_NE(table.ended(3), nullptr);
}

TEST_F(LeaseTableTest, DescribesALeaseNamingTheStudyWhenThereAreSeveral) {
  auto run = make_run(make_study("s"));
  Lease& lease = lease_next(*run, "a");
  const std::string id = std::to_string(lease.id);
  EXPECT_EQ(leases_.describe(lease), "lease " + id + " (trial 0, attempt 0, executor a)");
  leases_.name_studies(true);
  lease.nodes = 2;
  EXPECT_EQ(leases_.describe(lease),
            "lease " + id + " (study s, trial 0, attempt 0, node 0 of 2, executor a)");
}

}  // namespace
}  // namespace tuner
