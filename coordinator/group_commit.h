// GroupCommit: one storage batch per turn of the coordinator's loop, and what waits for it.
//
// With one study, each turn tells the outcomes that arrived and asks the trials for the slots
// they free inside one Study::run_batch (docs/protocol.md, "Group commit"), and the REPORTs'
// intermediate values too. What may go out only once that is durable waits here: the ACKs of the
// outcomes told (told()), the DECISIONs that answer the REPORTs stored (decided()), the TRIALs of
// the leases made (lease_made()), and on_trial_finished for asks that failed (ask_failed()). When
// the batch commits, the Listener is told to send them; when it fails, nothing of it happened:
// the outcomes are not ACKed (their executors send them again), the REPORTs stored in it get no
// DECISION (their values are lost, as a report that cannot be stored), the leases made are undone
// (their executors get their credit back, trials asked in the batch do not exist, trials asked
// before wait to be leased again) and the study asks nothing for a heartbeat interval. With
// several studies there is no batch: every write commits on its own and nothing waits.
// Storage failures: a batch that fails, or a write in it that fails for the file's sake (a
// StorageFault: the disk is full, the file is read-only), is said at once through
// Listener::warn with its cause, once per run of failures; writes are tried again as they come
// (outcomes resent, asks a heartbeat interval later). Once they failed kGiveUpFailures times in a
// row over at least kGiveUpAfter, storage_failure() says why, and whoever runs the coordinator
// stops it (a sweep or a serve does). A batch that commits an outcome or a trial ends the run of
// failures, and so does such a write outside a batch (writes_succeeded()).
// Invariants: outside run() nothing waits and open() is false.
//
// Thread safety: not thread-safe; the coordinator's loop thread uses it.
#ifndef TUNER_COORDINATOR_GROUP_COMMIT_H_
#define TUNER_COORDINATOR_GROUP_COMMIT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/lease_table.h"
#include "coordinator/node_groups.h"
#include "coordinator/outbox.h"
#include "trials/clock.h"
#include "wire/protocol.h"

namespace tuner {

struct StudyRun;

class GroupCommit {
 public:
  // What the coordinator does once a batch is durable, or undone.
  class Listener {
   public:
    virtual ~Listener() = default;
    // An outcome told in the batch is durable: the lease ends and its executor gets ACK.
    virtual void acknowledge(uint64_t lease_id, const FrozenTrial& finished) = 0;
    // A lease made in the batch may go out (TRIAL). It is in the table and unsent.
    virtual void send_trial(uint64_t lease_id) = 0;
    // A lease made in the batch was undone: the credit it took goes back to the executor on
    // `route`.
    virtual void return_credit(const std::string& route) = 0;
    // A line for the user (the storage fails, or works again). Default: none.
    virtual void warn(const std::string& /*line*/) {}
  };

  // Failed writes in a row, and for how long, before storage_failure() is set.
  static constexpr int kGiveUpFailures = 3;
  static constexpr std::chrono::seconds kGiveUpAfter{10};

  // `heartbeat_interval`: how long a study waits to ask again after a failed batch.
  GroupCommit(LeaseTable& leases, NodeGroups& groups, Outbox& outbox, Clock& clock,
              std::chrono::milliseconds heartbeat_interval, Listener& listener);

  // Runs `body` (which must not throw) as one storage batch of `only` (the coordinator's one
  // study), then sends or undoes what waits; with `only` null (several studies), runs it as it is.
  void run(StudyRun* only, const std::function<void()>& body);
  // A batch is open: outcomes and leases must wait for it.
  bool open() const { return open_; }

  // Inside an open batch: the lease's outcome `finished` is told; ACK once committed.
  void told(Lease& lease, FrozenTrial finished);
  // Inside an open batch: the lease was made; TRIAL once committed.
  void lease_made(Lease& lease);
  // Inside an open batch: a REPORT was stored and judged; `decision` goes to `route` once
  // committed, and not at all when the batch fails.
  void decided(const std::string& route, DecisionMessage decision);
  // Inside an open batch: `run`'s ask failed and stored `failed`; on_trial_finished once
  // committed.
  void ask_failed(StudyRun& run, FrozenTrial failed);

  // A write of the study failed for the storage's sake (`why`: the error, naming the file).
  void write_failed(const std::string& why);
  // Writes fail now (the last ones failed and none has succeeded since).
  bool storage_failing() const { return failures_in_a_row_ > 0; }
  // The last storage error while writes fail; empty otherwise.
  const std::string& last_storage_error() const { return last_error_; }
  // Set once writes failed kGiveUpFailures times in a row over kGiveUpAfter: why they failed.
  const std::optional<std::string>& storage_failure() const { return storage_failure_; }
  // An outcome or a trial was stored outside a batch (several studies): ends a run of failures.
  void writes_succeeded();

 private:
  void undo(StudyRun& run, const std::string& why);

  // Constant after construction.
  LeaseTable& leases_;
  NodeGroups& groups_;
  Outbox& outbox_;
  Clock& clock_;
  const std::chrono::milliseconds heartbeat_interval_;
  Listener& listener_;

  bool open_ = false;
  std::vector<std::pair<uint64_t, FrozenTrial>> told_;              // lease, outcome: ACK after
  std::vector<uint64_t> leased_;                                    // TRIAL after
  std::vector<std::pair<std::string, DecisionMessage>> decisions_;  // route, DECISION after
  std::vector<std::pair<StudyRun*, FrozenTrial>> ask_failures_;
  int failures_in_a_row_ = 0;
  Clock::SteadyTime first_failure_{};
  std::string last_error_;
  std::optional<std::string> storage_failure_;
};

}  // namespace tuner

#endif  // TUNER_COORDINATOR_GROUP_COMMIT_H_
