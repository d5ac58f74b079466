// The cost of a PB2 decision round (bench/README.md, "PBT and PB2"): a synchronous round of
// a population of P members at the end of a segment, with about 200 finished segments to learn
// from (the GP's limit, kPb2MaxObservations), every member decided at once (q = P / 4 of them
// exploit). Two ways of making the round's choices:
//   per-member  the GP fitted for each exploiting member on its own (pb2_select() for each, the
//               round's earlier choices pending), timed as PBT's round (ranking, continuing
//               members) plus those calls;
//   per-round   PbtScheduler::next_segments() as it is: one fit (Pb2Model::fit) per round,
//               shared by its members (Pb2Model::select each).
// Printed per population: the round's milliseconds and its milliseconds per exploiting member
// (the median of --repeats rounds) for each, and their ratio. One thread; the same inputs and
// seeds for both.
//
//   pb2_decision_bench [--populations 8,32,128] [--observations 200] [--repeats 3]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <sstream>
#include <string>
#include <vector>

#include "search/history.h"
#include "search/rng.h"
#include "search/schedulers/pb2.h"
#include "search/schedulers/pbt.h"
#include "trials/frozen_trial.h"

namespace tuner {
namespace {

constexpr int64_t kInterval = 2;

// The improvement per step of a segment trained at `lr` and `width`: largest at lr 0.03, width 64.
double gain(double lr, int64_t width) {
  const double d = std::log10(lr) - std::log10(0.03);
  const double w = std::log2(static_cast<double>(width)) - 6.0;
  return std::exp(-d * d - 0.1 * w * w);
}

// P members that each finished `segments` segments at their ends (none exploited: each continued
// itself), at random lr and width, their loss going down by gain() per step.
std::vector<FrozenTrial> population(int members, int segments, uint64_t seed) {
  Rng rng(seed);
  const std::map<std::string, Distribution, std::less<>> distributions = {
      {"lr", FloatDistribution{.low = 1e-4, .high = 1.0, .log = true}},
      {"width", IntDistribution{.low = 8, .high = 512, .log = true}}};
  std::vector<FrozenTrial> trials;
  std::vector<int> last(static_cast<size_t>(members), -1);
  std::vector<double> loss(static_cast<size_t>(members), 3.0);
  std::vector<Params> params(static_cast<size_t>(members));
  for (Params& p : params) {
    p = {{"lr", std::exp(std::log(1e-4) + rng.uniform() * std::log(1e4))},
         {"width", static_cast<int64_t>(std::round(std::exp2(3 + rng.uniform() * 6)))}};
  }
  for (int s = 0; s < segments; ++s) {
    for (int m = 0; m < members; ++m) {
      FrozenTrial t;
      t.number = static_cast<int>(trials.size());
      t.trial_id = t.number;
      t.state = TrialState::kComplete;
      t.params = params[static_cast<size_t>(m)];
      t.distributions = distributions;
      double& l = loss[static_cast<size_t>(m)];
      const double g =
          gain(std::get<double>(t.params.at("lr")), std::get<int64_t>(t.params.at("width")));
      for (int64_t step = s * kInterval + 1; step <= (s + 1) * kInterval; ++step) {
        l -= 0.05 * g * (0.5 + rng.uniform());
        t.intermediate_values[step] = l;
      }
      t.values = {l};
      for (auto& [key, json] : pbt_attrs(
               PbtLineage{.member = m,
     .segment = s,
     .parent = last[static_cast<size_t>(m)] >= 0 ? std::optional<int>(last[static_cast<size_t>(m)])
                                                 : std::nullopt})) {
        t.system_attrs[key] = json;
      }
      last[static_cast<size_t>(m)] = t.number;
      trials.push_back(std::move(t));
    }
  }
  return trials;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// The finished segments as the scheduler sees them (its observation rule: a segment's gain from
// its parent's value, segment 0's from its first report), for the per-member way.
std::vector<Pb2Observation> observations(const std::vector<FrozenTrial>& trials) {
  std::vector<Pb2Observation> out;
  for (const FrozenTrial& t : trials) {
    const PbtLineage lineage = *pbt_lineage(t);
    const int64_t end = (lineage.segment + 1) * kInterval;
    int64_t start = 0;
    double from = 0;
    if (lineage.parent) {
      start = lineage.segment * kInterval;
      from = trials[static_cast<size_t>(*lineage.parent)].values.front();
    } else {
      start = t.intermediate_values.begin()->first;
      from = t.intermediate_values.begin()->second;
    }
    out.push_back({.start_step = start,
                   .gain_per_step = (from - t.values.front()) / static_cast<double>(end - start),
                   .params = &t.params});
  }
  return out;
}

int run(int argc, char** argv) {
  std::vector<int> populations = {8, 32, 128};
  int target_observations = 200;
  int repeats = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--populations") {
      populations.clear();
      std::stringstream in(value);
      for (std::string item; std::getline(in, item, ',');) populations.push_back(std::stoi(item));
    } else if (flag == "--observations") {
      target_observations = std::stoi(value);
    } else if (flag == "--repeats") {
      repeats = std::stoi(value);
    } else {
      std::fprintf(stderr, "pb2_decision_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  const std::vector<StudyDirection> directions = {StudyDirection::kMinimize};
  std::printf("%10s %12s %10s %18s %18s %18s %18s %8s\n", "population", "observations",
              "exploiters", "per-member ms", "per-round ms", "per-member ms/ex", "per-round ms/ex",
              "ratio");
  for (int p : populations) {
    const int segments = std::max(1, (target_observations + p - 1) / p);
    const std::vector<FrozenTrial> trials = population(p, segments, 11);
    const History history{trials, directions};
    PbtOptions options{.population_size = p,
                       .perturbation_interval = kInterval,
                       .synchronous = true,
                       .seed = 5,
                       .explore = PbtExplore::kBandit};
    const PbtScheduler pb2(options);
    options.explore = PbtExplore::kPerturb;
    const PbtScheduler pbt(options);
    const std::vector<Pb2Observation> observed = observations(trials);

    std::vector<double> before, after;
    size_t exploiters = 0;
    for (int r = 0; r < repeats; ++r) {
      // Per member: PBT's round, then one fit per exploiting member, the earlier ones pending.
      auto start = std::chrono::steady_clock::now();
      const std::vector<PbtNextSegment> next = pbt.next_segments(history);
      std::deque<Params> chosen;           // a deque: `pending` points into it
      std::vector<const Params*> pending;  // the round's earlier decisions, as the scheduler's
      size_t exploited = 0;
      for (const PbtNextSegment& s : next) {
        if (s.exploited) {
          const FrozenTrial& target = trials[static_cast<size_t>(*s.lineage.parent)];
          Rng rng = Rng::for_trial(options.seed ^ static_cast<uint64_t>(s.lineage.member + 1),
                                   s.lineage.segment);
          std::optional<Params> out =
              pb2_select(observed, pending, segments * kInterval, target.params,
                         target.distributions, options.kappa, rng);
          chosen.push_back(out ? *out : target.params);
          ++exploited;
        } else {
          chosen.push_back(s.params);
        }
        pending.push_back(&chosen.back());
      }
      before.push_back(ms_since(start));
      exploiters = exploited;

      start = std::chrono::steady_clock::now();
      const std::vector<PbtNextSegment> shared = pb2.next_segments(history);
      after.push_back(ms_since(start));
      if (shared.size() != next.size()) {
        std::fprintf(stderr, "pb2_decision_bench: the rounds decided %zu and %zu members\n",
                     next.size(), shared.size());
        return 1;
      }
    }
    const double b = median(before), a = median(after);
    const double q = static_cast<double>(std::max<size_t>(exploiters, 1));
    std::printf("%10d %12zu %10zu %18.1f %18.1f %18.1f %18.1f %8.2f\n", p,
                std::min(observed.size(), kPb2MaxObservations), exploiters, b, a, b / q, a / q,
                b / a);
  }
  return 0;
}

}  // namespace
}  // namespace tuner

int main(int argc, char** argv) { return tuner::run(argc, argv); }
