#include "search/schedulers/pbt.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <deque>
#include <limits>
#include <string>
#include <utility>

#include "search/samplers/random_sampler.h"
#include "trials/error.h"
#include "trials/overloaded.h"

namespace tuner {

namespace {

// A system attribute holding a JSON integer in [0, INT_MAX]; nullopt when absent or not one.
std::optional<int> int_attr(const FrozenTrial& trial, std::string_view key) {
  auto it = trial.system_attrs.find(key);
  if (it == trial.system_attrs.end()) return std::nullopt;
  const std::string& text = it->second;
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// `value` as a loss (lower is better) in `direction`; non-finite values are the worst.
double loss(StudyDirection direction, double value) {
  if (!std::isfinite(value)) return std::numeric_limits<double>::infinity();
  return as_loss(direction, value);
}

// Where one member stands, from its segment trials.
struct Member {
  int member = 0;
  int segment = -1;
  const FrozenTrial* latest = nullptr;  // the latest attempt of its highest segment
  // By segment: its trial that finished at the segment's end (COMPLETE there).
  std::map<int, const FrozenTrial*> at_end;
};

// `value` * `factor` for a numeric distribution, clipped and rounded to it.
ParamValue perturb_number(const Distribution& distribution, const ParamValue& value, double factor,
                          Rng& rng) {
  return std::visit(
      Overloaded{
          [&](const FloatDistribution& d) -> ParamValue {
            double x = std::clamp(std::get<double>(value) * factor, d.low, d.high);
            if (d.step) {
              x = d.low + std::round((x - d.low) / *d.step) * *d.step;
              x = std::clamp(x, d.low, d.high);
            }
            return x;
          },
          [&](const IntDistribution& d) -> ParamValue {
            const int64_t old = std::get<int64_t>(value);
            const double scaled = static_cast<double>(old) * factor;
            int64_t x =
                d.low +
                static_cast<int64_t>(std::llround(
                    (std::clamp(scaled, static_cast<double>(d.low), static_cast<double>(d.high)) -
                     static_cast<double>(d.low)) /
                    static_cast<double>(d.step))) *
                    d.step;
            if (x == old && factor > 1) x = old + d.step;
            if (x == old && factor < 1) x = old - d.step;
            while (x > d.high) x -= d.step;
            while (x < d.low) x += d.step;
            return x;
          },
          [&](const CategoricalDistribution& d) -> ParamValue {
            const auto n = static_cast<int64_t>(d.choices.size());
            auto at = std::find(d.choices.begin(), d.choices.end(), value);
            if (at == d.choices.end() || n < 2) return value;
            const int64_t i = at - d.choices.begin();
            int64_t j = i == 0 ? 1 : i == n - 1 ? n - 2 : (rng.integer(0, 1) == 0 ? i - 1 : i + 1);
            return d.choices[static_cast<size_t>(j)];
          },
          [&](const NormalDistribution& d) -> ParamValue {
            double x = std::get<double>(value) * factor;
            if (d.q) x = std::round(x / *d.q) * *d.q;
            return x;
          },
      },
      distribution);
}

}  // namespace

std::optional<PbtLineage> pbt_lineage(const FrozenTrial& trial) {
  std::optional<int> member = int_attr(trial, kPbtMemberAttr);
  std::optional<int> segment = int_attr(trial, kPbtSegmentAttr);
  if (!member || !segment) return std::nullopt;
  return PbtLineage{
      .member = *member, .segment = *segment, .parent = int_attr(trial, kPbtParentAttr)};
}

std::map<std::string, std::string, std::less<>> pbt_attrs(const PbtLineage& lineage) {
  std::map<std::string, std::string, std::less<>> attrs = {
      {kPbtMemberAttr, std::to_string(lineage.member)},
      {kPbtSegmentAttr, std::to_string(lineage.segment)}};
  if (lineage.parent) attrs[kPbtParentAttr] = std::to_string(*lineage.parent);
  return attrs;
}

PbtScheduler::PbtScheduler(PbtOptions options) : options_(std::move(options)) {
  const std::string prefix = options_.explore == PbtExplore::kBandit ? "pb2." : "pbt.";
  auto invalid = [&](std::string_view option, const std::string& message) {
    return Error(ErrorCode::kInvalidArgument, prefix + std::string(option) + ": " + message);
  };
  if (options_.population_size < 2) {
    throw invalid("population_size",
                  "must be >= 2, got " + std::to_string(options_.population_size));
  }
  if (options_.perturbation_interval < 1) {
    throw invalid("perturbation_interval", "must be >= 1 (steps per segment), got " +
                                               std::to_string(options_.perturbation_interval));
  }
  if (!(options_.quantile > 0 && options_.quantile <= 0.5)) {
    throw invalid("quantile", "must be in (0, 0.5], got " + std::to_string(options_.quantile));
  }
  if (!(options_.resample_probability >= 0 && options_.resample_probability <= 1)) {
    throw invalid("resample_probability",
                  "must be in [0, 1], got " + std::to_string(options_.resample_probability));
  }
  if (options_.perturbation_factors.empty()) {
    throw invalid("perturbation_factors", "must list at least one factor");
  }
  for (size_t i = 0; i < options_.perturbation_factors.size(); ++i) {
    const double f = options_.perturbation_factors[i];
    if (!(std::isfinite(f) && f > 0)) {
      throw invalid("perturbation_factors[" + std::to_string(i) + "]",
                    "must be finite and > 0, got " + std::to_string(f));
    }
  }
  if (options_.max_steps && *options_.max_steps < 1) {
    throw invalid("max_steps", "must be >= 1, got " + std::to_string(*options_.max_steps));
  }
  if (!(std::isfinite(options_.kappa) && options_.kappa >= 0)) {
    throw invalid("kappa", "must be finite and >= 0, got " + std::to_string(options_.kappa));
  }
}

int64_t PbtScheduler::segment_end(int segment) const {
  const int64_t interval = options_.perturbation_interval;
  const int64_t k = static_cast<int64_t>(segment) + 1;
  const int64_t end = k > std::numeric_limits<int64_t>::max() / interval
                          ? std::numeric_limits<int64_t>::max()
                          : k * interval;
  return options_.max_steps ? std::min(end, *options_.max_steps) : end;
}

Decision PbtScheduler::on_report(const FrozenTrial& trial, int64_t step, const History&) const {
  std::optional<PbtLineage> lineage = pbt_lineage(trial);
  if (!lineage) return Decision::kContinue;
  return step >= segment_end(lineage->segment) ? Decision::kPause : Decision::kContinue;
}

int PbtScheduler::members(const History& history) {
  int n = 0;
  for (const FrozenTrial& t : history.trials) {
    if (std::optional<PbtLineage> lineage = pbt_lineage(t)) n = std::max(n, lineage->member + 1);
  }
  return n;
}

Params PbtScheduler::explore(const Params& params,
                             const std::map<std::string, Distribution, std::less<>>& distributions,
                             Rng& rng) const {
  Params out;
  for (const auto& [name, value] : params) {
    auto d = distributions.find(name);
    if (d == distributions.end() || is_single(d->second)) {
      out.emplace(name, value);
      continue;
    }
    if (rng.uniform() < options_.resample_probability) {
      out.emplace(name, RandomSampler::draw(d->second, rng));
      continue;
    }
    const auto n = static_cast<int64_t>(options_.perturbation_factors.size());
    const double factor = options_.perturbation_factors[static_cast<size_t>(rng.integer(0, n - 1))];
    out.emplace(name, perturb_number(d->second, value, factor, rng));
  }
  return out;
}

std::vector<PbtNextSegment> PbtScheduler::next_segments(const History& history) const {
  std::map<int, Member> by_member;
  for (const FrozenTrial& t : history.trials) {
    std::optional<PbtLineage> lineage = pbt_lineage(t);
    if (!lineage) continue;
    Member& m = by_member[lineage->member];
    m.member = lineage->member;
    if (lineage->segment > m.segment ||
        (lineage->segment == m.segment && t.number > m.latest->number)) {
      m.segment = lineage->segment;
      m.latest = &t;
    }
    const bool at_end = !t.intermediate_values.empty() &&
                        t.intermediate_values.rbegin()->first >= segment_end(lineage->segment);
    if (t.state == TrialState::kComplete && at_end && !t.values.empty()) {
      m.at_end[lineage->segment] = &t;
    }
  }

  // Due: its latest segment ended at its end, and another one follows.
  auto due = [&](const Member& m) {
    auto end = m.at_end.find(m.segment);
    return end != m.at_end.end() && end->second == m.latest &&
           (!options_.max_steps || segment_end(m.segment) < *options_.max_steps);
  };
  auto running = [](const Member& m) {
    return m.latest->state == TrialState::kRunning || m.latest->state == TrialState::kWaiting;
  };

  std::vector<const Member*> ready;
  bool waiting_for_others = false;
  for (const auto& [index, m] : by_member) {
    if (due(m)) {
      ready.push_back(&m);
    } else if (running(m)) {
      waiting_for_others = true;
    }
  }
  if (ready.empty()) return {};
  if (options_.synchronous &&
      (waiting_for_others || static_cast<int>(by_member.size()) < options_.population_size)) {
    return {};
  }

  const StudyDirection direction = history.direction();
  std::vector<PbtNextSegment> next;

  // PB2: a segment that finished at its end, as an observation of the improvement its params
  // made from the value it started at (its parent's at its end; segment 0's, its first report).
  auto observation = [&](const FrozenTrial& t, int segment) -> std::optional<Pb2Observation> {
    const std::optional<PbtLineage> lineage = pbt_lineage(t);
    int64_t start_step = 0;
    double start_loss = 0;
    if (segment > 0 && lineage->parent &&
        static_cast<size_t>(*lineage->parent) < history.trials.size()) {
      const FrozenTrial& parent = history.trials[static_cast<size_t>(*lineage->parent)];
      if (parent.values.empty()) return std::nullopt;
      start_step = segment_end(segment - 1);
      start_loss = loss(direction, parent.values.front());
    } else {
      if (t.intermediate_values.empty()) return std::nullopt;
      start_step = t.intermediate_values.begin()->first;
      start_loss = loss(direction, t.intermediate_values.begin()->second);
    }
    const int64_t end = segment_end(segment);
    const double end_loss = loss(direction, t.values.front());
    if (end <= start_step || !std::isfinite(start_loss) || !std::isfinite(end_loss)) {
      return std::nullopt;
    }
    return Pb2Observation{
        .start_step = start_step,
        .gain_per_step = (start_loss - end_loss) / static_cast<double>(end - start_step),
        .params = &t.params};
  };
  std::optional<std::vector<Pb2Observation>> observations;  // made when first needed
  auto observed = [&]() -> const std::vector<Pb2Observation>& {
    if (!observations) {
      observations.emplace();
      for (const auto& [index, m] : by_member) {
        for (const auto& [segment, t] : m.at_end) {
          if (std::optional<Pb2Observation> o = observation(*t, segment)) {
            observations->push_back(*o);
          }
        }
      }
    }
    return *observations;
  };
  // PB2: the round's GP fits, one per start step and bandit params (Pb2Model::fits), shared by
  // the members that explore from them. A fit draws from a generator of its own, seeded by the
  // seed and the segment, so that it is the same whichever member asks first.
  std::deque<Pb2Model> fits;  // a deque: the pointers model() gives stay valid
  auto model = [&](const FrozenTrial& target, int segment) -> const Pb2Model* {
    const int64_t start = segment_end(segment - 1);
    for (const Pb2Model& m : fits) {
      if (m.fits(start, target.params, target.distributions)) return &m;
    }
    Rng rng = Rng::for_trial(options_.seed ^ 0xC2B2AE3D27D4EB4FULL, segment);
    std::optional<Pb2Model> fitted =
        Pb2Model::fit(observed(), start, target.params, target.distributions, rng);
    if (!fitted) return nullptr;
    fits.push_back(std::move(*fitted));
    return &fits.back();
  };
  // PB2: `target`'s params explored for a segment `segment`: the bandit's by the round's model
  // (Pb2Model::select), with the segments that start at the same step and are not finished
  // pending; the others by explore().
  auto bandit = [&](const FrozenTrial& target, int segment, Rng& rng) {
    std::vector<const Params*> pending;
    for (const FrozenTrial& t : history.trials) {
      const std::optional<PbtLineage> lineage = pbt_lineage(t);
      if (lineage && lineage->segment == segment &&
          (t.state == TrialState::kRunning || t.state == TrialState::kWaiting)) {
        pending.push_back(&t.params);
      }
    }
    for (const PbtNextSegment& decided : next) {
      if (decided.lineage.segment == segment) pending.push_back(&decided.params);
    }
    const Pb2Model* fitted = model(target, segment);
    std::optional<Params> chosen =
        fitted ? fitted->select(pending, target.params, options_.kappa, rng) : std::nullopt;
    if (!chosen) return explore(target.params, target.distributions, rng);
    std::map<std::string, Distribution, std::less<>> others;
    for (const auto& [name, d] : target.distributions) {
      if (!pb2_models(d)) others.emplace(name, d);
    }
    return explore(*chosen, others, rng);
  };
  for (const Member* m : ready) {
    // The ranking at the end of m's segment: the trials of that segment that finished at its
    // end, best first, ties by member.
    std::vector<const FrozenTrial*> ranked;
    for (const auto& [index, other] : by_member) {
      if (auto it = other.at_end.find(m->segment); it != other.at_end.end()) {
        ranked.push_back(it->second);
      }
    }
    std::stable_sort(ranked.begin(), ranked.end(), [&](const FrozenTrial* a, const FrozenTrial* b) {
      return loss(direction, a->values.front()) < loss(direction, b->values.front());
    });
    const size_t n = ranked.size();
    const size_t q =
        std::min(static_cast<size_t>(std::ceil(static_cast<double>(n) * options_.quantile)), n / 2);
    const int segment = m->segment + 1;
    Rng rng = Rng::for_trial(
        options_.seed ^ (0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(m->member + 1)), segment);
    const auto rank =
        static_cast<size_t>(std::find(ranked.begin(), ranked.end(), m->latest) - ranked.begin());
    PbtNextSegment s{.lineage = {.member = m->member, .segment = segment}};
    if (q > 0 && rank >= n - q) {
      const FrozenTrial* target =
          ranked[static_cast<size_t>(rng.integer(0, static_cast<int64_t>(q) - 1))];
      s.exploited = true;
      s.lineage.parent = target->number;
      s.params = options_.explore == PbtExplore::kBandit
                     ? bandit(*target, segment, rng)
                     : explore(target->params, target->distributions, rng);
    } else {
      s.lineage.parent = m->latest->number;
      s.params = m->latest->params;
    }
    next.push_back(std::move(s));
  }
  return next;
}

}  // namespace tuner
