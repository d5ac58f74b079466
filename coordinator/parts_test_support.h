// What the tests of the coordinator's parts share: a FakeClock, a recording outbox, a lease
// table, node groups and a batch, and in-memory studies of one float parameter "x" run as
// StudyRuns. No sockets. Test-only.
#ifndef TUNER_COORDINATOR_PARTS_TEST_SUPPORT_H_
#define TUNER_COORDINATOR_PARTS_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/group_commit.h"
#include "coordinator/lease_table.h"
#include "coordinator/node_groups.h"
#include "coordinator/recording_outbox.h"
#include "coordinator/study_run.h"
#include "search/samplers/random_sampler.h"
#include "storage/in_memory_storage.h"

namespace tuner::testing {

inline constexpr char kCommandJob[] =
    R"({"kind": "command", "argv": ["true", "{x}"], "objective_metric": "loss"})";

// A GroupCommit::Listener that keeps what it was told.
class RecordingListener final : public GroupCommit::Listener {
 public:
  void acknowledge(uint64_t lease_id, const FrozenTrial& finished) override {
    acknowledged.emplace_back(lease_id, finished);
  }
  void send_trial(uint64_t lease_id) override { sent.push_back(lease_id); }
  void return_credit(const std::string& route) override { credited.push_back(route); }
  void warn(const std::string& line) override { warned.push_back(line); }

  std::vector<std::pair<uint64_t, FrozenTrial>> acknowledged;
  std::vector<std::string> warned;
  std::vector<uint64_t> sent;
  std::vector<std::string> credited;
};

class CoordinatorPartsTest : public ::testing::Test {
 protected:
  static constexpr std::chrono::milliseconds kHeartbeat{100};
  static constexpr std::chrono::milliseconds kLeaseTimeout{400};
  static constexpr uint64_t kFirstLeaseId = 1000;

  // A study on the fake clock, in `storage` (default: in memory), without heartbeats.
  Study make_study(const std::string& name, std::shared_ptr<Storage> storage = nullptr,
                   std::shared_ptr<Sampler> sampler = nullptr) {
    StudyOptions o;
    o.name = name;
    o.sampler = sampler ? std::move(sampler) : std::make_shared<RandomSampler>();
    o.seed = 7;
    o.storage = storage ? std::move(storage) : std::make_shared<InMemoryStorage>();
    o.clock = clock_;
    o.heartbeat_interval = std::nullopt;
    SearchSpace space;
    space.add_float("x", 0.0, 1.0);
    o.space = space;
    return Study::create(o);
  }

  StudyRunContext context() {
    return StudyRunContext{.clock = clock_.get(),
                           .outbox = &outbox_,
                           .leases = &leases_,
                           .heartbeat_interval = kHeartbeat,
                           .lease_timeout = kLeaseTimeout};
  }

  std::unique_ptr<StudyRun> make_run(Study study, const std::string& job = kCommandJob,
                                     std::optional<int> n_trials = std::nullopt,
                                     int max_retries = 3) {
    StudyRunOptions o;
    o.job_json = job;
    o.n_trials = n_trials;
    o.max_retries = max_retries;
    return std::make_unique<StudyRun>(next_run_id_++, std::move(study), std::move(o), context());
  }

  // Leases `run`'s next trial (asked now, outside any batch) to `executor` on route
  // "<executor>#1".
  Lease& lease_next(StudyRun& run, const std::string& executor) {
    std::optional<Prepared> work = run.next_work(commit_);
    EXPECT_TRUE(work);
    const int64_t trial_id = work->trial->id();
    const int number = work->trial->number();
    return leases_.grant(LeaseRequest{.run = &run,
                                      .executor_id = executor,
                                      .route = executor + "#1",
                                      .work = std::move(*work),
                                      .trial_id = trial_id,
                                      .trial_number = number},
                         clock_->steady_now());
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  RecordingOutbox outbox_;
  LeaseTable leases_{kFirstLeaseId, kLeaseTimeout};
  NodeGroups groups_{leases_, outbox_, *clock_, kLeaseTimeout, kHeartbeat};
  RecordingListener listener_;
  GroupCommit commit_{leases_, groups_, outbox_, *clock_, kHeartbeat, listener_};
  StudyRunId next_run_id_ = 0;
};

}  // namespace tuner::testing

#endif  // TUNER_COORDINATOR_PARTS_TEST_SUPPORT_H_
