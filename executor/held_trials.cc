#include "executor/held_trials.h"

#include <algorithm>

namespace tuner {

HeldLease held_lease(const TrialMessage& trial) {
  return {.lease_id = trial.lease_id,
          .study_name = trial.study_name,
          .trial_id = trial.trial_id,
          .gpus = trial.gpus,
          .node = trial.node};
}

bool HeldTrials::contains(uint64_t lease_id) const {
  return running.contains(lease_id) || sending.contains(lease_id) || unacked.contains(lease_id) ||
         std::any_of(queued.begin(), queued.end(),
                     [&](const auto& job) { return job->trial.lease_id == lease_id; });
}

std::vector<uint64_t> HeldTrials::lease_ids() const {
  std::set<uint64_t> ids;
  for (const auto& [id, job] : running) ids.insert(id);
  for (const auto& job : queued) ids.insert(job->trial.lease_id);
  for (const auto& [id, s] : sending) ids.insert(id);
  for (const auto& [id, u] : unacked) ids.insert(id);
  return {ids.begin(), ids.end()};
}

std::vector<HeldLease> HeldTrials::leases() const {
  std::vector<HeldLease> held;
  for (const auto& [id, job] : running) held.push_back(held_lease(job->trial));
  for (const auto& job : queued) held.push_back(held_lease(job->trial));
  for (const auto& [id, s] : sending) held.push_back(s.lease);
  for (const auto& [id, u] : unacked) held.push_back(u.lease);
  return held;
}

std::vector<int> HeldTrials::free_gpus(const std::vector<GpuInfo>& gpus) const {
  std::set<int> taken;
  for (const auto& [id, job] : running)
    taken.insert(job->trial.gpus.begin(), job->trial.gpus.end());
  for (const auto& job : queued) taken.insert(job->trial.gpus.begin(), job->trial.gpus.end());
  std::vector<int> free;
  for (const GpuInfo& g : gpus) {
    if (!taken.contains(g.index)) free.push_back(g.index);
  }
  return free;
}

bool HeldTrials::has_node_stores() const {
  return std::any_of(running.begin(), running.end(),
                     [](const auto& r) { return r.second->node_store != nullptr; });
}

void HeldTrials::drop_queued_except(const std::set<uint64_t>& honoured) {
  std::erase_if(queued, [&](const auto& job) { return !honoured.contains(job->trial.lease_id); });
}

}  // namespace tuner
