#include "coordinator/study_run.h"

#include <gtest/gtest.h>

#include <cmath>

#include "coordinator/coordinator_test_support.h"
#include "coordinator/parts_test_support.h"
#include "trials/error.h"
#include "trials/system_attrs.h"

namespace tuner {
namespace {

class StudyRunTest : public testing::CoordinatorPartsTest {};

std::string engine_job(const std::string& backend, int ranks, int nodes,
                       const std::string& artifacts_dir = "") {
  return R"({"kind": "engine", "backend": ")" + backend + R"(", "ranks": )" +
         std::to_string(ranks) + R"(, "nodes": )" + std::to_string(nodes) +
         (artifacts_dir.empty() ? "" : R"(, "artifacts_dir": ")" + artifacts_dir + R"(")") + R"(,
      "model": {"input": [1, 28, 28], "layers": [{"type": "flatten"}, {"type": "linear", "out": 10}]},
      "data": {"dataset": "fashion-mnist", "train": 100, "validation": 50},
      "training": {"lr": "{x}"}, "objective_metric": "val_accuracy"})";
}

TEST(JobNeedsTest, WhatTheCoordinatorNeedsToKnowOfAJob) {
  const StudyJobNeeds command = job_needs(testing::kCommandJob, "job");
  EXPECT_EQ(command.objective_metric, "loss");
  EXPECT_EQ(command.gpus_per_trial, 0);
  EXPECT_EQ(command.nodes_per_trial, 1);
  EXPECT_EQ(command.checkpoint_path(3), std::nullopt);

  // A CUDA engine trial takes one GPU per rank, its ranks spread over its nodes.
  const StudyJobNeeds cuda = job_needs(engine_job("cuda", 4, 2), "job");
  EXPECT_EQ(cuda.objective_metric, "val_accuracy");
  EXPECT_EQ(cuda.gpus_per_trial, 2);
  EXPECT_EQ(cuda.nodes_per_trial, 2);
  EXPECT_EQ(job_needs(engine_job("cpu", 4, 2), "job").gpus_per_trial, 0);

  const StudyJobNeeds checkpointed = job_needs(engine_job("cpu", 1, 1, "/runs/a"), "job");
  EXPECT_EQ(checkpointed.checkpoint_path(3), "/runs/a/trial-3/resume.ckpt");

  try {
    job_needs(R"({"kind": "nonsense"})", "coordinator: study 's': job");
    FAIL() << "a bad job was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(std::string(e.what()).rfind("coordinator: study 's': job", 0), 0u) << e.what();
  }
}

TEST_F(StudyRunTest, RefusesWhatAJobCannotRun) {
  StudyRunOptions o;
  o.job_json = testing::kCommandJob;
  o.max_retries = -1;
  EXPECT_THROW(StudyRun(0, make_study("s"), o, context()), Error);
  o.max_retries = 0;
  o.job_json = "{}";
  EXPECT_THROW(StudyRun(0, make_study("t"), o, context()), Error);
}

TEST_F(StudyRunTest, AsksUntilItsBudgetIsSpent) {
  auto run = make_run(make_study("s"), testing::kCommandJob, /*n_trials=*/2);
  EXPECT_TRUE(run->wants_slots());
  std::optional<Prepared> first = run->next_work(commit_);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->attempt, 0);
  EXPECT_FALSE(first->asked_in_batch);
  // A trial that could not be leased waits first in line, asked once.
  run->requeue(std::move(*first));
  std::optional<Prepared> again = run->next_work(commit_);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->trial->number(), 0);
  ASSERT_TRUE(run->next_work(commit_));
  EXPECT_EQ(run->stats.trials_started, 2);
  EXPECT_FALSE(run->may_start_new());
  EXPECT_FALSE(run->wants_slots());
  EXPECT_FALSE(run->next_work(commit_));
  EXPECT_TRUE(run->done());  // nothing leased (the handles were dropped here)
}

TEST_F(StudyRunTest, MaxConcurrencyCountsLeasedTrialsAndOrphans) {
  auto run = make_run(make_study("s"));
  run->options.max_concurrency = 2;
  lease_next(*run, "a");
  EXPECT_TRUE(run->may_lease_more());
  Lease& second = lease_next(*run, "a");
  EXPECT_FALSE(run->may_lease_more());
  leases_.set_outcome_pending(second, true);  // its outcome is being committed: a slot frees
  EXPECT_TRUE(run->may_lease_more());
  run->orphans[99] = Orphan{.number = 9};
  EXPECT_FALSE(run->may_lease_more());
}

TEST_F(StudyRunTest, AStudyWhoseAsksKeepFailingDrainsWithTheError) {
  auto sampler = std::make_shared<testing::ScriptedSampler>(std::vector<bool>{false, false, false});
  auto run = make_run(make_study("s", nullptr, sampler));
  EXPECT_FALSE(run->next_work(commit_));
  EXPECT_EQ(run->stats.failed_asks, 1);
  EXPECT_EQ(run->failed_asks_in_a_row, 1);
  // Asked again a heartbeat interval later, not before.
  EXPECT_FALSE(run->next_work(commit_));
  EXPECT_EQ(sampler->asks(), 1u);
  clock_->advance(kHeartbeat);
  EXPECT_FALSE(run->next_work(commit_));
  clock_->advance(kHeartbeat);
  EXPECT_FALSE(run->next_work(commit_));
  EXPECT_EQ(sampler->asks(), 3u);
  EXPECT_TRUE(run->draining);
  ASSERT_TRUE(run->failure);
  EXPECT_EQ(*run->failure, "sampling failed 3 times in a row: scripted failure of ask 2");
  EXPECT_TRUE(outbox_.logged("study 's' draining: no new trials; 0 still running"));
  EXPECT_TRUE(run->done());
}

TEST_F(StudyRunTest, DrainingRequeuesTheTrialsAskedAndNotLeased) {
  auto run = make_run(make_study("s"), testing::kCommandJob, /*n_trials=*/5);
  std::optional<Prepared> work = run->next_work(commit_);
  ASSERT_TRUE(work);
  const int64_t asked = work->trial->id();
  run->requeue(std::move(*work));
  run->drain();
  EXPECT_TRUE(run->prepared.empty());
  EXPECT_FALSE(run->next_work(commit_));
  EXPECT_TRUE(run->done());
  EXPECT_EQ(run->study.storage().get_trial(asked).state, TrialState::kFail);
  // Its re-run waits, with its lineage, for the study's next run.
  const auto waiting = run->study.trials({.states = std::vector{TrialState::kWaiting}});
  ASSERT_EQ(waiting.size(), 1u);
  EXPECT_TRUE(waiting[0].system_attrs.contains(kFailedTrialAttr));
  auto next = make_run(run->study);
  EXPECT_EQ(next->pending_retries, 1);
}

TEST_F(StudyRunTest, AnEarlierCoordinatorsTrialsAreTakenBackOrFailedAndRunAgain) {
  Study study = make_study("s");
  const int64_t kept = study.ask().id();  // the handles are dropped: RUNNING, held by nobody
  const int64_t lost = study.ask().id();
  auto run = make_run(study);
  EXPECT_EQ(run->orphans.size(), 2u);
  EXPECT_TRUE(
      outbox_.logged("2 trial(s) were running under an earlier coordinator; waiting 800 ms"));
  EXPECT_EQ(run->next_orphan_deadline(), clock_->steady_now() + 2 * kLeaseTimeout);
  EXPECT_FALSE(run->done());

  std::optional<Prepared> back = run->take_back(kept);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->trial->id(), kept);
  EXPECT_EQ(back->attempt, 0);
  EXPECT_EQ(run->stats.reattached, 1);
  EXPECT_FALSE(run->take_back(kept));  // not an orphan any more
  EXPECT_FALSE(run->take_back(12345));

  clock_->advance(2 * kLeaseTimeout);
  run->expire_orphans(clock_->steady_now());
  EXPECT_TRUE(run->orphans.empty());
  EXPECT_EQ(run->stats.leases_expired, 1);
  EXPECT_EQ(run->stats.failed, 1);
  EXPECT_EQ(run->study.storage().get_trial(lost).state, TrialState::kFail);
  EXPECT_EQ(run->pending_retries, 1);
  // The re-run comes first, with its lineage, and is not a new trial of the budget.
  std::optional<Prepared> rerun = run->next_work(commit_);
  ASSERT_TRUE(rerun);
  EXPECT_EQ(rerun->attempt, 1);
  EXPECT_EQ(rerun->history, std::vector<int>{1});
  EXPECT_EQ(run->stats.retries_started, 1);
  EXPECT_EQ(run->stats.trials_started, 0);
  EXPECT_EQ(run->pending_retries, 0);
}

TEST_F(StudyRunTest, ALostTrialRunsAgainUpToTheRetryLimit) {
  auto run = make_run(make_study("s"), testing::kCommandJob, std::nullopt, /*max_retries=*/1);
  std::optional<Prepared> work = run->next_work(commit_);
  ASSERT_TRUE(work);
  EXPECT_TRUE(run->fail_and_rerun(*work, "lease expired"));
  std::optional<Prepared> second = run->next_work(commit_);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->attempt, 1);
  EXPECT_FALSE(run->fail_and_rerun(*second, "lease expired again"));
  EXPECT_TRUE(outbox_.logged("is not run again: 2 attempt(s), max_retries 1"));
  EXPECT_EQ(run->stats.failed, 2);
  EXPECT_EQ(run->pending_retries, 0);
}

TEST_F(StudyRunTest, TellsResultsWithTheirMetricsAndConstraints) {
  auto run = make_run(make_study("s"));
  run->options.constraints = {MetricConstraint{.metric = "latency", .limit = 10}};
  std::optional<Prepared> a = run->next_work(commit_);
  std::optional<Prepared> b = run->next_work(commit_);
  std::optional<Prepared> c = run->next_work(commit_);
  ASSERT_TRUE(a && b && c);

  const FrozenTrial ok = run->tell_result(
      *a->trial, ResultMessage{.metrics = {{"loss", 0.25}, {"latency", 4}, {"epochs", 3}},
                               .integer_metrics = {"epochs"}});
  EXPECT_EQ(ok.state, TrialState::kComplete);
  EXPECT_EQ(ok.values, std::vector<double>{0.25});
  EXPECT_EQ(ok.user_attrs.at("epochs"), "3");
  EXPECT_EQ(ok.user_attrs.at("loss"), "0.25");
  EXPECT_EQ(ok.system_attrs.at("constraints"), "[-6.0]");  // latency 4 <= 10

  const FrozenTrial unfit = run->tell_result(
      *b->trial, ResultMessage{.metrics = {{"loss", 0.5}, {"latency", std::nan("")}}});
  EXPECT_EQ(unfit.state, TrialState::kFail);
  EXPECT_EQ(unfit.user_attrs.at("latency"), "NaN");
  EXPECT_NE(unfit.system_attrs.at(kFailReasonAttr).find("a constraint needs a finite value"),
            std::string::npos);

  const FrozenTrial no_objective =
      run->tell_result(*c->trial, ResultMessage{.metrics = {{"latency", 1}}});
  EXPECT_EQ(no_objective.state, TrialState::kFail);
  EXPECT_EQ(no_objective.system_attrs.at(kFailReasonAttr),
            "\"the job ended well without its objective metric 'loss' (it printed: latency)\"");
  EXPECT_EQ(no_objective.system_attrs.at(kMissingMetricAttr), "\"loss\"");
}

// A study of several objectives values each trial by one final metric per objective.
TEST_F(StudyRunTest, SeveralObjectivesTakeTheirValuesFromTheirMetrics) {
  StudyOptions so;
  so.name = "mo";
  so.directions = {StudyDirection::kMinimize, StudyDirection::kMinimize};
  so.sampler = std::make_shared<RandomSampler>();
  so.storage = std::make_shared<InMemoryStorage>();
  so.clock = clock_;
  so.heartbeat_interval = std::nullopt;
  so.space = SearchSpace();
  so.space->add_float("x", 0.0, 1.0);
  StudyRunOptions o;
  o.job_json = testing::kCommandJob;  // its objective_metric: "loss"
  // Without a metric per objective the run is refused, naming both counts.
  try {
    StudyRun(0, Study::create(so), o, context());
    FAIL() << "a study of 2 objectives ran with one metric";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has 2 objective(s) but the run names 1"),
              std::string::npos)
        << e.what();
  }
  so.name = "mo2";
  o.objective_metrics = {"loss", "latency"};
  StudyRun run(1, Study::create(so), o, context());
  std::optional<Prepared> a = run.next_work(commit_);
  std::optional<Prepared> b = run.next_work(commit_);
  ASSERT_TRUE(a && b);
  // A report is stored as the step's metrics, and its objectives as Trial::report of several
  // values stores them: the first as the intermediate value. Without a scheduler, nothing stops.
  EXPECT_FALSE(run.report(*a->trial, ReportMessage{.step = 1, .metrics = {{"loss", 0.3}}}, "l"));
  EXPECT_EQ(run.study.storage().get_step_metrics(run.study.id()).size(), 1u);
  EXPECT_EQ(run.study.storage().get_trial(a->trial->id()).intermediate_values,
            (std::map<int64_t, double>{{1, 0.3}}));
  const FrozenTrial ok = run.tell_result(
      *a->trial, ResultMessage{.metrics = {{"loss", 0.25}, {"latency", 4}}, .values = {0.25}});
  EXPECT_EQ(ok.state, TrialState::kComplete);
  EXPECT_EQ(ok.values, (std::vector<double>{0.25, 4}));
  const FrozenTrial missing = run.tell_result(*b->trial, ResultMessage{.metrics = {{"loss", 1}}});
  EXPECT_EQ(missing.state, TrialState::kFail);
  EXPECT_NE(missing.system_attrs.at(kFailReasonAttr)
                .find("without its objective metric 'latency' (it printed: loss)"),
            std::string::npos);
}

TEST_F(StudyRunTest, ReportsAreStoredAndAFailKeepsItsExitCodeAndLogTail) {
  auto run = make_run(make_study("s"));
  std::optional<Prepared> work = run->next_work(commit_);
  ASSERT_TRUE(work);
  EXPECT_FALSE(
      run->report(*work->trial, ReportMessage{.step = 1, .metrics = {{"loss", 0.5}}}, "lease 1"));
  EXPECT_FALSE(run->report(*work->trial,
                           ReportMessage{.step = 2, .metrics = {{"loss", std::nan("")}}},
                           "lease 1"));  // not stored
  EXPECT_FALSE(
      run->report(*work->trial, ReportMessage{.step = 3, .metrics = {{"other", 1}}}, "lease 1"));
  EXPECT_EQ(run->stats.reports, 3);
  const FrozenTrial failed = run->tell_fail(
      *work->trial, FailMessage{.reason = "exited with code 3", .exit_code = 3, .log_tail = "boom"},
      "exited with code 3");
  EXPECT_EQ(failed.intermediate_values, (std::map<int64_t, double>{{1, 0.5}}));
  // Every metric of every report is kept, the objective's NaN included.
  Study& study = run->study;
  const std::vector<StepMetrics> steps =
      study.storage().get_step_metrics(study.id(), {failed.trial_id}).at(failed.trial_id);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].metrics, (StepValues{{"loss", 0.5}}));
  EXPECT_TRUE(std::isnan(steps[1].metrics.at("loss")));
  EXPECT_EQ(steps[2].metrics, (StepValues{{"other", 1}}));
  EXPECT_EQ(failed.state, TrialState::kFail);
  EXPECT_EQ(failed.system_attrs.at("exit_code"), "3");
  EXPECT_EQ(failed.system_attrs.at("log_tail"), "\"boom\"");
  run->count(failed);
  EXPECT_EQ(run->stats.failed, 1);
}

TEST_F(StudyRunTest, ThePeakGpuMemoryIsStoredAndOneOverTheJobsStatementIsLogged) {
  const std::string job =
      R"({"kind": "command", "argv": ["t"], "objective_metric": "loss", "gpus_per_trial": 0.5,
          "gpu_memory_per_trial": "1G"})";
  EXPECT_EQ(job_needs(job, "job").gpu_memory_bytes, uint64_t{1} << 30);
  auto run = make_run(make_study("s"), job);
  std::optional<Prepared> a = run->next_work(commit_);
  std::optional<Prepared> b = run->next_work(commit_);
  ASSERT_TRUE(a && b);
  const FrozenTrial done = run->tell_result(
      *a->trial,
      ResultMessage{.metrics = {{"loss", 0.5}}, .gpu_memory_peak_bytes = uint64_t{512} << 20});
  EXPECT_EQ(done.state, TrialState::kComplete);
  EXPECT_EQ(done.system_attrs.at(kGpuMemoryPeakAttr), std::to_string(uint64_t{512} << 20));
  EXPECT_FALSE(outbox_.logged("more than the job's gpu_memory_per_trial"));
  const FrozenTrial failed = run->tell_fail(
      *b->trial,
      FailMessage{.reason = "exited with code 1", .gpu_memory_peak_bytes = uint64_t{3} << 30},
      "exited with code 1");
  EXPECT_EQ(failed.system_attrs.at(kGpuMemoryPeakAttr), std::to_string(uint64_t{3} << 30));
  EXPECT_TRUE(outbox_.logged("trial " + std::to_string(failed.number) +
                             ": its processes held up to 3 GiB of GPU memory, more than the "
                             "job's gpu_memory_per_trial (1 GiB)"));
}

}  // namespace
}  // namespace tuner
