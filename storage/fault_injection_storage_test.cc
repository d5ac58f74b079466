#include "storage/fault_injection_storage.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "storage/sqlite/connection.h"
#include "trials/error.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;
using Fault = FaultInjectionStorage::Fault;

class FaultInjectionTest : public testing::TestWithParam<Fault> {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           ("tuner_fault_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "study.db").string();
    SqliteStorageOptions options;
    options.busy_timeout = std::chrono::milliseconds(100);
    storage_ =
        std::make_shared<FaultInjectionStorage>(std::make_shared<SqliteStorage>(path_, options));
    study_ = storage_->create_study("s", {StudyDirection::kMinimize});
    FrozenTrial t = storage_->create_trial(study_.study_id);
    trial_id_ = t.trial_id;
    storage_->set_trial_param(trial_id_, "x", FloatDistribution{0, 1}, 0.5);
    storage_->set_trial_intermediate_value(trial_id_, 1, 0.25);
  }
  void TearDown() override {
    storage_.reset();
    fs::remove_all(dir_);
  }

  // The trial as a fresh storage on the file reads it (what a resumed process would see).
  FrozenTrial read_back() { return SqliteStorage(path_).get_trial(trial_id_); }
  size_t trial_count() { return SqliteStorage(path_).get_trials(study_.study_id).size(); }

  // Runs `write` under the fault and checks the error: its code, and that it names the file.
  void expect_fault(const std::function<void()>& write) {
    try {
      write();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      ErrorCode expected = GetParam() == Fault::kBusy     ? ErrorCode::kUnavailable
                           : GetParam() == Fault::kCommit ? ErrorCode::kInternal
                                                          : ErrorCode::kFailedPrecondition;
      EXPECT_EQ(e.code(), expected) << e.what();
      EXPECT_NE(std::string(e.what()).find(path_), std::string::npos) << e.what();
    }
  }

  fs::path dir_;
  std::string path_;
  std::shared_ptr<FaultInjectionStorage> storage_;
  StudyRecord study_;
  int64_t trial_id_ = -1;
};

// A value large enough to need new pages (so that a file that may not grow refuses it).
std::string big_json() { return "\"" + std::string(20000, 'x') + "\""; }

TEST_P(FaultInjectionTest, AFailedWriteLeavesNoHalfWrittenTrial) {
  const FrozenTrial before = read_back();
  storage_->inject(GetParam());
  // finish_trial is several rows (state, values, attributes): all or nothing.
  expect_fault([&] {
    storage_->finish_trial(trial_id_, TrialState::kComplete, {1.0}, {{"note", big_json()}});
  });
  expect_fault([&] { storage_->set_trial_user_attr(trial_id_, "note", big_json()); });
  expect_fault([&] {
    FrozenTrial from = before;
    from.user_attrs["note"] = big_json();
    storage_->create_trial(study_.study_id, TrialState::kWaiting, &from);
  });
  const FrozenTrial after = read_back();
  EXPECT_EQ(after.state, TrialState::kRunning);
  EXPECT_TRUE(after.values.empty());
  EXPECT_FALSE(after.datetime_complete);
  EXPECT_EQ(after.params, before.params);
  EXPECT_EQ(after.intermediate_values, before.intermediate_values);
  EXPECT_EQ(after.user_attrs, before.user_attrs);
  EXPECT_EQ(after.system_attrs, before.system_attrs);
  EXPECT_EQ(trial_count(), 1u);
  {
    sqlite::Connection conn(path_);
    auto q = conn.query("PRAGMA integrity_check");
    ASSERT_TRUE(q.step());
    EXPECT_EQ(q.text(0), "ok");
  }

  // Healed, the same writes go through.
  storage_->heal();
  storage_->finish_trial(trial_id_, TrialState::kComplete, {1.0}, {{"note", big_json()}});
  EXPECT_EQ(read_back().state, TrialState::kComplete);
  EXPECT_EQ(read_back().system_attrs.at("note"), big_json());
}

TEST_P(FaultInjectionTest, AFaultCanStartAfterSomeWrites) {
  storage_->inject(GetParam(), 2);
  storage_->set_trial_intermediate_value(trial_id_, 2, 0.5);
  storage_->set_trial_intermediate_value(trial_id_, 3, 0.5);
  expect_fault([&] { storage_->set_trial_user_attr(trial_id_, "note", big_json()); });
  EXPECT_EQ(read_back().intermediate_values.size(), 3u);
  EXPECT_TRUE(read_back().user_attrs.empty());
  EXPECT_EQ(storage_->writes(), 3 + 4);  // and the four of SetUp
}

TEST_P(FaultInjectionTest, AFailedBatchStoresNothingOfItself) {
  const FrozenTrial before = read_back();
  const std::optional<uint64_t> changes = storage_->change_count();
  bool failed = false;
  try {
    storage_->run_batch([&] {
      storage_->create_trial(study_.study_id);
      storage_->inject(GetParam());
      try {
        storage_->finish_trial(trial_id_, TrialState::kComplete, {1.0}, {{"note", big_json()}});
      } catch (const Error&) {
        // kBusy, kDiskFull, kReadOnly fail the call; kCommit lets it through and fails the batch.
      }
    });
  } catch (const Error& e) {
    // kCommit fails the COMMIT; after SQLITE_FULL, SQLite itself rolled the whole batch back.
    failed = true;
    EXPECT_TRUE(GetParam() == Fault::kCommit || GetParam() == Fault::kDiskFull) << e.what();
  }
  storage_->heal();
  EXPECT_EQ(failed, GetParam() == Fault::kCommit || GetParam() == Fault::kDiskFull);
  EXPECT_EQ(read_back().state, before.state);  // the failed finish changed nothing either way
  // A failed batch stores nothing of itself; one that committed has its new trial.
  EXPECT_EQ(trial_count(), failed ? 1u : 2u);
  EXPECT_NE(storage_->change_count(), changes);
  // Afterwards the storage works as before.
  storage_->finish_trial(trial_id_, TrialState::kComplete, {1.0});
  EXPECT_EQ(read_back().state, TrialState::kComplete);
}

// Regression: heal() took the fault's lock and then the base storage's, while a write inside the
// base's batch on another thread takes them the other way round: a deadlock (ThreadSanitizer
// reported the lock-order inversion).
TEST_P(FaultInjectionTest, HealingWhileAnotherThreadWritesInABatchDoesNotDeadlock) {
  std::atomic<bool> done = false;
  std::thread healer([&] {
    while (!done) {
      storage_->inject(GetParam());
      std::this_thread::yield();
      storage_->heal();
    }
  });
  for (int i = 0; i < 20; ++i) {
    try {
      storage_->run_batch([&] {
        for (int k = 0; k < 5; ++k) {
          try {
            storage_->set_trial_user_attr(trial_id_, "k", std::to_string(k));
          } catch (const Error&) {
            // the fault, when it started
          }
          // The batch holds the base storage while the healer ends the fault the write started.
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      });
    } catch (const Error&) {
      // kCommit and kDiskFull fail the batch
    }
  }
  done = true;
  healer.join();
  storage_->set_trial_user_attr(trial_id_, "k", "\"after\"");
  EXPECT_EQ(read_back().user_attrs.at("k"), "\"after\"");
}

INSTANTIATE_TEST_SUITE_P(Faults, FaultInjectionTest,
                         testing::Values(Fault::kBusy, Fault::kDiskFull, Fault::kReadOnly,
                                         Fault::kCommit),
                         [](const testing::TestParamInfo<Fault>& p) {
                           switch (p.param) {
                             case Fault::kBusy:
                               return std::string("Busy");
                             case Fault::kDiskFull:
                               return std::string("DiskFull");
                             case Fault::kReadOnly:
                               return std::string("ReadOnly");
                             case Fault::kCommit:
                               return std::string("Commit");
                           }
                           return std::string("Unknown");
                         });

TEST(ReadOnlyFile, ReadsWorkAndWritesFailNamingTheFile) {
  fs::path dir = fs::temp_directory_path() / ("tuner_ro_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "study.db").string();
  int64_t trial_id;
  {
    SqliteStorage storage(path);
    StudyRecord s = storage.create_study("s", {StudyDirection::kMinimize});
    trial_id = storage.create_trial(s.study_id).trial_id;
  }
  // Opened read-only (also what a file without write permission amounts to for a non-root user).
  SqliteStorageOptions options;
  options.read_only = true;
  SqliteStorage storage(path, options);
  EXPECT_EQ(storage.get_trial(trial_id).state, TrialState::kRunning);
  try {
    storage.finish_trial(trial_id, TrialState::kComplete, {1.0});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("read-only"), std::string::npos) << e.what();
  }
  EXPECT_EQ(SqliteStorage(path).get_trial(trial_id).state, TrialState::kRunning);

  if (::geteuid() != 0) {  // root writes through permissions
    fs::permissions(path, fs::perms::owner_read);
    fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
    try {
      SqliteStorage chmodded(path);
      chmodded.finish_trial(trial_id, TrialState::kComplete, {1.0});
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    fs::permissions(dir, fs::perms::owner_all);
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tuner
