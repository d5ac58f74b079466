// Test helpers for schedulers: a study's trials built from learning curves.
#ifndef TUNER_SEARCH_SCHEDULERS_SCHEDULER_TEST_UTIL_H_
#define TUNER_SEARCH_SCHEDULERS_SCHEDULER_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "search/history.h"
#include "search/schedulers/scheduler.h"
#include "trials/error.h"
#include "trials/frozen_trial.h"
#include "trials/trial_state.h"

namespace tuner::scheduler_test {

// step -> intermediate value.
using Curve = std::map<int64_t, double>;

// Values at steps first_step, first_step + 1, ...
inline Curve curve(std::vector<double> values, int64_t first_step = 1) {
  Curve result;
  for (double value : values) result[first_step++] = value;
  return result;
}

// A trial record with the given number, state and intermediate values. A COMPLETE trial's
// objective value and a PRUNED trial's value are its last intermediate value, as Optuna stores.
inline FrozenTrial make_trial(int number, TrialState state, Curve values) {
  FrozenTrial trial;
  trial.trial_id = number;
  trial.number = number;
  trial.state = state;
  if ((state == TrialState::kComplete || state == TrialState::kPruned) && !values.empty()) {
    trial.values = {values.rbegin()->second};
  }
  trial.intermediate_values = std::move(values);
  return trial;
}

// The trials of one single-objective study, numbered in the order they are added.
// History views into it stay valid until the next add().
class StudyFixture {
 public:
  explicit StudyFixture(StudyDirection direction = StudyDirection::kMinimize)
      : directions_{direction} {}

  // Adds the next trial; returns its number.
  int add(TrialState state, Curve values) {
    const int number = static_cast<int>(trials_.size());
    trials_.push_back(make_trial(number, state, std::move(values)));
    return number;
  }
  int complete(Curve values) { return add(TrialState::kComplete, std::move(values)); }

  // A RUNNING trial numbered after every trial added so far, not added to the study (as when
  // history has not caught up with it yet).
  FrozenTrial next_running(Curve values) const {
    return make_trial(static_cast<int>(trials_.size()), TrialState::kRunning, std::move(values));
  }

  History history() const { return History{trials_, directions_}; }
  std::vector<FrozenTrial>& trials() { return trials_; }

 private:
  std::vector<FrozenTrial> trials_;
  std::vector<StudyDirection> directions_;
};

// Reports `n` values to one RUNNING trial of `study`: mostly at one step past the last (sometimes
// leaving a gap), sometimes at a step below the largest: a gap filled late (which the memo must
// notice on its own, also when the decision asked about is another step's) or a value stored
// again (after which the memo is reset, as its contract asks). At each report, checks that
// on_report_memoized() with the trial's memo decides as on_report() does. Returns how many
// reports were stopped, so that a test can see both decisions taken.
inline int expect_memoized_decisions_match(const Scheduler& scheduler, const StudyFixture& study,
                                           uint32_t seed, int n) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> value(0.0, 10.0);
  FrozenTrial trial = study.next_running({});
  ReportMemo memo;
  int64_t largest = 0;
  int stops = 0;
  for (int i = 0; i < n; ++i) {
    int64_t step = largest + 1;
    if (random() % 16 == 0) step += 2;  // a gap
    if (largest > 2 && random() % 8 == 0) {
      step = 1 + static_cast<int64_t>(random() % static_cast<uint32_t>(largest));
      // A rewrite needs reset(); a value at a new step below the largest the memo must notice.
      if (trial.intermediate_values.contains(step)) memo.reset();
    }
    if (largest > 2 && random() % 8 == 0) {
      // A report at a new step below the largest that nobody asked about (several reports
      // between two decisions): the memo must notice it on its own.
      const int64_t earlier = 1 + static_cast<int64_t>(random() % static_cast<uint32_t>(largest));
      if (!trial.intermediate_values.contains(earlier)) {
        trial.intermediate_values[earlier] = value(random);
      }
    }
    trial.intermediate_values[step] = value(random);
    largest = std::max(largest, step);
    const Decision stateless = scheduler.on_report(trial, step, study.history());
    const Decision memoized = scheduler.on_report_memoized(trial, step, study.history(), memo);
    EXPECT_EQ(memoized, stateless) << "report " << i << " at step " << step << ", seed " << seed;
    if (stateless == Decision::kStop) ++stops;
  }
  return stops;
}

// The message of the Error(kInvalidArgument) that building a `SchedulerType` from `options`
// throws, or "no error".
template <class SchedulerType, class Options>
std::string construction_error(const Options& options) {
  try {
    SchedulerType scheduler(options);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "no error";
}

// step -> the objective values at it, one per objective.
using ObjectiveCurves = std::map<int64_t, std::vector<double>>;

// A study of several objectives: trials with their objective vectors per step (the first
// objective also as the intermediate value), judged as History::objective_steps gives them.
class MoStudy {
 public:
  explicit MoStudy(std::vector<StudyDirection> directions) : directions_(std::move(directions)) {}

  // Adds a trial in `state` with `steps`; returns its number.
  int add(TrialState state, ObjectiveCurves steps) {
    const int number = static_cast<int>(trials_.size());
    FrozenTrial t;
    t.trial_id = number;
    t.number = number;
    t.state = state;
    for (const auto& [step, values] : steps) t.intermediate_values[step] = values.front();
    trials_.push_back(t);
    if (!steps.empty()) objective_steps_.by_trial[number] = std::move(steps);
    return number;
  }

  // Trial `number` (added) reporting at `step`.
  Decision decide(const Scheduler& scheduler, int number, int64_t step) const {
    History history{trials_, directions_};
    history.objective_steps = &objective_steps_;
    return scheduler.on_report(trials_[static_cast<size_t>(number)], step, history);
  }

 private:
  std::vector<FrozenTrial> trials_;
  std::vector<StudyDirection> directions_;
  ObjectiveSteps objective_steps_;
};

}  // namespace tuner::scheduler_test

#endif  // TUNER_SEARCH_SCHEDULERS_SCHEDULER_TEST_UTIL_H_
