// StudyOptions::warm_start: an earlier study's finished trials seed the sampler of a new study
// without becoming its trials; a resumed study reads them again from the source it recorded.
#include "tuner/warm_start.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "search/samplers/tpe/tpe_sampler.h"
#include "storage/in_memory_storage.h"
#include "storage/sqlite_storage.h"
#include "trials/constraints.h"
#include "trials/error.h"
#include "trials/trial_origin.h"
#include "tuner/study.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

SearchSpace space_xy() {
  SearchSpace space;
  space.add_float("x", -10, 10);
  space.add_float("y", -10, 10);
  return space;
}

// Minimum 0 at x = 1.5, y = -2.
double quadratic(const Params& p) {
  const double x = std::get<double>(p.at("x")) - 1.5;
  const double y = std::get<double>(p.at("y")) + 2.0;
  return x * x + y * y;
}

StudyOptions options_for(const std::string& name, std::shared_ptr<Storage> storage,
                         uint64_t seed = 1) {
  StudyOptions options;
  options.name = name;
  options.storage = std::move(storage);
  options.space = space_xy();
  options.seed = seed;
  options.sampler = std::make_shared<TpeSampler>();
  options.heartbeat_interval = std::nullopt;
  return options;
}

// Study `name` in `storage` with `n` trials of the quadratic.
void earlier_study(const std::string& name, std::shared_ptr<Storage> storage, int n,
                   StudyDirection direction = StudyDirection::kMinimize) {
  StudyOptions options = options_for(name, std::move(storage), 3);
  options.directions = {direction};
  Study study = Study::create(std::move(options));
  const double sign = direction == StudyDirection::kMinimize ? 1.0 : -1.0;
  for (int i = 0; i < n; ++i) {
    Trial t = study.ask();
    study.tell(t, sign * quadratic(t.params()));
  }
}

// Asks, runs and tells one trial; returns it.
FrozenTrial run_one(Study& study) {
  Trial t = study.ask();
  const double value = quadratic(t.params());
  return study.tell(t, value);
}

TEST(WarmStart, SeedsTheSamplerWithoutCopyingTrials) {
  auto storage = std::make_shared<InMemoryStorage>();
  earlier_study("a", storage, 30);
  StudyOptions options = options_for("b", storage);
  options.warm_start = WarmStartOptions{.study = "a"};
  Study b = Study::create(std::move(options));
  EXPECT_EQ(b.warm_start(), "30 observations from study 'a'");
  EXPECT_TRUE(b.trials().empty());
  const FrozenTrial first = run_one(b);
  EXPECT_EQ(first.number, 0);
  // TPE's startup trials count the observations: the first trial is modelled, not random.
  EXPECT_EQ(sampler_of(first), "tpe");
  EXPECT_EQ(b.trials().size(), 1u);
  EXPECT_EQ(b.best_trial().trial_id, first.trial_id);
  const nlohmann::json stored =
      nlohmann::json::parse(storage->find_study("b")->system_attrs.at(kWarmStartAttr));
  EXPECT_EQ(stored["study"], "a");
  EXPECT_TRUE(stored["storage"].is_null());
  EXPECT_EQ(stored["observations"], 30);
}

TEST(WarmStart, WithoutItTheFirstTrialsAreRandom) {
  auto storage = std::make_shared<InMemoryStorage>();
  Study b = Study::create(options_for("b", storage));
  EXPECT_EQ(b.warm_start(), "");
  EXPECT_EQ(sampler_of(run_one(b)), "random");
}

TEST(WarmStart, FindsTheEarlierOptimumSoonerThanAColdStart) {
  auto storage = std::make_shared<InMemoryStorage>();
  earlier_study("a", storage, 40);
  double warm = 0, cold = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    StudyOptions w = options_for("warm" + std::to_string(seed), storage, seed);
    w.warm_start = WarmStartOptions{.study = "a"};
    Study warm_study = Study::create(std::move(w));
    Study cold_study = Study::create(options_for("cold" + std::to_string(seed), storage, seed));
    for (int i = 0; i < 5; ++i) {
      run_one(warm_study);
      run_one(cold_study);
    }
    warm += warm_study.best_trial().value() / 4;
    cold += cold_study.best_trial().value() / 4;
  }
  EXPECT_LT(warm, cold / 4) << "warm " << warm << ", cold " << cold;
}

TEST(WarmStart, ResumeReadsTheRecordedSourceAgain) {
  const fs::path dir =
      fs::temp_directory_path() / ("warm_start_resume_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    earlier_study("a", std::make_shared<SqliteStorage>((dir / "a.db").string()), 30);
    StudyOptions options =
        options_for("b", std::make_shared<SqliteStorage>((dir / "b.db").string()));
    options.warm_start = WarmStartOptions{.study = "a", .storage_path = (dir / "a.db").string()};
    Study b = Study::create(std::move(options));
    EXPECT_EQ(b.warm_start(), "30 observations from study 'a' in " + (dir / "a.db").string());
    run_one(b);
  }
  // Loaded without the options: the study's kWarmStartAttr names the source.
  StudyOptions options = options_for("b", std::make_shared<SqliteStorage>((dir / "b.db").string()));
  Study b = Study::load(std::move(options));
  EXPECT_EQ(b.warm_start(), "30 observations from study 'a' in " + (dir / "a.db").string());
  EXPECT_EQ(sampler_of(run_one(b)), "tpe");
  EXPECT_EQ(b.trials().size(), 2u);
  fs::remove_all(dir);
}

TEST(WarmStart, MissingStudyNamesTheOnesThatExist) {
  auto storage = std::make_shared<InMemoryStorage>();
  earlier_study("a", storage, 2);
  earlier_study("c", storage, 2);
  StudyOptions options = options_for("b", storage);
  options.warm_start = WarmStartOptions{.study = "nope"};
  try {
    Study::create(std::move(options));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_THAT(e.what(), HasSubstr("no study named 'nope'"));
    EXPECT_THAT(e.what(), HasSubstr("it has: a, c"));
  }
  // Nothing was made.
  EXPECT_FALSE(storage->find_study("b"));
}

TEST(WarmStart, MissingFileIsNamed) {
  StudyOptions options = options_for("b", std::make_shared<InMemoryStorage>());
  options.warm_start = WarmStartOptions{.study = "a", .storage_path = "/nonexistent/dir/a.db"};
  try {
    Study::create(std::move(options));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_THAT(e.what(), HasSubstr("no study database at /nonexistent/dir/a.db"));
  }
}

TEST(WarmStart, ItselfIsRefused) {
  auto storage = std::make_shared<InMemoryStorage>();
  earlier_study("b", storage, 2);
  StudyOptions options = options_for("b", storage);
  options.warm_start = WarmStartOptions{.study = "b"};
  EXPECT_THROW(Study::load(std::move(options)), Error);
}

TEST(WarmStart, OtherDirectionIsRefusedUnlessAllowed) {
  auto storage = std::make_shared<InMemoryStorage>();
  // The same objective, maximized as its negation: the best trials are the same.
  earlier_study("a", storage, 30, StudyDirection::kMaximize);
  StudyOptions refused = options_for("b", storage);
  refused.warm_start = WarmStartOptions{.study = "a"};
  try {
    Study::create(std::move(refused));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_THAT(e.what(), HasSubstr("allow_other_objective"));
  }
  StudyOptions allowed = options_for("b", storage);
  allowed.warm_start = WarmStartOptions{.study = "a", .allow_other_objective = true};
  Study b = Study::create(std::move(allowed));
  EXPECT_EQ(b.warm_start(), "30 observations from study 'a'");
}

TEST(WarmStart, OtherMetricNameIsRefusedUnlessAllowed) {
  auto storage = std::make_shared<InMemoryStorage>();
  earlier_study("a", storage, 3);
  storage->set_study_system_attr(storage->find_study("a")->study_id, "study:metric_names",
                                 "[\"val_loss\"]");
  StudyOptions same = options_for("b", storage);
  same.warm_start = WarmStartOptions{.study = "a", .metric_names = {"val_loss"}};
  EXPECT_NO_THROW(Study::create(std::move(same)));
  StudyOptions other = options_for("c", storage);
  other.warm_start = WarmStartOptions{.study = "a", .metric_names = {"train_loss"}};
  EXPECT_THROW(Study::create(std::move(other)), Error);
  StudyOptions allowed = options_for("d", storage);
  allowed.warm_start =
      WarmStartOptions{.study = "a", .metric_names = {"train_loss"}, .allow_other_objective = true};
  EXPECT_NO_THROW(Study::create(std::move(allowed)));
}

FrozenTrial source_trial(int number, TrialState state, const Params& params,
                         const SearchSpace& space, std::vector<double> values) {
  FrozenTrial t;
  t.trial_id = 100 + number;
  t.number = number;
  t.state = state;
  t.params = params;
  for (const auto& [name, value] : params) t.distributions[name] = space.find(name)->distribution;
  t.values = std::move(values);
  return t;
}

TEST(WarmStartObservations, ParametersFollowTheNewSpace) {
  SearchSpace old_space;
  old_space.add_float("x", -10, 10);
  old_space.add_float("lr", 1e-4, 1.0, /*log=*/true);
  old_space.add_float("momentum", 0, 1);
  old_space.add_int("units", 8, 64);
  SearchSpace next;
  next.add_float("x", -5, 5);                      // narrower
  next.add_float("lr", 1e-4, 1.0, /*log=*/false);  // incompatible: log switched off
  next.add_categorical("units", {int64_t{8}});     // incompatible: another kind
  next.add_float("dropout", 0, 0.5);               // new, without a default
  ParamSpec wd{"wd", FloatDistribution{0, 1, false, std::nullopt}, std::nullopt, false};
  wd.default_value = 0.1;
  next.add(wd);  // new, with a default
  StudyRecord source;
  source.name = "a";
  source.directions = {StudyDirection::kMinimize};
  std::vector<FrozenTrial> trials;
  const Params inside{{"x", 1.0}, {"lr", 0.01}, {"momentum", 0.9}, {"units", int64_t{16}}};
  const Params outside{{"x", 7.0}, {"lr", 0.01}, {"momentum", 0.9}, {"units", int64_t{16}}};
  trials.push_back(source_trial(0, TrialState::kComplete, inside, old_space, {0.5}));
  trials.push_back(source_trial(1, TrialState::kComplete, outside, old_space, {0.1}));
  trials.push_back(source_trial(2, TrialState::kFail, inside, old_space, {}));
  FrozenTrial pruned = source_trial(3, TrialState::kPruned, inside, old_space, {0.7});
  pruned.intermediate_values = {{1, 0.9}, {2, 0.7}};
  trials.push_back(pruned);
  FrozenTrial infeasible = source_trial(4, TrialState::kComplete, inside, old_space, {0.01});
  infeasible.system_attrs[kConstraintsAttr] = constraints_to_json(std::vector<double>{2.0});
  trials.push_back(infeasible);

  const Prior prior = prior_observations(source, trials, source.directions, &next,
                                         WarmStartOptions{.study = "a"}, "study 'a'");
  ASSERT_EQ(prior.trials.size(), 2u);
  EXPECT_EQ(prior.summary,
            "2 observations from study 'a'; left out: 1 with values outside this space, 1 "
            "infeasible; ignored: lr (the log scale is switched off), momentum (not in this "
            "space), units (another kind of distribution (int -> categorical))");
  const FrozenTrial& o = prior.trials[0];
  EXPECT_EQ(o.number, 0);
  EXPECT_EQ(o.values, std::vector<double>{0.5});
  EXPECT_EQ(o.params, (Params{{"x", 1.0}, {"wd", 0.1}}));
  EXPECT_EQ(o.distributions.at("x"), next.find("x")->distribution);
  EXPECT_TRUE(o.system_attrs.empty());
  const FrozenTrial& p = prior.trials[1];
  EXPECT_EQ(p.number, 1);
  EXPECT_EQ(p.state, TrialState::kPruned);
  EXPECT_EQ(p.intermediate_values, (std::map<int64_t, double>{{1, 0.9}, {2, 0.7}}));
}

TEST(WarmStartObservations, ValuesOfAnotherDirectionAreNegated) {
  SearchSpace space = space_xy();
  StudyRecord source;
  source.name = "a";
  source.directions = {StudyDirection::kMaximize, StudyDirection::kMinimize};
  const Params p{{"x", 1.0}, {"y", 2.0}};
  FrozenTrial pruned = source_trial(1, TrialState::kPruned, p, space, {3.0});
  pruned.intermediate_values = {{4, 3.0}};
  const std::vector<FrozenTrial> trials{
      source_trial(0, TrialState::kComplete, p, space, {0.9, 0.2}), pruned};
  const std::vector<StudyDirection> directions{StudyDirection::kMinimize,
                                               StudyDirection::kMinimize};
  EXPECT_THROW(prior_observations(source, trials, directions, &space,
                                  WarmStartOptions{.study = "a"}, "study 'a'"),
               Error);
  const Prior prior = prior_observations(
      source, trials, directions, &space,
      WarmStartOptions{.study = "a", .allow_other_objective = true}, "study 'a'");
  ASSERT_EQ(prior.trials.size(), 2u);
  EXPECT_EQ(prior.trials[0].values, (std::vector<double>{-0.9, 0.2}));
  EXPECT_EQ(prior.trials[1].intermediate_values, (std::map<int64_t, double>{{4, -3.0}}));
}

TEST(WarmStartObservations, ObjectiveCountMustMatch) {
  StudyRecord source;
  source.name = "a";
  source.directions = {StudyDirection::kMinimize, StudyDirection::kMinimize};
  EXPECT_THROW(prior_observations(source, {}, {StudyDirection::kMinimize}, nullptr,
                                  WarmStartOptions{.study = "a", .allow_other_objective = true},
                                  "study 'a'"),
               Error);
}

TEST(WarmStartObservations, StoredOptionsReadBack) {
  const WarmStartOptions options{.study = "a",
                                 .storage_path = "/data/a.db",
                                 .metric_names = {"val_loss"},
                                 .allow_other_objective = true};
  EXPECT_EQ(warm_start_from_json(warm_start_to_json(options, 3), "b"), options);
  EXPECT_THROW(warm_start_from_json("{\"storage\": 1}", "b"), Error);
}

}  // namespace
}  // namespace tuner
