// Trial::State: the live state of one trial. Internal to tuner/.
#ifndef TUNER_TUNER_TRIAL_STATE_INTERNAL_H_
#define TUNER_TUNER_TRIAL_STATE_INTERNAL_H_

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "search/rng.h"
#include "search/schedulers/scheduler.h"
#include "tuner/study_core.h"
#include "tuner/trial.h"

namespace tuner {

struct Trial::State {
  std::shared_ptr<StudyCore> core;
  int64_t trial_id = -1;
  int number = -1;
  Rng rng{0};
  // Values chosen and stored so far.
  Params params;
  std::map<std::string, Distribution, std::less<>> distributions;
  // Values decided before the objective ran: the whole space of a define-and-run trial, or the
  // params of an enqueued trial. suggest_*() must return them.
  Params fixed;
  // Proposed jointly by the sampler for define-by-run; used when the objective suggests the same
  // distribution, ignored otherwise.
  Params relative;
  std::map<std::string, Distribution, std::less<>> relative_distributions;
  std::optional<int64_t> last_step;
  std::optional<int64_t> max_step;  // the largest step reported through this handle
  // The scheduler's memo for this trial (search/schedulers/scheduler.h): reset when a step is
  // reported that is not past every earlier one (a value may have been rewritten).
  ReportMemo memo;
  // Where the trial's params came from ("tpe", "enqueued", "retry": the "tuner:sampler" system
  // attribute, stored with its outcome); empty for an adopted trial (not known here).
  std::string origin;
  // Trial::set_constraints(); stored by tell().
  std::optional<std::vector<double>> constraints;
  // A re-run's earlier attempts (its "retry_history" system attribute); empty for a first run.
  std::vector<int> retry_history;
  bool stop_requested = false;
  // The step the scheduler stopped the trial at (should_stop() true for it); stored by tell().
  std::optional<int64_t> stopped_at_step;
  bool told = false;
  // Study::optimize's trial_timeout: when the trial's time is up, and whether should_stop() said
  // so.
  std::optional<Clock::SteadyTime> deadline;
  bool timed_out = false;
};

}  // namespace tuner

#endif  // TUNER_TUNER_TRIAL_STATE_INTERNAL_H_
