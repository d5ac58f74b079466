// Coordinator: farms studies' trials out to executors over ZeroMQ (docs/protocol.md). One study for
// `tuner sweep`; several for `tuner serve`.
//
// It binds a ROUTER and keeps:
// - an executor registry: each executor's HELLO (id, host, resources) and when it was last heard;
// - a lease table: each trial handed out, under a lease id that is never reused, with the
//   executor that holds it and a deadline that every HEARTBEAT (or REPORT) naming it renews.
// When an executor is READY with free slots (it may offer up to its slots again to take trials
// ahead: at most twice its slots are leased to it) and the study has budget (n_trials,
// max_concurrency),
// the coordinator asks the study for a trial (Study::ask: define-and-run, so its params are stored
// RUNNING before anyone runs it) and sends TRIAL with a lease and the job. An ask() that fails
// (the sampler or the space throws; its trial is stored FAIL and reported to on_trial_finished)
// is tried again a heartbeat interval later; after 3 failures in a row (transient kUnavailable
// ones not counted) the study drains and failure() says why.
// - REPORT: the objective metric is stored as an intermediate value (Trial::report) and the
//   study's scheduler is asked (Trial::should_stop); DECISION answers continue or stop once the
//   value is stored (with one study, in the turn's group commit, below).
// - RESULT / FAIL: the outcome is told to the study (committed to storage) before ACK is sent.
//   Group commit: with one study, each turn of the loop stores the REPORTs, tells the outcomes
//   that arrived and asks the trials for the slots they free in one storage batch
//   (Study::run_batch), and sends the DECISIONs, ACKs and TRIALs once it is committed; when the
//   commit fails, nothing is ACKed or leased (the executors send their outcomes again) and the
//   REPORTs' values are lost (no DECISION). docs/protocol.md, "Group commit".
//   A FAIL keeps the job's exit code and log tail as the trial's system attributes "exit_code" and
//   "log_tail" (its reason in Optuna's "fail_reason").
// - A lease whose deadline passes (no heartbeat naming it for lease_timeout), or whose executor
//   says BYE, expires: its trial is FAIL ("lease ... expired") and, up to max_retries times per
//   trial, run again with the same params as a new trial, made in the same storage step
//   (Study::fail_and_retry: the re-run carries Optuna's "failed_trial" and "retry_history"
//   system attributes, so attempt = history length, across restarts of the coordinator too).
//   A re-run is not a new trial of n_trials, whichever coordinator made it.
// - A RESULT or FAIL for a lease that expired is refused: ACK{accepted = false}; for one already
//   committed (a resend) it is ACKed again without a second commit.
// - FILE: an executor on another host sends a finished trial's files before its outcome: its log
//   goes to log_dir (CoordinatorServiceOptions), the files of its artifacts folder to the job's
//   artifacts_dir/trial-<number>/ on this host (coordinator/file_receiver.h). Each chunk is
//   answered by FILE_ACK; a chunk for a lease that is not current is refused with lease_ended,
//   so the executor sends no more of its files. FILES_LEFT (files past the executor's limit)
//   is logged.
// - A message that cannot be decoded, comes from a peer that has not said HELLO, or is of a type
//   an executor does not send gets an ERROR reply and a log line; nothing an executor sends stops
//   the coordinator.
// - A restart: a study's RUNNING trials when it is added were leased by an earlier coordinator
//   (one coordinator per study). An executor still running one lists it in its HELLO and keeps
//   its lease (Study::adopt); one that nobody claims within 2 x lease_timeout is told FAIL and
//   re-run like an expired lease. Until then it counts against max_concurrency (its executor
//   may still run it), and the earlier coordinator's WAITING re-runs run before new trials.
// - A multi-node trial (an engine job's "nodes": K > 1; docs/engine_jobs.md, "Nodes") is leased
//   to K distinct executors at once, each with a free slot (and, for CUDA, the GPUs of its ranks),
//   or not at all; when its study's turn comes (fair sharing, counted in trials), K executors
//   are kept from single-node trials until it can be leased, so that single-node studies cannot
//   starve it. Each node has a lease of its own and node 0's RESULT tells the trial. The
//   attempt's rendezvous store lives here: STORE_SET from one node goes to the others as
//   STORE_KEYS. A node's FAIL fails the trial on every node once all nodes ended or a second
//   later (the reason names every node that failed); a node's lost lease fails it at once and the
//   trial runs again as after any lost lease.
// Heartbeats go both ways: every heartbeat_interval each executor gets HEARTBEAT with the leases
// it holds; a lease missing from that list tells the executor to stop the job.
//
// Liveness is credited on receipt: every message waiting on the socket is read before leases are
// expired or executors forgotten, and a message renews its sender (and the leases it names) as
// it is read, before it is handled (at most 1,000 per turn). However long a turn takes (a chatty
// trial's thousands of REPORTs), a heartbeat that waits is not missed.
//
// Time: deadlines and heartbeats follow the injected Clock; waiting for input is real time
// (zmq_poll), at most until the next deadline. With a FakeClock, drive it with poll_once(0ms).
//
// Thread safety: not thread-safe. One thread calls run() or poll_once() and the accessors; the
// study may meanwhile be used from other threads (Study is thread-safe). run() returns promptly
// when its stop token is requested. Study::ask() and storage writes run on the loop's thread.
#ifndef TUNER_COORDINATOR_COORDINATOR_H_
#define TUNER_COORDINATOR_COORDINATOR_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "coordinator/metric_constraint.h"
#include "search/schedulers/pbt.h"
#include "search/space/search_space.h"
#include "trials/clock.h"
#include "tuner/study.h"
#include "wire/curve_keys.h"
#include "wire/protocol.h"

namespace tuner {

// CURVE (wire/curve_keys.h): with `curve_keys`, every connection is encrypted and
// only the executors whose public keys are in `executor_keys` are let in. Without, an endpoint
// that other hosts can reach (tcp:// not on loopback) is refused unless allow_insecure_tcp.
struct CoordinatorSecurity {
  std::optional<CurveKeyPair> curve_keys;
  std::vector<std::string> executor_keys;
  bool allow_insecure_tcp = false;
};

// How one study runs on the coordinator.
struct StudyRunOptions {
  // Every trial's job as JSON (executor/trial_job.h), validated when the study is added.
  // Required. Its objective_metric is what REPORTs are judged by and RESULTs are valued by; its
  // timeout_s (and stop_grace_s) is each trial's time limit, which the executor enforces (the
  // trial is then FAIL "timed out after ...", not run again).
  std::string job_json;
  // Define-and-run: each trial is asked with this space. Default: Study::ask() (the study's own
  // space when it was created with one).
  std::optional<SearchSpace> space;
  // New trials to start; re-runs after lost leases are not counted. Default: no limit (the
  // sampler running out, or a drain, ends the study's run).
  std::optional<int> n_trials;
  // The study's trials leased at once across all executors, an earlier coordinator's trials that
  // executors may still run included (until taken back or given up). Default 0: only the
  // executors' slots limit it.
  int max_concurrency = 0;
  // How many times one trial is re-run after its lease expired (its attempts before this
  // coordinator included). Default 3.
  int max_retries = kDefaultMaxRetries;
  // Bounds on the job's final metrics (a sweep file's "constraints"): a RESULT's metrics become
  // the trial's constraint values (Trial::set_constraints), one per entry in this order. A
  // COMPLETE trial whose RESULT lacks one of the metrics, or has it NaN or infinite, is FAIL
  // with a reason naming the metric; a PRUNED one then keeps no constraint values. Default: none.
  std::vector<MetricConstraint> constraints;
  // A study of several objectives (its directions): the final metric of each, in order, which
  // become a RESULT's values (a COMPLETE trial whose RESULT lacks one, or has it NaN, is FAIL
  // naming it). A REPORT's values of them (NaN for a missing one) are stored as by
  // Trial::report of several values, the first as the intermediate value, and judged by the
  // study's scheduler (one made for several objectives: MoAshaScheduler, ScalarizedStopping).
  // Default: empty, one objective, the job's objective_metric.
  std::vector<std::string> objective_metrics;
  // Called on the loop's thread after each trial's outcome is committed (COMPLETE, PRUNED, or
  // FAIL, an expired lease included). Default: none.
  std::function<void(const FrozenTrial&)> on_trial_finished;
  // Population-based training (docs/schedulers.md, "PBT"): the study's trials are the segments
  // of pbt->options().population_size members. The first population_size trials are asked from
  // the sampler (segment 0; n_trials, when set, caps them too); each segment is paused at its end
  // (DECISION pause), stored COMPLETE with its value there, and the member's next segment is made
  // as pbt->next_segments() decides, a trial with fixed params that starts from its parent's
  // checkpoint (TRIAL's start_checkpoint_path). The same scheduler may be the study's
  // (StudyOptions::scheduler), where it only ever pauses. REQUIRES: one objective. Default: none.
  std::shared_ptr<const PbtScheduler> pbt;
};

// The service: where it listens, its timing, who may connect.
struct CoordinatorServiceOptions {
  // Where to bind: "ipc://PATH" or "tcp://HOST:PORT" ("tcp://127.0.0.1:*" picks a free port;
  // see endpoint()). Required.
  std::string endpoint;
  // How often HEARTBEAT goes to each executor; sent to executors in TRIAL, too. Default 1 s.
  std::chrono::milliseconds heartbeat_interval = kDefaultHeartbeatInterval;
  // A lease not renewed for this long expires, and an executor not heard from for this long is
  // forgotten. Default 5 s. REQUIRES: > heartbeat_interval.
  std::chrono::milliseconds lease_timeout = kDefaultLeaseTimeout;
  // Deadlines and heartbeats. Default: the system clock.
  std::shared_ptr<Clock> clock;
  // Where log lines go ("coordinator: ..."). Default: standard error. Called on the loop's thread.
  std::function<void(const std::string&)> log;
  // Lines for the user even when the log is not shown: a trial's files that stayed on its
  // executor's host past its limit, a trial's file that could not be written here. Default:
  // `log`. Called on the loop's thread.
  std::function<void(const std::string&)> warn;
  // Who may connect. Default: anyone who can reach a local endpoint (ipc://, loopback TCP).
  CoordinatorSecurity security;
  // Where the logs that executors send of their trials go (docs/protocol.md, "Trial files"):
  // LOG_DIR/trial-<number>-lease-<lease>.log, as a local executor with this log dir writes them.
  // Default: empty: logs sent are refused, and stay on their executors' hosts.
  std::string log_dir;
};

// One study on its own service (what `tuner sweep` runs).
struct CoordinatorOptions : CoordinatorServiceOptions, StudyRunOptions {};

// Counts since construction (or, per study, since it was added).
struct CoordinatorStats {
  int64_t trials_started = 0;   // new trials leased (not re-runs)
  int64_t retries_started = 0;  // re-runs leased after an expired lease
  int64_t completed = 0;
  int64_t pruned = 0;
  int64_t failed = 0;       // FAIL told for a FAIL message or an expired lease
  int64_t failed_asks = 0;  // ask() failed after storing its trial (stored FAIL, not in `failed`)
  int64_t leases_expired = 0;          // an earlier coordinator's trials nobody took back included
  int64_t reattached = 0;              // an earlier coordinator's trials taken back from executors
  int64_t stale_outcomes_refused = 0;  // RESULT/FAIL answered ACK{accepted = false}
  int64_t reports = 0;
  int64_t errors_sent = 0;  // ERROR replies (service-wide)
  // Leased trials that abandon() could not store as FAIL (the storage refused): still RUNNING in
  // storage, where the study's next run takes them as an earlier coordinator's.
  int64_t not_abandoned = 0;
  int executors = 0;      // registered now (service-wide)
  int active_leases = 0;  // now
  // Now: trials that wait for a slot beyond the budget's new trials (trials_started counts
  // those): re-runs of lost or preempted trials, PBT's next segments, trials asked and not yet
  // leased.
  int waiting = 0;
};

// An executor connected now (Coordinator::executors()).
struct ExecutorInfo {
  std::string executor_id;
  std::string hostname;
  Resources resources;  // its CPU slots and GPUs, as its HELLO gave them
  int leases = 0;       // leases it holds now (each node of a multi-node trial counts)
  // Since when it has held no lease, on the coordinator's clock (steady time); nullopt while it
  // holds some.
  std::optional<Clock::SteadyTime> idle_since;
};

// A study added to a coordinator.
using StudyRunId = int;

class Coordinator {
 public:
  // Binds the ROUTER with no study yet (tuner serve: add_study()). Throws
  // Error(kInvalidArgument) for bad options (naming them: an endpoint ZeroMQ cannot parse,
  // malformed CURVE keys, an endpoint other hosts can reach without CURVE) and
  // Error(kUnavailable) when the endpoint cannot be bound.
  explicit Coordinator(CoordinatorServiceOptions options);
  // The same with one study added (its id is 0). Also throws add_study()'s errors.
  Coordinator(Study study, CoordinatorOptions options);
  // Says BYE to the executors it knows. Trials still leased stay RUNNING in storage (the next
  // coordinator of their study takes them back or re-runs them).
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Runs `study` on the executors too. Several studies share the executors fairly: a free slot
  // goes to the study with the fewest trials leased. The study's RUNNING trials are taken for an
  // earlier coordinator's (see above). Throws Error(kInvalidArgument) for a bad job or a study
  // with several objectives, Error(kAlreadyExists) when a study of that name runs here.
  StudyRunId add_study(Study study, StudyRunOptions options);
  // Removes a study that is done(id). Throws Error(kFailedPrecondition) otherwise.
  void remove_study(StudyRunId id);

  // The endpoint bound, with a chosen port filled in.
  const std::string& endpoint() const;

  // One turn of the loop: waits up to `timeout` (less when a deadline is nearer) for messages,
  // handles those that arrived, expires overdue leases, sends due heartbeats and dispatches.
  void poll_once(std::chrono::milliseconds timeout);
  // Turns the loop until done() or until `stop` is requested.
  void run(std::stop_token stop = {});

  // Stops handing out the study's trials: nothing new is asked or leased and expired leases are
  // not re-run; the trials already leased run on. A re-run that was waiting (or a trial asked but
  // not yet leased, which is told FAIL) is enqueued in the study with its params, so that the
  // study's next ask() runs it when it is resumed. How a sweep stops gracefully, or ends its time
  // budget. Without an id: every study.
  void drain();
  void drain(StudyRunId id);
  bool draining() const;  // every study is draining
  // Drains, and gives up every leased trial at once: each is told FAIL ("abandoned: <reason>")
  // and enqueued with its params, so that the study's next ask() (a resumed sweep) runs it
  // again; outcomes that arrive for it later are refused. How a sweep stops at once.
  void abandon(const std::string& reason);
  // No new trials of the study are leased until unpause(); leased ones run on.
  void pause(StudyRunId id);
  void unpause(StudyRunId id);

  // The study's budget is spent (n_trials started, or the sampler exhausted) or it was drained,
  // nothing of it is leased and no re-run is waiting. Without an id: every study is done (true
  // with none).
  bool done() const;
  bool done(StudyRunId id) const;
  // Service-wide (every study's counts summed), or one study's.
  CoordinatorStats stats() const;
  CoordinatorStats stats(StudyRunId id) const;
  // The executors connected now, by executor id (service-wide). O(executors + leases).
  std::vector<ExecutorInfo> executors() const;
  const Study& study(StudyRunId id = 0) const;
  // Why the study's run stopped on its own before its budget was spent: "sampling failed 3 times
  // in a row: <the last error>" (its ask() kept failing; the study drained then). nullopt while
  // it runs or when it ended otherwise.
  std::optional<std::string> failure(StudyRunId id = 0) const;
  // With one study (group commit): writes fail now for the storage's sake (a full disk, a
  // read-only file; coordinator/group_commit.h), and the last such error. Each run of failures
  // is said at once through `warn`.
  bool storage_failing() const;
  std::string last_storage_error() const;
  // Set once the study's writes failed for the storage's sake a few times in a row over some
  // seconds (GroupCommit::kGiveUpFailures, kGiveUpAfter): why. The owner should stop: nothing
  // of what runs can be stored.
  std::optional<std::string> storage_failure() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tuner

#endif  // TUNER_COORDINATOR_COORDINATOR_H_
