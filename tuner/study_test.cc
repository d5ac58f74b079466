#include "tuner/study.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "search/registry.h"
#include "search/rng.h"
#include "search/samplers/gp/gp_sampler.h"
#include "search/samplers/grid_sampler.h"
#include "search/samplers/random_sampler.h"
#include "search/samplers/tpe/tpe_sampler.h"
#include "search/schedulers/median_stopping.h"
#include "storage/in_memory_storage.h"
#include "trials/clock.h"
#include "trials/error.h"
#include "trials/trial_origin.h"

namespace tuner {
namespace {

StudyOptions random_study(uint64_t seed = 1) {
  StudyOptions options;
  options.name = "test";
  options.sampler = std::make_shared<RandomSampler>();
  options.seed = seed;
  return options;
}

OptimizeOptions trials(int n, int threads = 1) {
  OptimizeOptions o;
  o.n_trials = n;
  o.n_threads = threads;
  return o;
}

double quadratic(Trial& t) {
  double x = t.suggest_float("x", -10, 10);
  int64_t y = t.suggest_int("y", -5, 5);
  return (x - 2) * (x - 2) + static_cast<double>(y * y);
}

TEST(Study, DefineByRunStoresParamsAndValues) {
  Study study = Study::create(random_study());
  study.optimize(quadratic, trials(20));
  auto all = study.trials();
  ASSERT_EQ(all.size(), 20u);
  for (const FrozenTrial& t : all) {
    t.validate(1);
    EXPECT_EQ(t.state, TrialState::kComplete);
    double x = std::get<double>(t.params.at("x"));
    auto y = static_cast<double>(std::get<int64_t>(t.params.at("y")));
    EXPECT_DOUBLE_EQ(t.value(), (x - 2) * (x - 2) + y * y);
  }
  FrozenTrial best = study.best_trial();
  for (const FrozenTrial& t : all) EXPECT_LE(best.value(), t.value());
}

// Regression: a trial had no time limit. In-process, OptimizeOptions::trial_timeout makes
// should_stop() answer true once the trial's time is up, and a trial that ran longer is FAIL
// "timed out after ...", whether it noticed or not; trials within the limit are untouched.
TEST(Study, TrialTimeoutStopsAndFailsATrialThatRunsTooLong) {
  auto clock = std::make_shared<FakeClock>();
  StudyOptions options = random_study();
  options.clock = clock;
  options.heartbeat_interval = std::nullopt;
  Study study = Study::create(options);
  OptimizeOptions o = trials(3);
  o.trial_timeout = std::chrono::seconds(1);
  std::vector<bool> told_to_stop;
  study.optimize(
      [&](Trial& t) -> double {
        const double x = t.suggest_float("x", 0, 1);
        if (t.number() == 1) {  // hangs, asking whether to stop now and then
          while (!t.should_stop()) clock->advance(std::chrono::milliseconds(300));
          told_to_stop.push_back(true);
          return x;
        }
        if (t.number() == 2) {  // runs too long and never asks
          clock->advance(std::chrono::seconds(2));
          return x;
        }
        told_to_stop.push_back(t.should_stop());
        return x;
      },
      o);
  EXPECT_EQ(told_to_stop, (std::vector<bool>{false, true}));
  const std::vector<FrozenTrial> all = study.trials();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].state, TrialState::kComplete);
  for (int n : {1, 2}) {
    EXPECT_EQ(all[n].state, TrialState::kFail) << "trial " << n;
    EXPECT_EQ(all[n].system_attrs.at("fail_reason"),
              "\"timed out after 1 s (OptimizeOptions::trial_timeout)\"");
  }
  OptimizeOptions zero = trials(1);
  zero.trial_timeout = std::chrono::seconds(0);
  EXPECT_THROW(study.optimize([](Trial&) { return 0.0; }, zero), Error);
}

TEST(Study, AnObjectiveThatThrowsFailsItsTrialAndTheStudyGoesOn) {
  Study study = Study::create(random_study());
  int calls = 0;
  study.optimize(
      [&](Trial& t) -> double {
        double x = t.suggest_float("x", 0, 1);
        if (++calls % 2 == 0) throw std::runtime_error("out of memory in layer 3");
        return x;
      },
      trials(6));
  auto all = study.trials();
  ASSERT_EQ(all.size(), 6u);
  for (const FrozenTrial& t : all) {
    if (t.number % 2 == 1) {
      EXPECT_EQ(t.state, TrialState::kFail);
      EXPECT_EQ(t.system_attrs.at("fail_reason"), "\"out of memory in layer 3\"");
      EXPECT_EQ(t.params.size(), 1u);  // what was stored before the throw is kept
    } else {
      EXPECT_EQ(t.state, TrialState::kComplete);
    }
  }
}

TEST(Study, NanAndInfinityFailTheTrialWithTheReason) {
  Study study = Study::create(random_study());
  int calls = 0;
  study.optimize([&](Trial&) { return ++calls == 1 ? std::nan("") : HUGE_VAL; }, trials(2));
  auto all = study.trials();
  EXPECT_EQ(all[0].state, TrialState::kFail);
  EXPECT_EQ(all[0].system_attrs.at("fail_reason"), "\"the objective returned nan\"");
  EXPECT_EQ(all[1].state, TrialState::kFail);
  EXPECT_EQ(all[1].system_attrs.at("fail_reason"), "\"the objective returned inf\"");
  EXPECT_THROW(study.best_trial(), Error);
}

TEST(Study, ReportingNanFailsTheTrialWithAClearMessage) {
  Study study = Study::create(random_study());
  study.optimize(
      [](Trial& t) {
        t.report(3, std::nan(""));
        return 1.0;
      },
      trials(1));
  FrozenTrial t = study.trials().at(0);
  EXPECT_EQ(t.state, TrialState::kFail);
  EXPECT_EQ(t.system_attrs.at("fail_reason"), "\"trial 0 step 3: the value is NaN\"");
}

TEST(Study, LoggedMetricsAreStoredPerStepAndRefusedOnceTold) {
  Study study = Study::create(random_study());
  Trial trial = study.ask();
  trial.report(1, 0.5);
  trial.log_metrics(1, {{"train_loss", 0.7}, {"lr", 0.1}});
  trial.log_metrics(2, {{"train_loss", 0.6}});
  const int64_t id = trial.id();
  study.tell(trial, 0.5);
  const std::vector<StepMetrics> steps = study.storage().get_step_metrics(study.id()).at(id);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].metrics, (StepValues{{"lr", 0.1}, {"train_loss", 0.7}}));
  EXPECT_EQ(steps[1].metrics, (StepValues{{"train_loss", 0.6}}));
  EXPECT_EQ(study.trials().at(0).intermediate_values, (std::map<int64_t, double>{{1, 0.5}}));
  try {
    trial.log_metrics(3, {{"train_loss", 0.5}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
  }
}

// Stops every trial at its second report.
class StopAtStepTwo final : public Scheduler {
 public:
  Decision on_report(const FrozenTrial&, int64_t step, const History&) const override {
    return step >= 2 ? Decision::kStop : Decision::kContinue;
  }
};

TEST(Study, ATrialToldToStopIsPrunedWithItsLastValue) {
  StudyOptions options = random_study();
  options.scheduler = std::make_shared<StopAtStepTwo>();
  Study study = Study::create(options);
  study.optimize(
      [](Trial& t) {
        for (int step = 1; step <= 5; ++step) {
          t.report(step, 10.0 - step);
          if (t.should_stop()) return -1.0;  // ignored: the trial is pruned
        }
        return 0.0;
      },
      trials(3));
  for (const FrozenTrial& t : study.trials()) {
    EXPECT_EQ(t.state, TrialState::kPruned);
    EXPECT_EQ(t.values, std::vector<double>{8.0});
    EXPECT_EQ(t.intermediate_values.size(), 2u);
  }
}

// An InMemoryStorage that counts, per trial, the intermediate values its reads hand out.
class CountingStorage final : public Storage {
 public:
  size_t values_read(int64_t trial_id) const {
    auto it = read_.find(trial_id);
    return it == read_.end() ? 0 : it->second;
  }

  StudyRecord create_study(const std::string& name,
                           const std::vector<StudyDirection>& directions) override {
    return base_.create_study(name, directions);
  }
  std::optional<StudyRecord> find_study(const std::string& name) override {
    return base_.find_study(name);
  }
  std::vector<StudyRecord> list_studies() override { return base_.list_studies(); }
  void delete_study(int64_t study_id) override { base_.delete_study(study_id); }
  void set_study_user_attr(int64_t study_id, const std::string& key,
                           const std::string& json) override {
    base_.set_study_user_attr(study_id, key, json);
  }
  void set_study_system_attr(int64_t study_id, const std::string& key,
                             const std::string& json) override {
    base_.set_study_system_attr(study_id, key, json);
  }
  FrozenTrial create_trial(int64_t study_id, TrialState state, const FrozenTrial* from) override {
    return base_.create_trial(study_id, state, from);
  }
  bool claim_waiting_trial(int64_t trial_id) override {
    return base_.claim_waiting_trial(trial_id);
  }
  void set_trial_param(int64_t trial_id, const std::string& name, const Distribution& distribution,
                       const ParamValue& value) override {
    base_.set_trial_param(trial_id, name, distribution, value);
  }
  void set_trial_params(int64_t trial_id, const std::vector<NewParam>& params) override {
    base_.set_trial_params(trial_id, params);
  }
  void set_trial_intermediate_value(int64_t trial_id, int64_t step, double value) override {
    base_.set_trial_intermediate_value(trial_id, step, value);
  }
  void set_trial_step_metrics(int64_t trial_id, int64_t step, const StepValues& metrics) override {
    base_.set_trial_step_metrics(trial_id, step, metrics);
  }
  void set_trial_user_attr(int64_t trial_id, const std::string& key,
                           const std::string& json) override {
    base_.set_trial_user_attr(trial_id, key, json);
  }
  void set_trial_system_attr(int64_t trial_id, const std::string& key,
                             const std::string& json) override {
    base_.set_trial_system_attr(trial_id, key, json);
  }
  FrozenTrial finish_trial(int64_t trial_id, TrialState state, const std::vector<double>& values,
                           const Attributes& system_attrs, const Attributes& user_attrs) override {
    return count(base_.finish_trial(trial_id, state, values, system_attrs, user_attrs));
  }
  void record_heartbeat(int64_t trial_id, TimePoint time) override {
    base_.record_heartbeat(trial_id, time);
  }
  std::vector<FrozenTrial> get_stale_trials(int64_t study_id, TimePoint stale_before) override {
    return count(base_.get_stale_trials(study_id, stale_before));
  }
  std::optional<StaleTrialOutcome> fail_stale_trial(int64_t trial_id, TimePoint stale_before,
                                                    const Attributes& fail_attrs,
                                                    const FrozenTrial* retry) override {
    return base_.fail_stale_trial(trial_id, stale_before, fail_attrs, retry);
  }
  FrozenTrial get_trial(int64_t trial_id) override { return count(base_.get_trial(trial_id)); }
  std::optional<FrozenTrial> get_best_trial(int64_t study_id) override {
    return base_.get_best_trial(study_id);
  }
  std::vector<FrozenTrial> get_trials(int64_t study_id, const TrialFilter& filter) override {
    return count(base_.get_trials(study_id, filter));
  }
  std::map<int64_t, std::vector<StepMetrics>> get_step_metrics(
      int64_t study_id, const std::vector<int64_t>& trial_ids) override {
    return base_.get_step_metrics(study_id, trial_ids);
  }
  void run_batch(const std::function<void()>& body) override { base_.run_batch(body); }
  std::optional<uint64_t> change_count() override { return base_.change_count(); }

 private:
  FrozenTrial count(FrozenTrial t) {
    read_[t.trial_id] += t.intermediate_values.size();
    return t;
  }
  std::vector<FrozenTrial> count(std::vector<FrozenTrial> trials) {
    for (const FrozenTrial& t : trials) read_[t.trial_id] += t.intermediate_values.size();
    return trials;
  }

  InMemoryStorage base_;
  std::map<int64_t, size_t> read_;
};

// Sees at each report how many values the reporting trial and the study's other trials have.
class CountingScheduler final : public Scheduler {
 public:
  Decision on_report(const FrozenTrial& trial, int64_t, const History& history) const override {
    own = trial.intermediate_values.size();
    others = 0;
    for (const FrozenTrial& t : history.trials) {
      if (t.number != trial.number) others += t.intermediate_values.size();
    }
    return Decision::kContinue;
  }
  mutable size_t own = 0;
  mutable size_t others = 0;
};

// Regression: a trial's cost per report grew with the steps it had reported (8,000 reports took
// 31.7 s of the coordinator's CPU): should_stop() read the trial's whole record from storage at
// every report, and re-read every unfinished trial's values whenever something else had written
// meanwhile (another study on the same file, a heartbeat). A live trial's values are now read
// from storage once; other processes' trials are still read afresh.
TEST(Study, ShouldStopDoesNotReadALiveTrialsValuesAgainAtEveryReport) {
  auto storage = std::make_shared<CountingStorage>();
  auto scheduler = std::make_shared<CountingScheduler>();
  StudyOptions options = random_study();
  options.storage = storage;
  options.scheduler = scheduler;
  options.heartbeat_interval = std::nullopt;
  Study study = Study::create(options);
  // Another process's handle on the same study: its trial's values are not this study's own.
  Study elsewhere = Study::load(options);
  Trial foreign = elsewhere.ask();
  Trial trial = study.ask();
  constexpr int kReports = 2000;
  size_t foreign_values = 0;
  for (int step = 0; step < kReports; ++step) {
    trial.report(step, 1.0);
    if (step % 100 == 0) {
      foreign.report(step, 2.0);
      ++foreign_values;
    }
    // Something else writes between any two reports: the study's cache is refreshed each time.
    storage->set_study_user_attr(study.id(), "tick", std::to_string(step));
    EXPECT_FALSE(trial.should_stop());
    ASSERT_EQ(scheduler->own, static_cast<size_t>(step) + 1);
    ASSERT_EQ(scheduler->others, foreign_values) << "step " << step;
  }
  // Each value read a few times at most, not once per later report (2,001,000 in all).
  EXPECT_LT(storage->values_read(trial.id()), 2u * kReports);
  study.tell(trial, 1.0);
  EXPECT_EQ(study.trials()[1].intermediate_values.size(), static_cast<size_t>(kReports));
}

TEST(Study, DefineAndRunSamplesAndStoresTheWholeSpaceUpFront) {
  SearchSpace space;
  space.add_categorical("opt", {std::string("sgd"), std::string("adam")});
  space.add({"momentum", FloatDistribution{0, 0.9}, Condition{"opt", {std::string("sgd")}}});
  Study study = Study::create(random_study());
  for (int i = 0; i < 10; ++i) {
    Trial t = study.ask(space);
    space.check_assignment(t.params());
    EXPECT_EQ(study.storage().get_trial(t.id()).params, t.params());
    // The objective reads the decided values back through suggest.
    auto opt = t.suggest_categorical<std::string>("opt", {"sgd", "adam"});
    if (opt == "sgd") {
      EXPECT_EQ(t.suggest_float("momentum", 0, 0.9), std::get<double>(t.params().at("momentum")));
      EXPECT_THROW(t.suggest_float("momentum", 0, 0.5), Error);  // not the space's distribution
    }
    study.tell(t, 1.0);
  }
}

TEST(Study, ASuggestionKeepsItsDistribution) {
  Study study = Study::create(random_study());
  Trial t = study.ask();
  double x = t.suggest_float("x", 0, 1);
  EXPECT_EQ(t.suggest_float("x", 0, 1), x);
  EXPECT_THROW(t.suggest_float("x", 0, 2), Error);
  EXPECT_THROW(t.suggest_float("bad", 0, 1, {.log = true}), Error);
}

TEST(Study, TellTwiceIsRefusedAndKeepsTheFirstResult) {
  Study study = Study::create(random_study());
  Trial t = study.ask();
  study.tell(t, 1.0);
  EXPECT_THROW(study.tell(t, 2.0), Error);
  EXPECT_EQ(study.trials().at(0).values, std::vector<double>{1.0});
}

TEST(Study, EnqueuedTrialsRunFirstWithTheirValues) {
  Study study = Study::create(random_study());
  study.enqueue_trial({{"x", 3.5}, {"y", int64_t{-2}}});
  Trial t = study.ask();
  EXPECT_EQ(t.number(), 0);
  EXPECT_EQ(t.suggest_float("x", -10, 10), 3.5);
  EXPECT_EQ(t.suggest_int("y", -5, 5), -2);
  study.tell(t, 1.0);
  EXPECT_EQ(study.trials().at(0).params.at("x"), ParamValue(3.5));
}

// Each trial records where its params came from.
TEST(Study, EachTrialRecordsTheSamplerItCameFrom) {
  Study study = Study::create(random_study());
  study.enqueue_trial({{"x", 3.5}});
  study.optimize(quadratic, trials(2));  // the enqueued trial, then a sampled one
  Trial lost = study.ask();
  lost.suggest_float("x", -10, 10);
  Study::Rerun rerun = study.fail_and_retry(lost, "lease expired", 3);
  Trial retry = study.ask();
  EXPECT_EQ(retry.number(), rerun.retry->number);
  study.tell(retry, 2.0);
  Trial pruned = study.ask();
  study.tell(pruned, TrialState::kPruned);
  Trial running = study.ask();
  const std::vector<FrozenTrial> all = study.trials();
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(sampler_of(all[0]), "enqueued");
  EXPECT_EQ(sampler_of(all[1]), "random");
  EXPECT_EQ(sampler_of(all[2]), "random");  // failed by fail_and_retry, with its origin
  EXPECT_EQ(all[2].state, TrialState::kFail);
  EXPECT_EQ(sampler_of(all[3]), "retry");
  EXPECT_EQ(sampler_of(all[4]), "random");
  EXPECT_EQ(sampler_of(all[5]), "");  // recorded with the outcome
  EXPECT_EQ(all[1].system_attrs.at(kSamplerAttr), "\"random\"");

  // A model-based sampler's startup trials are drawn at random, and say so.
  StudyOptions tpe = random_study();
  tpe.name = "tpe";
  tpe.sampler = std::make_shared<TpeSampler>(TpeOptions{.n_startup_trials = 2});
  Study with_tpe = Study::create(tpe);
  with_tpe.optimize(quadratic, trials(3));
  EXPECT_EQ(sampler_of(with_tpe.trials().at(0)), "random");
  EXPECT_EQ(sampler_of(with_tpe.trials().at(1)), "random");
  EXPECT_EQ(sampler_of(with_tpe.trials().at(2)), "tpe");
  StudyOptions gp = random_study();
  gp.name = "gp";
  gp.sampler = std::make_shared<GpSampler>(GpSamplerOptions{.n_startup_trials = 2});
  Study with_gp = Study::create(gp);
  with_gp.optimize(quadratic, trials(3));
  EXPECT_EQ(sampler_of(with_gp.trials().at(1)), "random");
  EXPECT_EQ(sampler_of(with_gp.trials().at(2)), "gp");
}

// Samplers repeat no point in a deterministic study: a noisy objective is stated, stored with the
// study and handed to them.
TEST(Study, ANoisyObjectiveIsStoredAndTheSamplersAreTold) {
  struct Recording final : Sampler {
    ParamValue sample_independent(const std::string&, const Distribution& d, const History& history,
                                  const TrialContext&, Rng& rng) override {
      noisy.push_back(history.noisy);
      return RandomSampler::draw(d, rng);
    }
    std::vector<bool> noisy;
  };
  auto storage = std::make_shared<InMemoryStorage>();
  auto sampler = std::make_shared<Recording>();
  auto options = [&](std::optional<bool> noisy) {
    StudyOptions o;
    o.name = "noisy";
    o.storage = storage;
    o.sampler = sampler;
    o.noisy_objective = noisy;
    return o;
  };
  Study::create(options(true)).optimize(quadratic, trials(1));
  Study::load(options(std::nullopt)).optimize(quadratic, trials(1));  // kept as stored
  Study::load(options(false)).optimize(quadratic, trials(1));         // stated again
  Study::load(options(std::nullopt)).optimize(quadratic, trials(1));
  // Each trial samples its two parameters.
  EXPECT_EQ(sampler->noisy,
            (std::vector<bool>{true, true, true, true, false, false, false, false}));
  EXPECT_EQ(storage->find_study("noisy")->system_attrs.at("tuner:noisy_objective"), "false");
}

TEST(Study, ANewStudyTakesTheAutoSamplerAndALoadedOneKeepsItsOwn) {
  auto storage = std::make_shared<InMemoryStorage>();
  auto options = [&](std::string name, std::shared_ptr<Sampler> sampler) {
    StudyOptions o;
    o.name = std::move(name);
    o.storage = storage;
    o.sampler = std::move(sampler);
    o.seed = 5;
    return o;
  };
  // The samplers' startup trials (10 by default) are random; the next one names the sampler.
  constexpr int kPastStartup = 11;
  Study fresh = Study::create(options("fresh", nullptr));
  fresh.optimize(quadratic, trials(kPastStartup));
  EXPECT_EQ(sampler_of(fresh.trials().at(0)), "random");
  EXPECT_EQ(sampler_of(fresh.trials().back()), "gp");  // auto's choice for two plain parameters
  EXPECT_EQ(storage->find_study("fresh")->system_attrs.at("tuner:sampler"), "\"auto\"");

  Study::create(options("with_tpe", std::make_shared<TpeSampler>()))
      .optimize(quadratic, trials(kPastStartup - 1));
  Study::load(options("with_tpe", nullptr)).optimize(quadratic, trials(1));
  EXPECT_EQ(sampler_of(Study::load(options("with_tpe", nullptr)).trials().back()), "tpe");

  // Made before tuner stored its sampler (or by Optuna): TPE, the default of both then.
  storage->create_study("older", {StudyDirection::kMinimize});
  Study older = Study::load(options("older", nullptr));
  older.optimize(quadratic, trials(kPastStartup));
  EXPECT_EQ(sampler_of(older.trials().back()), "tpe");

  struct Own final : Sampler {
    ParamValue sample_independent(const std::string&, const Distribution& d, const History&,
                                  const TrialContext&, Rng& rng) override {
      return RandomSampler::draw(d, rng);
    }
    std::string name() const override { return "mine"; }
  };
  Study::create(options("own", std::make_shared<Own>()));
  try {
    Study::load(options("own", nullptr));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_EQ(std::string(e.what()),
              "study 'own' was created with the sampler \"mine\", which cannot be made again from "
              "its name: give StudyOptions::sampler to continue it");
  }
}

// Study::load makes every built-in sampler again from the name its study stored.
TEST(Study, LoadRemakesEveryBuiltInSamplerFromItsName) {
  auto storage = std::make_shared<InMemoryStorage>();
  for (SamplerType type : sampler_types()) {
    const std::string name(to_string(type));
    StudyOptions o;
    o.name = name;
    o.storage = storage;
    o.seed = 3;
    if (type == SamplerType::kGrid) {
      SearchSpace space;
      space.add_float("x", -10.0, 10.0, false, 5.0);
      space.add_int("y", -5, 5);
      o.space = space;
    }
    o.sampler = make_sampler(SamplerSpec{.type = type}, o.space ? &*o.space : nullptr);
    Study::create(o);
    o.sampler = nullptr;
    Study loaded = Study::load(o);
    // Past the startup trials of the model-based samplers (10 by default), which are random.
    loaded.optimize(quadratic, trials(11));
    if (type != SamplerType::kAuto) EXPECT_EQ(sampler_of(loaded.trials().back()), name);
  }
}

TEST(Study, LoadContinuesNumberingWithTheStoredSeed) {
  auto storage = std::make_shared<InMemoryStorage>();
  StudyOptions options = random_study(77);
  options.storage = storage;
  Study::create(options).optimize(quadratic, trials(5));

  StudyOptions again;
  again.name = "test";
  again.storage = storage;
  again.sampler = std::make_shared<RandomSampler>();
  Study loaded = Study::load(again);
  EXPECT_EQ(loaded.seed(), 77u);
  loaded.optimize(quadratic, trials(5));
  auto all = loaded.trials();
  ASSERT_EQ(all.size(), 10u);
  EXPECT_EQ(all.back().number, 9);

  // Same seed, uninterrupted: the same ten trials.
  StudyOptions straight = random_study(77);
  Study reference = Study::create(straight);
  reference.optimize(quadratic, trials(10));
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(reference.trials()[i].params, all[i].params);

  again.name = "missing";
  try {
    Study::load(again);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_EQ(std::string(e.what()), "no study named 'missing' in the storage (it has: test)");
  }
}

TEST(Study, GridExhaustionEndsOptimize) {
  SearchSpace space;
  space.add_int("a", 0, 3);
  space.add_categorical("b", {true, false});
  StudyOptions options = random_study();
  options.sampler = std::make_shared<GridSampler>(space);
  Study study = Study::create(options);
  std::set<std::pair<int64_t, bool>> seen;
  study.optimize(
      [&](Trial& t) {
        seen.insert({t.suggest_int("a", 0, 3), t.suggest_categorical<bool>("b", {true, false})});
        return 0.0;
      },
      trials(100, 2));
  EXPECT_EQ(study.trials().size(), 8u);
  EXPECT_EQ(seen.size(), 8u);
  EXPECT_THROW(study.ask(), Error);
}

TEST(Study, ParallelThreadsRunEveryTrialOnce) {
  Study study = Study::create(random_study());
  std::atomic<int> calls{0};
  study.optimize(
      [&](Trial& t) {
        ++calls;
        return quadratic(t);
      },
      trials(40, 4));
  EXPECT_EQ(calls.load(), 40);
  auto all = study.trials();
  ASSERT_EQ(all.size(), 40u);
  for (const FrozenTrial& t : all) EXPECT_EQ(t.state, TrialState::kComplete);
}

TEST(Study, TimeoutStopsStartingTrials) {
  Study study = Study::create(random_study());
  OptimizeOptions o;
  o.timeout = std::chrono::milliseconds(30);
  study.optimize(
      [](Trial& t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        return quadratic(t);
      },
      o);
  EXPECT_GE(study.trials().size(), 1u);
  EXPECT_LE(study.trials().size(), 20u);
}

TEST(Study, MultiObjectiveKeepsTheParetoFront) {
  StudyOptions options = random_study();
  options.directions = {StudyDirection::kMinimize, StudyDirection::kMaximize};
  Study study = Study::create(options);
  std::vector<std::pair<double, double>> points = {{1, 1}, {2, 3}, {3, 2}, {0.5, 0.5}, {2, 2}};
  for (auto [a, b] : points) {
    Trial t = study.ask();
    study.tell(t, std::vector<double>{a, b});
  }
  std::set<int> front;
  for (const FrozenTrial& t : study.best_trials()) front.insert(t.number);
  // (2, 2) is dominated by (2, 3); (3, 2) by (2, 3); (1, 1) and (0.5, 0.5) trade off with (2, 3).
  EXPECT_EQ(front, (std::set<int>{0, 1, 3}));
  EXPECT_THROW(study.best_trial(), Error);
  Trial t = study.ask();
  EXPECT_EQ(study.tell(t, 1.0).state, TrialState::kFail);  // one value for two objectives
}

// A scheduler judges one objective; a study of several is refused one, where
// it is made, instead of being judged by its first objective silently.
TEST(Study, ASchedulerIsRefusedForSeveralObjectives) {
  StudyOptions options = random_study();
  options.directions = {StudyDirection::kMinimize, StudyDirection::kMaximize};
  options.scheduler = std::make_shared<MedianStopping>();
  try {
    Study::create(options);
    FAIL() << "a scheduler was taken for two objectives";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("has 2 objectives, and a scheduler judges trials by one"),
              std::string::npos)
        << e.what();
  }
  options.scheduler = nullptr;
  Study::create(options);
  options.scheduler = std::make_shared<MedianStopping>();
  EXPECT_THROW(Study::load(options), Error);
}

// best_trials() by search/pareto.h against the definition, with ties and equal trials, two and
// three objectives in both directions, infeasible trials left out.
TEST(Study, BestTrialsMatchTheDefinition) {
  for (size_t m : {2, 3}) {
    StudyOptions options = random_study();
    options.directions = {StudyDirection::kMinimize, StudyDirection::kMaximize};
    if (m == 3) options.directions.push_back(StudyDirection::kMinimize);
    Study study = Study::create(options);
    Rng rng(static_cast<uint64_t>(m));
    std::vector<std::vector<double>> values;
    std::vector<bool> feasible;
    for (int i = 0; i < 300; ++i) {
      Trial t = study.ask();
      std::vector<double> v(m);
      for (double& x : v) x = static_cast<double>(rng.integer(0, 9));
      feasible.push_back(i % 7 != 3);
      t.set_constraints({feasible.back() ? -1.0 : 1.0});
      study.tell(t, v);
      values.push_back(v);
    }
    auto loss = [&](size_t i, size_t k) {
      return options.directions[k] == StudyDirection::kMaximize ? -values[i][k] : values[i][k];
    };
    std::vector<int> want;
    for (size_t i = 0; i < values.size(); ++i) {
      if (!feasible[i]) continue;
      bool dominated = false;
      for (size_t j = 0; j < values.size() && !dominated; ++j) {
        if (!feasible[j]) continue;
        bool no_worse = true, better = false;
        for (size_t k = 0; k < m; ++k) {
          no_worse &= loss(j, k) <= loss(i, k);
          better |= loss(j, k) < loss(i, k);
        }
        dominated = no_worse && better;
      }
      if (!dominated) want.push_back(static_cast<int>(i));
    }
    std::vector<int> got;
    for (const FrozenTrial& t : study.best_trials()) got.push_back(t.number);
    EXPECT_EQ(got, want) << m << " objectives";
    EXPECT_GT(want.size(), 1u);
  }
}

// Regression: a MAXIMIZE study was loaded for MINIMIZE options and ranked upside down.
TEST(Study, LoadIfExistsRefusesOtherDirections) {
  StudyOptions options = random_study();
  options.storage = std::make_shared<InMemoryStorage>();
  options.directions = {StudyDirection::kMaximize};
  Study::create(options);
  options.load_if_exists = true;
  options.directions = {StudyDirection::kMinimize};
  try {
    Study::create(options);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_STREQ(e.what(),
                 "study 'test' exists with direction maximize, and these options ask for "
                 "minimize: give its directions to continue it, or another name for a new study");
  }
  options.directions = {StudyDirection::kMaximize};
  EXPECT_EQ(Study::create(options).direction(), StudyDirection::kMaximize);
}

// Regression: a study Optuna made (no stored seed) ran on seed 0 whatever the options said,
// and stored nothing.
TEST(Study, AStudyWithoutAStoredSeedGetsTheOptionsSeedStored) {
  auto storage = std::make_shared<InMemoryStorage>();
  storage->create_study("test", {StudyDirection::kMinimize});  // as Optuna makes it
  StudyOptions options = random_study(/*seed=*/77);
  options.storage = storage;
  EXPECT_EQ(Study::load(options).seed(), 77u);
  options.seed = 5;  // the stored seed wins from now on
  EXPECT_EQ(Study::load(options).seed(), 77u);
}

}  // namespace
}  // namespace tuner
