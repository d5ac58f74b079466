// The warning for an objective whose direction contradicts its metric's name: minimizing
// "val_accuracy" or maximizing "train_loss" is almost always a slip, and a scheduler would then
// stop the best trials. A warning, not an error: the name may mean something else.
// Pure functions; thread-safe.
#ifndef TUNER_SWEEP_OBJECTIVE_DIRECTION_H_
#define TUNER_SWEEP_OBJECTIVE_DIRECTION_H_

#include <optional>
#include <string>
#include <vector>

#include "sweep/sweep_file.h"
#include "trials/trial_state.h"

namespace tuner {

// The direction a metric's name suggests: maximize for a name with accuracy, acc, auc, f1,
// precision, recall or r2 in it; minimize for loss, error, mse, rmse or mae; nullopt when it has
// neither kind or both. Short words (acc, auc, f1, r2, mse, rmse, mae) count only as a whole word
// of the name (split at anything but letters and digits): "val_acc", not "accel".
std::optional<StudyDirection> direction_suggested_by(const std::string& metric);

// One line per objective of `sweep` whose direction contradicts its metric's name:
// `objective.direction is "minimize", but the metric "val_accuracy" reads as one to maximize:
// ...`.
std::vector<std::string> direction_warnings(const SweepFile& sweep);

}  // namespace tuner

#endif  // TUNER_SWEEP_OBJECTIVE_DIRECTION_H_
