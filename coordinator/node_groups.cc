#include "coordinator/node_groups.h"

#include <algorithm>
#include <utility>

#include "coordinator/study_run.h"
#include "trials/error.h"

namespace tuner {

NodeGroups::NodeGroups(LeaseTable& leases, Outbox& outbox, Clock& clock,
                       std::chrono::milliseconds lease_timeout,
                       std::chrono::milliseconds heartbeat_interval)
    : leases_(leases),
      outbox_(outbox),
      clock_(clock),
      lease_timeout_(lease_timeout),
      heartbeat_interval_(heartbeat_interval) {}

NodeGroup& NodeGroups::open(uint64_t group_id) { return groups_[group_id]; }

NodeGroup* NodeGroups::find(uint64_t group_id) {
  auto g = groups_.find(group_id);
  return g == groups_.end() ? nullptr : &g->second;
}

std::string NodeGroups::node_label(const Lease& lease) {
  return "node " + std::to_string(lease.node) + " of " + std::to_string(lease.nodes) +
         " (executor " + lease.executor_id + ")";
}

// "node 1 of 2 (executor b): exited with code 3; node 0 of 2 (executor a): ..."
std::string NodeGroups::join_failures(const NodeGroup& group) {
  std::string text;
  for (const std::string& f : group.failures) text += (text.empty() ? "" : "; ") + f;
  return text;
}

void NodeGroups::undo(uint64_t group_id, const std::string& why) {
  auto g = groups_.find(group_id);
  if (g == groups_.end()) return;
  std::optional<Prepared> work;
  StudyRun* run = nullptr;
  for (uint64_t lease_id : g->second.leases) {
    auto it = leases_.find_it(lease_id);
    if (it == leases_.end()) continue;
    Lease lease = leases_.take(it);
    if (lease.node == 0) {
      work = std::move(lease.work);
      run = lease.run;
    }
    leases_.remember_end(lease.id, false,
                         "lease " + std::to_string(lease.id) + " was taken back: " + why);
  }
  groups_.erase(g);
  if (run && work && work->trial) run->requeue(std::move(*work));
}

void NodeGroups::expire_node(uint64_t lease_id, const std::string& why, bool preempted) {
  Lease lost = leases_.take(lease_id);
  if (!preempted) ++lost.run->stats.leases_expired;
  auto g = groups_.find(lost.group);
  if (g == groups_.end() || g->second.settled) {  // the trial was told already: nothing is lost
    leases_.remember_end(lost.id, false,
                         leases_.describe(lost) + " expired after its trial was told");
    forget_if_done(lost.group);
    return;
  }
  NodeGroup& group = g->second;
  group.failures.push_back(node_label(lost) + (preempted ? ": preempted: " : ": lease expired: ") +
                           why);
  const std::string reason = "trial " + std::to_string(lost.trial_number) +
                             " lost a node: " + join_failures(group) +
                             (preempted ? "; re-run without a retry counted" : "");
  outbox_.log(leases_.describe(lost) + (preempted ? " was preempted: " : " expired: ") + why +
              "; the trial fails on every node");
  // Node 0's lease holds the trial: it is `lost`, or still in the table (not settled).
  std::optional<Lease> first;
  if (lost.node != 0) {
    auto f = leases_.find_it(group.leases.front());
    if (f != leases_.end()) first = leases_.take(f);
  }
  Lease* holder = lost.node == 0 ? &lost : first ? &*first : nullptr;
  std::string detail = "lease " + std::to_string(lost.id) + " of trial " +
                       std::to_string(lost.trial_number) +
                       (preempted ? " was preempted (" : " expired (") + why + ")";
  const bool rerun = holder && holder->work.trial &&
                     (preempted ? holder->run->preempt(holder->work, reason)
                                : holder->run->fail_and_rerun(holder->work, reason));
  if (rerun) detail += "; the trial is run again as a new trial";
  leases_.remember_end(lost.id, false, detail);
  group.settled = true;
  if (first) end_node_lease(group, std::move(*first), reason, /*committed=*/true);
  end_group_leases(lost.group, reason);
}

// A lease of a group whose trial was told: a FAIL it sent is ACKed now (the trial's FAIL is
// committed); otherwise its outcome, should it come, is refused and its executor stops it.
void NodeGroups::end_node_lease(NodeGroup& group, Lease lease, const std::string& reason,
                                bool committed) {
  auto failed = std::find(group.failed_leases.begin(), group.failed_leases.end(), lease.id);
  if (failed != group.failed_leases.end()) {
    group.failed_leases.erase(failed);
    leases_.remember_end(lease.id, committed, "");
    outbox_.send(lease.route, AckMessage{.lease_id = lease.id});
    return;
  }
  leases_.remember_end(
      lease.id, false,
      leases_.describe(lease) + " ended: the trial was told on another node (" + reason + ")");
}

// Ends every lease of a settled group still in the table, then forgets the group.
void NodeGroups::end_group_leases(uint64_t group_id, const std::string& reason) {
  auto g = groups_.find(group_id);
  if (g == groups_.end()) return;
  for (uint64_t lease_id : std::vector<uint64_t>(g->second.leases)) {
    auto it = leases_.find_it(lease_id);
    if (it != leases_.end()) end_node_lease(g->second, leases_.take(it), reason, true);
  }
  groups_.erase(g);
}

void NodeGroups::forget_if_done(uint64_t group_id) {
  auto g = groups_.find(group_id);
  if (g == groups_.end() || !g->second.settled) return;
  const bool any = std::any_of(g->second.leases.begin(), g->second.leases.end(),
                               [&](uint64_t id) { return leases_.contains(id); });
  if (!any) groups_.erase(g);
}

// Remembered; the trial is told FAIL when every node has ended or kNodeFailureSettle later,
// with every node's reason (settle_due).
void NodeGroups::node_failed(Lease& lease, const FailMessage& fail) {
  auto g = groups_.find(lease.group);
  if (g == groups_.end() || g->second.settled) {
    // The trial was told (node 0's RESULT): this node's end changes nothing.
    outbox_.log(leases_.describe(lease) + " failed after its trial was told: " + fail.reason);
    const uint64_t group_id = lease.group;
    Lease ended_lease = leases_.take(lease.id);
    leases_.remember_end(ended_lease.id, true, "");
    outbox_.send(ended_lease.route,
                 AckMessage{.lease_id = ended_lease.id, .reason = "already committed"});
    forget_if_done(group_id);
    return;
  }
  NodeGroup& group = g->second;
  if (std::find(group.failed_leases.begin(), group.failed_leases.end(), lease.id) !=
      group.failed_leases.end()) {
    return;  // sent again: its ACK comes when the trial is told
  }
  outbox_.log(leases_.describe(lease) + " failed: " + fail.reason);
  group.failures.push_back(node_label(lease) + ": " + fail.reason);
  if (!group.first_fail) group.first_fail = fail;
  group.failed_leases.push_back(lease.id);
  ++group.ended;
  const Clock::SteadyTime now = clock_.steady_now();
  leases_.renew(lease, now);
  if (!group.settle_at) group.settle_at = now + std::min(kNodeFailureSettle, lease_timeout_);
  if (group.ended >= static_cast<int>(group.leases.size())) group.settle_at = now;
}

void NodeGroups::node_done(Lease& lease) {
  const uint64_t group_id = lease.group;
  auto g = groups_.find(group_id);
  const bool settled = g == groups_.end() || g->second.settled;
  Lease done = leases_.take(lease.id);
  leases_.remember_end(done.id, true, "");
  outbox_.send(done.route, AckMessage{.lease_id = done.id,
                                      .reason = settled ? "already committed"
                                                        : "node " + std::to_string(done.node) +
                                                              " done; node 0 tells the trial"});
  if (g == groups_.end()) return;
  NodeGroup& group = g->second;
  ++group.ended;
  if (!settled && group.settle_at && group.ended >= static_cast<int>(group.leases.size())) {
    group.settle_at = clock_.steady_now();
  }
  forget_if_done(group_id);
}

void NodeGroups::trial_told(uint64_t group_id) {
  auto g = groups_.find(group_id);
  if (g == groups_.end()) return;
  g->second.settled = true;
  if (!g->second.failures.empty()) {
    end_group_leases(group_id, "node 0 completed the trial");
  } else {
    forget_if_done(group_id);
  }
}

void NodeGroups::settle_due(Clock::SteadyTime now) {
  std::vector<uint64_t> due;
  for (const auto& [id, group] : groups_) {
    if (!group.settled && group.settle_at && now >= *group.settle_at) due.push_back(id);
  }
  for (uint64_t group_id : due) {
    NodeGroup& group = groups_.at(group_id);
    auto first = leases_.find_it(group.leases.front());
    if (first == leases_.end()) {  // not expected: node 0's lease stays until the group settles
      group.settled = true;
      end_group_leases(group_id, "node 0's lease ended");
      continue;
    }
    Lease& holder = first->second;
    StudyRun& run = *holder.run;
    const std::string reason = "trial " + std::to_string(holder.trial_number) +
                               " failed on its nodes: " + join_failures(group);
    try {
      const FrozenTrial failed = run.tell_fail(*holder.work.trial, *group.first_fail, reason);
      ++run.stats.failed;
      run.finished(failed);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kFailedPrecondition) {
        outbox_.log(
            leases_.describe(holder) +
            ": cannot commit the failure (trying again in one heartbeat interval): " + e.what());
        group.settle_at = now + heartbeat_interval_;
        continue;
      }
      outbox_.log(leases_.describe(holder) + ": the trial was finished elsewhere: " + e.what());
    }
    outbox_.log(reason);
    group.settled = true;
    end_group_leases(group_id, reason);
  }
}

std::optional<Clock::SteadyTime> NodeGroups::next_settle() const {
  std::optional<Clock::SteadyTime> next;
  for (const auto& [id, group] : groups_) {
    if (!group.settled && group.settle_at && (!next || *group.settle_at < *next)) {
      next = group.settle_at;
    }
  }
  return next;
}

std::optional<std::string> NodeGroups::store_set(const Lease& lease, const std::string& key,
                                                 const std::string& value) {
  auto g = groups_.find(lease.group);
  if (lease.group == 0 || g == groups_.end()) {
    return "not a node of a multi-node trial (its job's \"nodes\" is 1)";
  }
  NodeGroup& group = g->second;
  if (auto known = group.store.find(key); known != group.store.end()) {
    if (known->second != value) {
      return "key '" + key + "' is set already, to another value (keys are written once)";
    }
    return std::nullopt;  // a resend
  }
  if (group.store.size() >= kMaxStoreKeys) {
    return "the trial's store holds " + std::to_string(kMaxStoreKeys) + " keys, its limit";
  }
  group.store.emplace(key, value);
  for (uint64_t other : group.leases) {
    const Lease* o = leases_.find(other);
    if (other == lease.id || !o || o->unsent) continue;
    outbox_.send(o->route, StoreKeysMessage{.lease_id = other, .entries = {{key, value}}});
  }
  return std::nullopt;
}

void NodeGroups::resend_store(const Lease& lease) {
  auto g = groups_.find(lease.group);
  if (lease.group != 0 && g != groups_.end() && !g->second.store.empty() && !lease.unsent) {
    outbox_.send(lease.route, StoreKeysMessage{.lease_id = lease.id, .entries = g->second.store});
  }
}

}  // namespace tuner
