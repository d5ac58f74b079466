// A study run under population-based training (PBT's explore and PB2's): members asked from the
// sampler with their lineage, segments paused at their end and stored COMPLETE with their value
// there, and the next segments made from storage, also by a run that starts over on the same
// storage (a restarted coordinator).
#include <gtest/gtest.h>

#include <memory>

#include "coordinator/parts_test_support.h"
#include "coordinator/study_run.h"
#include "search/schedulers/pbt.h"
#include "storage/in_memory_storage.h"
#include "trials/error.h"

namespace tuner {
namespace {

class StudyRunPbtTest : public testing::CoordinatorPartsTest {
 protected:
  std::unique_ptr<StudyRun> make_pbt_run(PbtExplore explore = PbtExplore::kPerturb) {
    StudyOptions so;
    so.name = "pbt";
    so.sampler = std::make_shared<RandomSampler>();
    so.seed = 7;
    so.storage = storage_;
    so.clock = clock_;
    so.heartbeat_interval = std::nullopt;
    so.load_if_exists = true;
    SearchSpace space;
    space.add_float("x", 0.0, 1.0);
    so.space = space;
    StudyRunOptions o;
    o.job_json = testing::kCommandJob;
    o.pbt = std::make_shared<PbtScheduler>(PbtOptions{.population_size = 2,
                                                      .perturbation_interval = 2,
                                                      .seed = 1,
                                                      .max_steps = 4,
                                                      .explore = explore});
    return std::make_unique<StudyRun>(next_run_id_++, Study::create(so), std::move(o), context());
  }

  // Reports `values` at the steps after the segment's first and ends it as its job would when
  // paused at the last one: RESULT with a metric that is not the value at the end.
  FrozenTrial run_segment(StudyRun& run, Prepared& work, std::vector<double> values) {
    const int64_t first = 2 * work.segment->segment + 1;
    for (size_t i = 0; i < values.size(); ++i) {
      const int64_t step = first + static_cast<int64_t>(i);
      work.trial->report(step, values[i]);
      if (run.pauses(work, step)) work.paused_at = step;
    }
    EXPECT_TRUE(work.paused_at);
    const FrozenTrial told =
        run.tell_result(*work.trial, ResultMessage{.metrics = {{"loss", 99.0}}}, work.paused_at);
    run.count(told);
    return told;
  }

  std::shared_ptr<Storage> storage_ = std::make_shared<InMemoryStorage>();
};

class StudyRunPbtExploreTest : public StudyRunPbtTest,
                               public ::testing::WithParamInterface<PbtExplore> {};

TEST_P(StudyRunPbtExploreTest, SegmentsGoOnAcrossARestart) {
  std::unique_ptr<StudyRun> run = make_pbt_run(GetParam());
  std::optional<Prepared> a = run->next_work(commit_);
  std::optional<Prepared> b = run->next_work(commit_);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->segment, (PbtLineage{.member = 0, .segment = 0}));
  EXPECT_EQ(b->segment, (PbtLineage{.member = 1, .segment = 0}));
  EXPECT_FALSE(run->next_work(commit_));  // the population is started
  EXPECT_EQ(run->stats.trials_started, 2);
  EXPECT_FALSE(run->pauses(*a, 1));
  EXPECT_TRUE(run->pauses(*a, 2));

  const FrozenTrial told = run_segment(*run, *a, {2.0, 1.0});
  EXPECT_EQ(told.state, TrialState::kComplete);
  EXPECT_EQ(told.values, std::vector<double>{1.0});  // its value at its end, not the RESULT's
  run_segment(*run, *b, {6.0, 5.0});

  // The coordinator dies before it makes the next segments; another starts on the storage.
  run.reset();
  std::unique_ptr<StudyRun> again = make_pbt_run(GetParam());
  EXPECT_TRUE(again->wants_slots());
  std::optional<Prepared> a1 = again->next_work(commit_);
  std::optional<Prepared> b1 = again->next_work(commit_);
  ASSERT_TRUE(a1 && b1);
  EXPECT_FALSE(again->next_work(commit_));
  EXPECT_EQ(again->stats.trials_started, 0);  // segments are no new trials of the budget
  // Member 0 (1.0) continues; member 1 (5.0), the bottom one, exploits member 0's segment.
  EXPECT_EQ(a1->segment, (PbtLineage{.member = 0, .segment = 1, .parent = 0}));
  EXPECT_EQ(b1->segment, (PbtLineage{.member = 1, .segment = 1, .parent = 0}));
  EXPECT_EQ(a1->start_from, 0);
  EXPECT_EQ(b1->start_from, 0);
  EXPECT_EQ(a1->params, a->params);
  EXPECT_TRUE(again->before_segment(*a1, 2));  // its parent's steps, reported again
  EXPECT_FALSE(again->before_segment(*a1, 3));
  EXPECT_FALSE(again->before_segment(*a, 1));
  EXPECT_NE(b1->params, b->params);
  // The lineage is stored with each segment.
  const FrozenTrial stored = storage_->get_trial(b1->trial->id());
  EXPECT_EQ(stored.system_attrs.at(kPbtMemberAttr), "1");
  EXPECT_EQ(stored.system_attrs.at(kPbtSegmentAttr), "1");
  EXPECT_EQ(stored.system_attrs.at(kPbtParentAttr), "0");

  // The last segments end at max_steps: no more after them.
  run_segment(*again, *a1, {0.9, 0.8});
  run_segment(*again, *b1, {0.7, 0.6});
  EXPECT_FALSE(again->next_work(commit_));
  EXPECT_TRUE(again->done());
}

INSTANTIATE_TEST_SUITE_P(Explore, StudyRunPbtExploreTest,
                         ::testing::Values(PbtExplore::kPerturb, PbtExplore::kBandit),
                         [](const ::testing::TestParamInfo<PbtExplore>& p) {
                           return p.param == PbtExplore::kBandit ? "Pb2" : "Pbt";
                         });

TEST_F(StudyRunPbtTest, SeveralObjectivesAreRefused) {
  StudyOptions so;
  so.name = "two";
  so.storage = storage_;
  so.directions = {StudyDirection::kMinimize, StudyDirection::kMinimize};
  StudyRunOptions o;
  o.job_json = testing::kCommandJob;
  o.objective_metrics = {"loss", "ms"};
  o.pbt = std::make_shared<PbtScheduler>(PbtOptions{.perturbation_interval = 2});
  EXPECT_THROW(StudyRun(0, Study::create(so), std::move(o), context()), Error);
}

}  // namespace
}  // namespace tuner
