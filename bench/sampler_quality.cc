// sampler_quality: the regret of each sampler on functions with a known optimum.
//
// For each sampler, function and seed s: Study::create({.seed = s, .sampler = ...}) and
// optimize() for the largest checkpoint's number of trials (define-by-run, one suggest_float per
// dimension); the regret at checkpoint k is the best value among the first k trials minus the
// known optimum. The table shows, per checkpoint, the median regret over the seeds and its
// interquartile range. bench/optuna/sampler_quality.py does the same with Optuna.
//
// Prints a table, or with --json one JSON line per (sampler, function, seed) for
// bench/run_sampler_benchmarks.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_common.h"

namespace {

using tuner::bench::Flags;
using tuner::bench::TestFunction;

constexpr char kUsage[] =
    "usage: sampler_quality [--samplers random,tpe,tpe-mv,gp,default]\n"
    "                       [--functions branin,rosenbrock10,ackley10] [--seeds 20]\n"
    "                       [--first-seed 0] [--checkpoints 100,200] [--json] [--quick]\n"
    "  --seeds N --first-seed F: seeds F .. F+N-1 (held-out seeds: a later F)\n"
    "  --quick: 2 seeds, checkpoints 25,50 (a smoke test)\n";

struct Run {
  std::string sampler;
  std::string function;
  int seed = 0;
  std::vector<double> regrets;  // one per checkpoint
  double seconds = 0.0;
};

Run run_one(const std::string& sampler, const TestFunction& function, int seed,
            const std::vector<int>& checkpoints) {
  tuner::Study study = tuner::Study::create(
      {.sampler = tuner::bench::make_sampler(sampler), .seed = static_cast<uint64_t>(seed)});
  std::vector<std::string> names;
  for (size_t i = 0; i < function.bounds.size(); ++i) {
    names.push_back(std::string("x").append(std::to_string(i)));
  }
  const auto start = std::chrono::steady_clock::now();
  study.optimize(
      [&](tuner::Trial& trial) {
        std::vector<double> x(function.bounds.size());
        for (size_t i = 0; i < x.size(); ++i) {
          x[i] = trial.suggest_float(names[i], function.bounds[i].low, function.bounds[i].high);
        }
        return function.f(x);
      },
      {.n_trials = *std::max_element(checkpoints.begin(), checkpoints.end())});
  Run run{.sampler = sampler, .function = function.name, .seed = seed};
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // Trials come ordered by number; a trial that did not complete does not count.
  const std::vector<tuner::FrozenTrial> trials = study.trials();
  for (int k : checkpoints) {
    double best = std::numeric_limits<double>::infinity();
    for (const auto& t : trials) {
      if (t.number < k && t.state == tuner::TrialState::kComplete) best = std::min(best, t.value());
    }
    run.regrets.push_back(best - function.optimum);
  }
  return run;
}

void print_json(const Run& run, const std::vector<int>& checkpoints) {
  std::string regret;
  for (size_t i = 0; i < checkpoints.size(); ++i) {
    if (i > 0) regret += ", ";
    regret.append("\"").append(std::to_string(checkpoints[i])).append("\": ");
    regret.append(tuner::bench::json_number(run.regrets[i]));
  }
  std::printf(
      "{\"bench\": \"quality\", \"impl\": \"tuner\", \"sampler\": \"%s\", \"function\": \"%s\", "
      "\"seed\": %d, \"regret\": {%s}, \"seconds\": %s}\n",
      run.sampler.c_str(), run.function.c_str(), run.seed, regret.c_str(),
      tuner::bench::json_number(run.seconds).c_str());
  std::fflush(stdout);
}

void print_table(const std::vector<Run>& runs, const std::vector<int>& checkpoints) {
  std::printf("%-13s %-8s %7s %6s %14s %14s %14s %9s\n", "function", "sampler", "trials", "seeds",
              "median regret", "q25", "q75", "s/run");
  // Groups in first-seen order.
  std::vector<std::pair<std::string, std::string>> groups;
  for (const auto& r : runs) {
    std::pair<std::string, std::string> key{r.function, r.sampler};
    if (std::find(groups.begin(), groups.end(), key) == groups.end()) groups.push_back(key);
  }
  for (const auto& [function, sampler] : groups) {
    for (size_t c = 0; c < checkpoints.size(); ++c) {
      std::vector<double> regrets, seconds;
      for (const auto& r : runs) {
        if (r.function == function && r.sampler == sampler) {
          regrets.push_back(r.regrets[c]);
          seconds.push_back(r.seconds);
        }
      }
      std::printf("%-13s %-8s %7d %6zu %14.6g %14.6g %14.6g %9.3f\n", function.c_str(),
                  sampler.c_str(), checkpoints[c], regrets.size(),
                  tuner::bench::quantile(regrets, 0.5), tuner::bench::quantile(regrets, 0.25),
                  tuner::bench::quantile(regrets, 0.75), tuner::bench::mean(seconds));
    }
  }
}

int run(int argc, char** argv) {
  Flags flags(
      argc, argv,
      {"samplers", "functions", "seeds", "first-seed", "checkpoints", "json", "quick", "help"});
  if (flags.has("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const bool quick = flags.has("quick");
  const std::vector<std::string> samplers =
      tuner::bench::split(flags.get("samplers", "random,tpe,tpe-mv,default"));
  const int seeds = flags.get_int("seeds", quick ? 2 : 20);
  const int first_seed = flags.get_int("first-seed", 0);
  if (seeds < 1 || first_seed < 0) Flags::fail("--seeds must be >= 1 and --first-seed >= 0");
  std::vector<int> checkpoints =
      tuner::bench::split_ints(flags.get("checkpoints", quick ? "25,50" : "100,200"));
  std::sort(checkpoints.begin(), checkpoints.end());
  if (checkpoints.empty() || checkpoints.front() < 1) Flags::fail("--checkpoints must be >= 1");
  std::vector<const TestFunction*> functions;
  for (const auto& name :
       tuner::bench::split(flags.get("functions", "branin,rosenbrock10,ackley10"))) {
    const auto& all = tuner::bench::test_functions();
    auto it = std::find_if(all.begin(), all.end(), [&](const auto& f) { return f.name == name; });
    if (it == all.end()) {
      Flags::fail("unknown function '" + name + "': expected branin, rosenbrock10 or ackley10");
    }
    functions.push_back(&*it);
  }
  for (const auto& s : samplers) tuner::bench::make_sampler(s);  // fail early on a bad name
  const bool json = flags.has("json");

  std::vector<Run> runs;
  for (const auto& sampler : samplers) {
    for (const TestFunction* function : functions) {
      for (int seed = first_seed; seed < first_seed + seeds; ++seed) {
        runs.push_back(run_one(sampler, *function, seed, checkpoints));
        if (json) print_json(runs.back(), checkpoints);
      }
    }
  }
  if (!json) print_table(runs, checkpoints);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sampler_quality: %s\n", e.what());
    return 1;
  }
}
