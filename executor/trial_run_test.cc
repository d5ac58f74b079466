#include "executor/trial_run.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "executor/checkpoint_test_support.h"
#include "executor/checkpoint_writer.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A PBT segment's run (run_trial) with an in-process job (ExecutorOptions::job_runner) that keeps
// its state as "step N" in its checkpoint, as tests/sweep/pbt_cli_test.sh's program does: it
// resumes from the step there, and each step it saves the step, then reports it, until it is
// answered other than continue or reaches step 12.
class TrialRunTest : public CheckpointJobTest {
 protected:
  void SetUp() override {
    CheckpointJobTest::SetUp();
    options_.job_runner = [this](const CommandTrial& trial, const ReportCallback& on_report,
                                 std::stop_token) {
      ++runs_;
      CommandOutcome outcome{.exit_code = 0};
      if (!trial.checkpoint_path) return outcome;
      const fs::path path = *trial.checkpoint_path;
      int64_t step = 0;
      if (fs::exists(path)) {
        resumed_from_ = contents_of(path);
        std::sscanf(resumed_from_.c_str(), "step %ld", &step);
      }
      while (step < 12) {
        ++step;
        if (save_) std::ofstream(path, std::ios::trunc) << "step " << step;
        const CommandReport report{.step = step, .metrics = {{"loss", 1.0 / step}}};
        outcome.last_report = report;
        ++outcome.reports;
        if (const JobDecision d = on_report(report); d != JobDecision::kContinue) {
          outcome.stopped_by = d;
          break;
        }
      }
      return outcome;
    };
  }

  // The segment (trial `number`, attempt `attempt`) covering steps 4 to 6, whose parent's
  // checkpoint (trial 3's, "step 3") is on this host, its lineage's own at trial-6/resume.ckpt.
  fs::path make_second_segment(int number, int attempt) {
    std::error_code ec;
    fs::create_directories(dir_ / "trial-3", ec);
    std::ofstream(dir_ / "trial-3" / "resume.ckpt") << "step 3";
    const fs::path path = dir_ / "trial-6" / "resume.ckpt";
    fs::create_directories(path.parent_path(), ec);
    make_segment(number, attempt, dir_ / "trial-3" / "resume.ckpt", path);
    job_.trial.pause_at_step = 6;
    return path;
  }

  // Runs the trial to its outcome; returns its REPORTs' steps and its outcome.
  std::vector<int64_t> run(std::optional<Message>& outcome) {
    run_trial(job_, options_, events_);
    std::vector<JobEvent> events;
    // The loop's stand-in takes the events on its own thread; the outcome is the last one.
    for (int i = 0; i < 1000; ++i) {
      events = posted();
      if (!events.empty() && events.back().outcome) break;
      std::this_thread::sleep_for(5ms);
    }
    std::vector<int64_t> steps;
    for (JobEvent& e : events) {
      if (e.report) steps.push_back(e.report->step);
      if (e.report) reports_.push_back(*e.report);
      if (e.outcome) outcome = std::move(e.outcome);
    }
    return steps;
  }

  ExecutorOptions options_;
  std::atomic<int> runs_{0};
  std::string resumed_from_;
  bool save_ = true;
  std::vector<ReportMessage> reports_;
};

TEST_F(TrialRunTest, ASegmentsRerunWhoseCheckpointIsMidSegmentResumesFromIt) {
  // Its first run (trial 6) got to step 4 on another host, whose executor sent the checkpoint
  // as it was preempted.
  const fs::path path = make_second_segment(7, 1);
  answer_from({{"resume.ckpt", "step 4"}}, {{"resume.ckpt", 5}}, CheckpointOf::kOwn);
  std::optional<Message> outcome;
  EXPECT_EQ(run(outcome), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(resumed_from_, "step 4");
  ASSERT_TRUE(outcome && std::holds_alternative<ResultMessage>(*outcome));
  EXPECT_EQ(std::get<ResultMessage>(*outcome).paused_at_step, 6);
  // It wrote its checkpoint at its end and was paused there: recorded for a later re-run.
  const std::optional<CheckpointPause> pause = read_checkpoint_pause(path);
  ASSERT_TRUE(pause);
  EXPECT_EQ(pause->step, 6);
  EXPECT_EQ(pause->lease, 9u);
  EXPECT_EQ(pause->metrics, (Metrics{{"loss", 1.0 / 6}}));
}

// The segment's first run was paused at step 6 and its checkpoint kept (or sent), but its RESULT
// was lost: the re-run's job, resumed from there, would report step 7 first, past the segment's
// end. It is not run; the segment is paused at step 6 with the first run's values.
TEST_F(TrialRunTest, ASegmentsRerunWhoseCheckpointIsAtItsEndReportsNoStepPastItAndIsPausedThere) {
  const fs::path path = make_second_segment(7, 1);
  std::ofstream(path) << "step 6";
  ASSERT_EQ(write_checkpoint_writer(path, 5), "");
  ASSERT_EQ(write_checkpoint_pause(path, CheckpointPause{.lease = 5,
                                                         .step = 6,
                                                         .metrics = {{"loss", 0.25}},
                                                         .result = {{"loss", 0.25}, {"best", 2}},
                                                         .result_integers = {"best"}}),
            "");
  answer_from({});
  std::optional<Message> outcome;
  EXPECT_EQ(run(outcome), (std::vector<int64_t>{6}));
  EXPECT_EQ(runs_.load(), 0);
  EXPECT_EQ(reports_.at(0).metrics, (Metrics{{"loss", 0.25}}));
  ASSERT_TRUE(outcome && std::holds_alternative<ResultMessage>(*outcome));
  const ResultMessage& result = std::get<ResultMessage>(*outcome);
  EXPECT_EQ(result.paused_at_step, 6);
  EXPECT_EQ(result.metrics, (Metrics{{"loss", 0.25}, {"best", 2}}));
  EXPECT_EQ(result.integer_metrics, (std::vector<std::string>{"best"}));
  EXPECT_EQ(contents_of(path), "step 6");
}

// As above on another host (each executor with files of its own): the first run's executor sent
// the checkpoint and its pause record when the segment ended; the re-run fetches both.
TEST_F(TrialRunTest, ASegmentsRerunElsewhereWhoseSentCheckpointIsAtItsEndIsPausedThere) {
  const fs::path path = make_second_segment(7, 1);
  answer_from({{"resume.ckpt", "step 6"},
               {"resume.ckpt.paused.json",
                R"({"lease": 5, "step": 6, "metrics": {"loss": 0.25}, "result": {"loss": 0.25}})"}},
              {{"resume.ckpt", 5}}, CheckpointOf::kOwn);
  std::optional<Message> outcome;
  EXPECT_EQ(run(outcome), (std::vector<int64_t>{6}));
  EXPECT_EQ(runs_.load(), 0);
  ASSERT_TRUE(outcome && std::holds_alternative<ResultMessage>(*outcome));
  EXPECT_EQ(std::get<ResultMessage>(*outcome).paused_at_step, 6);
  EXPECT_EQ(contents_of(path), "step 6");
}

// Without a record of a pause (a checkpoint the job wrote past the step it reported last, before
// it was stopped), a job resumed past its segment's end is paused at its first report, the
// first at or past the pause step, not run on to its own end.
TEST_F(TrialRunTest, AJobResumedPastItsPauseStepIsPausedAtItsFirstReport) {
  const fs::path path = make_second_segment(7, 1);
  std::ofstream(path) << "step 7";
  answer_from({});
  std::optional<Message> outcome;
  EXPECT_EQ(run(outcome), (std::vector<int64_t>{8}));
  ASSERT_TRUE(outcome && std::holds_alternative<ResultMessage>(*outcome));
  EXPECT_EQ(std::get<ResultMessage>(*outcome).paused_at_step, 8);
}

// A segment whose job never saved leaves its parent's checkpoint (at step 3) as its own: paused
// at step 6, it records no pause, so that a re-run from that checkpoint trains.
TEST_F(TrialRunTest, APausedJobThatWroteNoCheckpointRecordsNoPause) {
  const fs::path path = make_second_segment(6, 0);
  save_ = false;
  answer_from({});
  std::optional<Message> outcome;
  EXPECT_EQ(run(outcome), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(resumed_from_, "step 3");
  ASSERT_TRUE(outcome && std::holds_alternative<ResultMessage>(*outcome));
  EXPECT_EQ(std::get<ResultMessage>(*outcome).paused_at_step, 6);
  EXPECT_FALSE(fs::exists(checkpoint_pause_path(path)));
}

// A segment's run that is not at its end removes a pause record it finds (of an earlier
// segment's checkpoint): the checkpoint it writes is not at that step.
TEST_F(TrialRunTest, APauseRecordBeforeTheSegmentsEndIsRemovedAndTheJobRuns) {
  const fs::path path = make_second_segment(7, 1);
  std::ofstream(path) << "step 3";
  ASSERT_EQ(write_checkpoint_pause(path, CheckpointPause{.lease = 2, .step = 3}), "");
  save_ = false;
  answer_from({});
  std::optional<Message> outcome;
  EXPECT_EQ(run(outcome), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_FALSE(fs::exists(checkpoint_pause_path(path)));
}

}  // namespace
}  // namespace tuner
