#include "launch/scaling.h"

#include <algorithm>

#include "trials/error.h"

namespace tuner {

ScalingDecision decide_scaling(const ScalingInput& in) {
  ScalingDecision decision;
  const int slots = std::max(1, in.slots_per_executor);
  const int total = static_cast<int>(in.jobs.size());
  const int connected =
      static_cast<int>(std::count_if(in.jobs.begin(), in.jobs.end(), [](const LaunchedJob& job) {
        return job.state == LaunchedJob::State::kRunning;
      }));
  const int to_come = (total - connected) * slots;
  // Trials that would wait even once every job submitted has connected (negative: slots that
  // nothing needs).
  const int64_t shortfall =
      static_cast<int64_t>(in.startable_trials) - in.free_slots - static_cast<int64_t>(to_come);
  if (shortfall > 0) {
    const int64_t wanted = (shortfall + slots - 1) / slots;
    decision.submit = static_cast<int>(std::min<int64_t>(wanted, in.max_executors - total));
  }
  decision.submit = std::max({decision.submit, in.min_executors - total, 0});
  if (shortfall >= 0) return decision;

  int spare = static_cast<int>(-shortfall / slots);
  int keep = total;
  auto can_cancel = [&] { return spare > 0 && keep > in.min_executors; };
  for (auto it = in.jobs.rbegin(); it != in.jobs.rend() && can_cancel(); ++it) {
    if (it->state != LaunchedJob::State::kPending) continue;
    decision.cancel.push_back(it->id);
    --spare;
    --keep;
  }
  std::vector<const LaunchedJob*> idle;
  for (const LaunchedJob& job : in.jobs) {
    if (job.state == LaunchedJob::State::kRunning && job.idle_for &&
        *job.idle_for >= in.idle_grace) {
      idle.push_back(&job);
    }
  }
  std::stable_sort(idle.begin(), idle.end(), [](const LaunchedJob* a, const LaunchedJob* b) {
    return *a->idle_for > *b->idle_for;
  });
  for (const LaunchedJob* job : idle) {
    if (!can_cancel()) break;
    decision.cancel.push_back(job->id);
    --spare;
    --keep;
  }
  return decision;
}

void check_scaling_bounds(int min_executors, int max_executors, int slots,
                          const std::string& launcher) {
  if (max_executors < 1 || min_executors < 0 || min_executors > max_executors || slots < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                launcher +
                    ": needs 0 <= min_executors <= max_executors, max_executors >= 1 and "
                    "slots >= 1");
  }
}

}  // namespace tuner
