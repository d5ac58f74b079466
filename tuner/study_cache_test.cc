// How much of storage a study reads as a coordinator drives it: asks and tells in batches,
// reports between them, many trials running at once.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "search/samplers/random_sampler.h"
#include "search/schedulers/mo_asha.h"
#include "storage/sqlite_storage.h"
#include "tuner/study.h"

namespace tuner {
namespace {

// A Storage that passes every call to another and counts the trials and step metrics its reads
// hand out.
class ReadCountingStorage final : public Storage {
 public:
  explicit ReadCountingStorage(std::shared_ptr<Storage> base) : base_(std::move(base)) {}

  int64_t trials_read = 0;        // trials handed out by get_trials and get_stale_trials
  int64_t step_metrics_read = 0;  // trials whose step metrics get_step_metrics handed out
  int64_t step_metrics_calls = 0;

  StudyRecord create_study(const std::string& name,
                           const std::vector<StudyDirection>& directions) override {
    return base_->create_study(name, directions);
  }
  std::optional<StudyRecord> find_study(const std::string& name) override {
    return base_->find_study(name);
  }
  std::vector<StudyRecord> list_studies() override { return base_->list_studies(); }
  void delete_study(int64_t study_id) override { base_->delete_study(study_id); }
  void set_study_user_attr(int64_t study_id, const std::string& key,
                           const std::string& json) override {
    base_->set_study_user_attr(study_id, key, json);
  }
  void set_study_system_attr(int64_t study_id, const std::string& key,
                             const std::string& json) override {
    base_->set_study_system_attr(study_id, key, json);
  }
  FrozenTrial create_trial(int64_t study_id, TrialState state, const FrozenTrial* from) override {
    return base_->create_trial(study_id, state, from);
  }
  bool claim_waiting_trial(int64_t trial_id) override {
    return base_->claim_waiting_trial(trial_id);
  }
  void set_trial_param(int64_t trial_id, const std::string& name, const Distribution& distribution,
                       const ParamValue& value) override {
    base_->set_trial_param(trial_id, name, distribution, value);
  }
  void set_trial_params(int64_t trial_id, const std::vector<NewParam>& params) override {
    base_->set_trial_params(trial_id, params);
  }
  void set_trial_intermediate_value(int64_t trial_id, int64_t step, double value) override {
    base_->set_trial_intermediate_value(trial_id, step, value);
  }
  void set_trial_step_metrics(int64_t trial_id, int64_t step, const StepValues& metrics) override {
    base_->set_trial_step_metrics(trial_id, step, metrics);
  }
  void set_trial_user_attr(int64_t trial_id, const std::string& key,
                           const std::string& json) override {
    base_->set_trial_user_attr(trial_id, key, json);
  }
  void set_trial_system_attr(int64_t trial_id, const std::string& key,
                             const std::string& json) override {
    base_->set_trial_system_attr(trial_id, key, json);
  }
  FrozenTrial finish_trial(int64_t trial_id, TrialState state, const std::vector<double>& values,
                           const Attributes& system_attrs, const Attributes& user_attrs) override {
    return base_->finish_trial(trial_id, state, values, system_attrs, user_attrs);
  }
  void record_heartbeat(int64_t trial_id, TimePoint time) override {
    base_->record_heartbeat(trial_id, time);
  }
  std::vector<FrozenTrial> get_stale_trials(int64_t study_id, TimePoint stale_before) override {
    std::vector<FrozenTrial> read = base_->get_stale_trials(study_id, stale_before);
    trials_read += static_cast<int64_t>(read.size());
    return read;
  }
  std::optional<StaleTrialOutcome> fail_stale_trial(int64_t trial_id, TimePoint stale_before,
                                                    const Attributes& fail_attrs,
                                                    const FrozenTrial* retry) override {
    return base_->fail_stale_trial(trial_id, stale_before, fail_attrs, retry);
  }
  FrozenTrial get_trial(int64_t trial_id) override { return base_->get_trial(trial_id); }
  std::optional<FrozenTrial> get_best_trial(int64_t study_id) override {
    return base_->get_best_trial(study_id);
  }
  std::vector<FrozenTrial> get_trials(int64_t study_id, const TrialFilter& filter) override {
    std::vector<FrozenTrial> read = base_->get_trials(study_id, filter);
    trials_read += static_cast<int64_t>(read.size());
    return read;
  }
  std::map<int64_t, std::vector<StepMetrics>> get_step_metrics(
      int64_t study_id, const std::vector<int64_t>& trial_ids) override {
    ++step_metrics_calls;
    std::map<int64_t, std::vector<StepMetrics>> read = base_->get_step_metrics(study_id, trial_ids);
    step_metrics_read += static_cast<int64_t>(read.size());
    return read;
  }
  void run_batch(const std::function<void()>& body) override { base_->run_batch(body); }
  std::optional<uint64_t> change_count() override { return base_->change_count(); }

 private:
  const std::shared_ptr<Storage> base_;
};

class StudyCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("study_cache_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db");
    remove_files();
    storage_ = std::make_shared<ReadCountingStorage>(std::make_shared<SqliteStorage>(path_));
  }
  void TearDown() override {
    storage_.reset();
    remove_files();
  }
  void remove_files() {
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::filesystem::remove(path_.string() + suffix);
    }
  }

  std::filesystem::path path_;
  std::shared_ptr<ReadCountingStorage> storage_;
};

SearchSpace two_floats() {
  SearchSpace space;
  space.add_float("x", -10.0, 10.0);
  space.add_float("y", -10.0, 10.0);
  return space;
}

// With many trials running, an ask reads no trials again when nothing changed but what the study
// itself wrote (its cache holds that already): a re-read of every unfinished trial per ask would
// cost a coordinator's loop a quarter of its time at 1,600 running trials.
TEST_F(StudyCacheTest, AnAskAmongManyRunningTrialsReadsNoTrialsAgain) {
  StudyOptions options;
  options.name = "cache";
  options.storage = storage_;
  options.sampler = std::make_shared<RandomSampler>();
  options.space = two_floats();
  Study study = Study::create(options);
  constexpr int kRunning = 200;
  constexpr int kRounds = 300;
  std::vector<Trial> running;
  study.run_batch([&] {
    for (int i = 0; i < kRunning; ++i) running.push_back(study.ask());
  });
  const int64_t read_before = storage_->trials_read;
  for (int round = 0; round < kRounds; ++round) {
    // Reports between batches, as the coordinator stores them.
    Trial& reporting = running[static_cast<size_t>(round % kRunning)];
    reporting.log_metrics(round, {{"loss", 1.0 / (round + 1)}});
    reporting.report(round, 1.0 / (round + 1));
    // A batch: one outcome told, one trial asked for the slot it frees.
    study.run_batch([&] {
      Trial& done = running[static_cast<size_t>((round * 7) % kRunning)];
      study.tell(done, static_cast<double>(round));
      done = study.ask();
    });
  }
  // Not one re-read of the running trials per ask (60,000 trials read).
  EXPECT_LT(storage_->trials_read - read_before, kRunning);
  EXPECT_EQ(static_cast<int>(study.trials().size()), kRunning + kRounds);
}

// Regression: each lost lease (a trial failed and re-run, Study::fail_and_retry) and each claim
// of its re-run made the next ask re-read every unfinished trial: both are the study's own
// writes, which its cache now holds.
TEST_F(StudyCacheTest, ARerunAmongManyRunningTrialsReadsNoTrialsAgain) {
  StudyOptions options;
  options.name = "rerun";
  options.storage = storage_;
  options.sampler = std::make_shared<RandomSampler>();
  options.space = two_floats();
  Study study = Study::create(options);
  constexpr int kRunning = 200;
  constexpr int kLost = 20;
  std::vector<Trial> running;
  for (int i = 0; i < kRunning; ++i) running.push_back(study.ask());
  const int64_t read_before = storage_->trials_read;
  for (int lost = 0; lost < kLost; ++lost) {
    Trial& trial = running[static_cast<size_t>(lost * 3)];
    const Study::Rerun rerun = study.fail_and_retry(trial, "lease expired", 3);
    ASSERT_TRUE(rerun.retry.has_value());
    trial = study.ask();  // claims the re-run
    EXPECT_EQ(trial.number(), rerun.retry->number);
    EXPECT_EQ(trial.retry_history().size(), 1u);
  }
  EXPECT_LT(storage_->trials_read - read_before, kRunning);
  // The cache agrees with storage: a fresh handle sees the same trials.
  const std::vector<FrozenTrial> stored = study.trials();
  ASSERT_EQ(static_cast<int>(stored.size()), kRunning + kLost);
  for (int lost = 0; lost < kLost; ++lost) {
    EXPECT_EQ(stored[static_cast<size_t>(lost * 3)].state, TrialState::kFail);
    EXPECT_EQ(stored[static_cast<size_t>(kRunning + lost)].state, TrialState::kRunning);
  }
}

// Regression: in a study of several objectives with a scheduler, each report re-read the step
// metrics of every unfinished trial, so that a report cost grew with the trials running times
// their steps. The study's own reports are cached as they are stored; only what others wrote is
// read again.
TEST_F(StudyCacheTest, AReportOfSeveralObjectivesReadsNoStepMetricsAgain) {
  StudyOptions options;
  options.name = "mo";
  options.storage = storage_;
  options.directions = {StudyDirection::kMinimize, StudyDirection::kMinimize};
  options.sampler = std::make_shared<RandomSampler>();
  options.scheduler = std::make_shared<MoAshaScheduler>();
  options.space = two_floats();
  Study study = Study::create(options);
  constexpr int kRunning = 50;
  constexpr int kSteps = 20;
  std::vector<Trial> running;
  for (int i = 0; i < kRunning; ++i) running.push_back(study.ask());
  for (int step = 0; step < kSteps; ++step) {
    for (Trial& t : running) {
      t.report(step, std::vector<double>{1.0 / (step + 1), 2.0 / (step + 1)});
      t.should_stop();
    }
  }
  // A first read of the running trials; then none per report (50,000 trials' steps read).
  EXPECT_LE(storage_->step_metrics_read, kRunning);
  // What another handle on the study stores is still seen: its steps are read again.
  Study elsewhere = Study::load(options);
  Trial foreign = elsewhere.ask();
  foreign.report(0, std::vector<double>{0.5, 0.5});
  const int64_t calls = storage_->step_metrics_calls;
  running.front().report(kSteps, std::vector<double>{0.1, 0.1});
  running.front().should_stop();
  EXPECT_GT(storage_->step_metrics_calls, calls);
}

}  // namespace
}  // namespace tuner
