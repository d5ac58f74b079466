// NodeGroups: the attempts of multi-node trials (an engine job's "nodes": K > 1;
// docs/engine_jobs.md, "Nodes") and their rendezvous stores.
//
// A multi-node trial is leased to K executors at once, one lease per node, grouped under the id
// of node 0's lease; node 0's lease holds the live trial and tells its outcome. This part owns
// each group's state:
// - the rendezvous store: STORE_SET from one node is kept (each key written once, at most
//   kMaxStoreKeys) and goes to the other nodes as STORE_KEYS; a reconnected node gets it all;
// - failure settling: a node's FAIL is remembered, and the trial is told FAIL, naming every node
//   that failed, once all nodes ended or kNodeFailureSettle later (settle_due); the nodes' FAILs
//   are ACKed then;
// - a lost node (its lease expired) fails the attempt at once on every node, and the trial runs
//   again as after any lost lease (a preempted node: as after a preemption, no retry counted);
// - a node other than 0 that ends well is ACKed ("node 0 tells the trial").
// Invariants: while a group is not settled, node 0's lease is in the lease table; a settled group
// is forgotten once none of its leases is in the table.
//
// Thread safety: not thread-safe; the coordinator's loop thread uses it.
#ifndef TUNER_COORDINATOR_NODE_GROUPS_H_
#define TUNER_COORDINATOR_NODE_GROUPS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/lease_table.h"
#include "coordinator/outbox.h"
#include "trials/clock.h"
#include "wire/protocol.h"

namespace tuner {

// After the first node of a multi-node trial fails, how long the coordinator waits for the other
// nodes' outcomes before it tells the trial FAIL, so that the reason names every node that failed
// (the node that died first, and the others whose collectives failed on it).
inline constexpr std::chrono::milliseconds kNodeFailureSettle{1000};
// Keys one multi-node trial's store may hold (a Gloo rendezvous sets one per rank).
inline constexpr size_t kMaxStoreKeys = 4096;

// The leases of one attempt of a multi-node trial, and its rendezvous store. While it is not
// settled, the lease of node 0 is in the lease table (the others may have ended).
struct NodeGroup {
  std::vector<uint64_t> leases;  // by node
  std::map<std::string, std::string> store;
  std::vector<std::string> failures;      // "node 1 of 2 (executor b): ...", in the order they came
  std::optional<FailMessage> first_fail;  // its exit code and log tail go with the trial
  std::vector<uint64_t> failed_leases;    // FAILs not ACKed yet: ACKed once the trial is told
  int ended = 0;                          // nodes whose part ended (well or not)
  std::optional<Clock::SteadyTime> settle_at;  // a node failed: tell the trial FAIL then
  bool settled = false;                        // the trial's outcome is told
};

class NodeGroups {
 public:
  // `lease_timeout` and `heartbeat_interval`: the service's (CoordinatorServiceOptions).
  NodeGroups(LeaseTable& leases, Outbox& outbox, Clock& clock,
             std::chrono::milliseconds lease_timeout, std::chrono::milliseconds heartbeat_interval);

  // A new group under node 0's lease id (its leases are added as they are granted).
  NodeGroup& open(uint64_t group_id);
  NodeGroup* find(uint64_t group_id);
  void erase(uint64_t group_id) { groups_.erase(group_id); }
  void clear() { groups_.clear(); }
  size_t size() const { return groups_.size(); }

  // Takes back every lease of a group not yet under way (a node's executor could not be
  // reached): the trial waits for other executors. Nodes that got their TRIAL stop when their
  // heartbeats no longer list their leases.
  void undo(uint64_t group_id, const std::string& why);
  // A node's lease expired (REQUIRES: `lease` is a node of a group, in the table). `preempted`:
  // its executor was stopped under it (BYE): the trial runs again without the attempt counted
  // against max_retries (StudyRun::preempt).
  void expire_node(uint64_t lease_id, const std::string& why, bool preempted = false);
  // A node's FAIL (or, from node 0, its end without a RESULT the trial can take).
  void node_failed(Lease& lease, const FailMessage& fail);
  // A node other than 0 ended well: its part is done (node 0's RESULT tells the trial).
  void node_done(Lease& lease);
  // Node 0's outcome was committed (its lease ended): nodes still running end on their own,
  // unless a node failed (a part that died after the last collective): those are done with now.
  void trial_told(uint64_t group_id);
  // Tells FAIL for each multi-node trial whose nodes failed and whose settle time has come.
  void settle_due(Clock::SteadyTime now);
  std::optional<Clock::SteadyTime> next_settle() const;

  // STORE_SET from `lease`: kept and sent to the group's other nodes. Returns the problem
  // (for an ERROR reply) when it cannot be kept; a resend of a key with its value is no problem.
  std::optional<std::string> store_set(const Lease& lease, const std::string& key,
                                       const std::string& value);
  // The whole store again for a node that reconnected on `route` (keys sent to the old
  // connection may be lost).
  void resend_store(const Lease& lease);

  // "node 1 of 2 (executor b)"
  static std::string node_label(const Lease& lease);

 private:
  static std::string join_failures(const NodeGroup& group);
  void end_node_lease(NodeGroup& group, Lease lease, const std::string& reason, bool committed);
  void end_group_leases(uint64_t group_id, const std::string& reason);
  void forget_if_done(uint64_t group_id);

  // Constant after construction.
  LeaseTable& leases_;
  Outbox& outbox_;
  Clock& clock_;
  const std::chrono::milliseconds lease_timeout_;
  const std::chrono::milliseconds heartbeat_interval_;

  std::map<uint64_t, NodeGroup> groups_;  // by the lease of node 0
};

}  // namespace tuner

#endif  // TUNER_COORDINATOR_NODE_GROUPS_H_
