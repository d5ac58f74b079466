// Scheduler: decides after each reported intermediate value whether a trial goes on.
//
// Ray Tune calls these trial schedulers, Optuna calls them pruners. A decision depends only on its
// arguments (the stored intermediate values of the study), never on hidden state, the clock or
// the order in which reports arrived, so a resumed study makes the same decisions.
// Implementations are thread-safe.
#ifndef TUNER_SEARCH_SCHEDULERS_SCHEDULER_H_
#define TUNER_SEARCH_SCHEDULERS_SCHEDULER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "search/history.h"
#include "trials/frozen_trial.h"

namespace tuner {

enum class Decision {
  kContinue,
  kStop,   // prune: the trial ends as PRUNED
  kPause,  // checkpoint and wait; the trial may be resumed later (used by the coordinator)
};

std::string_view to_string(Decision decision);

// What a scheduler carries from one report of a trial to the next, so that a decision costs the
// same at step 10,000 as at step 10: a rule over the trial's values so far (the best one, the
// reports without improvement) scans each value once instead of at every report.
//
// A cache, not state: a scheduler keeps in it only what it can recompute from the trial's values,
// checks at every use that it still matches them (the trial, the number of values) and starts over
// when it does not, so that a decision never depends on it. The one change it cannot see is a
// value stored again at a step the trial had already reported: whoever stores one calls reset().
// The caller keeps one memo per trial (Trial keeps one in its live handle) and passes it to every
// on_report_memoized() for that trial. Not thread-safe: used by one thread at a time.
class ReportMemo {
 public:
  // Forget everything (a value was rewritten): the next decision scans the values again.
  void reset() { state_.reset(); }

  // The scheduler's state of type T: value-initialized on first use, after reset(), or when a
  // scheduler of another type left its own.
  template <class T>
  T& get() {
    auto* holder = dynamic_cast<Holder<T>*>(state_.get());
    if (holder == nullptr) {
      auto fresh = std::make_unique<Holder<T>>();
      holder = fresh.get();
      state_ = std::move(fresh);
    }
    return holder->value;
  }

 private:
  struct Base {
    virtual ~Base() = default;
  };
  template <class T>
  struct Holder final : Base {
    T value{};
  };
  std::unique_ptr<Base> state_;
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;

  // `trial` is RUNNING and its intermediate_values include the value just reported at `step`.
  // `history` holds every trial of the study; its copy of `trial` may lag behind `trial`.
  virtual Decision on_report(const FrozenTrial& trial, int64_t step,
                             const History& history) const = 0;

  // The same decision as on_report(), with `memo` (this trial's, see ReportMemo) to carry what
  // the scheduler scanned of the trial's values from one report to the next. Schedulers whose
  // rule scans the trial's values (median and percentile stopping, patience) override it, so
  // that their cost per report does not grow with the steps reported; the default ignores
  // `memo`.
  virtual Decision on_report_memoized(const FrozenTrial& trial, int64_t step,
                                      const History& history, ReportMemo& memo) const {
    (void)memo;
    return on_report(trial, step, history);
  }

  // True when this scheduler can judge a study of `n_objectives` objectives. Most judge one (the
  // intermediate value); MoAshaScheduler and ScalarizedStopping judge several, reading
  // History::objective_steps.
  virtual bool judges_objectives(size_t n_objectives) const { return n_objectives == 1; }
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SCHEDULERS_SCHEDULER_H_
