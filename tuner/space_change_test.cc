// A stored study continued with a changed space (StudyOptions::space): incompatible changes are
// refused, compatible ones recorded, and a new parameter's default fills the earlier trials in
// what the samplers see.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "search/samplers/gp/gp_sampler.h"
#include "search/samplers/tpe/tpe_sampler.h"
#include "storage/in_memory_storage.h"
#include "trials/error.h"
#include "tuner/study.h"

namespace tuner {
namespace {

using ::testing::HasSubstr;

SearchSpace first_space() {
  SearchSpace s;
  s.add_float("x", -1.0, 1.0);
  s.add_int("hidden", 16, 256);
  s.add_categorical("units", {int64_t{16}, int64_t{32}, int64_t{64}, int64_t{128}});
  return s;
}

Study open(std::shared_ptr<Storage> storage, const SearchSpace& space,
           std::shared_ptr<Sampler> sampler = nullptr) {
  StudyOptions options;
  options.name = "s";
  options.storage = std::move(storage);
  options.space = space;
  options.seed = 7;
  options.sampler = sampler ? sampler : std::make_shared<TpeSampler>();
  options.load_if_exists = true;
  options.heartbeat_interval = std::nullopt;
  return Study::create(std::move(options));
}

void run_trials(Study& study, int n) {
  for (int i = 0; i < n; ++i) {
    Trial t = study.ask();
    study.tell(t, std::get<double>(t.params().at("x")) * 2.0);
  }
}

TEST(StudySpaceChange, CompatibleChangeIsReportedAndStored) {
  auto storage = std::make_shared<InMemoryStorage>();
  Study first = open(storage, first_space());
  EXPECT_EQ(first.space_change(), "");
  run_trials(first, 3);
  EXPECT_EQ(open(storage, first_space()).space_change(), "");  // the same space: no change

  SearchSpace next;
  next.add_float("x", -1.0, 1.0);
  next.add_int("hidden", 16, 512);
  next.add_categorical("units",
                       {int64_t{16}, int64_t{32}, int64_t{64}, int64_t{128}, int64_t{256}});
  next.add_categorical("activation", {std::string("relu"), std::string("tanh")});
  Study second = open(storage, next);
  EXPECT_EQ(second.space_change(),
            "+ activation; hidden [16, 256] -> [16, 512]; units [16, 32, 64, 128] -> [16, 32, 64, "
            "128, 256]");
  run_trials(second, 2);
  EXPECT_EQ(second.trials().back().params.count("activation"), 1u);

  SearchSpace third = next;
  third = SearchSpace();
  third.add_float("x", -1.0, 1.0);
  third.add_int("hidden", 16, 512);
  Study after = open(storage, third);
  EXPECT_EQ(after.space_change(), "- units; - activation");

  // The history of changes, where Optuna does not look: each with the first trial under it.
  const StudyRecord record = *storage->find_study("s");
  const nlohmann::json changes = nlohmann::json::parse(record.system_attrs.at(kSpaceChangesAttr));
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0]["trial"], 3);
  EXPECT_EQ(changes[0]["change"], second.space_change());
  EXPECT_EQ(changes[1]["trial"], 5);
  EXPECT_EQ(changes[1]["change"], "- units; - activation");
}

// Each refused change names the parameter and both distributions, and says how to start anew.
TEST(StudySpaceChange, IncompatibleChangeIsRefused) {
  auto storage = std::make_shared<InMemoryStorage>();
  Study first = open(storage, first_space());
  run_trials(first, 2);
  struct Case {
    std::function<void(SearchSpace&)> build;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](SearchSpace& s) {
         s.add_float("x", -1.0, 1.0);
         s.add_int("hidden", 16, 256);
         s.add_categorical("units", {std::string("16"), std::string("32"), std::string("64"),
                                     std::string("128")});
       },
       "parameter 'units' was categorical[16, 32, 64, 128] and is now categorical[\"16\", "
       "\"32\", \"64\", \"128\"]: the choices changed type (integers -> strings)"},
      {[](SearchSpace& s) {
         s.add_float("x", -1.0, 1.0);
         s.add_float("hidden", 16, 256);
         s.add_categorical("units", {int64_t{16}, int64_t{32}, int64_t{64}, int64_t{128}});
       },
       "parameter 'hidden' was int[16, 256] and is now float[16.0, 256.0]: another kind of "
       "distribution (int -> float)"},
      {[](SearchSpace& s) {
         s.add_float("x", 0.01, 1.0, /*log=*/true);
         s.add_int("hidden", 16, 256);
         s.add_categorical("units", {int64_t{16}, int64_t{32}, int64_t{64}, int64_t{128}});
       },
       "parameter 'x' was float[-1.0, 1.0] and is now float[0.01, 1.0, log]: the log scale is "
       "switched on"},
  };
  for (const Case& c : cases) {
    SearchSpace space;
    c.build(space);
    try {
      open(storage, space);
      ADD_FAILURE() << "accepted: " << c.message;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
      EXPECT_THAT(e.what(), HasSubstr("study 's': " + c.message));
      EXPECT_THAT(e.what(), HasSubstr("give it another name"));
    }
  }
  // Nothing was recorded by the refusals: the first space still stands.
  EXPECT_EQ(open(storage, first_space()).space_change(), "");
}

// A study made before its space was stored (or by Optuna): its trials' distributions stand in.
TEST(StudySpaceChange, StudyWithoutStoredSpaceIsComparedWithItsTrials) {
  auto storage = std::make_shared<InMemoryStorage>();
  {
    StudyOptions options;
    options.name = "s";
    options.storage = storage;
    options.heartbeat_interval = std::nullopt;
    Study study = Study::create(options);  // define-by-run: no space stored
    for (int i = 0; i < 2; ++i) {
      Trial t = study.ask();
      t.suggest_categorical("units", {int64_t{16}, int64_t{32}});
      study.tell(t, 1.0);
    }
  }
  SearchSpace strings;
  strings.add_categorical("units", {std::string("16"), std::string("32")});
  EXPECT_THROW(open(storage, strings), Error);
  SearchSpace wider;
  wider.add_categorical("units", {int64_t{16}, int64_t{32}, int64_t{64}});
  EXPECT_EQ(open(storage, wider).space_change(), "units [16, 32] -> [16, 32, 64]");
}

// Wraps a sampler and records what it is shown: the relative space it computes, and how many
// COMPLETE trials of the history have `param`.
class Recorder : public Sampler {
 public:
  Recorder(std::shared_ptr<Sampler> inner, std::string param)
      : inner_(std::move(inner)), param_(std::move(param)) {}
  Params sample(const SearchSpace& space, const History& history, const TrialContext& trial,
                Rng& rng) override {
    relative.clear();
    const SearchSpace relative_space = inner_->relative_space(history);
    for (const ParamSpec& p : relative_space.params()) relative.push_back(p.name);
    with_param = 0;
    for (const FrozenTrial& t : history.trials) {
      with_param += t.state == TrialState::kComplete && t.params.contains(param_);
    }
    return inner_->sample(space, history, trial, rng);
  }
  ParamValue sample_independent(const std::string& name, const Distribution& distribution,
                                const History& history, const TrialContext& trial,
                                Rng& rng) override {
    return inner_->sample_independent(name, distribution, history, trial, rng);
  }
  std::string name() const override { return inner_->name(); }

  std::vector<std::string> relative;
  int with_param = 0;

 private:
  std::shared_ptr<Sampler> inner_;
  std::string param_;
};

// `make` gives a fresh sampler for each study object, as each process that continues a study has.
void expect_default_fills_old_trials(const std::function<std::shared_ptr<Sampler>()>& make) {
  auto storage = std::make_shared<InMemoryStorage>();
  SearchSpace old_space;
  old_space.add_float("x", -1.0, 1.0);
  Study first = open(storage, old_space, make());
  run_trials(first, 6);

  SearchSpace with_default = old_space;
  ParamSpec act{"act", CategoricalDistribution{{std::string("relu"), std::string("gelu")}},
                std::nullopt, false};
  act.default_value = std::string("relu");
  with_default.add(act);
  auto recorder = std::make_shared<Recorder>(make(), "act");
  Study second = open(storage, with_default, recorder);
  EXPECT_EQ(second.space_change(), "+ act");
  run_trials(second, 1);
  // The six old trials count, with act = "relu", and act is in the relative space.
  EXPECT_EQ(recorder->with_param, 6);
  EXPECT_THAT(recorder->relative, ::testing::Contains("act"));
  EXPECT_THAT(recorder->relative, ::testing::Contains("x"));
  // Storage is unchanged: the old trials have no act.
  EXPECT_FALSE(second.trials().front().params.contains("act"));

  // Without a default the old trials lack act, and the relative space leaves it out.
  auto storage2 = std::make_shared<InMemoryStorage>();
  Study first2 = open(storage2, old_space, make());
  run_trials(first2, 6);
  SearchSpace without_default = old_space;
  without_default.add_categorical("act", {std::string("relu"), std::string("gelu")});
  auto recorder2 = std::make_shared<Recorder>(make(), "act");
  Study second2 = open(storage2, without_default, recorder2);
  run_trials(second2, 1);
  EXPECT_EQ(recorder2->with_param, 0);
  EXPECT_THAT(recorder2->relative, ::testing::Not(::testing::Contains("act")));
}

TEST(StudySpaceChange, DefaultFillsOldTrialsForTpe) {
  TpeOptions options;
  options.n_startup_trials = 2;
  expect_default_fills_old_trials([&] { return std::make_shared<TpeSampler>(options); });
}

TEST(StudySpaceChange, DefaultFillsOldTrialsForGp) {
  GpSamplerOptions options;
  options.n_startup_trials = 2;
  expect_default_fills_old_trials([&] { return std::make_shared<GpSampler>(options); });
}

}  // namespace
}  // namespace tuner
