// Constraints: a trial's constraint values, stored where Optuna stores them (docs/samplers.md,
// "Constraints").
//
// A trial is feasible when every one of its constraint values is <= 0; a trial without
// constraints is feasible. Optuna keeps the values in system attributes, in two forms:
// - "constraints": a JSON list of numbers (what constraints_func writes, Optuna 2.5 on), or null
//   (a constraints_func that raised);
// - "constraints:<name>": one number each (Optuna 5's trial.set_constraint(name, value)).
// This project writes the list, which every Optuna since 2.5 reads. It reads both, as Optuna 5's
// FrozenTrial.constraints does: the list's values named "0", "1", ..., then the named ones (a
// name that repeats one of the list's replaces its value).
//
// Thread safety: pure functions.
#ifndef TUNER_TRIALS_CONSTRAINTS_H_
#define TUNER_TRIALS_CONSTRAINTS_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trials/frozen_trial.h"
#include "trials/trial_state.h"

namespace tuner {

// The system attribute of the list form, and the prefix of the named form.
inline constexpr char kConstraintsAttr[] = "constraints";
inline constexpr char kConstraintPrefix[] = "constraints:";

struct ConstraintValue {
  std::string name;  // "0", "1", ... for the list form; the name for the named form
  double value = 0;  // feasible when <= 0
  bool operator==(const ConstraintValue&) const = default;
};

// The JSON text of kConstraintsAttr for `values`: "[0.5,-2.0]", each number written so that it
// reads back as the same double. Throws Error(kInvalidArgument) naming the index when a value is
// NaN or infinite (JSON cannot hold them).
std::string constraints_to_json(std::span<const double> values);

// True when `trial` has constraint values in either form.
bool has_constraints(const FrozenTrial& trial);

// The trial's constraint values, the list's first, then the named ones by name; empty when it
// has none. Reads what Python's json module writes, Infinity and -Infinity included (a stored NaN
// reads as NaN, which is_feasible() takes as a violation). Throws Error(kDataLoss) naming the trial
// and the attribute when a value is not a number or the list is not a list of numbers.
std::vector<ConstraintValue> constraints_of(const FrozenTrial& trial);

// How far from feasible: the sum of the positive values (Optuna's infeasible-trial score); 0 for
// feasible values, +infinity when a value is NaN.
double constraint_violation(std::span<const ConstraintValue> values);

// Every value <= 0 (none at all is feasible). Throws as constraints_of() does.
bool is_feasible(const FrozenTrial& trial);

// The feasible COMPLETE trial of one objective with the best value in `direction` (the first of
// equals); null when there is none. Throws as constraints_of() does.
const FrozenTrial* best_feasible(std::span<const FrozenTrial> trials, StudyDirection direction);

}  // namespace tuner

#endif  // TUNER_TRIALS_CONSTRAINTS_H_
