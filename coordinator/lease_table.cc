#include "coordinator/lease_table.h"

#include <algorithm>

#include "coordinator/study_run.h"

namespace tuner {

LeaseTable::LeaseTable(uint64_t first_id, std::chrono::milliseconds timeout, size_t max_ended)
    : timeout_(timeout), max_ended_(max_ended), next_id_(first_id) {}

Lease& LeaseTable::grant(LeaseRequest request, Clock::SteadyTime now) {
  Lease lease;
  if (request.id) {
    lease.id = *request.id;
    // Lease ids never repeat: the ones to come start after every id taken back (the earlier
    // coordinator's ids may run ahead of this one's start, a wall time).
    next_id_ = std::max(next_id_, *request.id + 1);
  } else {
    lease.id = next_id_++;
  }
  lease.run = request.run;
  lease.executor_id = std::move(request.executor_id);
  lease.route = std::move(request.route);
  lease.work = std::move(request.work);
  lease.trial_id = request.trial_id;
  lease.trial_number = request.trial_number;
  lease.group = request.group;
  lease.node = request.node;
  lease.nodes = request.nodes;
  lease.deadline = now + timeout_;
  lease.gpus = std::move(request.gpus);
  lease.gpu_share = request.gpu_share;
  lease.unsent = request.unsent;
  count(lease, 1, 0);
  const uint64_t id = lease.id;
  if (auto replaced = leases_.find(id); replaced != leases_.end()) unindex(replaced->second);
  by_executor_[lease.executor_id].insert(id);
  by_route_[lease.route].insert(id);
  return leases_.insert_or_assign(id, std::move(lease)).first->second;
}

Lease LeaseTable::take(uint64_t id) { return take(leases_.find(id)); }

Lease LeaseTable::take(Map::iterator it) {
  Lease lease = std::move(it->second);
  leases_.erase(it);
  count(lease, -1, lease.outcome_pending ? -1 : 0);
  unindex(lease);
  return lease;
}

namespace {

// Removes `id` from the set `index` holds under `key`, and the set once empty.
void remove_from(std::map<std::string, std::set<uint64_t>, std::less<>>& index,
                 const std::string& key, uint64_t id) {
  auto it = index.find(key);
  if (it == index.end()) return;
  it->second.erase(id);
  if (it->second.empty()) index.erase(it);
}

}  // namespace

void LeaseTable::unindex(const Lease& lease) {
  remove_from(by_executor_, lease.executor_id, lease.id);
  remove_from(by_route_, lease.route, lease.id);
}

void LeaseTable::move_to(Lease& lease, const std::string& route) {
  if (lease.route == route) return;
  remove_from(by_route_, lease.route, lease.id);
  lease.route = route;
  by_route_[route].insert(lease.id);
}

int LeaseTable::held_count(const std::string& executor_id) const {
  auto it = by_executor_.find(executor_id);
  return it == by_executor_.end() ? 0 : static_cast<int>(it->second.size());
}

Lease* LeaseTable::find(uint64_t id) {
  auto it = leases_.find(id);
  return it == leases_.end() ? nullptr : &it->second;
}

void LeaseTable::clear() {
  leases_.clear();
  counts_.clear();
  by_executor_.clear();
  by_route_.clear();
}

void LeaseTable::renew(Lease& lease, Clock::SteadyTime now) {
  lease.deadline = std::max(lease.deadline, now + timeout_);
}

void LeaseTable::postpone_all(std::chrono::milliseconds by) {
  for (auto& [id, lease] : leases_) lease.deadline += by;
}

void LeaseTable::renew_if_held(uint64_t id, const std::string& executor_id, Clock::SteadyTime now) {
  auto it = leases_.find(id);
  if (it != leases_.end() && it->second.executor_id == executor_id) renew(it->second, now);
}

std::vector<std::pair<uint64_t, std::chrono::milliseconds>> LeaseTable::overdue(
    Clock::SteadyTime now) const {
  std::vector<std::pair<uint64_t, std::chrono::milliseconds>> due;
  for (const auto& [id, lease] : leases_) {
    if (now >= lease.deadline) {
      due.emplace_back(
          id,
          std::chrono::duration_cast<std::chrono::milliseconds>(now - lease.deadline) + timeout_);
    }
  }
  return due;
}

std::optional<Clock::SteadyTime> LeaseTable::next_deadline() const {
  std::optional<Clock::SteadyTime> next;
  for (const auto& [id, lease] : leases_) {
    if (!next || lease.deadline < *next) next = lease.deadline;
  }
  return next;
}

void LeaseTable::set_outcome_pending(Lease& lease, bool pending) {
  if (lease.outcome_pending == pending) return;
  lease.outcome_pending = pending;
  if (lease.node == 0) counts_[lease.run].finishing += pending ? 1 : -1;
}

void LeaseTable::count(const Lease& lease, int leased, int finishing) {
  if (lease.node != 0) return;  // a multi-node trial counts once, by node 0
  auto it = counts_.try_emplace(lease.run).first;
  it->second.leased += leased;
  it->second.finishing += finishing;
  if (it->second.leased == 0 && it->second.finishing == 0) counts_.erase(it);
}

LeaseCounts LeaseTable::counts(const StudyRun* run) const {
  auto it = counts_.find(run);
  return it == counts_.end() ? LeaseCounts{} : it->second;
}

std::vector<const Lease*> LeaseTable::on_route(const std::string& route) const {
  std::vector<const Lease*> found;
  if (auto it = by_route_.find(route); it != by_route_.end()) {
    for (uint64_t id : it->second) found.push_back(&leases_.at(id));
  }
  return found;
}

int LeaseTable::held_on(const std::string& route) const {
  int held = 0;
  for (const Lease* lease : on_route(route)) held += lease->outcome_pending ? 0 : 1;
  return held;
}

std::vector<uint64_t> LeaseTable::held_by(const std::string& executor_id) const {
  auto it = by_executor_.find(executor_id);
  if (it == by_executor_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

std::vector<int> LeaseTable::free_gpus(const std::string& route,
                                       const std::vector<GpuInfo>& gpus) const {
  const std::vector<const Lease*> on = on_route(route);
  std::vector<int> free;
  for (const GpuInfo& g : gpus) {
    const bool held = std::any_of(on.begin(), on.end(), [&](const Lease* l) {
      return !l->outcome_pending &&
             std::find(l->gpus.begin(), l->gpus.end(), g.index) != l->gpus.end();
    });
    if (!held) free.push_back(g.index);
  }
  return free;
}

std::vector<SharedGpu> LeaseTable::shared_gpus(const std::string& route,
                                               const std::vector<GpuInfo>& gpus) const {
  const std::vector<const Lease*> on = on_route(route);
  std::vector<SharedGpu> shared;
  for (const GpuInfo& g : gpus) {
    int used = 0;
    uint64_t memory = 0;
    bool held_whole = false;
    for (const Lease* lease : on) {
      if (lease->outcome_pending ||
          std::find(lease->gpus.begin(), lease->gpus.end(), g.index) == lease->gpus.end()) {
        continue;
      }
      if (lease->gpu_share == 0) held_whole = true;
      used += lease->gpu_share;
      if (lease->run) memory += lease->run->needs.gpu_memory_bytes;
    }
    if (used > 0 && !held_whole) {
      shared.push_back(
          SharedGpu{.index = g.index, .used = std::min(used, kWholeGpu), .memory = memory});
    }
  }
  return shared;
}

std::string LeaseTable::describe(const Lease& lease) const {
  return "lease " + std::to_string(lease.id) + " (" +
         (name_studies_ ? "study " + lease.run->study.name() + ", " : std::string()) + "trial " +
         std::to_string(lease.trial_number) + ", attempt " + std::to_string(lease.work.attempt) +
         (lease.nodes > 1
              ? ", node " + std::to_string(lease.node) + " of " + std::to_string(lease.nodes)
              : std::string()) +
         ", executor " + lease.executor_id + ")";
}

void LeaseTable::remember_end(uint64_t id, bool committed, std::string detail) {
  ended_[id] = EndedLease{committed, std::move(detail)};
  ended_order_.push_back(id);
  while (ended_order_.size() > max_ended_) {
    ended_.erase(ended_order_.front());
    ended_order_.pop_front();
  }
}

const EndedLease* LeaseTable::ended(uint64_t id) const {
  auto it = ended_.find(id);
  return it == ended_.end() ? nullptr : &it->second;
}

}  // namespace tuner
