// The tests of the shared storage suite (storage_test_suite.h); every backend instantiates them.
#include <cmath>
#include <thread>

#include "storage/storage_test_suite.h"

namespace tuner {

TEST_P(StorageSuite, CreatesFindsAndDeletesStudies) {
  StudyRecord a = storage_->create_study("a", {StudyDirection::kMinimize});
  StudyRecord b = storage_->create_study("b", {StudyDirection::kMaximize, StudyDirection::kMinimize});
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
  EXPECT_EQ(code_of([&] { storage_->set_trial_param(t.trial_id, "x", IntDistribution{0, 1}, int64_t{0}); }),
            ErrorCode::kFailedPrecondition);
  EXPECT_EQ(code_of([&] { storage_->set_trial_user_attr(t.trial_id, "k", "1"); }),
            ErrorCode::kFailedPrecondition);
  EXPECT_EQ(storage_->get_trial(t.trial_id).state, TrialState::kFail);
}

TEST_P(StorageSuite, RefusesBadWrites) {
  StudyRecord s = storage_->create_study("s", {StudyDirection::kMinimize});
  FrozenTrial t = storage_->create_trial(s.study_id);
  EXPECT_EQ(code_of([&] { storage_->set_trial_param(t.trial_id, "x", IntDistribution{0, 1}, int64_t{5}); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { storage_->set_trial_param(t.trial_id, "x", IntDistribution{0, 1}, 0.5); }),
            ErrorCode::kInvalidArgument);
  storage_->set_trial_param(t.trial_id, "x", IntDistribution{0, 1}, int64_t{1});
  EXPECT_EQ(code_of([&] { storage_->set_trial_param(t.trial_id, "x", IntDistribution{0, 2}, int64_t{1}); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { storage_->set_trial_intermediate_value(t.trial_id, 1, std::nan("")); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { storage_->finish_trial(t.trial_id, TrialState::kComplete, {}); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { storage_->finish_trial(t.trial_id, TrialState::kComplete, {std::nan("")}); }),
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
  storage_->set_trial_param(t.trial_id, "c", CategoricalDistribution{{std::string("a")}}, std::string("a"));
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

}  // namespace tuner
