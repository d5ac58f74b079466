// The coordinator's loop and message handlers. What they delegate to lives in coordinator/: the
// executor registry, the lease table and how leases end, placement and dispatch, node groups,
// study runs, group commit and the outbox (docs/protocol.md, "The coordinator's code"; the
// behaviour is described there and in coordinator.h).
#include "coordinator/coordinator.h"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "coordinator/checkpoint_source.h"
#include "coordinator/dispatch.h"
#include "coordinator/executors.h"
#include "coordinator/file_receiver.h"
#include "coordinator/group_commit.h"
#include "coordinator/lease_ends.h"
#include "coordinator/lease_table.h"
#include "coordinator/node_groups.h"
#include "coordinator/outbox.h"
#include "coordinator/placement.h"
#include "coordinator/study_run.h"
#include "executor/job_log.h"
#include "executor/trial_files.h"
#include "executor/trial_job.h"
#include "trials/error.h"
#include "wire/curve_authenticator.h"
#include "wire/message_socket.h"
#include "wire/protocol.h"

namespace tuner {

namespace {

using std::chrono::milliseconds;
using SteadyTime = Clock::SteadyTime;

// The longest single wait for input (run() looks at its stop token this often).
constexpr milliseconds kMaxWait{100};
// Messages handled per turn before timers get a look.
constexpr size_t kMaxMessagesPerTurn = 1000;
// Messages received and not yet handled, at most (beyond, they wait in the socket's queue).
constexpr size_t kMaxBacklog = 10 * kMaxMessagesPerTurn;

// A message received, decoded (or not: then `message` is empty and `problem` says why).
struct Inbound {
  std::string peer;
  std::optional<Message> message;
  std::string problem;
};

// Lease ids never repeat, not even across restarts of the coordinator: they start at the wall
// time in ms, times 1024.
uint64_t first_lease_id(Clock& clock) {
  return static_cast<uint64_t>(
             std::chrono::duration_cast<milliseconds>(clock.system_now().time_since_epoch())
                 .count()) *
             1024 +
         1;
}

}  // namespace

struct Coordinator::Impl final : GroupCommit::Listener {
  // REQUIRES: `o` is checked and has a clock.
  explicit Impl(CoordinatorServiceOptions o)
      : options(std::move(o)),
        clock(options.clock.get()),
        log_line(coordinator_log(options.log)),
        outbox(options, log_line),
        executors(options.lease_timeout),
        leases(first_lease_id(*clock), options.lease_timeout),
        groups(leases, outbox, *clock, options.lease_timeout, options.heartbeat_interval),
        commit(leases, groups, outbox, *clock, options.heartbeat_interval, *this),
        dispatcher(runs, executors, leases, groups, commit, outbox, *clock,
                   options.heartbeat_interval),
        ends(leases, groups, commit, outbox, stats),
        run_context{.clock = clock,
                    .outbox = &outbox,
                    .warn = [this](const std::string& line) { warn_line(line); },
                    .leases = &leases,
                    .heartbeat_interval = options.heartbeat_interval,
                    .lease_timeout = options.lease_timeout},
        files([this](const std::string& line) { warn_line(line); }),
        next_heartbeat(clock->steady_now()) {
    log("listening on " + outbox.router().endpoint());
  }

  // Constant after construction.
  CoordinatorServiceOptions options;
  Clock* clock = nullptr;
  std::function<void(const std::string&)> log_line;

  // State below is used by the loop's thread only.
  RouterOutbox outbox;  // the ROUTER: what is sent and received
  StudyRuns runs;
  ExecutorRegistry executors;
  CoordinatorStats stats;  // service-wide counts only (errors_sent, unknown leases refused)
  LeaseTable leases;
  NodeGroups groups;
  GroupCommit commit;
  Dispatcher dispatcher;
  LeaseEnds ends;
  StudyRunContext run_context;
  FileReceiver files;
  // Leases whose files were refused as not current, logged once each (forgotten past 10,000).
  std::set<uint64_t> files_refused;
  StudyRunId next_run_id = 0;
  SteadyTime next_heartbeat{};
  // When on_timers() last ran (the loop's last look at its deadlines); none before the first turn.
  std::optional<SteadyTime> last_timers;
  // Messages received and not yet handled, in arrival order. Their senders were credited on
  // receipt (note_alive): a lease or executor is never given up for silent while what it sent
  // waits here.
  std::deque<Inbound> backlog;

  void log(const std::string& line) { outbox.log(line); }
  void warn_line(const std::string& line) {
    if (options.warn) {
      options.warn(line);
    } else {
      log(line);
    }
  }
  bool send(const std::string& route, const Message& message) {
    return outbox.send(route, message);
  }

  void send_error(const std::string& route, const std::string& what) {
    log("ERROR to " + peer_name(route) + ": " + what);
    send_error(route, ErrorMessage{.message = what});
  }
  // The same, logged by the caller (or not at all).
  void send_error(const std::string& route, ErrorMessage error) {
    ++stats.errors_sent;
    send(route, error);
  }

  StudyRun& run_of(StudyRunId id) const {
    auto it = runs.find(id);
    if (it == runs.end()) {
      throw Error(ErrorCode::kNotFound, "coordinator: no study run " + std::to_string(id));
    }
    return *it->second;
  }

  // --- Studies ----------------------------------------------------------------------------------

  StudyRunId add_study(Study study, StudyRunOptions o) {
    for (const auto& [id, run] : runs) {
      if (run->study.name() == study.name()) {
        throw Error(ErrorCode::kAlreadyExists,
                    "coordinator: study '" + study.name() + "' runs here already");
      }
    }
    auto run = std::make_unique<StudyRun>(next_run_id, std::move(study), std::move(o), run_context);
    const StudyRunId id = next_run_id++;
    runs.emplace(id, std::move(run));
    leases.name_studies(runs.size() > 1);
    return id;
  }

  void remove_study(StudyRunId id) {
    runs.erase(id);
    leases.name_studies(runs.size() > 1);
  }

  // The one study when there is one: its writes of a turn go in one batch (group commit).
  StudyRun* only_study() const { return runs.size() == 1 ? runs.begin()->second.get() : nullptr; }
  void in_batch(const std::function<void()>& body) { commit.run(only_study(), body); }

  void dispatch_safely() {
    try {
      dispatcher.dispatch();
    } catch (const std::exception& e) {
      log(std::string("error in the loop (continuing): ") + e.what());
    }
  }

  // --- GroupCommit::Listener --------------------------------------------------------------------

  void send_trial(uint64_t lease_id) override { dispatcher.send_trial(*leases.find(lease_id)); }

  void return_credit(const std::string& route) override {
    if (ExecutorEntry* executor = executors.find(route)) ++executor->credit;
  }

  void warn(const std::string& line) override { Impl::warn_line(line); }

  void acknowledge(uint64_t lease_id, const FrozenTrial& finished) override {
    ends.acknowledge(lease_id, finished);
  }

  // --- Messages ---------------------------------------------------------------------------------

  void on_hello(const std::string& route, const HelloMessage& hello) {
    ExecutorRegistry::Admission admission = executors.admit(route, hello, clock->steady_now());
    if (admission.refusal) {
      if (admission.refusal_log) {
        log(*admission.refusal_log);
        send_error(route, std::move(*admission.refusal));
      } else {
        send_error(route, admission.refusal->message);
      }
      return;
    }
    // The executor's leases move to its new connection. A reconnect may have lost keys sent to
    // the old connection: the whole store again. The executor lists every lease whose TRIAL it
    // got (running, queued, or with an outcome not yet ACKed): one it does not list was sent to
    // a connection it had left, and goes again (it ignores a TRIAL it holds).
    std::set<uint64_t> listed;
    for (const HeldLease& h : hello.leases) listed.insert(h.lease_id);
    std::vector<uint64_t> not_received;
    for (auto& [id, lease] : leases.all()) {
      if (lease.executor_id != hello.executor_id) continue;
      leases.move_to(lease, route);
      groups.resend_store(lease);
      if (!listed.contains(id) && !lease.unsent && !lease.outcome_pending) {
        not_received.push_back(id);
      } else if (lease.unsent) {
        ++admission.entry->resent_at_hello;  // goes out with this turn's commit
      }
    }
    for (uint64_t id : not_received) {
      Lease* lease = leases.find(id);  // a failed send undoes leases: look each up again
      if (!lease) continue;
      log(leases.describe(*lease) + ": its executor did not get the TRIAL; sent again");
      if (dispatcher.send_trial(*lease)) ++admission.entry->resent_at_hello;
    }
    if (admission.joined) {
      int most_gpus = 0;
      for (const auto& [id, run] : runs) {
        most_gpus = std::max(most_gpus, run->needs.gpus_per_executor());
      }
      log("executor " + hello.executor_id + " (" + hello.hostname + ", pid " +
          std::to_string(hello.pid) + ") joined with " + std::to_string(hello.resources.cpu_slots) +
          " slot(s), " + std::to_string(hello.resources.gpus.size()) + " GPU(s)" +
          (static_cast<int>(hello.resources.gpus.size()) < most_gpus
               ? "; a job needs " + std::to_string(most_gpus) +
                     " GPU(s) per trial, so none of its trials goes there"
               : ""));
    }
    dispatcher.take_back(*admission.entry, hello.leases);
  }

  // A READY's free slots become the executor's credit; its capacity is learnt from them. Placement
  // takes no more than its capacity leaves of the leases it holds (Dispatcher::snapshot): a READY
  // may have been counted before TRIALs in flight to it arrived, or sent before the outcome of the
  // trial whose slot it offers (an executor sends a trial's files, then its RESULT).
  void on_ready(ExecutorEntry& executor, const ReadyMessage& ready) {
    const int offered = std::clamp(ready.free_slots, 0, lease_limit(executor.resources.cpu_slots));
    const int held = leases.held_on(executor.route);
    executor.capacity = std::max(executor.capacity, offered);
    if (executor.resent_at_hello >= 0) {
      // Its first READY on this connection: what it holds now, less the TRIALs sent again at its
      // HELLO (in flight), it held when it counted its free slots.
      executor.capacity =
          std::max(executor.capacity, std::min(lease_limit(executor.resources.cpu_slots),
                                               offered + held - executor.resent_at_hello));
      executor.resent_at_hello = -1;
    }
    executor.credit = offered;
  }

  void on_report(ExecutorEntry& executor, const ReportMessage& report) {
    Lease* held = leases.find(report.lease_id);
    if (!held || held->executor_id != executor.executor_id) {
      // Nobody wants this job's progress any more: tell it to stop.
      send(executor.route,
           DecisionMessage{.lease_id = report.lease_id, .decision = JobDecision::kStop});
      return;
    }
    Lease& lease = *held;
    leases.renew(lease, clock->steady_now());
    if (!lease.work.trial) {  // a node other than 0 of a multi-node trial: node 0 reports
      send(executor.route, DecisionMessage{.lease_id = lease.id});
      return;
    }
    if (lease.work.paused_at) {  // a PBT segment's job goes on past its end: not stored
      send(executor.route, DecisionMessage{.lease_id = lease.id, .decision = JobDecision::kPause});
      return;
    }
    if (lease.work.stopped_at) {  // a stopped job's report sent before the stop reached it
      send(executor.route, DecisionMessage{.lease_id = lease.id, .decision = JobDecision::kStop});
      return;
    }
    if (lease.run->before_segment(lease.work, report.step)) {  // its parent's steps again
      send(executor.route, DecisionMessage{.lease_id = lease.id});
      return;
    }
    const bool stop = lease.run->report(*lease.work.trial, report, leases.describe(lease));
    JobDecision decision = stop ? JobDecision::kStop : JobDecision::kContinue;
    if (stop) lease.work.stopped_at = report.step;
    if (!stop && lease.run->pauses(lease.work, report.step)) {
      lease.work.paused_at = report.step;
      decision = JobDecision::kPause;
    }
    const DecisionMessage message{.lease_id = lease.id, .decision = decision};
    if (commit.open()) {
      commit.decided(executor.route, message);  // once the report is durable
    } else {
      send(executor.route, message);
    }
  }

  void on_result(ExecutorEntry& executor, const ResultMessage& result) {
    Lease* lease = ends.held_by(executor, result.lease_id);
    if (!lease) return;
    if (lease->node > 0) {
      groups.node_done(*lease);
      return;
    }
    StudyRun& run = *lease->run;
    const std::optional<int64_t> paused_at = lease->work.paused_at;
    ends.commit(executor, *lease,
                [&](Trial& trial) { return run.tell_result(trial, result, paused_at); });
  }

  void on_fail(ExecutorEntry& executor, const FailMessage& fail) {
    Lease* lease = ends.held_by(executor, fail.lease_id);
    if (!lease) return;
    if (lease->group != 0) {
      groups.node_failed(*lease, fail);
      return;
    }
    StudyRun& run = *lease->run;
    log(leases.describe(*lease) + " failed: " + fail.reason);
    ends.commit(executor, *lease,
                [&](Trial& trial) { return run.tell_fail(trial, fail, fail.reason); });
  }

  // A key for a multi-node trial's store: kept, and sent to the trial's other nodes.
  void on_store_set(ExecutorEntry& executor, const StoreSetMessage& set) {
    const Lease* lease = leases.find(set.lease_id);
    if (!lease) return;  // the attempt ended (its nodes are being stopped)
    const std::string what = "STORE_SET for lease " + std::to_string(set.lease_id);
    if (lease->executor_id != executor.executor_id) {
      send_error(executor.route, what + ": the lease is held by executor " + lease->executor_id);
      return;
    }
    if (std::optional<std::string> problem = groups.store_set(*lease, set.key, set.value)) {
      send_error(executor.route, what + ": " + *problem);
    }
  }

  // Where the files of `lease` go on this host.
  FileDestination destination(const Lease& lease) const {
    FileDestination where;
    if (!options.log_dir.empty()) {
      where.log_path = options.log_dir + "/" + trial_log_name(lease.trial_number, lease.id);
    } else {
      where.log_refusal = "this coordinator keeps no trial logs (it has no log dir)";
    }
    const std::shared_ptr<const TrialJob>& job = lease.run->needs.job;
    if (lease.node != 0) {
      where.artifacts_refusal = "node 0 of a multi-node trial sends the trial's folder";
    } else if (!job || job->artifacts_dir().empty()) {
      where.artifacts_refusal = "the study's job has no artifacts_dir";
    } else {
      where.artifacts_folder = job->trial_dir(lease.trial_number);
    }
    // A preempted trial's checkpoint goes where its re-run fetches it (checkpoint_source.h).
    const std::optional<std::string> checkpoint = lease_checkpoint_path(lease, CheckpointOf::kOwn);
    if (lease.node != 0) {
      where.checkpoint_refusal = "node 0 of a multi-node trial keeps the trial's checkpoint";
    } else if (!checkpoint) {
      where.checkpoint_refusal = "the trial has no checkpoint path";
    } else {
      where.checkpoint_folder = std::filesystem::path(*checkpoint).parent_path().string();
    }
    return where;
  }

  // A chunk of a finished trial's file, written where a local executor would have; a lease
  // that is not current (as a stale RESULT) gets no more of its files written.
  void on_file(ExecutorEntry& executor, const FileChunkMessage& chunk) {
    Lease* lease = leases.find(chunk.lease_id);
    if (!lease || lease->executor_id != executor.executor_id) {
      const EndedLease* ended = leases.ended(chunk.lease_id);
      const std::string reason =
          "lease " + std::to_string(chunk.lease_id) +
          (lease                             ? " is held by executor " + lease->executor_id
           : ended && !ended->detail.empty() ? " is not current: " + ended->detail
                                             : " is not current");
      if (files_refused.size() > 10'000) files_refused.clear();
      if (files_refused.insert(chunk.lease_id).second) {
        log("dropped the files executor " + executor.executor_id + " sends for " + reason);
      }
      send(executor.route, FileAckMessage{.lease_id = chunk.lease_id,
                                          .kind = chunk.kind,
                                          .path = chunk.path,
                                          .offset = chunk.offset,
                                          .accepted = false,
                                          .lease_ended = true,
                                          .reason = reason});
      return;
    }
    leases.renew(*lease, clock->steady_now());
    send(executor.route, files.receive(chunk, destination(*lease), leases.describe(*lease)));
  }

  // A chunk of a checkpoint of the executor's current lease, read from this host; none (found =
  // false, with the reason) for a lease it does not hold.
  void on_checkpoint_get(ExecutorEntry& executor, const CheckpointGetMessage& get) {
    Lease* lease = leases.find(get.lease_id);
    std::optional<std::string> path;
    if (lease && lease->executor_id == executor.executor_id) {
      path = lease_checkpoint_path(*lease, get.of);
    }
    if (!path) {
      send(executor.route,
           CheckpointDataMessage{
               .lease_id = get.lease_id,
               .of = get.of,
               .file = get.file,
               .offset = get.offset,
               .found = false,
               .reason = "lease " + std::to_string(get.lease_id) +
                         (!lease ? " is not current"
                          : lease->executor_id != executor.executor_id
                              ? " is held by executor " + lease->executor_id
                              : " has no " + std::string(to_string(get.of)) + " checkpoint")});
      return;
    }
    send(executor.route, read_checkpoint_chunk(get, *path));
  }

  void on_files_left(ExecutorEntry& executor, const FilesLeftMessage& left) {
    const Lease* lease = leases.find(left.lease_id);
    const std::string who =
        lease && lease->executor_id == executor.executor_id
            ? leases.describe(*lease)
            : "lease " + std::to_string(left.lease_id) + " (executor " + executor.executor_id + ")";
    warn_line(who + ": " + files_left_text(left.files, left.limit_bytes, left.hostname));
  }

  void on_heartbeat(ExecutorEntry& executor, const HeartbeatMessage& heartbeat) {
    const SteadyTime now = clock->steady_now();
    for (uint64_t id : heartbeat.lease_ids) leases.renew_if_held(id, executor.executor_id, now);
  }

  // A BYE's preempted leases are re-run without counting the attempt (LeaseEnds::preempt; a
  // preempted node fails its multi-node trial on every node, and the trial runs again likewise);
  // the executor's other leases are lost, as when it vanishes.
  void on_bye(const std::string& route, const ByeMessage& bye) {
    const ExecutorEntry& executor = *executors.find(route);
    const std::string id = executor.executor_id;
    const std::string stopped = "its executor " + id + " on " + executor.hostname + " was stopped";
    std::map<uint64_t, bool> preempted;  // lease -> a checkpoint was saved
    for (const PreemptedLease& l : bye.preempted) preempted[l.lease_id] = l.checkpoint;
    log("executor " + id + " said BYE" +
        (preempted.empty()
             ? ""
             : " (stopped; " + std::to_string(preempted.size()) + " trial(s) preempted)"));
    for (uint64_t lease_id : leases.held_by(id)) {
      const Lease* lease = leases.find(lease_id);
      if (auto p = preempted.find(lease_id); p != preempted.end() && lease) {
        ends.preempt(lease_id,
                     stopped + (p->second ? " (checkpoint saved)" : " (no checkpoint saved)"));
      } else {
        ends.expire(lease_id, "its executor " + id + " left (BYE)");
      }
    }
    executors.erase(route);
  }

  static Inbound decode_frames(RoutedFrames& in) {
    Inbound inbound{.peer = std::move(in.peer)};
    try {
      inbound.message = decode(in.frames);
    } catch (const ProtocolError& e) {
      inbound.problem = e.what();
    }
    return inbound;
  }

  // What a batch may hold: messages whose storage writes (outcomes, REPORTs' values) wait for
  // the batch's commit before anything is sent about them. Others (HELLO, BYE, FILE, ...) are
  // handled between batches.
  bool batchable(const Inbound& in) const {
    if (!in.message) return false;
    const MessageType type = message_type(*in.message);
    return (type == MessageType::kReady || type == MessageType::kResult ||
            type == MessageType::kFail || type == MessageType::kHeartbeat ||
            type == MessageType::kReport) &&
           executors.contains(in.peer);
  }

  // Handles one message; nothing it does throws out (an error becomes an ERROR reply).
  void handle(Inbound& in) {
    try {
      if (!in.message) {
        send_error(in.peer, "cannot decode your message: " + in.problem);
        return;
      }
      handle_message(in.peer, *in.message);
    } catch (const std::exception& e) {
      send_error(in.peer,
                 std::string("the coordinator could not handle your message: ") + e.what());
    }
  }

  void handle_message(const std::string& peer, const Message& message) {
    const MessageType type = message_type(message);
    if (auto* hello = std::get_if<HelloMessage>(&message)) {
      on_hello(peer, *hello);
      return;
    }
    ExecutorEntry* known = executors.find(peer);
    if (!known) {
      if (type == MessageType::kError || type == MessageType::kBye) return;  // not worth a reply
      // One ERROR per heartbeat interval and peer: a forgotten executor's queued messages would
      // otherwise each get one.
      const ExecutorRegistry::Unknown told =
          executors.unknown(peer, clock->steady_now(), options.heartbeat_interval);
      if (told == ExecutorRegistry::Unknown::kToldAlready) return;
      // After a restart every executor's connection is unknown until it says HELLO again: the
      // normal way back, logged once per connection.
      const std::string what = "unknown executor " + peer_name(peer) + ": say HELLO first (got " +
                               std::string(to_string(type)) + ")";
      if (told == ExecutorRegistry::Unknown::kFirstTime)
        log("told " + peer_name(peer) + " to say HELLO (its " + std::string(to_string(type)) +
            " came before one)");
      send_error(peer, ErrorMessage{.message = what, .say_hello = true});
      return;
    }
    ExecutorEntry& executor = *known;
    executor.last_heard = clock->steady_now();
    std::visit(
        [&](const auto& m) {
          using T = std::decay_t<decltype(m)>;
          if constexpr (std::is_same_v<T, ReadyMessage>) {
            on_ready(executor, m);
          } else if constexpr (std::is_same_v<T, ReportMessage>) {
            on_report(executor, m);
          } else if constexpr (std::is_same_v<T, ResultMessage>) {
            on_result(executor, m);
          } else if constexpr (std::is_same_v<T, FailMessage>) {
            on_fail(executor, m);
          } else if constexpr (std::is_same_v<T, HeartbeatMessage>) {
            on_heartbeat(executor, m);
          } else if constexpr (std::is_same_v<T, ErrorMessage>) {
            log("executor " + executor.executor_id + " reports an error: " + m.message);
          } else if constexpr (std::is_same_v<T, ByeMessage>) {
            on_bye(peer, m);
          } else if constexpr (std::is_same_v<T, StoreSetMessage>) {
            on_store_set(executor, m);
          } else if constexpr (std::is_same_v<T, FileChunkMessage>) {
            on_file(executor, m);
          } else if constexpr (std::is_same_v<T, FilesLeftMessage>) {
            on_files_left(executor, m);
          } else if constexpr (std::is_same_v<T, CheckpointGetMessage>) {
            on_checkpoint_get(executor, m);
          } else {
            send_error(peer, std::string("unexpected ") + std::string(to_string(type)) +
                                 " from an executor");
          }
        },
        message);
  }

  // --- Timers -----------------------------------------------------------------------------------

  void on_timers(SteadyTime now) {
    last_timers = now;
    ends.expire_overdue(now);
    groups.settle_due(now);
    for (auto& [id, run] : runs) run->expire_orphans(now);
    for (const std::string& line : executors.forget_silent(now)) log(line);
    files.drop_ended([this](uint64_t id) { return leases.contains(id); });
    if (now >= next_heartbeat) {
      for (const auto& [route, executor] : executors.all()) {
        send(route, HeartbeatMessage{.lease_ids = leases.held_by(executor.executor_id)});
      }
      next_heartbeat = now + options.heartbeat_interval;
    }
  }

  // The next lease or orphan deadline, or settle time of a multi-node trial's failure.
  std::optional<SteadyTime> next_expiry() const {
    std::optional<SteadyTime> next = leases.next_deadline();
    for (const auto& [id, run] : runs) {
      std::optional<SteadyTime> orphan = run->next_orphan_deadline();
      if (orphan && (!next || *orphan < *next)) next = orphan;
    }
    return next;
  }

  milliseconds wait_limit(milliseconds timeout) const {
    SteadyTime next = next_heartbeat;
    if (std::optional<SteadyTime> expiry = next_expiry()) next = std::min(next, *expiry);
    if (std::optional<SteadyTime> settle = groups.next_settle()) next = std::min(next, *settle);
    auto until =
        std::chrono::duration_cast<milliseconds>(next - clock->steady_now()) + milliseconds(1);
    return std::clamp(until, milliseconds(0), timeout);
  }

  // True when a lease's or an orphan's deadline has passed (on_timers() will write).
  bool expiry_due(SteadyTime now) const {
    std::optional<SteadyTime> next = next_expiry();
    return next && now >= *next;
  }

  // One round: every message that arrived is handled, and the outcomes they carry and the trials
  // asked for the slots they free are committed in one storage batch (group commit) before the
  // ACKs, DECISIONs and TRIALs go out. Other messages (HELLO, BYE, FILE, ...) and expired leases
  // are handled between batches, each write committing on its own.
  void poll_once(milliseconds timeout) {
    CurveAuthenticator* authenticator = outbox.authenticator();
    ZmqPollEntry entries[2] = {{.socket = &outbox.router().socket()}};
    const size_t n_entries = authenticator ? 2 : 1;
    if (authenticator) entries[1].socket = &authenticator->socket();
    const milliseconds wait = backlog.empty() ? wait_limit(timeout) : milliseconds(0);
    const SteadyTime wait_start = clock->steady_now();
    zmq_wait({entries, n_entries}, wait);
    const SteadyTime::duration wait_overrun = clock->steady_now() - wait_start - wait;
    if (authenticator) authenticator->answer_requests();
    receive_waiting();
    std::vector<Inbound> inbox;
    while (!backlog.empty() && inbox.size() < kMaxMessagesPerTurn) {
      inbox.push_back(std::move(backlog.front()));
      backlog.pop_front();
    }
    // Back-pressure: while more than a turn's messages wait, the loop catches up before it starts
    // more trials (each brings more messages); the executors' credit waits meanwhile.
    const bool behind = !backlog.empty();
    size_t next = 0;
    bool dispatched = behind;
    while (next < inbox.size()) {
      if (!batchable(inbox[next])) {
        handle(inbox[next++]);
        continue;
      }
      in_batch([&] {
        while (next < inbox.size() && batchable(inbox[next])) handle(inbox[next++]);
        // The slots just freed are filled in the same commit, unless leases are due to expire
        // first (their writes commit on their own, below).
        if (!behind && next == inbox.size() && !expiry_due(clock->steady_now())) {
          dispatch_safely();
          dispatched = true;
        }
      });
    }
    // However long this turn took, what arrived meanwhile (heartbeats, reports) counts before
    // a lease expires or an executor is forgotten: a busy turn cannot starve anyone.
    receive_waiting();
    const SteadyTime now = clock->steady_now();
    forgive_stall(std::max(wait_overrun, unlooked(now)));
    try {
      on_timers(now);
    } catch (const std::exception& e) {
      log(std::string("error in the loop (continuing): ") + e.what());
    }
    if (!dispatched) in_batch([&] { dispatch_safely(); });
    note_idle(clock->steady_now());
  }

  // The time since the loop last looked at its deadlines, when that is longer than a lease
  // timeout (zero otherwise): a loop that turns looks at least every heartbeat interval, so the
  // process was stopped or its host paused, wherever in the turn (or between turns) that came.
  SteadyTime::duration unlooked(SteadyTime now) const {
    return last_timers && now - *last_timers > options.lease_timeout ? now - *last_timers
                                                                     : SteadyTime::duration::zero();
  }

  // A `stall` in which this coordinator did not run (a wait for messages that returned that much
  // later than asked, or no look at the deadlines for longer than a lease timeout): what the
  // executors sent meanwhile may still be on its way through ZeroMQ, so leases and executors get
  // that long again before they are found silent.
  void forgive_stall(SteadyTime::duration stalled) {
    const auto stall = std::chrono::duration_cast<milliseconds>(stalled);
    if (stall <= options.heartbeat_interval) return;
    leases.postpone_all(stall);
    executors.postpone_silence(stall);
    log("this coordinator did not run for " + std::to_string(stall.count()) +
        " ms (stopped, its host paused, or its loop blocked): leases and executors are given that "
        "long again");
  }

  // Notes when each executor came to hold no lease (ExecutorEntry::idle_since).
  void note_idle(SteadyTime now) {
    for (auto& [route, executor] : executors.all()) {
      if (leases.held_count(executor.executor_id) > 0) {
        executor.idle_since.reset();
      } else if (!executor.idle_since) {
        executor.idle_since = now;
      }
    }
  }

  // Receives what waits on the socket into the backlog (up to kMaxBacklog), crediting each
  // sender at once (note_alive); the messages are handled in later turns, in order. A known
  // executor's HEARTBEAT is wholly handled by that credit and takes no place in the backlog, so
  // that a backlog of REPORTs cannot keep heartbeats from being read.
  void receive_waiting() {
    while (backlog.size() < kMaxBacklog) {
      std::optional<RoutedFrames> in = outbox.router().receive();
      if (!in) break;
      Inbound inbound = decode_frames(*in);
      note_alive(inbound);
      if (inbound.message && std::holds_alternative<HeartbeatMessage>(*inbound.message) &&
          executors.contains(inbound.peer)) {
        continue;
      }
      backlog.push_back(std::move(inbound));
    }
  }

  // A message from a registered executor shows it alive, and renews the leases it names (all of a
  // HEARTBEAT's; a REPORT's, RESULT's, FAIL's, STORE_SET's or FILE's one) that it holds: as
  // handling the message would, before it is handled.
  void note_alive(const Inbound& in) {
    if (!in.message) return;
    ExecutorEntry* known = executors.find(in.peer);
    if (!known) return;
    ExecutorEntry& executor = *known;
    const SteadyTime now = clock->steady_now();
    executor.last_heard = now;
    auto renew = [&](uint64_t lease_id) {
      leases.renew_if_held(lease_id, executor.executor_id, now);
    };
    std::visit(
        [&](const auto& m) {
          using T = std::decay_t<decltype(m)>;
          if constexpr (std::is_same_v<T, HeartbeatMessage>) {
            for (uint64_t id : m.lease_ids) renew(id);
          } else if constexpr (std::is_same_v<T, ReportMessage> ||
                               std::is_same_v<T, ResultMessage> || std::is_same_v<T, FailMessage> ||
                               std::is_same_v<T, StoreSetMessage> ||
                               std::is_same_v<T, FileChunkMessage> ||
                               std::is_same_v<T, CheckpointGetMessage>) {
            renew(m.lease_id);
          }
        },
        *in.message);
  }

  // --- Stopping ---------------------------------------------------------------------------------

  void abandon(const std::string& reason) {
    for (auto& [id, run] : runs) {
      run->drain();
      run->orphans.clear();  // still RUNNING in storage: the next coordinator looks again
    }
    ends.abandon_all(reason);
  }
};

namespace {

void check_service_options(const CoordinatorServiceOptions& o) {
  if (o.endpoint.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "coordinator: no endpoint to bind given");
  }
  if (o.heartbeat_interval <= milliseconds(0) || o.lease_timeout <= o.heartbeat_interval) {
    throw Error(ErrorCode::kInvalidArgument,
                "coordinator: lease_timeout (" + std::to_string(o.lease_timeout.count()) +
                    " ms) must exceed heartbeat_interval (" +
                    std::to_string(o.heartbeat_interval.count()) + " ms), which must be > 0");
  }
}

}  // namespace

Coordinator::Coordinator(CoordinatorServiceOptions options) {
  check_service_options(options);
  if (!options.clock) options.clock = system_clock();
  impl_ = std::make_unique<Impl>(std::move(options));
}

Coordinator::Coordinator(Study study, CoordinatorOptions options)
    : Coordinator(static_cast<CoordinatorServiceOptions>(options)) {
  add_study(std::move(study), static_cast<StudyRunOptions>(std::move(options)));
}

Coordinator::~Coordinator() {
  for (const auto& [route, executor] : impl_->executors.all()) impl_->send(route, ByeMessage{});
  impl_.reset();
}

StudyRunId Coordinator::add_study(Study study, StudyRunOptions options) {
  const std::string name = study.name();
  const StudyRunId id = impl_->add_study(std::move(study), std::move(options));
  impl_->log("running study '" + name + "'");
  return id;
}

void Coordinator::remove_study(StudyRunId id) {
  StudyRun& run = impl_->run_of(id);
  if (!run.done()) {
    throw Error(ErrorCode::kFailedPrecondition,
                "coordinator: study '" + run.study.name() + "' is not done; drain it first");
  }
  impl_->remove_study(id);
}

const std::string& Coordinator::endpoint() const { return impl_->outbox.router().endpoint(); }

void Coordinator::poll_once(std::chrono::milliseconds timeout) { impl_->poll_once(timeout); }

void Coordinator::run(std::stop_token stop) {
  while (!stop.stop_requested() && !done()) impl_->poll_once(kMaxWait);
}

bool Coordinator::done() const {
  return std::all_of(impl_->runs.begin(), impl_->runs.end(),
                     [](const auto& r) { return r.second->done(); });
}

bool Coordinator::done(StudyRunId id) const { return impl_->run_of(id).done(); }

void Coordinator::drain() {
  for (auto& [id, run] : impl_->runs) run->drain();
}

void Coordinator::drain(StudyRunId id) { impl_->run_of(id).drain(); }

bool Coordinator::draining() const {
  return !impl_->runs.empty() && std::all_of(impl_->runs.begin(), impl_->runs.end(),
                                             [](const auto& r) { return r.second->draining; });
}

void Coordinator::abandon(const std::string& reason) { impl_->abandon(reason); }

void Coordinator::pause(StudyRunId id) { impl_->run_of(id).paused = true; }

void Coordinator::unpause(StudyRunId id) { impl_->run_of(id).paused = false; }

CoordinatorStats Coordinator::stats() const {
  CoordinatorStats s = impl_->stats;
  for (const auto& [id, run] : impl_->runs) {
    accumulate(s, run->stats);
    s.waiting += run->waiting();
  }
  s.executors = static_cast<int>(impl_->executors.size());
  s.active_leases = static_cast<int>(impl_->leases.size());
  return s;
}

CoordinatorStats Coordinator::stats(StudyRunId id) const {
  const StudyRun& run = impl_->run_of(id);
  CoordinatorStats s = run.stats;
  s.executors = static_cast<int>(impl_->executors.size());
  s.active_leases = run.leases().leased;
  s.waiting = run.waiting();
  return s;
}

std::vector<ExecutorInfo> Coordinator::executors() const {
  std::vector<ExecutorInfo> infos;
  infos.reserve(impl_->executors.size());
  for (const auto& [route, executor] : impl_->executors.all()) {
    ExecutorInfo& info = infos.emplace_back(ExecutorInfo{.executor_id = executor.executor_id,
                                                         .hostname = executor.hostname,
                                                         .resources = executor.resources});
    info.leases = impl_->leases.held_count(executor.executor_id);
    if (info.leases == 0) {
      // Its last lease may have ended since the loop's last turn (abandon()): idle from now.
      info.idle_since = executor.idle_since.value_or(impl_->clock->steady_now());
    }
  }
  std::sort(infos.begin(), infos.end(), [](const ExecutorInfo& a, const ExecutorInfo& b) {
    return a.executor_id < b.executor_id;
  });
  return infos;
}

const Study& Coordinator::study(StudyRunId id) const { return impl_->run_of(id).study; }

std::optional<std::string> Coordinator::failure(StudyRunId id) const {
  return impl_->run_of(id).failure;
}

bool Coordinator::storage_failing() const { return impl_->commit.storage_failing(); }

std::string Coordinator::last_storage_error() const { return impl_->commit.last_storage_error(); }

std::optional<std::string> Coordinator::storage_failure() const {
  return impl_->commit.storage_failure();
}

}  // namespace tuner
