// HeldTrials: the trials an executor holds: running (each on a job thread), queued (waiting for
// a job thread), finished and sending their files before their outcome, and finished with their
// outcome sent but not yet ACKed. What it holds is what the executor's HEARTBEAT and HELLO list,
// and what READY leaves free (a trial sending its files holds no slot or GPU).
//
// Thread safety: used by the executor's loop thread only.
#ifndef TUNER_EXECUTOR_HELD_TRIALS_H_
#define TUNER_EXECUTOR_HELD_TRIALS_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "executor/held_job.h"
#include "executor/trial_files.h"
#include "wire/protocol.h"

namespace tuner {

// The lease of `trial` as HELLO lists it.
HeldLease held_lease(const TrialMessage& trial);

struct HeldTrials {
  // An outcome sent and kept until the coordinator ACKs it.
  struct Unacked {
    Message outcome;  // RESULT or FAIL
    HeldLease lease;
  };

  // A finished trial's files on their way; its outcome goes once they are.
  struct Sending {
    Message outcome;  // RESULT or FAIL
    HeldLease lease;
    std::unique_ptr<FileSender> files;
  };

  std::map<uint64_t, std::unique_ptr<HeldJob>> running;  // by lease
  std::deque<std::unique_ptr<HeldJob>> queued;           // in arrival order
  std::map<uint64_t, Sending> sending;                   // by lease
  std::map<uint64_t, Unacked> unacked;                   // by lease

  // Running and queued trials.
  int jobs() const { return static_cast<int>(running.size() + queued.size()); }
  // Whether `lease_id` is held in any of the four.
  bool contains(uint64_t lease_id) const;
  // Every lease held, sorted (HEARTBEAT).
  std::vector<uint64_t> lease_ids() const;
  // Every lease held, with its trial (HELLO: a restarted coordinator takes them back).
  std::vector<HeldLease> leases() const;
  // Of `gpus`, those no running or queued trial was given (READY).
  std::vector<int> free_gpus(const std::vector<GpuInfo>& gpus) const;
  // Whether a running trial is a node of a multi-node trial.
  bool has_node_stores() const;
  // Drops the queued trials whose lease is not in `honoured` (the coordinator gave them up).
  void drop_queued_except(const std::set<uint64_t>& honoured);
};

}  // namespace tuner

#endif  // TUNER_EXECUTOR_HELD_TRIALS_H_
