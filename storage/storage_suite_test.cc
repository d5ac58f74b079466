// The tests of the shared storage suite (storage_test_suite.h); every backend instantiates them.
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "storage/storage_test_suite.h"

namespace tuner {

TEST_P(StorageSuite, CreatesFindsAndDeletesStudies) {
  StudyRecord a = storage_->create_study("a", {StudyDirection::kMinimize});
  StudyRecord b =
      storage_->create_study("b", {StudyDirection::kMaximize, StudyDirection::kMinimize});
  EXPECT_NE(a.study_id, b.study_id);
  EXPECT_EQ(storage_->find_study("b")->directions, b.directions);
  EXPECT_FALSE(storage_->find_study("c"));
  EXPECT_EQ(code_of([&] { storage_->create_study("a", {StudyDirection::kMinimize}); }),
            ErrorCode::kAlreadyExists);
  EXPECT_EQ(storage_->list_studies().size(), 2u);
  storage_->delete_study(a.study_id);
  EXPECT_FALSE(storage_->find_study("a"));
  EXPECT_EQ(code_of([&] { storage_->get_trials(a.study_id); }), ErrorCode::kNotFound);
}

TEST_P(StorageSuite, StudyAttributesAreStored) {
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  storage_->set_study_user_attr(s.study_id, "dataset", "\"fashion-mnist\"");
  storage_->set_study_system_attr(s.study_id, "seed", "1");
  StudyRecord found = *storage_->find_study("s");
  EXPECT_EQ(found.user_attrs.at("dataset"), "\"fashion-mnist\"");
  EXPECT_EQ(found.system_attrs.at("seed"), "1");
}

TEST_P(StorageSuite, TrialLifecycle) {
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  FrozenTrial t0 = storage_->create_trial(s.study_id);
  FrozenTrial t1 = storage_->create_trial(s.study_id);
  EXPECT_EQ(t0.number, 0);
  EXPECT_EQ(t1.number, 1);
  EXPECT_EQ(t0.state, TrialState::kRunning);
  EXPECT_TRUE(t0.datetime_start);

  storage_->set_trial_param(t0.trial_id, "lr", FloatDistribution{1e-4, 1, true}, 0.01);
  storage_->set_trial_intermediate_value(t0.trial_id, 1, 0.5);
  storage_->set_trial_intermediate_value(t0.trial_id, 2, 0.25);
  storage_->set_trial_user_attr(t0.trial_id, "note", "\"x\"");
  storage_->finish_trial(t0.trial_id, TrialState::kComplete, {0.2});

  FrozenTrial got = storage_->get_trial(t0.trial_id);
  got.validate(1);
  EXPECT_EQ(got.state, TrialState::kComplete);
  EXPECT_EQ(got.values, std::vector<double>{0.2});
  EXPECT_EQ(got.params.at("lr"), ParamValue(0.01));
  EXPECT_EQ(got.intermediate_values.size(), 2u);
  EXPECT_EQ(got.intermediate_values.at(2), 0.25);
  EXPECT_EQ(got.user_attrs.at("note"), "\"x\"");
  EXPECT_TRUE(got.datetime_complete);

  TrialFilter running;
  running.states = std::vector<TrialState>{TrialState::kRunning};
  auto r = storage_->get_trials(s.study_id, running);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].number, 1);
  TrialFilter from_one;
  from_one.min_number = 1;
  EXPECT_EQ(storage_->get_trials(s.study_id, from_one).size(), 1u);
}

TEST_P(StorageSuite, FinishedTrialsNeverChange) {
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  FrozenTrial t = storage_->create_trial(s.study_id);
  storage_->finish_trial(t.trial_id, TrialState::kFail, {});
  EXPECT_EQ(code_of([&] { storage_->finish_trial(t.trial_id, TrialState::kComplete, {1.0}); }),
            ErrorCode::kFailedPrecondition);
  EXPECT_EQ(code_of([&] { storage_->set_trial_intermediate_value(t.trial_id, 1, 1.0); }),
            ErrorCode::kFailedPrecondition);
  EXPECT_EQ(code_of([&] {
              storage_->set_trial_param(t.trial_id, "x", IntDistribution{0, 1}, int64_t{0});
            }),
            ErrorCode::kFailedPrecondition);
  EXPECT_EQ(code_of([&] { storage_->set_trial_user_attr(t.trial_id, "k", "1"); }),
            ErrorCode::kFailedPrecondition);
  EXPECT_EQ(storage_->get_trial(t.trial_id).state, TrialState::kFail);
}

TEST_P(StorageSuite, FinishSetsUserAttributesAndParamsGoInOneStep) {
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  FrozenTrial t = storage_->create_trial(s.study_id);
  storage_->set_trial_params(
      t.trial_id, {{"x", FloatDistribution{0, 1}, 0.5}, {"n", IntDistribution{1, 4}, int64_t{2}}});
  EXPECT_EQ(storage_->get_trial(t.trial_id).params.size(), 2u);
  // One bad param (3.5 is outside [0, 1]): none of them is written.
  FrozenTrial u = storage_->create_trial(s.study_id);
  EXPECT_EQ(code_of([&] {
              storage_->set_trial_params(u.trial_id, {{"x", FloatDistribution{0, 1}, 0.5},
                                                      {"y", FloatDistribution{0, 1}, 3.5}});
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(storage_->get_trial(u.trial_id).params.empty());

  FrozenTrial done = storage_->finish_trial(t.trial_id, TrialState::kComplete, {0.25}, {},
                                            {{"test_accuracy", "0.875"}});
  EXPECT_EQ(done.user_attrs.at("test_accuracy"), "0.875");
  EXPECT_EQ(storage_->get_trial(t.trial_id).user_attrs.at("test_accuracy"), "0.875");
  // A refused finish sets no user attribute either.
  EXPECT_EQ(code_of([&] {
              storage_->finish_trial(u.trial_id, TrialState::kComplete, {}, {}, {{"k", "1"}});
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_FALSE(storage_->get_trial(u.trial_id).user_attrs.contains("k"));
}

TEST_P(StorageSuite, RefusesBadWrites) {
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  FrozenTrial t = storage_->create_trial(s.study_id);
  EXPECT_EQ(code_of([&] {
              storage_->set_trial_param(t.trial_id, "x", IntDistribution{0, 1}, int64_t{5});
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] {
              storage_->set_trial_param(t.trial_id, "x", IntDistribution{0, 1}, 0.5);
            }),
            ErrorCode::kInvalidArgument);
  storage_->set_trial_param(t.trial_id, "x", IntDistribution{0, 1}, int64_t{1});
  EXPECT_EQ(code_of([&] {
              storage_->set_trial_param(t.trial_id, "x", IntDistribution{0, 2}, int64_t{1});
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { storage_->set_trial_intermediate_value(t.trial_id, 1, std::nan("")); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { storage_->finish_trial(t.trial_id, TrialState::kComplete, {}); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(
      code_of([&] { storage_->finish_trial(t.trial_id, TrialState::kComplete, {std::nan("")}); }),
      ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { storage_->finish_trial(t.trial_id, TrialState::kRunning, {}); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { storage_->get_trial(999999); }), ErrorCode::kNotFound);
  // Nothing of the refused writes was kept.
  FrozenTrial got = storage_->get_trial(t.trial_id);
  EXPECT_EQ(got.state, TrialState::kRunning);
  EXPECT_TRUE(got.intermediate_values.empty());
  EXPECT_EQ(got.params.at("x"), ParamValue(int64_t{1}));
}

TEST_P(StorageSuite, WaitingTrialsAreClaimedOnce) {
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  FrozenTrial w = storage_->create_trial(s.study_id, TrialState::kWaiting);
  EXPECT_EQ(w.state, TrialState::kWaiting);
  EXPECT_TRUE(storage_->claim_waiting_trial(w.trial_id));
  EXPECT_FALSE(storage_->claim_waiting_trial(w.trial_id));
  EXPECT_EQ(storage_->get_trial(w.trial_id).state, TrialState::kRunning);
}

TEST_P(StorageSuite, CopiesATrialAsATemplate) {
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  FrozenTrial t = storage_->create_trial(s.study_id);
  storage_->set_trial_param(t.trial_id, "c", CategoricalDistribution{{std::string("a")}},
                            std::string("a"));
  storage_->finish_trial(t.trial_id, TrialState::kFail, {});
  FrozenTrial source = storage_->get_trial(t.trial_id);
  FrozenTrial copy = storage_->create_trial(s.study_id, TrialState::kRunning, &source);
  EXPECT_EQ(copy.number, 1);
  EXPECT_EQ(storage_->get_trial(copy.trial_id).params, source.params);
}

TEST_P(StorageSuite, ConcurrentWritersGetDistinctNumbers) {
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 25; ++k) {
        FrozenTrial t = storage_->create_trial(s.study_id);
        storage_->finish_trial(t.trial_id, TrialState::kComplete, {static_cast<double>(k)});
      }
    });
  }
  for (auto& t : threads) t.join();
  auto trials = storage_->get_trials(s.study_id);
  ASSERT_EQ(trials.size(), 100u);
  for (size_t i = 0; i < trials.size(); ++i) EXPECT_EQ(trials[i].number, static_cast<int>(i));
}

TEST_P(StorageSuite, FinishSetsSystemAttributesInTheSameStep) {
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  FrozenTrial t = storage_->create_trial(s.study_id);
  FrozenTrial done =
      storage_->finish_trial(t.trial_id, TrialState::kFail, {}, {{"fail_reason", "\"oom\""}});
  EXPECT_EQ(done.state, TrialState::kFail);
  EXPECT_EQ(done.system_attrs.at("fail_reason"), "\"oom\"");
  EXPECT_TRUE(done.datetime_complete);
  EXPECT_EQ(storage_->get_trial(t.trial_id).system_attrs.at("fail_reason"), "\"oom\"");
  // A refused finish sets no attribute either.
  FrozenTrial u = storage_->create_trial(s.study_id);
  EXPECT_EQ(code_of([&] {
              storage_->finish_trial(u.trial_id, TrialState::kComplete, {}, {{"k", "1"}});
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_FALSE(storage_->get_trial(u.trial_id).system_attrs.contains("k"));
}

TEST_P(StorageSuite, StaleTrialsAreRunningTrialsWithoutARecentHeartbeat) {
  using std::chrono::hours;
  using std::chrono::minutes;
  const TimePoint now = std::chrono::system_clock::now();
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  StudyRecord other = storage_->create_study("other", {StudyDirection::kMinimize});
  FrozenTrial beating = storage_->create_trial(s.study_id);
  FrozenTrial silent = storage_->create_trial(s.study_id);
  FrozenTrial done = storage_->create_trial(s.study_id);
  FrozenTrial waiting = storage_->create_trial(s.study_id, TrialState::kWaiting);
  storage_->create_trial(other.study_id);
  storage_->finish_trial(done.trial_id, TrialState::kComplete, {1.0});
  storage_->record_heartbeat(beating.trial_id, now + hours(1));

  // `silent` has no heartbeat: its start counts.
  auto stale = storage_->get_stale_trials(s.study_id, now + minutes(10));
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0].number, silent.number);
  EXPECT_TRUE(storage_->get_stale_trials(s.study_id, now - hours(1)).empty());
  // A later heartbeat replaces the earlier one (here: moves it back in time).
  storage_->record_heartbeat(beating.trial_id, now - hours(2));
  stale = storage_->get_stale_trials(s.study_id, now - hours(1));
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0].number, beating.number);
  EXPECT_EQ(storage_->get_stale_trials(s.study_id, now + hours(2)).size(), 2u);

  EXPECT_EQ(code_of([&] { storage_->record_heartbeat(done.trial_id, now); }),
            ErrorCode::kFailedPrecondition);
  EXPECT_EQ(code_of([&] { storage_->record_heartbeat(waiting.trial_id, now); }),
            ErrorCode::kFailedPrecondition);
  EXPECT_EQ(code_of([&] { storage_->record_heartbeat(999999, now); }), ErrorCode::kNotFound);
}

TEST_P(StorageSuite, FailingAStaleTrialCreatesItsRetryOnce) {
  const TimePoint now = std::chrono::system_clock::now();
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  FrozenTrial t = storage_->create_trial(s.study_id);
  storage_->set_trial_param(t.trial_id, "x", FloatDistribution{0, 1}, 0.25);
  storage_->set_trial_user_attr(t.trial_id, "note", "\"n\"");
  FrozenTrial fresh = storage_->create_trial(s.study_id);
  storage_->record_heartbeat(fresh.trial_id, now + std::chrono::hours(1));

  FrozenTrial stale = storage_->get_trials(s.study_id)[0];
  FrozenTrial retry = stale;
  retry.system_attrs["failed_trial"] = "0";
  retry.system_attrs["retry_history"] = "[0]";
  const TimePoint stale_before = now + std::chrono::minutes(1);
  auto outcome =
      storage_->fail_stale_trial(t.trial_id, stale_before, {{"fail_reason", "\"stale\""}}, &retry);
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->failed.state, TrialState::kFail);
  EXPECT_EQ(outcome->failed.system_attrs.at("fail_reason"), "\"stale\"");
  ASSERT_TRUE(outcome->retry);
  EXPECT_EQ(outcome->retry->number, 2);
  EXPECT_EQ(outcome->retry->state, TrialState::kWaiting);
  EXPECT_EQ(outcome->retry->params, stale.params);
  EXPECT_EQ(outcome->retry->user_attrs.at("note"), "\"n\"");
  EXPECT_EQ(outcome->retry->system_attrs.at("failed_trial"), "0");
  EXPECT_EQ(storage_->get_trial(outcome->retry->trial_id).system_attrs.at("retry_history"), "[0]");

  // Handled once: the second caller (another process that saw it stale) gets nothing.
  EXPECT_FALSE(storage_->fail_stale_trial(t.trial_id, stale_before, {}, &retry));
  // A trial with a recent heartbeat is not failed, and is left RUNNING.
  EXPECT_FALSE(storage_->fail_stale_trial(fresh.trial_id, stale_before, {}, nullptr));
  EXPECT_EQ(storage_->get_trial(fresh.trial_id).state, TrialState::kRunning);
  // Without a retry, only the FAIL.
  auto failed =
      storage_->fail_stale_trial(fresh.trial_id, now + std::chrono::hours(2), {}, nullptr);
  ASSERT_TRUE(failed);
  EXPECT_FALSE(failed->retry);
  EXPECT_EQ(storage_->get_trials(s.study_id).size(), 3u);
}

// How a coordinator fails a trial whose run it lost and makes its re-run in one step.
TEST_P(StorageSuite, StaleBeforeTheEndOfTimeFailsAnyRunningTrialWhateverItsHeartbeat) {
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  FrozenTrial t = storage_->create_trial(s.study_id);
  storage_->record_heartbeat(t.trial_id, std::chrono::system_clock::now() + std::chrono::hours(1));
  FrozenTrial retry = storage_->get_trial(t.trial_id);
  retry.system_attrs["retry_history"] = "[0]";
  auto outcome = storage_->fail_stale_trial(t.trial_id, TimePoint::max(),
                                            {{"fail_reason", "\"lost\""}}, &retry);
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->failed.state, TrialState::kFail);
  ASSERT_TRUE(outcome->retry);
  EXPECT_EQ(outcome->retry->state, TrialState::kWaiting);
  // A finished trial is not failed again.
  EXPECT_FALSE(storage_->fail_stale_trial(t.trial_id, TimePoint::max(), {}, nullptr));
  EXPECT_EQ(storage_->get_trials(s.study_id).size(), 2u);
}

TEST_P(StorageSuite, TrialsCanComeWithoutTheirIntermediateValues) {
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  FrozenTrial a = storage_->create_trial(s.study_id);
  FrozenTrial b = storage_->create_trial(s.study_id);
  for (int step = 0; step < 3; ++step) {
    storage_->set_trial_intermediate_value(a.trial_id, step, 1.0);
    storage_->set_trial_intermediate_value(b.trial_id, step, 2.0);
  }
  storage_->set_trial_param(a.trial_id, "x", FloatDistribution{0, 1}, 0.5);
  TrialFilter filter;
  filter.without_intermediate_values = {a.trial_id};
  std::vector<FrozenTrial> got = storage_->get_trials(s.study_id, filter);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].intermediate_values.empty());
  EXPECT_EQ(got[0].params.at("x"), ParamValue(0.5));  // the rest of the record is there
  EXPECT_EQ(got[1].intermediate_values.size(), 3u);
  // With a state filter and a start too; and the stored values are untouched.
  filter.states = std::vector<TrialState>{TrialState::kRunning};
  filter.min_number = 1;
  got = storage_->get_trials(s.study_id, filter);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].intermediate_values.size(), 3u);
  EXPECT_EQ(storage_->get_trial(a.trial_id).intermediate_values.size(), 3u);
}

TEST_P(StorageSuite, StepMetricsKeepEveryMetricOfEveryStep) {
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMaximize});
  StudyRecord other = storage_->create_study("other", {StudyDirection::kMaximize});
  FrozenTrial a = storage_->create_trial(s.study_id);
  FrozenTrial b = storage_->create_trial(s.study_id);
  FrozenTrial c = storage_->create_trial(other.study_id);
  const double inf = std::numeric_limits<double>::infinity();
  storage_->set_trial_step_metrics(a.trial_id, 2, {{"train_loss", 0.4}, {"val_accuracy", 0.8}});
  storage_->set_trial_step_metrics(a.trial_id, 1, {{"train_loss", 0.9}, {"lr", inf}});
  // A metric written again at a step replaces its value; the step's others stay.
  storage_->set_trial_step_metrics(a.trial_id, 2, {{"val_accuracy", 0.85}});
  storage_->set_trial_step_metrics(b.trial_id, 1, {{"train_loss", std::nan("")}});
  storage_->set_trial_step_metrics(c.trial_id, 1, {{"train_loss", 1.0}});
  storage_->set_trial_step_metrics(b.trial_id, 3, {});  // nothing to store

  std::map<int64_t, std::vector<StepMetrics>> got = storage_->get_step_metrics(s.study_id);
  ASSERT_EQ(got.size(), 2u);
  const std::vector<StepMetrics>& steps = got.at(a.trial_id);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].step, 1);
  EXPECT_EQ(steps[0].metrics, (StepValues{{"lr", inf}, {"train_loss", 0.9}}));
  EXPECT_EQ(steps[1].step, 2);
  EXPECT_EQ(steps[1].metrics, (StepValues{{"train_loss", 0.4}, {"val_accuracy", 0.85}}));
  EXPECT_GE(steps[1].time, *a.datetime_start - std::chrono::seconds(1));
  ASSERT_EQ(got.at(b.trial_id).size(), 1u);
  EXPECT_TRUE(std::isnan(got.at(b.trial_id)[0].metrics.at("train_loss")));

  got = storage_->get_step_metrics(s.study_id, {b.trial_id, c.trial_id});
  ASSERT_EQ(got.size(), 1u);  // c is another study's
  EXPECT_TRUE(got.contains(b.trial_id));

  // A finished trial's steps never change; an unknown study or trial is not found.
  storage_->finish_trial(a.trial_id, TrialState::kComplete, {0.85});
  EXPECT_EQ(code_of([&] {
              storage_->set_trial_step_metrics(a.trial_id, 3, {{"x", 1.0}});
            }),
            ErrorCode::kFailedPrecondition);
  EXPECT_EQ(code_of([&] {
              storage_->set_trial_step_metrics(12345, 3, {{"x", 1.0}});
            }),
            ErrorCode::kNotFound);
  EXPECT_EQ(code_of([&] { storage_->get_step_metrics(12345); }), ErrorCode::kNotFound);

  // Deleting a study deletes its trials' steps and no other study's.
  storage_->delete_study(s.study_id);
  EXPECT_EQ(storage_->get_step_metrics(other.study_id).at(c.trial_id).size(), 1u);
}

TEST_P(StorageSuite, ConcurrentStaleHandlersFailATrialOnce) {
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  FrozenTrial t = storage_->create_trial(s.study_id);
  const TimePoint stale_before = std::chrono::system_clock::now() + std::chrono::hours(1);
  std::atomic<int> wins{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      if (storage_->fail_stale_trial(t.trial_id, stale_before, {}, &t)) ++wins;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wins, 1);
  EXPECT_EQ(storage_->get_trials(s.study_id).size(), 2u);
}

TEST_P(StorageSuite, BestTrialIsTheFirstOfTheBestCompleteValue) {
  StudyRecord lo = storage_->create_study("lo", {StudyDirection::kMinimize});
  StudyRecord hi = storage_->create_study("hi", {StudyDirection::kMaximize});
  EXPECT_FALSE(storage_->get_best_trial(lo.study_id));
  for (StudyRecord* s : {&lo, &hi}) {
    for (double v : {3.0, 1.0, 5.0, 1.0, 5.0}) {
      FrozenTrial t = storage_->create_trial(s->study_id);
      storage_->finish_trial(t.trial_id, TrialState::kComplete, {v});
    }
    FrozenTrial pruned = storage_->create_trial(s->study_id);
    storage_->finish_trial(pruned.trial_id, TrialState::kPruned, {-100.0});
    storage_->create_trial(s->study_id);  // RUNNING
  }
  EXPECT_EQ(storage_->get_best_trial(lo.study_id)->number, 1);
  EXPECT_EQ(storage_->get_best_trial(hi.study_id)->number, 2);
  EXPECT_EQ(storage_->get_best_trial(hi.study_id)->values, std::vector<double>{5.0});
  TrialFilter filter;
  filter.states = std::vector<TrialState>{TrialState::kPruned, TrialState::kRunning};
  auto some = storage_->get_trials(lo.study_id, filter);
  ASSERT_EQ(some.size(), 2u);
  EXPECT_EQ(some[0].number, 5);
  EXPECT_EQ(some[1].number, 6);
  filter.states = std::vector<TrialState>{};
  EXPECT_TRUE(storage_->get_trials(lo.study_id, filter).empty());
}

// Equal best values finished in reverse number order: the lowest number wins, not the first
// value stored.
TEST_P(StorageSuite, BestTrialAmongTiesIsTheLowestNumberWhateverOrderTheyFinished) {
  for (StudyDirection direction : {StudyDirection::kMinimize, StudyDirection::kMaximize}) {
    StudyRecord s =
        storage_->create_study(direction == StudyDirection::kMinimize ? "min" : "max", {direction});
    std::vector<FrozenTrial> trials;
    for (int i = 0; i < 6; ++i) trials.push_back(storage_->create_trial(s.study_id));
    // numbers 0..5 finish as 5, 4, ..., 0; values 9, 2, 2, 2, 9, 2 by number.
    for (int i = 5; i >= 0; --i) {
      const double v = (i == 0 || i == 4) ? 9.0 : 2.0;
      const double value = direction == StudyDirection::kMinimize ? v : -v;
      storage_->finish_trial(trials[i].trial_id, TrialState::kComplete, {value});
    }
    auto best = storage_->get_best_trial(s.study_id);
    ASSERT_TRUE(best);
    EXPECT_EQ(best->number, 1) << to_string(direction);
    EXPECT_EQ(best->trial_id, trials[1].trial_id);
  }
}

// Values of other studies, of other objectives and of trials that are not COMPLETE rank before
// the study's best and are passed over; several objectives rank by the first one.
TEST_P(StorageSuite, BestTrialRanksTheFirstObjectiveOfItsOwnCompleteTrials) {
  StudyRecord other = storage_->create_study("other", {StudyDirection::kMinimize});
  StudyRecord s =
      storage_->create_study("s", {StudyDirection::kMinimize, StudyDirection::kMaximize});
  for (double v : {-50.0, -40.0}) {
    FrozenTrial t = storage_->create_trial(other.study_id);
    storage_->finish_trial(t.trial_id, TrialState::kComplete, {v});
  }
  EXPECT_FALSE(storage_->get_best_trial(s.study_id));
  auto finish = [&](TrialState state, std::vector<double> values) {
    FrozenTrial t = storage_->create_trial(s.study_id);
    storage_->finish_trial(t.trial_id, state, values);
    return t.number;
  };
  finish(TrialState::kComplete, {3.0, -100.0});  // 0: the best second value
  finish(TrialState::kPruned, {-30.0, 0.0});     // 1: not COMPLETE
  finish(TrialState::kFail, {});                 // 2
  const int best = finish(TrialState::kComplete, {1.0, 5.0});
  finish(TrialState::kComplete, {1.0, 7.0});  // 4: ties with 3 on the first objective
  finish(TrialState::kComplete, {2.0, -200.0});
  storage_->create_trial(s.study_id);  // RUNNING
  auto got = storage_->get_best_trial(s.study_id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->number, best);
  EXPECT_EQ(got->values, (std::vector<double>{1.0, 5.0}));
  EXPECT_EQ(storage_->get_best_trial(other.study_id)->values, std::vector<double>{-50.0});
}

// The RUNNING list follows every way a trial enters or leaves RUNNING, in number order.
TEST_P(StorageSuite, RunningTrialsFollowStateChanges) {
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  StudyRecord other = storage_->create_study("other", {StudyDirection::kMinimize});
  storage_->create_trial(other.study_id);  // RUNNING, in another study
  TrialFilter running;
  running.states = std::vector<TrialState>{TrialState::kRunning};
  auto numbers = [&](const TrialFilter& filter) {
    std::vector<int> out;
    for (const FrozenTrial& t : storage_->get_trials(s.study_id, filter)) out.push_back(t.number);
    return out;
  };
  EXPECT_TRUE(numbers(running).empty());
  std::vector<FrozenTrial> t;
  for (int i = 0; i < 4; ++i) t.push_back(storage_->create_trial(s.study_id));
  t.push_back(storage_->create_trial(s.study_id, TrialState::kWaiting));
  EXPECT_EQ(numbers(running), (std::vector<int>{0, 1, 2, 3}));
  storage_->finish_trial(t[1].trial_id, TrialState::kComplete, {1.0});
  storage_->finish_trial(t[2].trial_id, TrialState::kPruned, {});
  EXPECT_EQ(numbers(running), (std::vector<int>{0, 3}));
  ASSERT_TRUE(storage_->claim_waiting_trial(t[4].trial_id));
  EXPECT_EQ(numbers(running), (std::vector<int>{0, 3, 4}));
  auto failed = storage_->fail_stale_trial(t[0].trial_id, TimePoint::max(), {}, nullptr);
  ASSERT_TRUE(failed);
  EXPECT_EQ(numbers(running), (std::vector<int>{3, 4}));
  running.min_number = 4;
  EXPECT_EQ(numbers(running), (std::vector<int>{4}));
  TrialFilter done;
  done.states = std::vector<TrialState>{TrialState::kFail, TrialState::kComplete};
  EXPECT_EQ(numbers(done), (std::vector<int>{0, 1}));
}

TEST_P(StorageSuite, ABatchCommitsItsCallsTogetherAndEachCallStaysAtomic) {
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  FrozenTrial done = storage_->create_trial(s.study_id);
  storage_->finish_trial(done.trial_id, TrialState::kComplete, {1.0});
  FrozenTrial created;
  storage_->run_batch([&] {
    created = storage_->create_trial(s.study_id);
    storage_->set_trial_params(created.trial_id, {{"x", FloatDistribution{0, 1}, 0.5},
                                                  {"y", FloatDistribution{0, 1}, 0.25}});
    // A call that fails inside the batch changes nothing, and the batch goes on.
    EXPECT_EQ(code_of([&] { storage_->finish_trial(done.trial_id, TrialState::kComplete, {2.0}); }),
              ErrorCode::kFailedPrecondition);
    // The batch's calls see each other.
    EXPECT_EQ(storage_->get_trial(created.trial_id).params.size(), 2u);
    storage_->finish_trial(created.trial_id, TrialState::kComplete, {0.5});
    // A batch inside a batch joins it.
    storage_->run_batch([&] { storage_->set_study_user_attr(s.study_id, "k", "1"); });
  });
  const FrozenTrial got = storage_->get_trial(created.trial_id);
  EXPECT_EQ(got.state, TrialState::kComplete);
  EXPECT_EQ(got.params.at("y"), ParamValue(0.25));
  EXPECT_EQ(storage_->get_trial(done.trial_id).values, std::vector<double>{1.0});
  EXPECT_EQ(storage_->find_study("s")->user_attrs.at("k"), "1");
}

TEST_P(StorageSuite, ABatchKeepsOtherThreadsOutUntilItEnds) {
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  std::atomic<bool> in_batch{false};
  std::atomic<size_t> seen_by_other{99};
  std::thread other;
  storage_->run_batch([&] {
    storage_->create_trial(s.study_id);
    other = std::thread([&] { seen_by_other = storage_->get_trials(s.study_id).size(); });
    in_batch = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    storage_->create_trial(s.study_id);
  });
  other.join();
  EXPECT_TRUE(in_batch);
  EXPECT_EQ(seen_by_other.load(), 2u);  // both trials: never one of them
}

TEST_P(StorageSuite, ChangeCountMovesWithEveryWrite) {
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  const std::optional<uint64_t> start = storage_->change_count();
  if (!start) GTEST_SKIP() << "this storage cannot tell its changes";
  EXPECT_EQ(storage_->change_count(), start);  // reads change nothing
  storage_->get_trials(s.study_id);
  EXPECT_EQ(storage_->change_count(), start);
  FrozenTrial t = storage_->create_trial(s.study_id);
  EXPECT_EQ(storage_->change_count(), *start + 1);  // a successful write counts one
  storage_->finish_trial(t.trial_id, TrialState::kComplete, {1.0});
  EXPECT_EQ(storage_->change_count(), *start + 2);
  storage_->run_batch([&] { storage_->create_trial(s.study_id); });
  EXPECT_EQ(storage_->change_count(), *start + 3);
}

}  // namespace tuner
