// LeaseEnds: how a lease ends. Its outcome is told to the study and ACKed once durable
// (commit(), acknowledge()); an outcome for a lease that is not held is answered from the
// ended-lease memory (committed: ACK again; expired: refused); a lease whose deadline passed, or
// whose executor left, is lost (expire()): its trial is FAIL and, up to max_retries, run again;
// one whose executor was stopped under it (preempt()) is FAIL and run again, the attempt not
// counted.
// A node of a multi-node trial is handed to NodeGroups.
//
// It has no state of its own: it borrows the lease table, node groups, batch and outbox, and
// counts the service-wide refusals in `service_stats`.
//
// Thread safety: not thread-safe; the coordinator's loop thread uses it.
#ifndef TUNER_COORDINATOR_LEASE_ENDS_H_
#define TUNER_COORDINATOR_LEASE_ENDS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "coordinator/coordinator.h"
#include "coordinator/executors.h"
#include "coordinator/group_commit.h"
#include "coordinator/lease_table.h"
#include "coordinator/node_groups.h"
#include "coordinator/outbox.h"

namespace tuner {

class LeaseEnds {
 public:
  // Every reference outlives it.
  LeaseEnds(LeaseTable& leases, NodeGroups& groups, GroupCommit& commit, Outbox& outbox,
            CoordinatorStats& service_stats)
      : leases_(leases),
        groups_(groups),
        commit_(commit),
        outbox_(outbox),
        service_stats_(service_stats) {}

  // The lease is lost (`why`: its deadline passed, its executor left). Nothing when it is not
  // in the table.
  void expire(uint64_t lease_id, const std::string& why);
  // The lease `lease_id` when `executor` holds it; otherwise answers the outcome the executor
  // sent for it (ACK: accepted when it was committed, refused otherwise) and returns null.
  Lease* held_by(const ExecutorEntry& executor, uint64_t lease_id);
  // Tells the held lease's outcome (`tell`) and ACKs it once durable (inside a batch: once the
  // batch is). When the storage refuses for now, nothing is ACKed (the executor sends it again);
  // when the trial was finished elsewhere, the outcome is refused.
  void commit(const ExecutorEntry& executor, Lease& held,
              const std::function<FrozenTrial(Trial&)>& tell);
  // The lease's executor was stopped under it and said so (its BYE listed the lease as
  // preempted; `why` names the executor): its trial is FAIL ("preempted: <why>; re-run without a
  // retry counted") and re-run at once, the attempt counted neither against max_retries nor the
  // budget (StudyRun::preempt); one log line says so. A node of a multi-node trial fails its
  // group's attempt on every node, and the trial runs again likewise (NodeGroups::expire_node).
  // Nothing when the lease is not in the table.
  void preempt(uint64_t lease_id, const std::string& why);
  // Expires every lease whose deadline passed by `now` ("no heartbeat for ...").
  void expire_overdue(Clock::SteadyTime now);
  // Gives up every lease: each trial is FAIL ("abandoned: <reason>") with a re-run for the
  // study's next run (StudyRun::abandon), and outcomes that come for it later are refused.
  void abandon_all(const std::string& reason);
  // The lease's outcome is durable: the lease ends, and its executor gets ACK.
  // REQUIRES: the lease is in the table.
  void acknowledge(uint64_t lease_id, const FrozenTrial& finished);

 private:
  void answer_ended(const std::string& route, uint64_t lease_id);

  // Constant after construction.
  LeaseTable& leases_;
  NodeGroups& groups_;
  GroupCommit& commit_;
  Outbox& outbox_;
  CoordinatorStats& service_stats_;
};

}  // namespace tuner

#endif  // TUNER_COORDINATOR_LEASE_ENDS_H_
