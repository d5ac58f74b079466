#include "launch/slurm_launcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "trials/error.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A cluster in a map: sbatch gives ids 100, 101, ...; squeue lists the jobs not ended;
// scontrol shows how an ended job ended; every command is recorded.
class FakeSlurm final : public CommandRunner {
 public:
  CommandOutput run(const std::vector<std::string>& argv) override {
    commands.push_back(argv);
    CommandOutput out;
    out.status.exit_code = 0;
    const std::string& program = argv[0];
    if (program == "sbatch") {
      if (!refusal.empty()) {
        out.status.exit_code = 1;
        out.err = refusal;
        return out;
      }
      const std::string id = std::to_string(next_id++);
      queue[id] = "PENDING|Priority";
      out.out = id + "\n";
    } else if (program == "squeue") {
      for (const auto& [id, row] : queue) out.out += id + "|" + row + "\n";
    } else if (program == "scontrol") {
      out.out = ended.contains(argv.back()) ? ended[argv.back()] : "";
      if (out.out.empty()) out.status.exit_code = 1;
    } else if (program == "scancel") {
      for (size_t i = 1; i < argv.size(); ++i) queue.erase(argv[i]);
      if (argv.size() == 2 && argv[1].rfind("--name=", 0) == 0) queue.clear();
    }
    return out;
  }

  int count(const std::string& program) const {
    int n = 0;
    for (const auto& argv : commands) n += argv[0] == program ? 1 : 0;
    return n;
  }

  std::vector<std::vector<std::string>> commands;
  std::map<std::string, std::string> queue;  // id -> "STATE|REASON"
  std::map<std::string, std::string> ended;  // id -> scontrol's line
  std::string refusal;
  int next_id = 100;
};

class SlurmLauncherTest : public ::testing::Test {
 protected:
  SlurmLauncherTest() {
    dir_ = fs::temp_directory_path() /
           ("slurm_launcher_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  ~SlurmLauncherTest() override { fs::remove_all(dir_); }

  SlurmLauncherOptions options(SlurmOptions slurm) {
    return {
        .slurm = slurm,
        .connect_endpoint = "tcp://login1:5555",
        .coordinator_public_key = std::string(40, 'c'),
        .executor_keys = {.public_key = std::string(40, 'p'), .secret_key = std::string(40, 's')},
        .work_dir = (dir_ / "jobs").string(),
        .name = "mlp",
        .runner = slurm_,
        .clock = clock_,
        .poll_interval = std::chrono::seconds(1),
        .background = false};
  }

  // options() whose log lines go to lines_.
  SlurmLauncherOptions logged_options(SlurmOptions slurm) {
    SlurmLauncherOptions o = options(slurm);
    o.log = [this](const std::string& line) { lines_.push_back(line); };
    return o;
  }

  // The next tick looks at the queue.
  void next_look() { clock_->advance(std::chrono::seconds(1)); }

  // Submits job 100, which starts, and whose executor connects.
  void run_job_100_with_its_executor(SlurmLauncher& launcher) {
    launcher.tick({.startable_trials = 1});
    slurm_->queue["100"] = "RUNNING|None";
    next_look();
    launcher.tick({.executors = {{.id = "slurm-100"}}});
  }

  fs::path dir_;
  std::vector<std::string> lines_;  // the launcher's log, with logged_options()
  std::shared_ptr<FakeSlurm> slurm_ = std::make_shared<FakeSlurm>();
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
};

TEST_F(SlurmLauncherTest, WritesTheSecretKeyPrivatelyAndKeepsItOffTheCommandLine) {
  SlurmLauncher launcher(options({.max_executors = 2}));
  const fs::path key = dir_ / "jobs" / "executor.key";
  struct stat info {};
  ASSERT_EQ(::stat(key.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir_ / "jobs").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
  std::ifstream script(dir_ / "jobs" / "executor.sh");
  std::stringstream text;
  text << script.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("--key '" + key.string() + "'"));
  EXPECT_EQ(text.str().find(std::string(40, 's')), std::string::npos);

  launcher.tick({.startable_trials = 5});
  ASSERT_EQ(slurm_->count("sbatch"), 2);
  for (const auto& argv : slurm_->commands) {
    for (const std::string& word : argv) {
      EXPECT_EQ(word.find(std::string(40, 's')), std::string::npos) << word;
    }
  }
  launcher.cancel_all();
  EXPECT_FALSE(fs::exists(key));
}

TEST_F(SlurmLauncherTest, SubmitsOnceForWaitingTrialsAndCancelsEverythingWhenDestroyed) {
  {
    SlurmLauncher launcher(options({.max_executors = 3}));
    launcher.tick({.startable_trials = 2});
    EXPECT_EQ(slurm_->count("sbatch"), 2);
    launcher.tick({.startable_trials = 2});  // before poll_interval: nothing
    next_look();
    launcher.tick({.startable_trials = 2});  // the two pending jobs will bring the slots
    EXPECT_EQ(slurm_->count("sbatch"), 2);
    EXPECT_EQ(launcher.jobs().size(), 2u);
  }
  EXPECT_TRUE(slurm_->queue.empty());
  EXPECT_EQ(slurm_->commands.back()[0], "scancel");
}

TEST_F(SlurmLauncherTest, CancelsIdleExecutorsAfterTheGraceDownToTheMinimum) {
  SlurmLauncher launcher(
      options({.min_executors = 1, .max_executors = 2, .idle_grace = std::chrono::seconds(10)}));
  launcher.tick({.startable_trials = 2});
  slurm_->queue["100"] = "RUNNING|None";
  slurm_->queue["101"] = "RUNNING|None";
  const Clock::SteadyTime since = clock_->steady_now();
  const LaunchQueueState idle{.free_slots = 2,
                              .executors = {{.id = "slurm-100", .idle_since = since},
                                            {.id = "slurm-101", .idle_since = since}}};
  next_look();
  launcher.tick(idle);
  EXPECT_EQ(slurm_->count("scancel"), 0);
  clock_->advance(std::chrono::seconds(10));
  launcher.tick(idle);
  EXPECT_EQ(slurm_->count("scancel"), 1);
  EXPECT_EQ(launcher.jobs().size(), 1u);
  clock_->advance(std::chrono::seconds(60));
  launcher.tick(idle);
  EXPECT_EQ(slurm_->count("scancel"), 1);
  EXPECT_EQ(launcher.jobs().size(), 1u);  // min_executors
}

TEST_F(SlurmLauncherTest, AnIdleExecutorBesideABusyOneIsCancelledAfterTheGrace) {
  SlurmLauncher launcher(options({.max_executors = 2, .idle_grace = std::chrono::seconds(10)}));
  launcher.tick({.startable_trials = 2});
  slurm_->queue["100"] = "RUNNING|None";
  slurm_->queue["101"] = "RUNNING|None";
  next_look();
  // The budget is spent; job 100's executor runs the last trial, job 101's has none. An
  // executor of another launcher (or a local one) idles too.
  const LaunchQueueState state{
      .free_slots = 2,
      .executors = {{.id = "local", .idle_since = clock_->steady_now()},
                    {.id = "slurm-100"},
                    {.id = "slurm-101", .idle_since = clock_->steady_now()}}};
  launcher.tick(state);
  EXPECT_EQ(slurm_->count("scancel"), 0);
  clock_->advance(std::chrono::seconds(9));
  launcher.tick(state);
  EXPECT_EQ(slurm_->count("scancel"), 0);  // within the grace
  clock_->advance(std::chrono::seconds(1));
  launcher.tick(state);
  ASSERT_EQ(slurm_->count("scancel"), 1);
  EXPECT_EQ(slurm_->commands.back(), (std::vector<std::string>{"scancel", "101"}));
  ASSERT_EQ(launcher.jobs().size(), 1u);
  EXPECT_EQ(launcher.jobs()[0].id, "100");
  // The busy one is never cancelled, however long it runs.
  for (int i = 0; i < 10; ++i) {
    clock_->advance(std::chrono::seconds(60));
    launcher.tick(state);
  }
  EXPECT_EQ(slurm_->count("scancel"), 1);
  EXPECT_EQ(launcher.jobs().size(), 1u);
}

TEST_F(SlurmLauncherTest, ARunningJobWhoseExecutorHasNotConnectedIsNotIdle) {
  SlurmLauncher launcher(
      logged_options({.max_executors = 1, .idle_grace = std::chrono::seconds(10)}));
  launcher.tick({.startable_trials = 1});
  slurm_->queue["100"] = "RUNNING|None";
  for (int i = 0; i < 70; ++i) {
    next_look();
    launcher.tick({.executors = {{.id = "slurm-999", .idle_since = Clock::SteadyTime{}}}});
  }
  EXPECT_EQ(slurm_->count("scancel"), 0);
  EXPECT_EQ(slurm_->count("sbatch"), 1);
  EXPECT_THAT(lines_, ::testing::Contains(HasSubstr("1 running job(s) have not connected")));
}

TEST_F(SlurmLauncherTest, ARefusedSubmissionIsAnErrorWithSlurmsWords) {
  slurm_->refusal =
      "sbatch: error: invalid partition specified: nosuch\n"
      "sbatch: error: Batch job submission failed: Invalid partition name specified\n";
  SlurmLauncher launcher(options({.partition = "nosuch"}));
  try {
    launcher.tick({.startable_trials = 1});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_THAT(e.what(), HasSubstr("executors.slurm: Slurm refused the executor job of sweep "
                                    "'mlp': sbatch: error: invalid partition specified: nosuch; "
                                    "sbatch: error: Batch job submission failed: Invalid "
                                    "partition name specified (sbatch --parsable"));
  }
}

TEST_F(SlurmLauncherTest, InTheBackgroundAnErrorComesAtALaterTick) {
  slurm_->refusal = "sbatch: error: Batch job submission failed: Invalid account\n";
  SlurmLauncherOptions o = options({.account = "nosuch"});
  o.background = true;
  SlurmLauncher launcher(o);
  bool thrown = false;
  for (int i = 0; i < 2000 && !thrown; ++i) {
    try {
      launcher.tick({.startable_trials = 1});  // returns at once; the look runs on its thread
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } catch (const Error& e) {
      thrown = true;
      EXPECT_THAT(e.what(), HasSubstr("Invalid account"));
    }
  }
  EXPECT_TRUE(thrown);
}

TEST_F(SlurmLauncherTest, AJobThatEndsAtOnceIsAnErrorWithItsOutput) {
  SlurmLauncher launcher(options({}));
  launcher.tick({.startable_trials = 1});
  std::ofstream(dir_ / "jobs" / "slurm-100.out") << "/x/tuner: not found\n";
  slurm_->queue.clear();
  slurm_->ended["100"] =
      "JobId=100 JobName=x JobState=FAILED Reason=NonZeroExitCode Dependency=(null) "
      "ExitCode=127:0 RunTime=00:00:00 TimeLimit=UNLIMITED\n";
  next_look();
  try {
    launcher.tick({.startable_trials = 1});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("executor job 100 of sweep 'mlp' ended after 0 s: FAILED "
                                    "(exit code 127:0), reason NonZeroExitCode; its output, "));
    EXPECT_THAT(e.what(), HasSubstr("| /x/tuner: not found"));
  }
}

TEST_F(SlurmLauncherTest, AJobThatEndsLaterIsReplaced) {
  SlurmLauncher launcher(logged_options({}));
  launcher.tick({.startable_trials = 1});
  slurm_->queue.clear();
  slurm_->ended["100"] = "JobId=100 JobState=TIMEOUT Reason=TimeLimit RunTime=02:00:00\n";
  next_look();
  launcher.tick({.startable_trials = 1});
  EXPECT_EQ(slurm_->count("sbatch"), 2);
  EXPECT_THAT(lines_, ::testing::Contains(HasSubstr("job 100 ended TIMEOUT, reason TimeLimit")));
}

// Regression: a job preempted within a minute of its start stopped the sweep as if its executor
// had failed to start, though its executor had run trials.
TEST_F(SlurmLauncherTest, AJobWhoseExecutorConnectedIsReplacedHoweverSoonItEnds) {
  SlurmLauncher launcher(logged_options({}));
  run_job_100_with_its_executor(launcher);
  slurm_->queue.clear();
  slurm_->ended["100"] = "JobId=100 JobState=PREEMPTED Reason=None RunTime=00:00:05\n";
  next_look();
  launcher.tick({.startable_trials = 1});
  EXPECT_EQ(slurm_->count("sbatch"), 2);
  EXPECT_THAT(lines_, ::testing::Contains(HasSubstr("job 100 ended PREEMPTED")));
}

TEST_F(SlurmLauncherTest, ARequeuedJobIsKeptAndSaidAndStartsAgain) {
  SlurmLauncher launcher(logged_options({.max_executors = 1}));
  run_job_100_with_its_executor(launcher);
  slurm_->queue["100"] = "PENDING|BeginTime";
  next_look();
  launcher.tick({.startable_trials = 1});
  slurm_->queue["100"] = "RUNNING|None";
  next_look();
  launcher.tick({.startable_trials = 1});
  EXPECT_EQ(slurm_->count("sbatch"), 1);
  EXPECT_EQ(slurm_->count("scancel"), 0);
  EXPECT_THAT(lines_, ::testing::Contains(HasSubstr("job 100 requeued by Slurm (BeginTime)")));
  EXPECT_EQ(std::count_if(lines_.begin(), lines_.end(),
                          [](const std::string& l) {
                            return l.find("job 100 started") != std::string::npos;
                          }),
            2);
}

TEST_F(SlurmLauncherTest, AJobPendingForAReasonThatNeverPassesIsCancelledAndAnError) {
  SlurmLauncher launcher(options({}));
  launcher.tick({.startable_trials = 1});
  slurm_->queue["100"] = "PENDING|InvalidAccount";
  next_look();
  EXPECT_THROW(
      {
        try {
          launcher.tick({.startable_trials = 1});
        } catch (const Error& e) {
          EXPECT_THAT(e.what(), HasSubstr("pending for reason InvalidAccount"));
          throw;
        }
      },
      Error);
  EXPECT_TRUE(slurm_->queue.empty());
}

}  // namespace
}  // namespace tuner

namespace tuner {
namespace {}  // namespace
}  // namespace tuner
