// Heartbeats, stale trials and resume: on a FakeClock, against both storages.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "search/samplers/random_sampler.h"
#include "search/samplers/tpe/tpe_sampler.h"
#include "search/schedulers/median_stopping.h"
#include "storage/in_memory_storage.h"
#include "storage/sqlite_storage.h"
#include "trials/error.h"
#include "tuner/study.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("tuner_resume_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// Polls `done` in real time (the heartbeat thread runs on its own) for up to 10 s.
bool eventually(const std::function<bool()>& done) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return done();
}

struct Fixture {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<Storage> storage;

  explicit Fixture(std::shared_ptr<Storage> s = nullptr)
      : storage(s ? s : std::make_shared<InMemoryStorage>(clock)) {}

  StudyOptions options(StaleTrialPolicy policy = StaleTrialPolicy::kRetry) const {
    StudyOptions o;
    o.name = "resume";
    o.storage = storage;
    o.sampler = std::make_shared<RandomSampler>();
    o.seed = 11;
    o.clock = clock;
    o.heartbeat_interval = 60s;  // grace: 120 s
    o.stale_trial_policy = policy;
    o.load_if_exists = true;
    return o;
  }

  // A trial whose process "died" after suggesting x: its handle and its study object are gone,
  // so nothing records its heartbeat any more.
  FrozenTrial dead_trial(StaleTrialPolicy policy = StaleTrialPolicy::kRetry) {
    Study study = Study::create(options(policy));
    Trial t = study.ask();
    t.suggest_float("x", 0, 1);
    t.report(1, 0.5);
    return storage->get_trial(t.id());
  }
};

TEST(Resume, AStaleTrialIsFailedOnLoadWithTheReason) {
  Fixture f;
  FrozenTrial dead = f.dead_trial(StaleTrialPolicy::kFail);
  f.clock->advance(100s);  // within the grace period: still RUNNING
  Study::load(f.options(StaleTrialPolicy::kFail));
  EXPECT_EQ(f.storage->get_trial(dead.trial_id).state, TrialState::kRunning);

  f.clock->advance(21s);
  Study study = Study::load(f.options(StaleTrialPolicy::kFail));
  FrozenTrial failed = f.storage->get_trial(dead.trial_id);
  EXPECT_EQ(failed.state, TrialState::kFail);
  std::string reason = nlohmann::json::parse(failed.system_attrs.at("fail_reason"));
  EXPECT_TRUE(reason.starts_with("stale: no heartbeat for more than the grace period of 120 s"))
      << reason;
  EXPECT_EQ(failed.intermediate_values.size(), 1u);  // what it stored is kept
  // No retry under kFail: the next trial is a new sample.
  Trial next = study.ask();
  EXPECT_EQ(next.number(), 1);
  EXPECT_TRUE(next.params().empty());
  EXPECT_EQ(study.trials().size(), 2u);
}

TEST(Resume, AStaleTrialIsRerunWithItsParamsBeforeNewSamples) {
  Fixture f;
  FrozenTrial dead = f.dead_trial();
  f.clock->advance(121s);
  Study study = Study::load(f.options());
  Trial retry = study.ask();
  EXPECT_EQ(retry.number(), 1);
  EXPECT_EQ(retry.suggest_float("x", 0, 1), std::get<double>(dead.params.at("x")));
  FrozenTrial stored = study.storage().get_trial(retry.id());
  EXPECT_EQ(stored.system_attrs.at("failed_trial"), "0");
  EXPECT_EQ(stored.system_attrs.at("retry_history"), "[0]");
  EXPECT_FALSE(stored.system_attrs.contains("fail_reason"));
  EXPECT_TRUE(stored.intermediate_values.empty());  // as Optuna's callback by default
  study.tell(retry, 1.0);
  EXPECT_EQ(study.ask().number(), 2);  // then new samples
}

TEST(Resume, RetriesStopAtTheLimitWithTheWholeHistory) {
  Fixture f;
  StudyOptions options = f.options();
  options.max_retries = 2;
  {
    Study study = Study::create(options);
    Trial t = study.ask();
    t.suggest_float("x", 0, 1);
  }
  // Every attempt dies: 0, then its retries 1 and 2; then only FAIL.
  for (int attempt = 1; attempt <= 3; ++attempt) {
    f.clock->advance(121s);
    Study study = Study::load(options);
    if (attempt <= 2) {
      Trial t = study.ask();  // the retry; dies with this scope
      EXPECT_EQ(t.number(), attempt);
      FrozenTrial stored = f.storage->get_trial(t.id());
      EXPECT_EQ(stored.system_attrs.at("failed_trial"), "0");
      EXPECT_EQ(stored.system_attrs.at("retry_history"), attempt == 1 ? "[0]" : "[0,1]");
    }
  }
  auto all = f.storage->get_trials(f.storage->find_study("resume")->study_id);
  ASSERT_EQ(all.size(), 3u);
  for (const FrozenTrial& t : all) EXPECT_EQ(t.state, TrialState::kFail);
}

TEST(Resume, HeartbeatsKeepALiveTrialFromGoingStale) {
  Fixture f;
  Study runner = Study::create(f.options());
  Trial live = runner.ask();
  StudyOptions other = f.options();
  for (int minute = 1; minute <= 5; ++minute) {
    f.clock->advance(60s);
    // Wait until the heartbeat of this minute is stored.
    ASSERT_TRUE(eventually([&] {
      return f.storage->get_stale_trials(runner.id(), f.clock->system_now() - 1s).empty();
    }));
    // Another study object (another process, in effect) does not see it as stale.
    Study::load(other);
    EXPECT_EQ(f.storage->get_trial(live.id()).state, TrialState::kRunning);
  }
  EXPECT_EQ(runner.tell(live, 1.0).state, TrialState::kComplete);
  // Told: its heartbeats stop, and it is never stale (not RUNNING).
  f.clock->advance(1h);
  EXPECT_TRUE(f.storage->get_stale_trials(runner.id(), f.clock->system_now()).empty());
}

TEST(Resume, HeartbeatsOffMeansNoStaleHandling) {
  Fixture f;
  StudyOptions options = f.options();
  options.heartbeat_interval.reset();
  FrozenTrial dead;
  {
    Study study = Study::create(options);
    Trial t = study.ask();
    dead = f.storage->get_trial(t.id());
  }
  f.clock->advance(24h);
  Study study = Study::load(options);
  EXPECT_EQ(study.ask().number(), 1);
  EXPECT_EQ(f.storage->get_trial(dead.trial_id).state, TrialState::kRunning);
}

TEST(Resume, RefusesAGracePeriodShorterThanTheInterval) {
  Fixture f;
  StudyOptions options = f.options();
  options.grace_period = 30s;
  EXPECT_THROW(Study::create(options), Error);
}

TEST(Resume, ATrialFailedElsewhereIsSkippedByOptimize) {
  // The process running a trial stalls past the grace period; another one fails it as stale.
  // optimize() then drops the late result and goes on.
  Fixture f;
  StudyOptions options = f.options(StaleTrialPolicy::kFail);
  Study study = Study::create(options);
  int calls = 0;
  OptimizeOptions run;
  run.n_trials = 3;
  study.optimize(
      [&](Trial& t) {
        double x = t.suggest_float("x", 0, 1);
        if (++calls == 2) {
          // Fail it through the storage, as another process would.
          f.storage->fail_stale_trial(t.id(), f.clock->system_now() + 1h, {}, nullptr);
        }
        return x;
      },
      run);
  auto all = study.trials();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].state, TrialState::kComplete);
  EXPECT_EQ(all[1].state, TrialState::kFail);
  EXPECT_EQ(all[2].state, TrialState::kComplete);
}

// A study that runs n trials with TPE and a median-stopping scheduler, reporting steps.
double staged_objective(Trial& t) {
  double x = t.suggest_float("x", -5, 5);
  int64_t k = t.suggest_int("k", 1, 8);
  auto opt = t.suggest_categorical<std::string>("opt", {"sgd", "adam"});
  double value = (x - 1) * (x - 1) + static_cast<double>(k) * (opt == "sgd" ? 0.5 : 0.3);
  for (int step = 1; step <= 5; ++step) {
    t.report(step, value + 5.0 / step);
    if (t.should_stop()) return value;
  }
  return value;
}

StudyOptions sqlite_options(const std::string& file, uint64_t seed) {
  StudyOptions o;
  o.name = "determinism";
  o.storage = std::make_shared<SqliteStorage>(file);
  o.sampler = std::make_shared<TpeSampler>();
  MedianStoppingOptions median;
  median.n_startup_trials = 3;
  o.scheduler = std::make_shared<MedianStopping>(median);
  o.seed = seed;
  o.load_if_exists = true;
  return o;
}

TEST(Resume, AResumedStudyMakesTheDecisionsOfAnUninterruptedOne) {
  TempDir dir;
  OptimizeOptions run;
  run.n_trials = 24;
  Study straight = Study::create(sqlite_options(dir.file("straight.db"), 5));
  straight.optimize(staged_objective, run);

  // The same study in four sessions, each a fresh Study and SqliteStorage on the file; the seed
  // given to the later ones is ignored (the stored one is used).
  bool first = true;
  for (int n : {7, 1, 9, 7}) {
    Study session = Study::create(sqlite_options(dir.file("resumed.db"), first ? 5 : 999));
    EXPECT_EQ(session.seed(), 5u);
    first = false;
    run.n_trials = n;
    session.optimize(staged_objective, run);
  }
  auto expected = straight.trials();
  auto got = Study::load(sqlite_options(dir.file("resumed.db"), 0)).trials();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("trial " + std::to_string(i));
    EXPECT_EQ(got[i].params, expected[i].params);
    EXPECT_EQ(got[i].state, expected[i].state);
    EXPECT_EQ(got[i].values, expected[i].values);
    EXPECT_EQ(got[i].intermediate_values, expected[i].intermediate_values);
  }
}

TEST(Resume, ATrialInterruptedMidwayIsRerunWithItsParamsOnSqlite) {
  TempDir dir;
  auto clock = std::make_shared<FakeClock>();
  auto options = [&] {
    StudyOptions o = sqlite_options(dir.file("study.db"), 3);
    SqliteStorageOptions so;
    so.clock = clock;
    o.storage = std::make_shared<SqliteStorage>(dir.file("study.db"), so);
    o.clock = clock;
    o.heartbeat_interval = 1s;
    return o;
  };
  Params interrupted;
  {
    Study study = Study::create(options());
    OptimizeOptions run;
    run.n_trials = 4;
    study.optimize(staged_objective, run);
    Trial t = study.ask();
    staged_objective(t);  // runs, but its process dies before tell()
    interrupted = t.params();
  }
  clock->advance(3s);
  Study study = Study::create(options());
  OptimizeOptions run;
  run.n_trials = 1;
  study.optimize(staged_objective, run);
  auto all = study.trials();
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all[4].state, TrialState::kFail);
  EXPECT_EQ(all[5].params, interrupted);
  EXPECT_EQ(all[5].system_attrs.at("failed_trial"), "4");
  EXPECT_TRUE(is_finished(all[5].state));
}

}  // namespace
}  // namespace tuner
