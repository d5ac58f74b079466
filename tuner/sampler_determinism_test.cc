// Every sampler: the same seed gives the same trials, through the public Study API, for
// define-by-run and define-and-run studies, with conditional parameters.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "search/samplers/gp/gp_sampler.h"
#include "search/samplers/grid_sampler.h"
#include "search/samplers/nsga2_sampler.h"
#include "search/samplers/random_sampler.h"
#include "search/samplers/tpe/tpe_sampler.h"
#include "tuner/study.h"

namespace tuner {
namespace {

SearchSpace mixed_space() {
  SearchSpace s;
  s.add_categorical("opt", {std::string("sgd"), std::string("adam")});
  s.add({"momentum", FloatDistribution{0.0, 0.9, false, 0.1},
         Condition{"opt", {std::string("sgd")}}});
  s.add_int("layers", 1, 4);
  s.add_categorical("act", {std::string("relu"), std::string("tanh")});
  s.add_float("dropout", 0.0, 0.5, false, 0.25);
  return s;
}

double objective(Trial& t) {
  std::string opt = t.suggest_categorical<std::string>("opt", {"sgd", "adam"});
  double m = opt == "sgd" ? t.suggest_float("momentum", 0.0, 0.9, {.step = 0.1}) : 0.5;
  int64_t layers = t.suggest_int("layers", 1, 4);
  std::string act = t.suggest_categorical<std::string>("act", {"relu", "tanh"});
  double dropout = t.suggest_float("dropout", 0.0, 0.5, {.step = 0.25});
  return (m - 0.3) * (m - 0.3) + static_cast<double>((layers - 3) * (layers - 3)) +
         (act == "relu" ? 0.0 : 0.5) + dropout;
}

// The objective under two constraints: fewer than 4 layers, and little
// dropout with tanh. Samplers that honour constraints then propose other trials.
double constrained_objective(Trial& t) {
  const double value = objective(t);
  const auto layers = static_cast<double>(std::get<int64_t>(t.params().at("layers")));
  const double dropout = std::get<double>(t.params().at("dropout"));
  const bool tanh = std::get<std::string>(t.params().at("act")) == "tanh";
  t.set_constraints({layers - 3.5, tanh ? dropout - 0.3 : -1.0});
  return value;
}

struct SamplerCase {
  std::string name;
  std::function<std::shared_ptr<Sampler>()> make;
};

class SamplerDeterminism : public testing::TestWithParam<SamplerCase> {
 protected:
  std::vector<Params> run(uint64_t seed, bool define_and_run, bool constrained = false) {
    StudyOptions options;
    options.sampler = GetParam().make();
    options.seed = seed;
    if (define_and_run) options.space = mixed_space();
    Study study = Study::create(options);
    OptimizeOptions o;
    o.n_trials = 30;
    study.optimize(constrained ? constrained_objective : objective, o);
    std::vector<Params> params;
    for (const FrozenTrial& t : study.trials()) params.push_back(t.params);
    return params;
  }
};

TEST_P(SamplerDeterminism, SameSeedSameTrials) {
  for (bool define_and_run : {false, true}) {
    auto a = run(123, define_and_run);
    EXPECT_EQ(a.size(), 30u);
    EXPECT_EQ(a, run(123, define_and_run)) << "define_and_run=" << define_and_run;
    EXPECT_NE(a, run(124, define_and_run)) << "define_and_run=" << define_and_run;
  }
}

TEST_P(SamplerDeterminism, SameSeedSameTrialsWithConstraints) {
  for (bool define_and_run : {false, true}) {
    auto a = run(123, define_and_run, true);
    EXPECT_EQ(a.size(), 30u);
    EXPECT_EQ(a, run(123, define_and_run, true)) << "define_and_run=" << define_and_run;
    EXPECT_NE(a, run(124, define_and_run, true)) << "define_and_run=" << define_and_run;
  }
}

// Generations of 8, so that 30 trials see three of them.
Nsga2Options nsga2(bool sbx) {
  Nsga2Options o;
  o.population_size = 8;
  if (sbx) o.crossover = Nsga2Crossover::kSbx;
  return o;
}

TpeOptions tpe(bool multivariate, bool group) {
  TpeOptions o;
  o.multivariate = multivariate;
  o.group = group;
  return o;
}

INSTANTIATE_TEST_SUITE_P(
    AllSamplers, SamplerDeterminism,
    testing::Values(
        SamplerCase{"random", [] { return std::make_shared<RandomSampler>(); }},
        SamplerCase{"grid", [] { return std::make_shared<GridSampler>(mixed_space()); }},
        SamplerCase{"tpe", [] { return std::make_shared<TpeSampler>(); }},
        SamplerCase{"tpe_multivariate",
                    [] { return std::make_shared<TpeSampler>(tpe(true, false)); }},
        SamplerCase{"tpe_grouped", [] { return std::make_shared<TpeSampler>(tpe(true, true)); }},
        SamplerCase{"gp", [] { return std::make_shared<GpSampler>(); }},
        SamplerCase{"nsga2", [] { return std::make_shared<Nsga2Sampler>(nsga2(false)); }}),
    [](const testing::TestParamInfo<SamplerCase>& p) { return p.param.name; });

// Several objectives: two, one of them maximized, with a constraint on half of the
// trials' layers.
std::vector<double> two_objectives(Trial& t) {
  const double value = constrained_objective(t);
  const auto layers = static_cast<double>(std::get<int64_t>(t.params().at("layers")));
  return {value, layers * layers - value};
}

class MultiObjectiveDeterminism : public testing::TestWithParam<SamplerCase> {
 protected:
  std::vector<Params> run(uint64_t seed, bool define_and_run) {
    StudyOptions options;
    options.sampler = GetParam().make();
    options.seed = seed;
    options.directions = {StudyDirection::kMinimize, StudyDirection::kMaximize};
    if (define_and_run) options.space = mixed_space();
    Study study = Study::create(options);
    OptimizeOptions o;
    o.n_trials = 30;
    study.optimize(MultiObjective(two_objectives), o);
    std::vector<Params> params;
    for (const FrozenTrial& t : study.trials()) params.push_back(t.params);
    return params;
  }
};

TEST_P(MultiObjectiveDeterminism, SameSeedSameTrials) {
  for (bool define_and_run : {false, true}) {
    auto a = run(321, define_and_run);
    EXPECT_EQ(a.size(), 30u);
    EXPECT_EQ(a, run(321, define_and_run)) << "define_and_run=" << define_and_run;
    EXPECT_NE(a, run(322, define_and_run)) << "define_and_run=" << define_and_run;
  }
}

INSTANTIATE_TEST_SUITE_P(
    MultiObjectiveSamplers, MultiObjectiveDeterminism,
    testing::Values(
        SamplerCase{"random", [] { return std::make_shared<RandomSampler>(); }},
        SamplerCase{"tpe", [] { return std::make_shared<TpeSampler>(); }},
        SamplerCase{"tpe_multivariate",
                    [] {
                      TpeOptions o;
                      o.multi_objective_multivariate = true;
                      return std::make_shared<TpeSampler>(o);
                    }},
        SamplerCase{"tpe_grouped", [] { return std::make_shared<TpeSampler>(tpe(true, true)); }},
        SamplerCase{"tpe_hypervolume_weights",
                    [] {
                      TpeOptions o;
                      o.hypervolume_weights = true;
                      return std::make_shared<TpeSampler>(o);
                    }},
        SamplerCase{"nsga2", [] { return std::make_shared<Nsga2Sampler>(nsga2(false)); }},
        SamplerCase{"nsga2_sbx", [] { return std::make_shared<Nsga2Sampler>(nsga2(true)); }},
        SamplerCase{"gp", [] { return std::make_shared<GpSampler>(); }}),
    [](const testing::TestParamInfo<SamplerCase>& p) { return p.param.name; });

}  // namespace
}  // namespace tuner
