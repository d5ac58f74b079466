// bench/mo: tuner's samplers on the multi-objective problems (README.md here).
//
//   mo_bench [--problems zdt1,...|all] [--samplers default,nsga2] [--seeds 20] [--first-seed 0]
//            [--trials 200] [--checkpoints 100,200] [--shard K/N] [--out FILE]
//   mo_bench --timing [--problems dtlz2] [--samplers default] [--sizes 1000] [--asks 10]
//   mo_bench --pareto-timing [--points 100000]
//   mo_bench --list
//
// Runs: for each problem, sampler and seed s, a define-and-run study (seed s, the problem's
// variables x0, x1, ... as floats in their bounds, every objective minimized, the constraint as
// Trial::set_constraints) optimized for --trials trials; one JSON line per run with the
// hypervolume of the feasible COMPLETE trials among the first k, for each k of --checkpoints,
// against the problem's fixed reference point. Runs already in --out are skipped.
//
// --timing: the time of one ask + tell after N finished trials (a study filled with N random
// trials, then loaded with the sampler): one untimed ask, then --asks timed ones.
// --pareto-timing: search/pareto.h's non_domination_ranks() and pareto_front() on --points
// random points (uniform in the cube, and near a sphere where most points are on few fronts),
// 2 to 5 objectives.
//
// Samplers: default (no sampler: the AutoSampler, the GP for these spaces below 200 trials), tpe
// (TpeSampler, default options: univariate for several objectives), tpe-hv (hypervolume_weights),
// tpe-mv (multi_objective_multivariate), tpe-mv-hv (both), nsga2 (Nsga2Sampler, default
// options), nsga2-sbx (SBX crossover), random, gp (GpSampler, default options: expected
// hypervolume improvement).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "bench/mo/problems.h"
#include "search/pareto.h"
#include "search/registry.h"
#include "trials/constraints.h"

namespace {

using tuner::bench::MoProblem;
using SteadyClock = std::chrono::steady_clock;

// The samplers of search/registry.h by name, and variants of TPE and NSGA-II.
std::shared_ptr<tuner::Sampler> make_mo_sampler(const std::string& name) {
  if (name == "default") return nullptr;
  tuner::SamplerSpec spec;
  if (name.starts_with("tpe")) {
    spec.type = tuner::SamplerType::kTpe;
    spec.tpe.multi_objective_multivariate = name.starts_with("tpe-mv");
    spec.tpe.hypervolume_weights = name.ends_with("-hv");
    if (name == "tpe" || name == "tpe-hv" || name == "tpe-mv" || name == "tpe-mv-hv") {
      return tuner::make_sampler(spec);
    }
  } else if (name == "nsga2-sbx") {
    spec.type = tuner::SamplerType::kNsga2;
    spec.nsga2.crossover = tuner::Nsga2Crossover::kSbx;
    return tuner::make_sampler(spec);
  } else if (auto type = tuner::sampler_type_named(name);
             type && *type != tuner::SamplerType::kGrid && *type != tuner::SamplerType::kAuto) {
    spec.type = *type;
    return tuner::make_sampler(spec);
  }
  tuner::bench::Flags::fail(
      "unknown sampler '" + name +
      "': expected default, tpe, tpe-hv, tpe-mv, tpe-mv-hv, nsga2, nsga2-sbx, "
      "random or gp");
}

std::vector<const MoProblem*> problems_of(const std::string& list) {
  std::vector<const MoProblem*> out;
  if (list == "all") {
    for (const MoProblem& p : tuner::bench::mo_problems()) {
      if (!p.held_out) out.push_back(&p);
    }
    return out;
  }
  for (const std::string& name : tuner::bench::split(list)) {
    const MoProblem* p = tuner::bench::find_mo_problem(name);
    if (!p) tuner::bench::Flags::fail("unknown problem '" + name + "' (see --list)");
    out.push_back(p);
  }
  return out;
}

std::string var(int i) { return "x" + std::to_string(i); }

tuner::SearchSpace space_of(const MoProblem& p) {
  tuner::SearchSpace space;
  for (int i = 0; i < p.n_vars; ++i) {
    space.add_float(var(i), p.lower[static_cast<size_t>(i)], p.upper[static_cast<size_t>(i)]);
  }
  return space;
}

std::vector<double> run_trial(const MoProblem& p, tuner::Trial& trial) {
  std::vector<double> x(static_cast<size_t>(p.n_vars));
  for (int i = 0; i < p.n_vars; ++i) {
    x[static_cast<size_t>(i)] = std::get<double>(trial.params().at(var(i)));
  }
  tuner::bench::MoValues v = evaluate(p, x);
  if (p.constrained) trial.set_constraints({v.constraint});
  return v.objectives;
}

nlohmann::ordered_json run(const MoProblem& p, const std::string& sampler, int seed, int trials,
                           const std::vector<int>& checkpoints) {
  tuner::StudyOptions options;
  options.sampler = make_mo_sampler(sampler);
  options.seed = static_cast<uint64_t>(seed);
  options.directions.assign(static_cast<size_t>(p.n_objectives), tuner::StudyDirection::kMinimize);
  options.space = space_of(p);
  options.heartbeat_interval = std::nullopt;
  tuner::Study study = tuner::Study::create(options);
  const auto start = SteadyClock::now();
  study.optimize(tuner::MultiObjective([&](tuner::Trial& t) { return run_trial(p, t); }),
                 {.n_trials = trials});
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  std::vector<double> values, constraints;
  nlohmann::ordered_json hv = nlohmann::ordered_json::object();
  const std::vector<tuner::FrozenTrial> all = study.trials();
  size_t next = 0;
  for (int k : checkpoints) {
    for (; next < all.size() && next < static_cast<size_t>(k); ++next) {
      const tuner::FrozenTrial& t = all[next];
      if (t.state != tuner::TrialState::kComplete) continue;
      values.insert(values.end(), t.values.begin(), t.values.end());
      constraints.push_back(tuner::is_feasible(t) ? 0.0 : 1.0);
    }
    hv[std::to_string(k)] = feasible_hypervolume(p, values, constraints);
  }
  return {{"bench", "mo"}, {"impl", "tuner"},  {"sampler", sampler}, {"problem", p.name},
          {"seed", seed},  {"trials", trials}, {"hv", hv},           {"seconds", seconds}};
}

nlohmann::ordered_json time_asks(const MoProblem& p, const std::string& sampler, int n, int asks) {
  auto storage = std::make_shared<tuner::InMemoryStorage>();
  const std::string name = "timing-" + p.name;
  std::vector<tuner::StudyDirection> directions(static_cast<size_t>(p.n_objectives),
                                                tuner::StudyDirection::kMinimize);
  {
    tuner::StudyOptions o;
    o.name = name;
    o.sampler = std::make_shared<tuner::RandomSampler>();
    o.storage = storage;
    o.seed = 1;
    o.directions = directions;
    o.space = space_of(p);
    o.heartbeat_interval = std::nullopt;
    tuner::Study filler = tuner::Study::create(o);
    filler.optimize(tuner::MultiObjective([&](tuner::Trial& t) { return run_trial(p, t); }),
                    {.n_trials = n});
  }
  tuner::StudyOptions o;
  o.name = name;
  o.sampler = make_mo_sampler(sampler);
  if (!o.sampler) o.sampler = std::make_shared<tuner::AutoSampler>();
  o.storage = storage;
  o.space = space_of(p);
  o.directions = directions;
  o.heartbeat_interval = std::nullopt;
  tuner::Study study = tuner::Study::load(o);
  auto cycle = [&] {
    const auto start = SteadyClock::now();
    tuner::Trial trial = study.ask();
    study.tell(trial, run_trial(p, trial));
    return 1e3 * std::chrono::duration<double>(SteadyClock::now() - start).count();
  };
  cycle();
  std::vector<double> ms;
  for (int i = 0; i < asks; ++i) ms.push_back(cycle());
  return {{"bench", "mo-timing"},
          {"impl", "tuner"},
          {"sampler", sampler},
          {"problem", p.name},
          {"n_trials", n},
          {"asks", asks},
          {"median_ms", tuner::bench::quantile(ms, 0.5)},
          {"min_ms", tuner::bench::quantile(ms, 0.0)}};
}

void pareto_timing(int n) {
  tuner::Rng rng(1);
  for (size_t m = 2; m <= 5; ++m) {
    for (int shell = 0; shell < 2; ++shell) {
      std::vector<double> p(static_cast<size_t>(n) * m);
      for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
        double norm = 0.0;
        for (size_t k = 0; k < m; ++k) {
          const double v = shell ? std::abs(rng.normal()) : rng.uniform();
          p[i * m + k] = v;
          norm += v * v;
        }
        if (shell) {
          const double r = std::sqrt(norm) * (1.0 + 0.05 * rng.uniform());
          for (size_t k = 0; k < m; ++k) p[i * m + k] /= r;
        }
      }
      const auto t0 = SteadyClock::now();
      const std::vector<int> ranks = tuner::non_domination_ranks(p, m);
      const auto t1 = SteadyClock::now();
      const std::vector<size_t> front = tuner::pareto_front(p, m);
      const auto t2 = SteadyClock::now();
      const int fronts = ranks.empty() ? 0 : 1 + *std::max_element(ranks.begin(), ranks.end());
      const nlohmann::ordered_json record = {
          {"bench", "pareto-timing"},
          {"points", n},
          {"objectives", m},
          {"shape", shell ? "shell" : "cube"},
          {"fronts", fronts},
          {"front_size", front.size()},
          {"ranks_s", std::chrono::duration<double>(t1 - t0).count()},
          {"front_s", std::chrono::duration<double>(t2 - t1).count()}};
      std::cout << record.dump() << std::endl;
    }
  }
}

// The (problem, sampler, seed, trials) of the runs in `path`.
std::set<std::string> done_runs(const std::string& path) {
  std::set<std::string> done;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    try {
      auto r = nlohmann::json::parse(line);
      if (r.value("bench", "") != "mo") continue;
      done.insert(r["problem"].get<std::string>() + "/" + r["sampler"].get<std::string>() + "/" +
                  std::to_string(r["seed"].get<int>()) + "/" +
                  std::to_string(r["trials"].get<int>()));
    } catch (const std::exception&) {
    }
  }
  return done;
}

}  // namespace

int main(int argc, char** argv) {
  tuner::bench::Flags flags(
      argc, argv,
      {"problems", "samplers", "seeds", "first-seed", "trials", "checkpoints", "shard", "out",
       "timing", "sizes", "asks", "pareto-timing", "points", "list", "help"});
  if (flags.has("help")) {
    std::puts("see the comment at the top of bench/mo/mo_bench.cc");
    return 0;
  }
  if (flags.has("list")) {
    std::printf("problem  variables  objectives  constrained  reference\n");
    for (const MoProblem& p : tuner::bench::mo_problems()) {
      std::string ref;
      for (double r : p.reference) ref += (ref.empty() ? "" : ",") + tuner::bench::json_number(r);
      std::printf("%s %d %d %d %s  # %s%s\n", p.name.c_str(), p.n_vars, p.n_objectives,
                  p.constrained ? 1 : 0, ref.c_str(), p.held_out ? "(held out) " : "",
                  p.description.c_str());
    }
    return 0;
  }
  if (flags.has("pareto-timing")) {
    pareto_timing(flags.get_int("points", 100000));
    return 0;
  }
  const std::vector<const MoProblem*> problems =
      problems_of(flags.get("problems", flags.has("timing") ? "dtlz2" : "all"));
  const std::vector<std::string> samplers =
      tuner::bench::split(flags.get("samplers", flags.has("timing") ? "default" : "default,nsga2"));
  std::ofstream out_file;
  const std::string out_path = flags.get("out", "");
  if (!out_path.empty()) out_file.open(out_path, std::ios::app);
  auto emit = [&](const nlohmann::ordered_json& r) {
    if (out_file.is_open()) {
      out_file << r.dump() << std::endl;
    } else {
      std::cout << r.dump() << std::endl;
    }
  };
  if (flags.has("timing")) {
    for (const MoProblem* p : problems) {
      for (int n : tuner::bench::split_ints(flags.get("sizes", "1000"))) {
        for (const std::string& s : samplers) emit(time_asks(*p, s, n, flags.get_int("asks", 10)));
      }
    }
    return 0;
  }
  const int seeds = flags.get_int("seeds", 20), first = flags.get_int("first-seed", 0);
  const int trials = flags.get_int("trials", 200);
  const std::vector<int> checkpoints =
      tuner::bench::split_ints(flags.get("checkpoints", "100,200"));
  int shard = 0, shards = 1;
  if (flags.has("shard") &&
      std::sscanf(flags.get("shard", "").c_str(), "%d/%d", &shard, &shards) != 2) {
    tuner::bench::Flags::fail("--shard takes K/N");
  }
  const std::set<std::string> done =
      out_path.empty() ? std::set<std::string>{} : done_runs(out_path);
  for (const MoProblem* p : problems) {
    for (const std::string& s : samplers) {
      for (int seed = first; seed < first + seeds; ++seed) {
        if (seed % shards != shard) continue;
        const std::string key =
            p->name + "/" + s + "/" + std::to_string(seed) + "/" + std::to_string(trials);
        if (done.contains(key)) continue;
        emit(run(*p, s, seed, trials, checkpoints));
      }
    }
  }
  return 0;
}
