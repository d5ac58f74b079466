// run_serve: what `tuner serve` does. One long-running coordinator for every study of one SQLite
// file that is handed to it; executors connect once and take trials of all of them, shared fairly
// (coordinator/coordinator.h).
//
// The SQLite file is the control plane: each study carries its wanted state in the study system
// attribute "tuner:serve" (`tuner sweep FILE --submit`, `tuner stop|pause|unpause` write it), and
// the serve looks at it every `control_interval` and writes what it applied to
// "tuner:serve_applied":
//   active   run it: its sweep file (kSweepAttr) says the job and the budget left;
//   paused   no new trials; the running ones go on;
//   stopped  no new trials; the running ones finish, then it leaves the serve;
//   done     (written by the serve) its budget is spent.
// A serve holds an exclusive lock on "<storage>.serve.lock" (which also holds its pid and
// endpoint), so one serve runs per file and the commands can tell whether one is running.
// Restarted, a serve takes up its active and paused studies again, and their trials that were
// running under the earlier serve are taken back from their executors or re-run.
// A study whose sweep file has executors.slurm gets a SlurmLauncher (launch/slurm_launcher.h)
// while it is on the serve, when the serve has CURVE keys: its executors connect with a key pair
// the serve makes at its start; its jobs are cancelled when it leaves the serve. A study whose
// jobs Slurm refuses is drained and leaves the serve with the reason (kServeStopReasonAttr).
#ifndef TUNER_SWEEP_SERVE_H_
#define TUNER_SWEEP_SERVE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>

#include "coordinator/coordinator.h"
#include "storage/storage.h"

namespace tuner {

inline constexpr char kServeStateAttr[] = "tuner:serve";
inline constexpr char kServeAppliedAttr[] = "tuner:serve_applied";
// Why the serve stopped the study on its failures (FailurePolicy, budget.max_failures), a JSON
// string, set with "done"; absent when its budget ended it.
inline constexpr char kServeStopReasonAttr[] = "tuner:serve_stop_reason";

enum class ServeState { kActive, kPaused, kStopped, kDone };
std::string_view to_string(ServeState state);  // "active", "paused", "stopped", "done"

// What a study's "tuner:serve" attribute asks, if it has one.
std::optional<ServeState> serve_state(const StudyRecord& study);
// Why a serve stopped the study on its failures (kServeStopReasonAttr); empty when none did.
std::string serve_stop_reason(const StudyRecord& study);

struct ServeOptions {
  std::string storage_path;  // required
  std::string endpoint;      // where executors connect; required
  CoordinatorSecurity security;
  // Executor slots started in this process (LocalExecutor). Default 0: executors connect.
  int local_executors = 0;
  std::stop_token drain;  // stop taking new trials; end when the running ones have finished
  std::stop_token abort;  // stop the running trials now (they are re-run when resumed)
  // The serve's log lines ("serve: ..."), and the coordinator's when `verbose`.
  std::function<void(const std::string&)> log;
  bool verbose = false;
  std::chrono::milliseconds control_interval{500};
  // How long a storage write waits for another process's lock. Default: the storage's (5 s).
  std::optional<std::chrono::milliseconds> busy_timeout;
};

// Serves until `drain` (and the running trials) or `abort`. Throws Error(kFailedPrecondition)
// when another serve holds the storage, and what opening the storage or binding the endpoint
// throws.
void run_serve(const ServeOptions& options);

// The serve running on `storage_path`: its pid and endpoint; nullopt when none runs.
struct RunningServe {
  int64_t pid = 0;
  std::string endpoint;
};
std::optional<RunningServe> running_serve(const std::string& storage_path);

// Asks the serve on `storage_path` to put `study` in `state` (active, paused or stopped) and
// waits up to `wait` for it to apply it. Returns whether it did. Throws Error(kNotFound) for an
// unknown study or one not made from a sweep file, Error(kFailedPrecondition) when no serve runs.
bool request_serve_state(const std::string& storage_path, const std::string& study,
                         ServeState state, std::chrono::milliseconds wait);

}  // namespace tuner

#endif  // TUNER_SWEEP_SERVE_H_
