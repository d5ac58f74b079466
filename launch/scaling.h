// decide_scaling: how many executor jobs a launcher submits and which it cancels, from the
// queue's state (a pure function: docs/clusters.md, "What the launcher does"); and what the
// coordinator tells launchers of its queue (LaunchQueueState).
//
// Thread safety: a pure function and plain values.
#ifndef TUNER_LAUNCH_SCALING_H_
#define TUNER_LAUNCH_SCALING_H_

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "trials/clock.h"

namespace tuner {

// A job of the launcher's that is still in the cluster's queue.
struct LaunchedJob {
  enum class State {
    kPending,   // waiting to start
    kStarting,  // started, its executor not connected (yet): its slots are still to come
    kRunning,   // its executor is connected
  };
  std::string id;
  State state = State::kPending;
  // kRunning: how long its executor has held no trial; nullopt while it holds one (then it is
  // never cancelled for being idle).
  std::optional<std::chrono::seconds> idle_for;
};

struct ScalingInput {
  // The launcher's bounds. REQUIRES: 0 <= min_executors <= max_executors, slots_per_executor
  // >= 1.
  int min_executors = 0;
  int max_executors = 1;
  int slots_per_executor = 1;
  // A running job idle this long is cancelled when its slots are not needed.
  std::chrono::seconds idle_grace{120};
  // The launcher's jobs in the queue, oldest first.
  std::vector<LaunchedJob> jobs;
  // Trials that would start now if there were slots for them: 0 while the study drains or has
  // started its whole budget; bounded by its max_concurrent.
  int startable_trials = 0;
  // Slots of connected executors (any executor's) that hold no trial now.
  int free_slots = 0;
};

struct ScalingDecision {
  int submit = 0;                   // new jobs to submit
  std::vector<std::string> cancel;  // jobs to cancel: pending ones first, newest first
  bool operator==(const ScalingDecision&) const = default;
};

// An executor connected to the coordinator (coordinator.h's ExecutorInfo, as a launcher needs it).
struct ConnectedExecutor {
  // Its executor id: a launcher's job's executor has the id the launcher gave it (Slurm's:
  // slurm_executor_id(job id), slurm_batch.h).
  std::string id;
  // Since when it has held no trial, on the launcher's clock (the coordinator's); nullopt while
  // it holds one.
  std::optional<Clock::SteadyTime> idle_since;
};

// What the coordinator says of its queue at a launcher's tick.
struct LaunchQueueState {
  // Trials that would start now if there were slots (ScalingInput::startable_trials).
  int startable_trials = 0;
  // Free slots of the connected executors (ScalingInput::free_slots).
  int free_slots = 0;
  // The executors connected now, any (the launcher's jobs' among them).
  std::vector<ConnectedExecutor> executors;
};

// Submits while trials wait for slots that neither the free slots nor the jobs yet to connect
// (pending and starting) give, up to max_executors; tops up to min_executors. While no trial
// waits, cancels jobs whose slots are not needed, down to min_executors: pending ones first
// (newest first; they hold nothing), then running ones whose executors have held no trial for at
// least idle_grace (the longest idle first). Starting jobs and busy executors are kept.
ScalingDecision decide_scaling(const ScalingInput& input);

// Checks a launcher's bounds: 0 <= min_executors <= max_executors, max_executors >= 1, slots >= 1.
// Throws Error(kInvalidArgument) naming `launcher` ("SlurmLauncher").
void check_scaling_bounds(int min_executors, int max_executors, int slots,
                          const std::string& launcher);

}  // namespace tuner

#endif  // TUNER_LAUNCH_SCALING_H_
