#include "coordinator/lease_ends.h"

#include "coordinator/study_run.h"
#include "storage/storage_fault.h"
#include "trials/error.h"
#include "wire/message_socket.h"

namespace tuner {

// The lease's outcome is durable: the lease ends, and its executor gets ACK.
void LeaseEnds::acknowledge(uint64_t lease_id, const FrozenTrial& finished) {
  const Lease lease = leases_.take(lease_id);
  lease.run->count(finished);
  leases_.remember_end(lease.id, true, "");
  outbox_.send(lease.route, AckMessage{.lease_id = lease.id});
  if (lease.group != 0) groups_.trial_told(lease.group);
  lease.run->finished(finished);
}

void LeaseEnds::expire(uint64_t lease_id, const std::string& why) {
  const Lease* held = leases_.find(lease_id);
  if (!held) return;
  if (held->group != 0) {
    groups_.expire_node(lease_id, why);
    return;
  }
  Lease lease = leases_.take(lease_id);
  ++lease.run->stats.leases_expired;
  const std::string reason = leases_.describe(lease) + " expired: " + why;
  outbox_.log(reason);
  std::string detail = "lease " + std::to_string(lease.id) + " of trial " +
                       std::to_string(lease.work.trial->number()) + " expired (" + why + ")";
  if (lease.run->fail_and_rerun(lease.work, reason)) {
    detail += "; the trial is run again as a new trial";
  }
  leases_.remember_end(lease.id, false, detail);
}

void LeaseEnds::preempt(uint64_t lease_id, const std::string& why) {
  const Lease* held = leases_.find(lease_id);
  if (!held) return;
  if (held->group != 0) {
    groups_.expire_node(lease_id, why, /*preempted=*/true);
    return;
  }
  Lease lease = leases_.take(lease_id);
  const std::string reason = "preempted: " + why + "; re-run without a retry counted";
  outbox_.log(leases_.describe(lease) + " " + reason);
  std::string detail = "lease " + std::to_string(lease.id) + " of trial " +
                       std::to_string(lease.work.trial->number()) + " was preempted (" + why + ")";
  if (lease.run->preempt(lease.work, reason)) detail += "; the trial is run again as a new trial";
  leases_.remember_end(lease.id, false, detail);
}

void LeaseEnds::expire_overdue(Clock::SteadyTime now) {
  for (const auto& [id, unrenewed] : leases_.overdue(now)) {
    expire(id, "no heartbeat for " + std::to_string(unrenewed.count()) + " ms (lease timeout " +
                   std::to_string(leases_.timeout().count()) + " ms)");
  }
}

void LeaseEnds::abandon_all(const std::string& reason) {
  for (auto& [id, lease] : leases_.all()) {
    // A node other than 0 has no trial: node 0's lease tells the trial.
    if (lease.work.trial) lease.run->abandon(*lease.work.trial, reason);
    leases_.remember_end(id, false, leases_.describe(lease) + " was abandoned: " + reason);
  }
  leases_.clear();
  groups_.clear();
}

// Answers a RESULT or FAIL for a lease that is not held (any more).
void LeaseEnds::answer_ended(const std::string& route, uint64_t lease_id) {
  const EndedLease* ended = leases_.ended(lease_id);
  AckMessage ack{.lease_id = lease_id};
  if (ended && ended->committed) {
    ack.reason = "already committed";
  } else {
    ack.accepted = false;
    ack.reason = ended ? ended->detail : "unknown lease " + std::to_string(lease_id);
    ++service_stats_.stale_outcomes_refused;
    outbox_.log("refused the outcome of " + ack.reason + " from " + peer_name(route));
  }
  outbox_.send(route, ack);
}

// The lease `lease_id` when `executor` holds it; otherwise answers and returns null.
Lease* LeaseEnds::held_by(const ExecutorEntry& executor, uint64_t lease_id) {
  Lease* lease = leases_.find(lease_id);
  if (!lease) {
    answer_ended(executor.route, lease_id);
    return nullptr;
  }
  if (lease->executor_id != executor.executor_id) {
    ++service_stats_.stale_outcomes_refused;
    outbox_.send(executor.route,
                 AckMessage{.lease_id = lease_id,
                            .accepted = false,
                            .reason = "lease " + std::to_string(lease_id) +
                                      " is held by executor " + lease->executor_id});
    return nullptr;
  }
  return lease;
}

// Tells the held lease's outcome (`tell`) and ACKs it once durable (inside a batch: once the
// batch is).
void LeaseEnds::commit(const ExecutorEntry& executor, Lease& held,
                       const std::function<FrozenTrial(Trial&)>& tell) {
  if (held.outcome_pending) return;  // sent again within the batch: its ACK follows the commit
  FrozenTrial finished;
  try {
    finished = tell(*held.work.trial);
  } catch (const Error& e) {
    if (is_storage_fault(e)) {
      // The file refuses writes (a full disk, a read-only file): not committed, no ACK; the
      // executor sends it again, and the batch counts the failure.
      outbox_.log(leases_.describe(held) +
                  ": cannot commit the outcome (waiting for it to be resent): " + e.what());
      commit_.write_failed(leases_.describe(held) + ": " + e.what());
      return;
    }
    if (e.code() != ErrorCode::kFailedPrecondition) {
      // Not committed: no ACK, the executor sends it again.
      outbox_.log(leases_.describe(held) +
                  ": cannot commit the outcome (waiting for it to be resent): " + e.what());
      return;
    }
    const std::string detail =
        leases_.describe(held) + ": the trial was finished elsewhere: " + e.what();
    const Lease lease = leases_.take(held.id);
    leases_.remember_end(lease.id, false, detail);
    ++lease.run->stats.stale_outcomes_refused;
    outbox_.send(executor.route,
                 AckMessage{.lease_id = lease.id, .accepted = false, .reason = detail});
    return;
  }
  if (commit_.open()) {
    commit_.told(held, std::move(finished));
    return;
  }
  commit_.writes_succeeded();
  acknowledge(held.id, finished);
}

}  // namespace tuner
