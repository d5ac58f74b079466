#include "sweep/trial_logs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "trials/system_attrs.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;

TEST(TrialLogsTest, ProgramLinesLeaveOutTunersNotes) {
  const std::string tail =
      "[tuner] trial 3 (id 4): running python3 t.py\nloading\n\nTraceback:\n  File \"t.py\"\n"
      "ValueError: boom\n[tuner] trial 3: exited with code 1 after 9 ms\n";
  EXPECT_EQ(program_lines(tail, 2),
            (std::vector<std::string>{"  File \"t.py\"", "ValueError: boom"}));
  EXPECT_EQ(program_lines(tail, 10).size(), 4u);
  EXPECT_TRUE(program_lines("[tuner] only notes\n", 5).empty());
}

TEST(TrialLogsTest, FailureSummaryIsTheReasonAndTheProgramsLastLine) {
  FrozenTrial t;
  t.state = TrialState::kFail;
  EXPECT_EQ(failure_summary(t), "");
  t.system_attrs[kFailReasonAttr] = nlohmann::json("exited with code 1").dump();
  EXPECT_EQ(failure_summary(t), "exited with code 1");
  t.system_attrs[kLogTailAttr] =
      nlohmann::json("Traceback:\nKeyError: 'x'\n[tuner] trial 0: exited with code 1\n").dump();
  EXPECT_EQ(failure_summary(t), "exited with code 1: KeyError: 'x'");
  EXPECT_EQ(log_tail(t), "Traceback:\nKeyError: 'x'\n[tuner] trial 0: exited with code 1\n");
}

TEST(TrialLogsTest, ShortenCutsToTheWidthAndTheFirstLine) {
  EXPECT_EQ(shorten("short", 10), "short");
  EXPECT_EQ(shorten("0123456789abc", 10), "0123456...");
  EXPECT_EQ(shorten("first\nsecond", 10), "first...");
}

TEST(TrialLogsTest, LogFilesOfATrialInLeaseOrder) {
  const fs::path dir =
      fs::temp_directory_path() / ("trial-logs-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* name : {"trial-3-lease-20.log", "trial-3-lease-9.log", "trial-31-lease-1.log",
                           "trial-3-lease-x.log", "trial-3-lease-5.txt", "trial-4-lease-2.log"}) {
    std::ofstream(dir / name) << name;
  }
  const std::vector<TrialLogFile> files = trial_log_files(dir, 3);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].lease_id, 9u);
  EXPECT_EQ(files[0].path, dir / "trial-3-lease-9.log");
  EXPECT_EQ(files[1].lease_id, 20u);
  EXPECT_TRUE(trial_log_files(dir / "missing", 3).empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tuner
