// Resuming a sweep (sweep/sweep_runner.h open_sweep) after lost trials: the sweep-level half of
// tuner/resume_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "storage/sqlite_storage.h"
#include "sweep/sweep_file.h"
#include "sweep/sweep_runner.h"
#include "tuner/study.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() / ("tuner_sweep_resume_test_" + std::to_string(::getpid()) +
                                         "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// Regression: re-runs of lost trials counted against budget.trials once a sweep was resumed, though
// they do not within one run: budget 6 with one lost trial ran 6 new trials and a re-run in one
// go, but 5 new ones and a re-run when the coordinator was restarted.
TEST(Resume, ReRunsOfLostTrialsDoNotCountAgainstTheTrialBudgetOfAResumedSweep) {
  TempDir dir;
  SweepFile sweep = parse_sweep_file(R"({
      "name": "budget",
      "space": {"params": {"x": {"type": "float", "low": 0, "high": 1}}},
      "objective": {"metric": "loss", "direction": "minimize"},
      "budget": {"trials": 6},
      "job": {"kind": "command", "argv": ["true", "{x}"]}})",
                                     dir.file("sweep.json"));
  sweep.storage_path = dir.file("budget.db");
  auto storage = std::make_shared<SqliteStorage>(sweep.storage_path);
  OpenedSweep first = open_sweep(sweep, storage);
  EXPECT_EQ(first.remaining_trials, 6);
  Study& study = first.study;
  Trial a = study.ask();
  study.tell(a, 1.0);
  // b's run is lost: FAIL, and its re-run (run, here) carries the lineage.
  Trial b = study.ask();
  ASSERT_TRUE(study.fail_and_retry(b, "lease expired", 3).retry);
  Trial b_again = study.ask();
  EXPECT_EQ(b_again.retry_history(), std::vector<int>{b.number()});
  EXPECT_EQ(b_again.params(), b.params());
  study.tell(b_again, 2.0);
  // c's run is lost as the sweep stops: its re-run waits.
  Trial c = study.ask();
  ASSERT_TRUE(study.fail_and_retry(c, "abandoned: the sweep was stopped", std::nullopt).retry);

  // Resumed: a, b and c were new; the re-runs are not. Three new trials to go.
  OpenedSweep resumed = open_sweep(sweep, storage);
  EXPECT_EQ(resumed.remaining_trials, 3);
  EXPECT_EQ(resumed.existing.size(), 5u);
}

}  // namespace
}  // namespace tuner
