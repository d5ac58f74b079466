// A storage write that fails in the middle of Study::tell or Trial::suggest leaves the trial as it
// was before the call, in storage and in the live handle, and the call can be made again.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>

#include "search/samplers/random_sampler.h"
#include "storage/fault_injection_storage.h"
#include "trials/error.h"
#include "tuner/study.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;
using Fault = FaultInjectionStorage::Fault;

class StudyFaultTest : public testing::TestWithParam<Fault> {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           ("tuner_study_fault_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  StudyOptions options(const std::string& file, std::shared_ptr<Storage> storage = nullptr) {
    StudyOptions o;
    o.name = "faults";
    SqliteStorageOptions so;
    so.busy_timeout = std::chrono::milliseconds(50);
    o.storage = storage ? storage : std::make_shared<SqliteStorage>((dir_ / file).string(), so);
    o.sampler = std::make_shared<RandomSampler>();
    o.seed = 21;
    return o;
  }
  std::shared_ptr<FaultInjectionStorage> faulty(const std::string& file) {
    SqliteStorageOptions so;
    so.busy_timeout = std::chrono::milliseconds(50);
    return std::make_shared<FaultInjectionStorage>(
        std::make_shared<SqliteStorage>((dir_ / file).string(), so));
  }
  FrozenTrial read_back(const std::string& file, int64_t trial_id) {
    return SqliteStorage((dir_ / file).string()).get_trial(trial_id);
  }

  fs::path dir_;
};

TEST_P(StudyFaultTest, AFailedSuggestChangesNothingAndCanBeRepeated) {
  // The reference: the same study without faults.
  Study reference = Study::create(options("reference.db"));
  Trial r = reference.ask();
  const double rx = r.suggest_float("x", 0, 1);
  const double ry = r.suggest_float("y", 0, 1);

  auto storage = faulty("study.db");
  Study study = Study::create(options("", storage));
  Trial t = study.ask();
  EXPECT_EQ(t.suggest_float("x", 0, 1), rx);
  storage->inject(GetParam());
  EXPECT_THROW(t.suggest_float("y", 0, 1), Error);
  EXPECT_EQ(t.params().size(), 1u);
  EXPECT_EQ(read_back("study.db", t.id()).params.size(), 1u);
  storage->heal();
  EXPECT_EQ(t.suggest_float("y", 0, 1), ry);  // the same value as without the fault
}

TEST_P(StudyFaultTest, AFailedTellChangesNothingAndCanBeRepeated) {
  auto storage = faulty("study.db");
  Study study = Study::create(options("", storage));
  Trial t = study.ask();
  t.suggest_float("x", 0, 1);
  t.report(1, 0.5);
  storage->inject(GetParam());
  EXPECT_THROW(study.tell(t, 0.25), Error);
  EXPECT_THROW(study.tell(t, TrialState::kFail, "diverged"), Error);
  FrozenTrial stored = read_back("study.db", t.id());
  EXPECT_EQ(stored.state, TrialState::kRunning);
  EXPECT_TRUE(stored.values.empty());
  EXPECT_FALSE(stored.system_attrs.contains("fail_reason"));
  storage->heal();
  EXPECT_EQ(study.tell(t, 0.25).state, TrialState::kComplete);
  EXPECT_EQ(read_back("study.db", t.id()).values, std::vector<double>{0.25});
}

TEST_P(StudyFaultTest, AFailedAskLeavesNoRunningTrialBehindWhenTheStorageRecovers) {
  auto storage = faulty("study.db");
  SearchSpace space;
  space.add_float("x", 0, 1);
  space.add_float("y", 0, 1);
  Study study = Study::create(options("", storage));
  // create_trial passes; storing the params (one step) fails; failing the trial then works
  // again only if the fault is gone, so a lasting fault leaves it RUNNING (for the stale
  // handling).
  storage->inject(GetParam(), 1);
  EXPECT_THROW(study.ask(space), Error);
  storage->heal();
  auto all = study.trials();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(all[0].params.empty());  // all or none
  Trial t = study.ask(space);
  EXPECT_EQ(t.number(), 1);
  EXPECT_EQ(study.tell(t, 1.0).state, TrialState::kComplete);
}

// kDiskFull is left out: these writes are small rows that fit in the file's existing pages, so a
// file that may not grow takes them (storage/fault_injection_storage_test.cc writes big ones).
INSTANTIATE_TEST_SUITE_P(Faults, StudyFaultTest,
                         testing::Values(Fault::kBusy, Fault::kReadOnly, Fault::kCommit));

}  // namespace
}  // namespace tuner
