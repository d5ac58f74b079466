// Dispatch: fills the executors' free slots with the studies' trials, the way placement
// (coordinator/placement.h) decides: it takes a snapshot of the executors and studies, asks
// placement for one assignment at a time, asks the study for the trial (StudyRun::next_work),
// grants the lease (one per node) and sends TRIAL (inside an open batch: once it is durable).
// A study that has no trial to give now is passed over for the rest of the round; an executor
// that cannot be reached gets no more (its credit is 0) and the trial waits for another.
// It also takes back the trials an executor still runs for an earlier coordinator (take_back).
//
// It keeps no state of its own between rounds; it borrows the coordinator's registry, studies,
// lease table, node groups, batch and outbox.
//
// Thread safety: not thread-safe; the coordinator's loop thread uses it.
#ifndef TUNER_COORDINATOR_DISPATCH_H_
#define TUNER_COORDINATOR_DISPATCH_H_

#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "coordinator/coordinator.h"
#include "coordinator/executors.h"
#include "coordinator/group_commit.h"
#include "coordinator/lease_table.h"
#include "coordinator/node_groups.h"
#include "coordinator/outbox.h"
#include "coordinator/placement.h"
#include "coordinator/study_run.h"

namespace tuner {

using StudyRuns = std::map<StudyRunId, std::unique_ptr<StudyRun>>;

class Dispatcher {
 public:
  // `heartbeat_interval` goes to the executors in each TRIAL. Every reference outlives it.
  Dispatcher(StudyRuns& runs, ExecutorRegistry& executors, LeaseTable& leases, NodeGroups& groups,
             GroupCommit& commit, Outbox& outbox, Clock& clock,
             std::chrono::milliseconds heartbeat_interval);

  // One round: multi-node trials first, then the executors kept for them, then single-node ones.
  // Throws what a study's storage throws outside ask() (the loop logs it and goes on).
  void dispatch();
  // HELLO's leases that name orphans of a study here become this executor's leases again,
  // under their ids (StudyRun::take_back). A multi-node trial's node 0 is taken back as a trial
  // of its own (its ranks have met, or will fail); the other nodes' parts are not.
  void take_back(const ExecutorEntry& executor, const std::vector<HeldLease>& held);
  // Sends the lease's TRIAL; when the executor cannot be reached, the lease is undone and its
  // trial waits for another executor (false).
  bool send_trial(Lease& lease);

 private:
  // The snapshot placement works on; studies passed over this round do not want slots.
  PlacementInput snapshot(const std::vector<bool>& passed_over) const;
  StudyDemand demand(const StudyRun& run, bool passed_over) const;
  // Leases `work` to one executor, or to `nodes` (node n to nodes[n]), and sends the TRIALs
  // (inside a batch: once the batch is durable); false (and the work kept for other executors)
  // when one is gone.
  bool lease_to(ExecutorEntry& executor, StudyRun& run, Prepared work, std::vector<int> gpus);
  bool lease_group(const std::vector<ExecutorEntry*>& nodes, StudyRun& run, Prepared work,
                   const std::vector<std::vector<int>>& gpus);
  void log_groups_waiting_for_executors();
  // For each study whose trials need more GPUs on one executor than any joined executor has: a
  // log line naming the most an executor has (once, and again when that changes).
  void log_trials_waiting_for_gpus();

  // Constant after construction.
  StudyRuns& runs_;
  ExecutorRegistry& executors_;
  LeaseTable& leases_;
  NodeGroups& groups_;
  GroupCommit& commit_;
  Outbox& outbox_;
  Clock& clock_;
  const std::chrono::milliseconds heartbeat_interval_;

  // During a round: the executors and studies in snapshot order.
  std::vector<ExecutorEntry*> executor_order_;
  std::vector<StudyRun*> study_order_;
};

}  // namespace tuner

#endif  // TUNER_COORDINATOR_DISPATCH_H_
