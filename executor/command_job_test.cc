#include "executor/command_job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "trials/error.h"

namespace tuner {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// `text` as an argv template that expands to itself: braces doubled.
std::string literal(const std::string& text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '{' || c == '}') out += c;
  }
  return out;
}

// /bin/sh running `script` as it is (no placeholders).
CommandJob shell(const std::string& script, CommandJobOptions options = {}) {
  return CommandJob(CommandSpec{.argv = {"/bin/sh", "-c", literal(script)}}, std::move(options));
}

CommandTrial trial() {
  return CommandTrial{
      .trial_id = 42,
      .number = 7,
      .params = {{"lr", 0.001}, {"layers", int64_t{3}}, {"opt", std::string("adam")}}};
}

std::string temp_dir() {
  std::string pattern = "/tmp/command_job_test.XXXXXX";
  char* dir = ::mkdtemp(pattern.data());
  EXPECT_NE(dir, nullptr);
  return pattern;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// True when `pid` no longer runs (gone, or a zombie waiting for an init that does not reap).
bool process_gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  auto close = line.rfind(')');
  return close != std::string::npos && line.size() > close + 2 && line[close + 2] == 'Z';
}

TEST(CommandJob, SubstitutesArgvAndSetsTheEnvironment) {
  std::string dir = temp_dir();
  CommandJob job(CommandSpec{.argv = {"/bin/sh", "-c",
                                      "echo \"argv: $0 $1 $2\" >&2; echo \"params: "
                                      "$TUNER_PARAMS\" >&2; echo \"id=$TUNER_TRIAL_ID "
                                      "n=$TUNER_TRIAL_NUMBER extra=$EXTRA pwd=$(pwd)\" >&2",
                                      "{lr}", "{layers}", "run-{trial_number}"},
                             .working_dir = dir,
                             .env = {{"EXTRA", "x y"}}});
  auto outcome = job.run(trial());
  EXPECT_TRUE(outcome.succeeded()) << outcome.describe() << "\n" << outcome.log_tail;
  EXPECT_THAT(outcome.log_tail, HasSubstr("argv: 0.001 3 run-7\n"));
  EXPECT_THAT(outcome.log_tail, HasSubstr(R"(params: {"layers":3,"lr":0.001,"opt":"adam"})"));
  EXPECT_THAT(outcome.log_tail, HasSubstr("id=42 n=7 extra=x y pwd=" + dir + "\n"));
  std::filesystem::remove_all(dir);
}

TEST(CommandJob, CheckpointPathIsPassedWhenSet) {
  auto t = trial();
  t.checkpoint_path = "/ckpt/trial-42";
  auto outcome = shell("echo \"ckpt=$TUNER_CHECKPOINT_PATH\" >&2").run(t);
  EXPECT_THAT(outcome.log_tail, HasSubstr("ckpt=/ckpt/trial-42\n"));
}

TEST(CommandJob, ReportsArriveInOrderAndTheLastFinalLineWins) {
  std::vector<CommandReport> reports;
  auto outcome = shell(R"(
    echo '{"step": 1, "val_loss": 0.9}'
    echo 'epoch 1 done'
    echo '{"step": 2, "val_loss": 0.5, "acc": 0.7}'
    echo '{"step": 3, "val_loss": oops'
    echo '{"val_loss": 0.6}'
    echo '{"step": 3, "val_loss": 0.41}'
    echo '{"val_loss": 0.4, "acc": 0.8}'
  )")
                     .run(trial(), [&](const CommandReport& r) {
                       reports.push_back(r);
                       return JobDecision::kContinue;
                     });
  EXPECT_TRUE(outcome.succeeded());
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports[0].step, 1);
  EXPECT_EQ(reports[0].metrics, (Metrics{{"val_loss", 0.9}}));
  EXPECT_EQ(reports[1].metrics, (Metrics{{"acc", 0.7}, {"val_loss", 0.5}}));
  EXPECT_EQ(reports[2].step, 3);
  EXPECT_EQ(reports[2].metrics, (Metrics{{"val_loss", 0.41}}));
  EXPECT_EQ(outcome.reports, 3);
  ASSERT_TRUE(outcome.last_report);
  EXPECT_EQ(outcome.last_report->step, 3);
  EXPECT_EQ(outcome.final_metrics, (Metrics{{"acc", 0.8}, {"val_loss", 0.4}}));
  EXPECT_EQ(outcome.result_metrics(), (Metrics{{"acc", 0.8}, {"val_loss", 0.4}}));
  // The plain line and the malformed one are in the log, not lost and not fatal.
  EXPECT_THAT(outcome.log_tail, HasSubstr("epoch 1 done\n"));
  EXPECT_THAT(outcome.log_tail, HasSubstr("{\"step\": 3, \"val_loss\": oops\n"
                                          "[tuner] the line above is not a metrics line: not "
                                          "valid JSON\n"));
  // Metrics lines are not logged (the first log line shows the script itself).
  EXPECT_THAT(outcome.log_tail, Not(HasSubstr("\n{\"step\": 3, \"val_loss\": 0.41}\n")));
}

TEST(CommandJob, WithoutAFinalLineTheLastReportIsTheResult) {
  auto outcome = shell(R"(echo '{"step": 1, "loss": 2}'; printf '{"step": 2, "loss": 1}')")
                     .run(trial());  // no newline after the last line
  EXPECT_FALSE(outcome.final_metrics);
  EXPECT_EQ(outcome.result_metrics(), (Metrics{{"loss", 1.0}}));
}

TEST(CommandJob, NanMetricsFromPythonReachTheCallback) {
  std::vector<CommandReport> reports;
  CommandJob job(CommandSpec{.argv = {"python3", "-c",
                                      literal("import json; print(json.dumps({'step': 1, 'loss': "
                                              "float('nan'), 'up': float('inf')}))")}});
  auto outcome = job.run(trial(), [&](const CommandReport& r) {
    reports.push_back(r);
    return JobDecision::kContinue;
  });
  ASSERT_EQ(reports.size(), 1u) << outcome.log_tail;
  EXPECT_TRUE(std::isnan(reports[0].metrics.at("loss")));
  EXPECT_EQ(reports[0].metrics.at("up"), INFINITY);
}

TEST(CommandJob, ACrashGivesItsExitCodeAndTheLogTail) {
  std::string dir = temp_dir();
  CommandJobOptions options{.log_path = dir + "/logs/trial-7.log"};
  auto outcome =
      shell("echo 'loading data'; echo 'Traceback: ValueError: boom' >&2; exit 3", options)
          .run(trial());
  EXPECT_FALSE(outcome.succeeded());
  EXPECT_EQ(outcome.exit_code, 3);
  EXPECT_FALSE(outcome.term_signal);
  EXPECT_EQ(outcome.describe(), "exited with code 3");
  EXPECT_THAT(outcome.log_tail, HasSubstr("loading data\n"));
  EXPECT_THAT(outcome.log_tail, HasSubstr("Traceback: ValueError: boom\n"));
  EXPECT_THAT(outcome.log_tail, HasSubstr("[tuner] trial 7: exited with code 3 after"));
  std::string file = read_file(dir + "/logs/trial-7.log");
  EXPECT_THAT(file, HasSubstr("[tuner] trial 7 (id 42): running /bin/sh -c"));
  EXPECT_THAT(file, HasSubstr("Traceback: ValueError: boom\n"));
  std::filesystem::remove_all(dir);
}

TEST(CommandJob, LogTailKeepsTheLastLines) {
  CommandJobOptions options{.log_tail_lines = 3};
  auto outcome =
      shell("for i in 1 2 3 4 5 6; do echo line$i >&2; done; exit 1", options).run(trial());
  EXPECT_EQ(outcome.log_tail, "line5\nline6\n[tuner] trial 7: exited with code 1 after " +
                                  std::to_string(outcome.elapsed.count()) + " ms\n");
}

// Answers `values` in turn, then nullopt; keeps the process groups it was asked about and
// whether each was alive then.
class ScriptedGpuMemory final : public GpuMemoryProbe {
 public:
  explicit ScriptedGpuMemory(std::vector<std::optional<uint64_t>> values)
      : values_(std::move(values)) {}
  std::optional<uint64_t> process_group_bytes(pid_t pgid) override {
    groups.push_back(pgid);
    alive.push_back(::getpgid(pgid) == pgid);
    return calls_ < values_.size() ? values_[calls_++] : std::nullopt;
  }
  std::vector<pid_t> groups;
  std::vector<bool> alive;

 private:
  std::vector<std::optional<uint64_t>> values_;
  size_t calls_ = 0;
};

TEST(CommandJob, ThePeakGpuMemoryOfTheProgramsProcessGroupIsKept) {
  ScriptedGpuMemory probe({100, std::nullopt, 300, 200});
  CommandJobOptions options{.gpu_memory = &probe, .gpu_memory_interval = milliseconds(5)};
  const CommandOutcome outcome = shell("sleep 0.3", options).run(trial());
  EXPECT_EQ(outcome.gpu_memory_peak_bytes, 300u);
  ASSERT_GE(probe.groups.size(), 4u);  // sampled while it ran, not only at its start
  for (size_t i = 0; i < probe.groups.size(); ++i) {
    EXPECT_EQ(probe.groups[i], probe.groups[0]);
    EXPECT_TRUE(probe.alive[i]) << "sample " << i << " asked about a group that had ended";
  }
  // A probe that can never tell leaves no peak; no probe, none either.
  ScriptedGpuMemory blind({});
  EXPECT_EQ(shell("sleep 0.05", {.gpu_memory = &blind, .gpu_memory_interval = milliseconds(5)})
                .run(trial())
                .gpu_memory_peak_bytes,
            std::nullopt);
  EXPECT_FALSE(blind.groups.empty());
  EXPECT_EQ(shell("true").run(trial()).gpu_memory_peak_bytes, std::nullopt);
}

TEST(CommandJob, KilledByASignal) {
  auto outcome = shell("kill -USR1 $$").run(trial());
  EXPECT_FALSE(outcome.exit_code);
  EXPECT_EQ(outcome.term_signal, SIGUSR1);
  EXPECT_EQ(outcome.describe(), "killed by signal 10 (SIGUSR1)");
  EXPECT_FALSE(outcome.succeeded());
}

TEST(CommandJob, StopFromTheCallbackTerminatesTheProcessGroup) {
  std::string dir = temp_dir();
  // A background child in the same group, then reports forever.
  auto job = shell("sleep 30 & echo $! > " + dir +
                   "/bg.pid; i=0; while :; do i=$((i+1)); echo \"{\\\"step\\\": $i, "
                   "\\\"loss\\\": 1}\"; sleep 0.01; done");
  std::vector<int64_t> steps;
  auto outcome = job.run(trial(), [&](const CommandReport& r) {
    steps.push_back(r.step);
    return r.step >= 2 ? JobDecision::kStop : JobDecision::kContinue;
  });
  EXPECT_THAT(steps, ElementsAre(1, 2));  // no callback after the stop
  EXPECT_EQ(outcome.stopped_by, JobDecision::kStop);
  EXPECT_EQ(outcome.term_signal, SIGTERM);
  EXPECT_FALSE(outcome.succeeded());
  EXPECT_LT(outcome.elapsed, milliseconds(2000));
  EXPECT_THAT(outcome.log_tail,
              HasSubstr("[tuner] told to stop at step 2: SIGTERM to process group"));
  // SIGKILL went to the group before run() returned; the background child's own exit (and its
  // reaping by init) completes asynchronously.
  pid_t background = std::stoi(read_file(dir + "/bg.pid"));
  auto deadline = std::chrono::steady_clock::now() + milliseconds(1000);
  while (!process_gone(background) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_TRUE(process_gone(background)) << "pid " << background;
  std::filesystem::remove_all(dir);
}

TEST(CommandJob, ProgramIgnoringSigtermIsKilledAfterTheGracePeriod) {
  CommandJobOptions options{.stop_grace = milliseconds(200)};
  auto job = shell(R"(trap "" TERM; echo '{"step": 1, "loss": 1}'; while :; do sleep 0.02; done)",
                   options);
  auto outcome = job.run(trial(), [](const CommandReport&) { return JobDecision::kPause; });
  EXPECT_EQ(outcome.stopped_by, JobDecision::kPause);
  EXPECT_EQ(outcome.term_signal, SIGKILL);
  EXPECT_GE(outcome.elapsed, milliseconds(200));
  EXPECT_LT(outcome.elapsed, milliseconds(1500));
  EXPECT_THAT(outcome.log_tail, HasSubstr("after SIGTERM: SIGKILL to process group"));
  EXPECT_EQ(outcome.describe(), "stopped (pause); killed by signal 9 (SIGKILL)");
}

TEST(CommandJob, TimeLimit) {
  CommandJobOptions options{.time_limit = milliseconds(150)};
  auto outcome = shell("sleep 10", options).run(trial());
  EXPECT_TRUE(outcome.timed_out);
  EXPECT_FALSE(outcome.stopped_by);
  EXPECT_EQ(outcome.term_signal, SIGTERM);
  EXPECT_GE(outcome.elapsed, milliseconds(150));
  EXPECT_LT(outcome.elapsed, milliseconds(1500));
  EXPECT_THAT(outcome.describe(), HasSubstr("timed out after"));
  EXPECT_THAT(outcome.log_tail, HasSubstr("[tuner] time limit of 150 ms reached"));
}

TEST(CommandJob, StopTokenStopsTheJob) {
  std::stop_source source;
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(100));
    source.request_stop();
  });
  auto outcome = shell("sleep 10").run(trial(), {}, source.get_token());
  stopper.join();
  EXPECT_EQ(outcome.stopped_by, JobDecision::kStop);
  EXPECT_EQ(outcome.term_signal, SIGTERM);
  EXPECT_LT(outcome.elapsed, milliseconds(1500));
}

TEST(CommandJob, LeftoversInTheGroupDoNotHoldTheRunOpen) {
  // The background sleep keeps stdout open; the run ends when the shell exits.
  auto outcome = shell("sleep 10 & echo '{\"loss\": 2}'").run(trial());
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_EQ(outcome.final_metrics, (Metrics{{"loss", 2.0}}));
  EXPECT_LT(outcome.elapsed, milliseconds(1500));
}

TEST(CommandJob, LongLinesAreCutAndLogged) {
  CommandJobOptions options{.max_line_bytes = 12};
  auto outcome = shell("echo 0123456789abcdefgh; echo '{\"loss\": 1}'", options).run(trial());
  EXPECT_THAT(outcome.log_tail, HasSubstr("0123456789ab\n[tuner] the line above was cut at 12"));
  EXPECT_EQ(outcome.final_metrics, (Metrics{{"loss", 1.0}}));
}

TEST(CommandJob, MissingProgramIsAClearError) {
  CommandJob job(CommandSpec{.argv = {"no-such-trainer-xyz", "--lr", "{lr}"}});
  try {
    job.run(trial());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_THAT(e.what(), HasSubstr("cannot run 'no-such-trainer-xyz': program not found in PATH"));
  }
  CommandJob path_job(CommandSpec{.argv = {"/no/such/train.sh"}});
  EXPECT_THROW(
      {
        try {
          path_job.run(trial());
        } catch (const Error& e) {
          EXPECT_THAT(e.what(), HasSubstr("cannot run '/no/such/train.sh': no such file"));
          throw;
        }
      },
      Error);
}

TEST(CommandJob, MissingWorkingDirectoryIsAClearError) {
  CommandJob job(CommandSpec{.argv = {"true"}, .working_dir = "/no/such/dir"});
  try {
    job.run(trial());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_THAT(e.what(), HasSubstr("working directory '/no/such/dir' does not exist"));
  }
}

TEST(CommandJob, UnknownPlaceholderIsAnErrorBeforeAnythingRuns) {
  CommandJob job(CommandSpec{.argv = {"python3", "train.py", "--momentum", "{momentum}"}});
  try {
    job.run(trial());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("argv[3]"));
    EXPECT_THAT(e.what(), HasSubstr("unknown placeholder {momentum}"));
  }
}

struct CoordinatorGone {};

TEST(CommandJob, CallbackExceptionPropagatesAfterTheChildIsReaped) {
  auto job = shell("while :; do echo '{\"step\": 1}'; sleep 0.01; done");
  EXPECT_THROW(
      job.run(trial(), [](const CommandReport&) -> JobDecision { throw CoordinatorGone{}; }),
      CoordinatorGone);
}

size_t open_descriptors() {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                                           std::filesystem::directory_iterator()));
}

TEST(CommandJob, NoDescriptorIsLeftOpen) {
  size_t before = open_descriptors();
  std::stop_source source;
  shell("echo '{\"step\": 1}'; echo x >&2").run(trial(), {}, source.get_token());
  shell("kill -KILL $$").run(trial());
  EXPECT_THROW(CommandJob(CommandSpec{.argv = {"no-such-trainer-xyz"}}).run(trial()), Error);
  EXPECT_EQ(open_descriptors(), before);
}

TEST(CommandJob, RunsConcurrentlyFromSeveralThreads) {
  auto job = shell(
      "echo \"{\\\"step\\\": 1, \\\"n\\\": $TUNER_TRIAL_NUMBER}\"; sleep 0.05; "
      "echo \"{\\\"n\\\": $TUNER_TRIAL_NUMBER}\"");
  std::vector<CommandOutcome> outcomes(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      CommandTrial t = trial();
      t.number = i;
      outcomes[static_cast<size_t>(i)] = job.run(t);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    const auto& o = outcomes[static_cast<size_t>(i)];
    EXPECT_TRUE(o.succeeded()) << o.describe() << o.log_tail;
    EXPECT_EQ(o.final_metrics, (Metrics{{"n", double(i)}}));
    ASSERT_TRUE(o.last_report);
    EXPECT_EQ(o.last_report->metrics, (Metrics{{"n", double(i)}}));
    EXPECT_LT(o.elapsed, milliseconds(1000));
  }
}

// The example of docs/command_jobs.md, run as a sweep would run it.
TEST(CommandJob, ExampleTrainQuadratic) {
  CommandJob job(
      CommandSpec{.argv = {"python3", TUNER_SOURCE_DIR "/examples/command/train_quadratic.py",
                           "--lr", "{lr}", "--steps", "{steps}"}});
  CommandTrial t{.trial_id = 1, .number = 0, .params = {{"lr", 0.25}, {"steps", int64_t{5}}}};
  std::vector<CommandReport> reports;
  auto outcome = job.run(t, [&](const CommandReport& r) {
    reports.push_back(r);
    return JobDecision::kContinue;
  });
  ASSERT_TRUE(outcome.succeeded()) << outcome.describe() << "\n" << outcome.log_tail;
  ASSERT_EQ(reports.size(), 5u);
  for (size_t i = 0; i < reports.size(); ++i) EXPECT_EQ(reports[i].step, int64_t(i + 1));
  EXPECT_GT(reports[0].metrics.at("loss"), reports[4].metrics.at("loss"));
  ASSERT_TRUE(outcome.final_metrics);
  EXPECT_NEAR(outcome.final_metrics->at("loss"), 9.0 / 1024, 1e-12);  // (3 * 0.5^5)^2
  EXPECT_THAT(outcome.log_tail, HasSubstr("params from TUNER_PARAMS: {'lr': 0.25, 'steps': 5}"));

  // A diverging learning rate: Infinity reaches the callback, and the exit code 1 the outcome.
  t.params = {{"lr", 2.0}, {"steps", int64_t{400}}};
  auto diverged = job.run(t);
  EXPECT_EQ(diverged.exit_code, 1);
  ASSERT_TRUE(diverged.last_report);
  EXPECT_TRUE(std::isinf(diverged.last_report->metrics.at("loss")));
  EXPECT_THAT(diverged.log_tail, HasSubstr("diverged at step"));
}

}  // namespace
}  // namespace tuner
