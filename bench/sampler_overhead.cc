// sampler_overhead: the marginal cost of one ask+tell against the number of finished trials.
//
// For each sampler and each study size N: a study in a fresh InMemoryStorage is pre-filled with
// N COMPLETE trials whose parameters are drawn at random over a 10-dimensional mixed space
// (written through Storage, which is what a resumed study reads back), then define-by-run
// cycles are timed one by one: ask(), ten suggest_*() calls, tell(). The first --warmup cycles
// are not timed. Timing stops after --asks cycles, or once the cell has used --max-seconds (at
// least --min-asks are timed). bench/optuna/sampler_overhead.py does the same with Optuna.
//
// Prints a table, or with --json one JSON line per (sampler, N) for bench/run_sampler_benchmarks.
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "bench/bench_common.h"

namespace {

using tuner::bench::Flags;

constexpr char kUsage[] =
    "usage: sampler_overhead [--sizes 100,1000,5000,10000] [--samplers random,tpe,tpe-mv,default]\n"
    "                        [--asks 30] [--min-asks 3] [--max-seconds 8] [--warmup 1]\n"
    "                        [--seed 0] [--json] [--quick]\n"
    "  --quick: sizes 100,300, 5 asks (a smoke test)\n";

struct Cell {
  std::string sampler;
  int n_trials = 0;
  int asks = 0;
  double mean_ms = 0.0;
  double median_ms = 0.0;
  double min_ms = 0.0;
  double fill_s = 0.0;
};

// Writes `n` COMPLETE trials with random parameters of `space` straight into storage.
void prefill(tuner::Storage& storage, int64_t study_id, const tuner::SearchSpace& space, int n,
             uint64_t seed) {
  tuner::Rng rng(seed);
  for (int i = 0; i < n; ++i) {
    tuner::FrozenTrial trial = storage.create_trial(study_id, tuner::TrialState::kRunning, nullptr);
    tuner::Params params;
    for (const auto& spec : space.params()) {
      tuner::ParamValue value = tuner::RandomSampler::draw(spec.distribution, rng);
      storage.set_trial_param(trial.trial_id, spec.name, spec.distribution, value);
      params.emplace(spec.name, std::move(value));
    }
    storage.finish_trial(trial.trial_id, tuner::TrialState::kComplete,
                         {tuner::bench::mixed_objective(params)});
  }
}

// One ask + 10 suggestions + tell; returns its wall time in seconds.
double one_cycle(tuner::Study& study) {
  const auto start = std::chrono::steady_clock::now();
  tuner::Trial trial = study.ask();
  tuner::Params params = tuner::bench::suggest_mixed(trial);
  study.tell(trial, tuner::bench::mixed_objective(params));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What to time in each cell.
struct Settings {
  int asks = 30;
  int min_asks = 3;
  double max_seconds = 8.0;
  int warmup = 1;
  uint64_t seed = 0;
};

Cell measure(const std::string& sampler, int n, const Settings& settings) {
  auto storage = std::make_shared<tuner::InMemoryStorage>();
  tuner::Study study = tuner::Study::create({.name = "overhead-" + sampler,
                                             .sampler = tuner::bench::make_sampler(sampler),
                                             .storage = storage,
                                             .seed = settings.seed});
  const auto fill_start = std::chrono::steady_clock::now();
  prefill(*storage, study.id(), tuner::bench::mixed_space(), n,
          settings.seed + static_cast<uint64_t>(n));
  Cell cell{.sampler = sampler, .n_trials = n};
  cell.fill_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - fill_start).count();

  for (int i = 0; i < settings.warmup; ++i) one_cycle(study);
  std::vector<double> times;
  double spent = 0.0;
  while (static_cast<int>(times.size()) < settings.asks &&
         (static_cast<int>(times.size()) < settings.min_asks || spent < settings.max_seconds)) {
    times.push_back(one_cycle(study));
    spent += times.back();
  }
  cell.asks = static_cast<int>(times.size());
  cell.mean_ms = 1e3 * tuner::bench::mean(times);
  cell.median_ms = 1e3 * tuner::bench::quantile(times, 0.5);
  cell.min_ms = 1e3 * tuner::bench::quantile(times, 0.0);
  return cell;
}

void print_json(const Cell& c) {
  using tuner::bench::json_number;
  std::printf(
      "{\"bench\": \"overhead\", \"impl\": \"tuner\", \"sampler\": \"%s\", \"n_trials\": %d, "
      "\"asks\": %d, \"mean_ms\": %s, \"median_ms\": %s, \"min_ms\": %s, \"fill_s\": %s}\n",
      c.sampler.c_str(), c.n_trials, c.asks, json_number(c.mean_ms).c_str(),
      json_number(c.median_ms).c_str(), json_number(c.min_ms).c_str(),
      json_number(c.fill_s).c_str());
  std::fflush(stdout);
}

int run(int argc, char** argv) {
  Flags flags(argc, argv,
              {"sizes", "samplers", "asks", "min-asks", "max-seconds", "warmup", "seed", "json",
               "quick", "help"});
  if (flags.has("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const bool quick = flags.has("quick");
  const std::vector<int> sizes =
      tuner::bench::split_ints(flags.get("sizes", quick ? "100,300" : "100,1000,5000,10000"));
  const std::vector<std::string> samplers =
      tuner::bench::split(flags.get("samplers", "random,tpe,tpe-mv,default"));
  for (const auto& s : samplers) tuner::bench::make_sampler(s);  // fail early on a bad name
  Settings settings;
  settings.asks = flags.get_int("asks", quick ? 5 : 30);
  settings.min_asks = flags.get_int("min-asks", quick ? 1 : 3);
  settings.max_seconds = flags.get_double("max-seconds", 8.0);
  settings.warmup = flags.get_int("warmup", 1);
  settings.seed = static_cast<uint64_t>(flags.get_int("seed", 0));
  const bool json = flags.has("json");

  if (!json) {
    std::printf(
        "ask+tell, define-by-run, 10-D mixed space (3 float, 2 log float, 2 int, 1 log int,"
        " 2 categorical)\n");
    std::printf("%-8s %8s %5s %10s %10s %10s %8s\n", "sampler", "trials", "asks", "mean ms",
                "median ms", "min ms", "fill s");
  }
  for (const auto& sampler : samplers) {
    for (int n : sizes) {
      Cell cell = measure(sampler, n, settings);
      if (json) {
        print_json(cell);
      } else {
        std::printf("%-8s %8d %5d %10.4f %10.4f %10.4f %8.3f\n", cell.sampler.c_str(),
                    cell.n_trials, cell.asks, cell.mean_ms, cell.median_ms, cell.min_ms,
                    cell.fill_s);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sampler_overhead: %s\n", e.what());
    return 1;
  }
}
