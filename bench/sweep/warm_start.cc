// Warm start on the function suite (bench/README.md, "Warm start"): how many trials a study
// warm-started from an earlier one (StudyOptions::warm_start) needs to reach the earlier study's
// best value, against the trials the earlier study needed to find it, and against a cold study
// of the same seed.
//
// For each problem (the suite's unconditional, noiseless ones) and seed: study A runs --trials
// trials cold; its best value is first reached at trial t_A (1-based). Study W, seeded by A's
// trials, and study C, cold, run with another seed until a trial reaches A's best (or --trials):
// t_W and t_C. Prints one JSON line per run, then per problem the medians and how many runs have
// t_W <= t_A / 2.
//   warm_start [--problems classic] [--sampler tpe|tpe-mv|gp|auto] [--seeds 5] [--trials 60]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "bench/suite/problems.h"
#include "storage/in_memory_storage.h"
#include "tuner/tuner.h"

namespace {

using tuner::bench::suite::ParamSpec;
using tuner::bench::suite::ParamType;
using tuner::bench::suite::Problem;

// Suggests every parameter of an unconditional `problem`; returns the point (problems.h).
std::vector<double> suggest(const Problem& problem, tuner::Trial& trial) {
  std::vector<double> point;
  for (const ParamSpec& s : problem.params) {
    switch (s.type) {
      case ParamType::kFloat:
        point.push_back(trial.suggest_float(s.name, s.low, s.high, {.log = s.log}));
        break;
      case ParamType::kInt:
        point.push_back(static_cast<double>(trial.suggest_int(
            s.name, static_cast<int64_t>(s.low), static_cast<int64_t>(s.high), {.log = s.log})));
        break;
      case ParamType::kCategorical: {
        const std::string c = trial.suggest_categorical<std::string>(s.name, s.choices);
        point.push_back(static_cast<double>(std::find(s.choices.begin(), s.choices.end(), c) -
                                            s.choices.begin()));
        break;
      }
    }
  }
  return point;
}

// Runs `study` until a trial's value is <= `target` or `trials` trials ran; returns the number of
// trials run then (trials + 1 when none reached it). Fills `best_at` with the 1-based trial
// where the study's final best was first reached.
int run(tuner::Study& study, const Problem& problem, int trials, double target, int* best_at) {
  double best = std::numeric_limits<double>::infinity();
  for (int i = 1; i <= trials; ++i) {
    tuner::Trial trial = study.ask();
    const double value = problem.objective(suggest(problem, trial));
    study.tell(trial, value);
    if (value < best) {
      best = value;
      if (best_at) *best_at = i;
    }
    if (value <= target) return i;
  }
  return trials + 1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? NAN : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string problems_spec = "classic", sampler = "tpe";
  int seeds = 5, trials = 60;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--problems") {
      problems_spec = value();
    } else if (arg == "--sampler") {
      sampler = value();
    } else if (arg == "--seeds") {
      seeds = std::stoi(value());
    } else if (arg == "--trials") {
      trials = std::stoi(value());
    } else {
      std::cerr << "usage: warm_start [--problems SPEC] [--sampler NAME] [--seeds N] [--trials "
                   "N]\n";
      return 2;
    }
  }
  std::printf(
      "| problem | runs | median t_A | median t_W | median t_C | runs with t_W <= t_A/2 |\n");
  std::printf("|---|---|---|---|---|---|\n");
  std::vector<std::string> lines;
  for (const Problem* problem : tuner::bench::suite::select_problems(problems_spec)) {
    const bool conditional = std::any_of(problem->params.begin(), problem->params.end(),
                                         [](const ParamSpec& s) { return !s.parent.empty(); });
    if (conditional || problem->noise_sd > 0) continue;
    std::vector<double> t_a, t_w, t_c;
    int halved = 0;
    for (int seed = 1; seed <= seeds; ++seed) {
      auto storage = std::make_shared<tuner::InMemoryStorage>();
      auto options = [&](const std::string& name, uint64_t s) {
        return tuner::StudyOptions{.name = name,
                                   .sampler = tuner::bench::make_sampler(sampler),
                                   .storage = storage,
                                   .seed = s,
                                   .heartbeat_interval = std::nullopt};
      };
      tuner::Study a = tuner::Study::create(options("a", static_cast<uint64_t>(seed)));
      int a_at = 0;
      run(a, *problem, trials, -std::numeric_limits<double>::infinity(), &a_at);
      const double target = a.best_trial().value();
      tuner::StudyOptions w_options = options("w", static_cast<uint64_t>(seed) + 1000);
      w_options.warm_start = tuner::WarmStartOptions{.study = "a"};
      tuner::Study w = tuner::Study::create(std::move(w_options));
      const int w_at = run(w, *problem, trials, target, nullptr);
      tuner::Study c = tuner::Study::create(options("c", static_cast<uint64_t>(seed) + 1000));
      const int c_at = run(c, *problem, trials, target, nullptr);
      t_a.push_back(a_at);
      t_w.push_back(w_at);
      t_c.push_back(c_at);
      halved += 2 * w_at <= a_at;
      lines.push_back(nlohmann::json{
          {"problem", problem->name},
          {"sampler", sampler},
          {"seed", seed},
          {"trials", trials},
          {"best_a", target},
          {"t_a", a_at},
          {"t_warm", w_at},
          {"t_cold",
           c_at}}.dump());
    }
    std::printf("| %s | %d | %.1f | %.1f | %.1f | %d of %d |\n", problem->name.c_str(), seeds,
                median(t_a), median(t_w), median(t_c), halved, seeds);
    std::fflush(stdout);
  }
  std::printf("\n(t = %d + 1: not reached within %d trials)\n", trials, trials);
  for (const std::string& line : lines) std::printf("%s\n", line.c_str());
  return 0;
}
