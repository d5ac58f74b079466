// Trial: the live handle of one running trial, handed to the objective.
//
// Define-by-run: the objective asks for values with suggest_*(); each value is stored before it
// is returned. Report intermediate values with report() and ask should_stop() whether the
// study's scheduler wants the trial to end early; an objective that was told to stop may return
// anything and the trial is recorded as PRUNED with its last intermediate value.
// While the handle lives and the trial is not told, the study records its heartbeat; a handle
// destroyed without tell() leaves the trial RUNNING until the study's stale-trial policy takes it.
// Not thread-safe: one thread drives a trial. Movable, not copyable.
#ifndef TUNER_TUNER_TRIAL_H_
#define TUNER_TUNER_TRIAL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trials/distribution.h"
#include "trials/param_value.h"
#include "trials/step_metrics.h"

namespace tuner {

struct StudyCore;

struct FloatOptions {
  bool log = false;            // log-uniform; REQUIRES low > 0
  std::optional<double> step;  // values low, low + step, ..., high
};

struct IntOptions {
  bool log = false;  // log-uniform; REQUIRES low >= 1 and step == 1
  int64_t step = 1;
};

class Trial {
 public:
  Trial(Trial&&) noexcept;
  Trial& operator=(Trial&&) noexcept;
  ~Trial();

  int number() const;
  int64_t id() const;

  double suggest_float(const std::string& name, double low, double high, FloatOptions options = {});
  int64_t suggest_int(const std::string& name, int64_t low, int64_t high, IntOptions options = {});
  ParamValue suggest_categorical(const std::string& name, std::vector<ParamValue> choices);
  // Typed convenience: suggest_categorical<std::string>("opt", {"sgd", "adam"}).
  template <class T>
  T suggest_categorical(const std::string& name, const std::vector<T>& choices);
  // Any distribution. Throws Error(kInvalidArgument) for an invalid distribution, or a name
  // already suggested in this trial with another distribution.
  ParamValue suggest(const std::string& name, const Distribution& distribution);

  // Stores `value` at `step`. Throws Error(kInvalidArgument) for NaN.
  void report(int64_t step, double value);
  // A study of several objectives: stores `values`, one per objective in the study's order, at
  // `step` as the step metrics named after the objectives (objective_metric_names(): the study's
  // "study:metric_names", as sweeps set them, else "values_0", "values_1", ...), and the first
  // one as the intermediate value (unless it is NaN), so that should_stop() judges them all
  // (MoAshaScheduler, ScalarizedStopping). NaN and infinities are kept; they rank last. With one
  // objective, the same as report(step, values[0]). Throws Error(kInvalidArgument) when there is
  // not one value per objective, Error(kFailedPrecondition) once told.
  void report(int64_t step, const std::vector<double>& values);
  // Stores every metric of `metrics` at `step` (a loss, an accuracy, a learning rate: whatever
  // the step measured, NaN included), beside the intermediate value report() stores; the report
  // and MLflow show them, Storage::get_step_metrics reads them. Throws Error(kFailedPrecondition)
  // once told.
  void log_metrics(int64_t step, const StepValues& metrics);
  // Asks the scheduler about the last reported step; false when nothing was reported or the
  // study has no scheduler. Under Study::optimize with a trial_timeout, true once the trial has
  // run that long (the trial is then FAIL, not PRUNED). Once true, stays true.
  bool should_stop();
  bool stop_requested() const;

  // Attributes are stored as JSON text: set_user_attr("note", "\"baseline\"").
  void set_user_attr(const std::string& key, const std::string& json);

  // The trial's constraint values (as Optuna's constraints_func returns them): the trial is
  // feasible when every value is <= 0. Stored with its outcome when it is told COMPLETE or
  // PRUNED, in the "constraints" system attribute (trials/constraints.h), which samplers and
  // Study::best_trial() read; a later call replaces the values. A NaN or infinite value makes
  // tell() store the trial FAIL, saying which. Throws Error(kFailedPrecondition) once told.
  void set_constraints(std::vector<double> values);

  // The values chosen so far (all of the space's active params for define-and-run trials).
  const Params& params() const;

  // For a re-run of a trial whose run was lost (Study::fail_and_retry, the stale-trial policy,
  // Optuna's RetryFailedTrialCallback): the numbers of the failed attempts before it, the first
  // one first (its "retry_history" system attribute). Empty for a first attempt.
  const std::vector<int>& retry_history() const;

 private:
  friend class Study;
  struct State;
  explicit Trial(std::unique_ptr<State> state);
  void release() noexcept;
  std::unique_ptr<State> state_;
};

template <class T>
T Trial::suggest_categorical(const std::string& name, const std::vector<T>& choices) {
  std::vector<ParamValue> values;
  values.reserve(choices.size());
  for (const auto& c : choices) values.emplace_back(ParamValue(c));
  ParamValue v = suggest_categorical(name, std::move(values));
  if constexpr (std::is_same_v<T, const char*>) {
    for (const auto& c : choices) {
      if (ParamValue(c) == v) return c;
    }
    return choices.front();  // unreachable: the value is one of the choices
  } else {
    return std::get<T>(v);
  }
}

}  // namespace tuner

#endif  // TUNER_TUNER_TRIAL_H_
