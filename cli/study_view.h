// Read-only views of stored studies for the commands that show them (status, trials, best): the
// storage opened read-only (so a running sweep is never disturbed), a study found by name with an
// error that lists the others, and trials as table rows, JSON or CSV.
#ifndef TUNER_CLI_STUDY_VIEW_H_
#define TUNER_CLI_STUDY_VIEW_H_

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "storage/storage.h"
#include "trials/frozen_trial.h"

namespace tuner::cli {

// A number for people: `digits` significant digits ("0.8667", "1.5e-24").
std::string number_text(double v, int digits = 8);

// Prints `rows` to stdout as left-aligned columns two spaces apart.
void print_table(const std::vector<std::vector<std::string>>& rows);

// Opens PATH read-only; Error(kNotFound) naming it when the file does not exist.
std::unique_ptr<Storage> open_read_only(const std::string& path);

// The study named `name`; Error(kNotFound) listing the studies of the file otherwise.
StudyRecord find_study(Storage& storage, const std::string& name, const std::string& path);

// How many COMPLETE trials violate a constraint.
int count_infeasible(const std::vector<FrozenTrial>& trials);

// The optional columns of a trials table: those that some of the trials have.
struct TrialColumns {
  bool constraints = false;  // "feasible" and "constraints"
  bool sampler = false;      // "sampler"
  bool gpu_memory = false;   // "GPU memory": the peak its processes held, where measured
  // "member", "segment", "parent": a PBT segment's lineage (search/schedulers/pbt.h).
  bool pbt = false;
  // A study of several objectives: "front", "yes" for the numbers of its Pareto front.
  std::optional<std::set<int>> front;
  bool fail_reason = false;  // "fail reason", last: why a FAIL trial failed
};
TrialColumns trial_columns(const std::vector<FrozenTrial>& trials);

// A trial as JSON: number, state, values, params, intermediate values, user attributes,
// start and end datetimes (Optuna's format), duration in seconds; "sampler" when recorded; and
// for a trial with constraint values, "constraints" (the list) and "feasible". NaN and the
// infinities are written NaN, Infinity and -Infinity, as Python's json module writes and reads
// them. With `front` (a study of several objectives: its Pareto front's numbers), "front": whether
// the trial is on it. "gpu_memory_peak_bytes" where its executor measured it. A FAIL trial has
// "fail_reason" and, when its run left one, "log_tail" (the
// last lines of its log). With `steps` (its step metrics, trials/step_metrics.h), "step_metrics":
// {"STEP": {"NAME": value, ...}, ...} when there are any. A PBT segment has "pbt": {"member",
// "segment", "parent"} (parent: null for segment 0).
std::string trial_json(const FrozenTrial& trial, const std::set<int>* front = nullptr,
                       const std::vector<StepMetrics>* steps = nullptr);

// The numbers of the Pareto front's trials (search/pareto.h) of a study of `directions`.
std::set<int> front_numbers(Storage& storage, const StudyRecord& study);

// How cells write numbers: rounded for a table people read, exactly (round-trip) for CSV.
enum class Cells { kForPeople, kExact };

// Column headers and the cells of one trial: number, state, value(s), with columns.constraints
// "feasible" ("yes" or "no" for a COMPLETE or PRUNED trial) and "constraints" (its values),
// duration, with columns.gpu_memory "GPU memory" (bytes for CSV), with columns.sampler
// "sampler", then one column per parameter name (empty when the
// trial has none of it), then with columns.fail_reason "fail reason" (a FAIL's reason and the
// last line its program wrote, sweep/trial_logs.h failure_summary: cut to 80 characters for
// people, whole for CSV). String values are unquoted.
std::vector<std::string> trial_header(const std::vector<std::string>& param_names,
                                      TrialColumns columns = {});
std::vector<std::string> trial_row(const FrozenTrial& trial,
                                   const std::vector<std::string>& param_names, Cells cells,
                                   TrialColumns columns = {});

// Every parameter name that occurs, sorted.
std::vector<std::string> param_names(const std::vector<FrozenTrial>& trials);

// The schedule of the PBT segment numbered `number` among `trials` (a study's trials by number):
// the chain of segments whose checkpoints it continues, segment 0 first, each line its segment,
// trial, member and params ("segment 2  trial 9  member 1  lr=0.01 width=32"). Empty when the
// trial is not a PBT segment.
std::vector<std::string> pbt_schedule(const std::vector<FrozenTrial>& trials, int number);

}  // namespace tuner::cli

#endif  // TUNER_CLI_STUDY_VIEW_H_
