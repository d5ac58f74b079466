// sampler_suite: tuner's samplers on the function suite (bench/suite/problems.h), the C++ half
// of bench/suite/run_suite (the Optuna half: bench/optuna/sampler_suite.py).
//
// Regret runs (the default mode): for each problem, sampler and seed s, Study::create({.sampler,
// .seed = s}) and optimize() for --trials trials, define-by-run (one suggest_* per active
// parameter, in the problem's order). Each trial's observed value is the noiseless objective plus
// the problem's noise for (s, trial number); the regret after k trials is the best noiseless value
// among the first k minus the known optimum. On a problem without noise, "duplicates" counts the
// trials whose parameters an earlier trial of the run had (a proposal wasted). One JSON line per
// run is appended to --out (or printed); runs already in --out with at least --trials trials are
// skipped, so a run can be resumed, and --shard K/N splits the seeds between processes.
//
// --timing: the time of one ask + suggestions + tell after N finished trials (a study pre-filled
// with N random trials, then loaded with the sampler), for each N of --sizes: one ask timed apart
// (first_ms: what a fresh process's first ask costs, its caches empty), then --asks timed ones or
// as many as fit in --max-seconds (at least one).
//
// --eval: reads JSON lines {"problem": NAME, "seed": S, "number": K, "params": {NAME: VALUE}} and
// prints {"noiseless", "observed"} for each, through the same mapping of params to a point that
// the runs use (bench/suite/values_test.py compares it with the Optuna side's).
//
// --external: one regret run on a problem defined and evaluated by another process, the one that
// started this runner (bench/optuna/anchor_suite.py: COCO's suites, model fits), through stdin and
// stdout, one JSON line each way. It reads {"problem": {"name", "optimum", "noise_sd", "params":
// [as --describe writes them]}, "sampler", "seed", "trials", "checkpoints": [..]}; then, for each
// trial, writes {"number": K, "point": [..]} (problems.h's encoding, null for an inactive
// parameter) and reads {"value": V} (V the noiseless objective; observed = V + the noise that
// noise() draws for this name, seed and trial) or {"error": TEXT} (the trial fails); last it
// writes the run's record, as a regret run does.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "bench/bench_common.h"
#include "bench/suite/describe.h"
#include "bench/suite/problems.h"
#include "trials/system_attrs.h"

namespace {

using tuner::bench::Flags;
using tuner::bench::suite::ParamSpec;
using tuner::bench::suite::ParamType;
using tuner::bench::suite::Problem;
using Clock = std::chrono::steady_clock;

constexpr char kUsage[] =
    "usage: sampler_suite [--problems core] [--samplers default,tpe,gp,random] [--seeds 20]\n"
    "                     [--first-seed 0] [--trials 200] [--gp-trials N]\n"
    "                     [--checkpoints 25,50,100,200]\n"
    "                     [--shard K/N] [--out FILE.jsonl]\n"
    "       sampler_suite --timing [--sizes 100,300] [--asks 10] [--max-seconds 30]\n"
    "                     [--samplers gp] [--problems ..]\n"
    "       sampler_suite --list [--problems all] | --describe | --eval FILE | --external\n"
    "  --problems: names, groups (bbob classic mixed conditional noisy) or sets (all core quick)\n"
    "  --out: append JSON lines there, skipping runs it already holds (else print them)\n"
    "  --shard K/N: only the seeds s with (s - first seed) % N == K\n"
    "  --gp-trials: trials of the gp runs (default --trials): the GP's cost grows with them\n";

// --- One trial's parameters -------------------------------------------------------------------

// Suggests every active parameter of `problem`, in order; returns the point (problems.h).
std::vector<double> suggest(const Problem& problem, tuner::Trial& trial) {
  std::vector<double> point(problem.params.size(), std::nan(""));
  for (size_t i = 0; i < point.size(); ++i) {
    if (!tuner::bench::suite::is_active(problem, i, point)) continue;
    const ParamSpec& s = problem.params[i];
    switch (s.type) {
      case ParamType::kFloat:
        point[i] = trial.suggest_float(s.name, s.low, s.high, {.log = s.log});
        break;
      case ParamType::kInt:
        point[i] = static_cast<double>(trial.suggest_int(
            s.name, static_cast<int64_t>(s.low), static_cast<int64_t>(s.high), {.log = s.log}));
        break;
      case ParamType::kCategorical: {
        const std::string c = trial.suggest_categorical<std::string>(s.name, s.choices);
        point[i] = static_cast<double>(std::find(s.choices.begin(), s.choices.end(), c) -
                                       s.choices.begin());
        break;
      }
    }
  }
  return point;
}

// The point of a trial's stored params (the --eval mode; the same encoding as suggest()).
std::vector<double> point_of(const Problem& problem, const nlohmann::json& params) {
  std::vector<double> point(problem.params.size(), std::nan(""));
  for (size_t i = 0; i < point.size(); ++i) {
    const ParamSpec& s = problem.params[i];
    if (!tuner::bench::suite::is_active(problem, i, point)) continue;
    if (!params.contains(s.name)) {
      throw std::invalid_argument("problem " + problem.name + ": params lack active " + s.name);
    }
    const nlohmann::json& v = params.at(s.name);
    if (s.type == ParamType::kCategorical) {
      const auto it = std::find(s.choices.begin(), s.choices.end(), v.get<std::string>());
      if (it == s.choices.end()) {
        throw std::invalid_argument("problem " + problem.name + ": " + s.name + " has no choice " +
                                    v.dump());
      }
      point[i] = static_cast<double>(it - s.choices.begin());
    } else {
      point[i] = v.get<double>();
    }
  }
  tuner::bench::suite::check_point(problem, point);
  return point;
}

// The problem an --external header describes; its objective asks `in`/`out`.
Problem external_problem(const nlohmann::json& spec, std::istream& in, std::ostream& out) {
  Problem p{.name = spec.at("name").get<std::string>(), .group = "external"};
  p.optimum = spec.at("optimum").get<double>();
  p.noise_sd = spec.value("noise_sd", 0.0);
  for (const auto& q : spec.at("params")) {
    ParamSpec s{.name = q.at("name").get<std::string>()};
    const std::string type = q.at("type").get<std::string>();
    if (type == "float") {
      s.type = ParamType::kFloat;
    } else if (type == "int") {
      s.type = ParamType::kInt;
    } else if (type == "categorical") {
      s.type = ParamType::kCategorical;
    } else {
      throw std::invalid_argument("--external: parameter " + s.name + " has unknown type " + type);
    }
    s.low = q.value("low", 0.0);
    s.high = q.value("high", 1.0);
    s.log = q.value("log", false);
    s.choices = q.value("choices", std::vector<std::string>{});
    s.parent = q.value("parent", std::string());
    s.parent_choices = q.value("parent_choices", std::vector<int>{});
    if (s.type == ParamType::kCategorical) s.high = static_cast<double>(s.choices.size()) - 1.0;
    p.params.push_back(std::move(s));
  }
  p.objective = [&in, &out, number = 0](const std::vector<double>& x) mutable -> double {
    nlohmann::json point = nlohmann::json::array();
    for (double v : x) point.push_back(std::isnan(v) ? nlohmann::json() : nlohmann::json(v));
    out << nlohmann::json{{"number", number++}, {"point", point}}.dump() << "\n" << std::flush;
    std::string line;
    if (!std::getline(in, line)) throw std::runtime_error("--external: the evaluator closed stdin");
    const auto answer = nlohmann::json::parse(line);
    if (answer.contains("error")) {
      throw std::runtime_error("--external: " + answer.at("error").get<std::string>());
    }
    return answer.at("value").get<double>();
  };
  return p;
}

// --- Regret runs ------------------------------------------------------------------------------

struct RunSpec {
  std::string sampler;
  const Problem* problem;
  int seed;
  int trials;
  std::vector<int> checkpoints;  // each <= trials
};

nlohmann::ordered_json run_one(const RunSpec& spec) {
  const Problem& problem = *spec.problem;
  tuner::Study study = tuner::Study::create({.sampler = tuner::bench::make_sampler(spec.sampler),
                                             .seed = static_cast<uint64_t>(spec.seed)});
  std::vector<double> noiseless(static_cast<size_t>(spec.trials),
                                std::numeric_limits<double>::infinity());
  std::vector<double> elapsed(static_cast<size_t>(spec.trials), 0.0);
  const auto start = Clock::now();
  // A sampler that throws inside a suggestion fails its trial and optimize() goes on; one that
  // throws in ask() stores that trial FAIL and ends optimize(): go on with the trials left, up to
  // a quarter of them failing so.
  std::string ask_error;
  for (int ask_failures = 0;;) {
    const int left = spec.trials - static_cast<int>(study.trials().size());
    if (left <= 0) break;
    try {
      study.optimize(
          [&](tuner::Trial& trial) {
            const std::vector<double> point = suggest(problem, trial);
            const double value = problem.objective(point);
            noiseless.at(static_cast<size_t>(trial.number())) = value;
            return value + tuner::bench::suite::noise(problem, static_cast<uint64_t>(spec.seed),
                                                      trial.number());
          },
          {.n_trials = left, .on_trial_finished = [&](const tuner::FrozenTrial& t) {
             elapsed.at(static_cast<size_t>(t.number)) =
                 std::chrono::duration<double>(Clock::now() - start).count();
           }});
    } catch (const tuner::AskError& e) {
      if (ask_error.empty()) ask_error = e.what();
      if (++ask_failures > spec.trials / 4) break;
    }
  }
  nlohmann::ordered_json regret = nlohmann::ordered_json::object();
  nlohmann::ordered_json seconds = nlohmann::ordered_json::object();
  // Only COMPLETE trials count. A FAIL one (the sampler threw inside a suggestion) is counted
  // and its first reason kept.
  int failed = 0;
  std::string fail_reason;
  for (const auto& t : study.trials()) {
    if (t.state == tuner::TrialState::kComplete) continue;
    noiseless.at(static_cast<size_t>(t.number)) = std::numeric_limits<double>::infinity();
    ++failed;
    if (fail_reason.empty()) {
      const auto it = t.system_attrs.find(tuner::kFailReasonAttr);
      fail_reason = "trial " + std::to_string(t.number) + ": " +
                    (it != t.system_attrs.end() ? it->second : std::string("?"));
    }
  }
  // Trials that repeat an earlier trial's parameters (in every state: a FAIL one was tried too).
  int duplicates = 0;
  {
    std::set<tuner::Params> seen;
    for (const auto& t : study.trials()) duplicates += !seen.insert(t.params).second;
  }
  double best = std::numeric_limits<double>::infinity();
  size_t next = 0;
  for (int k = 1; k <= spec.trials; ++k) {
    best = std::min(best, noiseless[static_cast<size_t>(k - 1)]);
    if (next < spec.checkpoints.size() && spec.checkpoints[next] == k) {
      const std::string key = std::to_string(k);
      regret[key] = std::isfinite(best) ? nlohmann::ordered_json(best - problem.optimum)
                                        : nlohmann::ordered_json();
      seconds[key] = elapsed[static_cast<size_t>(k - 1)];
      ++next;
    }
  }
  nlohmann::ordered_json record = {
      {"bench", "suite"},        {"impl", "tuner"},    {"sampler", spec.sampler},
      {"problem", problem.name}, {"seed", spec.seed},  {"trials", spec.trials},
      {"regret", regret},        {"seconds", seconds}, {"failed", failed}};
  if (problem.noise_sd == 0.0) record["duplicates"] = duplicates;
  if (failed > 0) record["fail_reason"] = ask_error.empty() ? fail_reason : ask_error;
  if (static_cast<int>(study.trials().size()) < spec.trials) record["aborted"] = true;
  return record;
}

// (impl, sampler, problem, seed) -> trials of the runs already in `path`.
std::set<std::tuple<std::string, std::string, int, int>> done_runs(const std::string& path) {
  std::set<std::tuple<std::string, std::string, int, int>> done;
  std::ifstream in(path);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] != '{') continue;
    try {
      const auto r = nlohmann::json::parse(line);
      if (r.value("bench", "") != "suite" || r.value("impl", "") != "tuner") continue;
      done.emplace(r.at("sampler").get<std::string>(), r.at("problem").get<std::string>(),
                   r.at("seed").get<int>(), r.at("trials").get<int>());
    } catch (const std::exception& e) {
      // A line cut by a killed run: rerun that one.
      std::fprintf(stderr, "sampler_suite: %s line %d is not a run record (%s); ignored\n",
                   path.c_str(), number, e.what());
    }
  }
  return done;
}

bool is_done(const std::set<std::tuple<std::string, std::string, int, int>>& done,
             const RunSpec& spec) {
  for (const auto& [sampler, problem, seed, trials] : done) {
    if (sampler == spec.sampler && problem == spec.problem->name && seed == spec.seed &&
        trials >= spec.trials) {
      return true;
    }
  }
  return false;
}

// --- Timing -----------------------------------------------------------------------------------

// One untimed ask first (it loads the study's caches), then up to `asks` timed ones, stopping
// once `max_seconds` are spent (after at least one attempt; failed asks count their time).
nlohmann::ordered_json time_asks(const std::string& sampler, const Problem& problem, int n,
                                 int asks, double max_seconds, uint64_t seed) {
  auto storage = std::make_shared<tuner::InMemoryStorage>();
  const std::string name = "timing-" + problem.name;
  {
    tuner::Study filler = tuner::Study::create({.name = name,
                                                .sampler = std::make_shared<tuner::RandomSampler>(),
                                                .storage = storage,
                                                .seed = seed});
    filler.optimize([&](tuner::Trial& trial) { return problem.objective(suggest(problem, trial)); },
                    {.n_trials = n});
  }
  tuner::Study study = tuner::Study::load(
      {.name = name, .sampler = tuner::bench::make_sampler(sampler), .storage = storage});
  // An ask whose sampler throws is told FAIL and counted, not timed.
  int failed = 0;
  std::string error;
  double spent_ms = 0.0;  // failed asks included
  auto cycle = [&]() -> std::optional<double> {
    const auto start = Clock::now();
    struct AddTime {
      double& total;
      Clock::time_point from;
      ~AddTime() { total += 1e3 * std::chrono::duration<double>(Clock::now() - from).count(); }
    } add_time{spent_ms, start};
    std::optional<tuner::Trial> trial;
    try {
      trial.emplace(study.ask());  // a throwing ask() stores its trial FAIL itself
      const double value = problem.objective(suggest(problem, *trial));
      study.tell(*trial, value);
    } catch (const std::exception& e) {
      if (trial) study.tell(*trial, tuner::TrialState::kFail, e.what());
      ++failed;
      if (error.empty()) error = e.what();
      return std::nullopt;
    }
    return 1e3 * std::chrono::duration<double>(Clock::now() - start).count();
  };
  const std::optional<double> first_ms = cycle();  // a fresh process's first ask: fits it needs
  spent_ms = 0.0;
  std::vector<double> ms;
  for (int attempt = 0; attempt < 2 * asks && static_cast<int>(ms.size()) < asks &&
                        (attempt == 0 || spent_ms < 1e3 * max_seconds);
       ++attempt) {
    if (const auto t = cycle()) ms.push_back(*t);
  }
  if (ms.empty()) {
    return {{"bench", "suite-timing"}, {"impl", "tuner"}, {"sampler", sampler},
            {"problem", problem.name}, {"n_trials", n},   {"asks", 0},
            {"failed", failed},        {"error", error}};
  }
  return {{"bench", "suite-timing"},
          {"impl", "tuner"},
          {"sampler", sampler},
          {"problem", problem.name},
          {"n_trials", n},
          {"asks", ms.size()},
          {"median_ms", tuner::bench::quantile(ms, 0.5)},
          {"mean_ms", tuner::bench::mean(ms)},
          {"min_ms", tuner::bench::quantile(ms, 0.0)},
          {"first_ms", first_ms ? nlohmann::ordered_json(*first_ms) : nlohmann::ordered_json()},
          {"failed", failed}};
}

// --- Modes ------------------------------------------------------------------------------------

void emit(const nlohmann::ordered_json& record, std::ofstream* out) {
  const std::string line = record.dump() + "\n";
  if (out != nullptr) {
    *out << line << std::flush;
  } else {
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
  }
}

// One regret run of an external problem (the header above external_problem()).
int external_mode() {
  std::string line;
  if (!std::getline(std::cin, line)) Flags::fail("--external: no header line on stdin");
  const auto header = nlohmann::json::parse(line);
  const Problem problem = external_problem(header.at("problem"), std::cin, std::cout);
  const std::string sampler = header.at("sampler").get<std::string>();
  const int trials = header.at("trials").get<int>();
  std::vector<int> checkpoints = header.value("checkpoints", std::vector<int>{});
  std::erase_if(checkpoints, [&](int k) { return k < 1 || k > trials; });
  checkpoints.push_back(trials);
  std::sort(checkpoints.begin(), checkpoints.end());
  checkpoints.erase(std::unique(checkpoints.begin(), checkpoints.end()), checkpoints.end());
  emit(run_one({sampler, &problem, header.at("seed").get<int>(), trials, checkpoints}), nullptr);
  return 0;
}

int eval_mode(const std::string& path) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path);
    if (!file) Flags::fail("cannot read --eval file " + path);
    in = &file;
  }
  std::string line;
  while (std::getline(*in, line)) {
    if (line.empty()) continue;
    const auto q = nlohmann::json::parse(line);
    const std::string name = q.at("problem").get<std::string>();
    const Problem* problem = tuner::bench::suite::find_problem(name);
    if (problem == nullptr) Flags::fail("--eval: unknown problem " + name);
    const std::vector<double> point = point_of(*problem, q.at("params"));
    const double noiseless = problem->objective(point);
    const double observed =
        noiseless +
        tuner::bench::suite::noise(*problem, q.value("seed", uint64_t{0}), q.value("number", 0));
    emit(
        nlohmann::ordered_json{{"problem", name}, {"noiseless", noiseless}, {"observed", observed}},
        nullptr);
  }
  return 0;
}

void list_mode(const std::vector<const Problem*>& problems) {
  std::printf("%-28s %-12s %4s %6s  %s\n", "problem", "group", "dims", "noise", "summary");
  for (const Problem* p : problems) {
    std::printf("%-28s %-12s %4zu %6.2g  %s\n", p->name.c_str(), p->group.c_str(), p->params.size(),
                p->noise_sd, p->summary.c_str());
  }
}

int run(int argc, char** argv) {
  Flags flags(argc, argv,
              {"problems", "samplers", "seeds", "first-seed", "trials", "gp-trials", "checkpoints",
               "shard", "out", "timing", "sizes", "asks", "max-seconds", "list", "describe", "eval",
               "external", "help"});
  if (flags.has("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (flags.has("describe")) {
    std::printf("%s\n", tuner::bench::suite::describe_json().dump(2).c_str());
    return 0;
  }
  if (flags.has("eval")) return eval_mode(flags.get("eval", "-"));
  if (flags.has("external")) return external_mode();

  std::vector<const Problem*> problems;
  try {
    problems = tuner::bench::suite::select_problems(
        flags.get("problems", flags.has("list") ? "all" : "core"));
  } catch (const std::invalid_argument& e) {
    Flags::fail(e.what());
  }
  if (flags.has("list")) {
    list_mode(problems);
    return 0;
  }
  const bool timing = flags.has("timing");
  const std::vector<std::string> samplers =
      tuner::bench::split(flags.get("samplers", timing ? "gp" : "default,tpe,gp,random"));
  for (const auto& s : samplers) tuner::bench::make_sampler(s);  // fail early on a bad name
  std::ofstream out_file;
  std::ofstream* out = nullptr;
  const std::string out_path = flags.get("out", "");
  std::set<std::tuple<std::string, std::string, int, int>> done;
  if (!out_path.empty()) {
    done = done_runs(out_path);
    out_file.open(out_path, std::ios::app);
    if (!out_file) Flags::fail("cannot append to --out " + out_path);
    out = &out_file;
  }

  if (timing) {
    const std::vector<int> sizes = tuner::bench::split_ints(flags.get("sizes", "100,300"));
    const int asks = flags.get_int("asks", 10);
    const double max_seconds = flags.get_double("max-seconds", 30.0);
    if (asks < 1) Flags::fail("--asks must be >= 1");
    for (const auto& sampler : samplers) {
      for (const Problem* p : problems) {
        for (int n : sizes) emit(time_asks(sampler, *p, n, asks, max_seconds, 0), out);
      }
    }
    return 0;
  }

  const int seeds = flags.get_int("seeds", 20);
  const int first_seed = flags.get_int("first-seed", 0);
  const int trials = flags.get_int("trials", 200);
  const int gp_trials = flags.get_int("gp-trials", trials);
  if (seeds < 1 || first_seed < 0 || trials < 1 || gp_trials < 1) {
    Flags::fail("--seeds, --trials and --gp-trials must be >= 1 and --first-seed >= 0");
  }
  const std::vector<int> requested =
      tuner::bench::split_ints(flags.get("checkpoints", "25,50,100,200"));
  // The checkpoints up to n, and n.
  auto checkpoints_of = [&](int n) {
    std::vector<int> ks;
    for (int k : requested) {
      if (k < 1) Flags::fail("--checkpoints must be >= 1");
      if (k <= n) ks.push_back(k);
    }
    std::sort(ks.begin(), ks.end());
    ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
    if (ks.empty() || ks.back() != n) ks.push_back(n);
    return ks;
  };
  int shard = 0, shards = 1;
  if (flags.has("shard")) {
    const std::string text = flags.get("shard", "");
    if (std::sscanf(text.c_str(), "%d/%d", &shard, &shards) != 2 || shards < 1 || shard < 0 ||
        shard >= shards) {
      Flags::fail("--shard takes K/N with 0 <= K < N, not '" + text + "'");
    }
  }
  int skipped = 0;
  for (const Problem* p : problems) {
    for (const auto& sampler : samplers) {
      for (int seed = first_seed; seed < first_seed + seeds; ++seed) {
        if ((seed - first_seed) % shards != shard) continue;
        const int n = sampler == "gp" ? gp_trials : trials;
        RunSpec spec{sampler, p, seed, n, checkpoints_of(n)};
        if (is_done(done, spec)) {
          ++skipped;
          continue;
        }
        emit(run_one(spec), out);
      }
    }
  }
  if (skipped > 0) {
    std::fprintf(stderr, "sampler_suite: %d runs already in %s\n", skipped, out_path.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sampler_suite: %s\n", e.what());
    return 1;
  }
}
