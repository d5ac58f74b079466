#include "tuner/coordinator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>
#include <variant>
#include <vector>

#include "executor/job_spec.h"
#include "executor/transport/curve_authenticator.h"
#include "executor/transport/message_socket.h"
#include "trials/error.h"
#include "trials/protocol.h"

namespace tuner {

namespace {

using std::chrono::milliseconds;
using SteadyTime = Clock::SteadyTime;

// The longest single wait for input (run() looks at its stop token this often).
constexpr milliseconds kMaxWait{100};
// Messages handled per turn before timers get a look.
constexpr int kMaxMessagesPerTurn = 1000;
// Peers without HELLO remembered (to rate-limit their ERRORs).
constexpr size_t kMaxUnknownPeers = 10'000;
// Ended leases remembered (to answer resent and stale outcomes).
constexpr size_t kMaxEndedLeases = 100'000;
// The system attributes of retried trials, as Optuna's RetryFailedTrialCallback writes them.
constexpr char kFailedTrialAttr[] = "failed_trial";
constexpr char kRetryHistoryAttr[] = "retry_history";

std::string json_string(const std::string& s) { return nlohmann::json(s).dump(); }

int64_t to_ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<milliseconds>(d).count();
}

struct ExecutorEntry {
  std::string route;  // the connection's routing id
  std::string executor_id;
  std::string hostname;
  int64_t pid = 0;
  Resources resources;
  int credit = 0;  // slots offered by the last READY, less the TRIALs sent since
  SteadyTime last_heard{};
};

// A trial asked from the study and not yet leased (its first executor vanished before TRIAL
// could be queued), or the lineage of one that is.
struct Prepared {
  std::optional<Trial> trial;
  Params params;
  int attempt = 0;
  std::vector<int> history;  // numbers of the earlier, failed attempts
};

struct Lease {
  uint64_t id = 0;
  std::string executor_id;
  std::string route;
  Prepared work;
  SteadyTime deadline{};
  std::vector<int> gpus;  // the executor's GPUs given to this trial
};

// A re-run waiting in the study's queue (enqueue_trial), to be recognised when ask() serves it.
// A metric as JSON text the way Python's json.dumps writes it (NaN and the infinities included),
// which is how Optuna's tools read user attributes.
std::string metric_json(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return nlohmann::json(value).dump();
}

struct PendingRetry {
  Params params;
  int attempt = 0;
  std::vector<int> history;
};

// A trial left RUNNING by an earlier coordinator of the study: an executor may still run it and
// take it back (HELLO lists it); unclaimed at `deadline`, it fails and is re-run.
struct Orphan {
  int number = -1;
  SteadyTime deadline{};
};

struct EndedLease {
  bool committed = false;  // false: expired
  std::string detail;
};

}  // namespace

struct Coordinator::Impl {
  Impl(Study s, CoordinatorOptions o) : study(std::move(s)), options(std::move(o)) {}

  // Constant after construction.
  Study study;
  CoordinatorOptions options;
  Clock* clock = nullptr;
  std::string objective_metric;
  int gpus_per_trial = 0;  // a CUDA engine job's ranks; 0 for jobs that need no GPU

  // State below is used by the loop's thread only.
  std::unique_ptr<ZmqContext> context;
  std::unique_ptr<CurveAuthenticator> authenticator;  // with CURVE; before the router, which
                                                     // must close first
  std::unique_ptr<RouterEndpoint> router;
  std::map<std::string, ExecutorEntry> executors;  // by route
  std::map<uint64_t, Lease> leases;
  std::map<int64_t, Orphan> orphans;  // by trial id
  std::map<uint64_t, EndedLease> ended;
  std::deque<uint64_t> ended_order;
  std::deque<PendingRetry> retries;
  std::deque<Prepared> prepared;
  std::map<std::string, SteadyTime> unknown_peers;  // route -> when it was last told to say HELLO
  uint64_t next_lease_id = 1;
  bool exhausted = false;          // the sampler has nothing left
  bool draining = false;           // drain() was called
  SteadyTime ask_blocked_until{};  // after a failed ask(): wait before asking again
  SteadyTime next_heartbeat{};
  CoordinatorStats stats;

  void log(const std::string& line) {
    const std::string text = "coordinator: " + line;
    if (options.log) {
      options.log(text);
    } else {
      std::cerr << text << std::endl;
    }
  }

  bool send(const std::string& route, const Message& message) {
    try {
      if (router->send(route, message)) return true;
    } catch (const ProtocolError& e) {
      log(std::string("cannot encode ") + std::string(to_string(message_type(message))) + " for " +
          peer_name(route) + ": " + e.what());
      return false;
    }
    return false;
  }

  void send_error(const std::string& route, const std::string& what) {
    log("ERROR to " + peer_name(route) + ": " + what);
    ++stats.errors_sent;
    send(route, ErrorMessage{.message = what});
  }

  std::string describe(const Lease& lease) const {
    return "lease " + std::to_string(lease.id) + " (trial " +
           std::to_string(lease.work.trial->number()) + ", attempt " +
           std::to_string(lease.work.attempt) + ", executor " + lease.executor_id + ")";
  }

  void remember_end(uint64_t lease_id, bool committed, std::string detail) {
    ended[lease_id] = EndedLease{committed, std::move(detail)};
    ended_order.push_back(lease_id);
    while (ended_order.size() > kMaxEndedLeases) {
      ended.erase(ended_order.front());
      ended_order.pop_front();
    }
  }

  // --- Budget and dispatch ----------------------------------------------------------------------

  bool may_lease_more() const {
    return options.max_concurrency <= 0 ||
           static_cast<int>(leases.size()) < options.max_concurrency;
  }

  bool may_start_new() const {
    return !exhausted && (!options.n_trials || stats.trials_started < *options.n_trials);
  }

  // The next trial to lease: one already asked, or a new ask(). nullopt when the budget is spent
  // or the study cannot give one now.
  std::optional<Prepared> next_work() {
    if (!prepared.empty()) {
      Prepared p = std::move(prepared.front());
      prepared.pop_front();
      return p;
    }
    if (draining || (retries.empty() && !may_start_new())) return std::nullopt;
    if (clock->steady_now() < ask_blocked_until) return std::nullopt;
    std::optional<Trial> trial;
    try {
      trial.emplace(options.space ? study.ask(*options.space) : study.ask());
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kFailedPrecondition) {
        if (!exhausted) log(std::string("no more trials: ") + e.what());
        exhausted = true;
        retries.clear();  // nothing will serve them now
        return std::nullopt;
      }
      log(std::string("ask() failed (retrying in one heartbeat interval): ") + e.what());
      ask_blocked_until = clock->steady_now() + options.heartbeat_interval;
      return std::nullopt;
    }
    Prepared p;
    p.params = trial->params();
    auto retry = std::find_if(retries.begin(), retries.end(),
                              [&](const PendingRetry& r) { return r.params == p.params; });
    if (retry != retries.end()) {
      p.attempt = retry->attempt;
      p.history = retry->history;
      retries.erase(retry);
      try {
        nlohmann::json history = p.history;
        study.storage().set_trial_system_attr(trial->id(), kFailedTrialAttr,
                                              std::to_string(p.history.front()));
        study.storage().set_trial_system_attr(trial->id(), kRetryHistoryAttr, history.dump());
      } catch (const Error& e) {
        log("trial " + std::to_string(trial->number()) +
            ": cannot record its retry history: " + e.what());
      }
      ++stats.retries_started;
    } else {
      ++stats.trials_started;
    }
    p.trial = std::move(trial);
    return p;
  }

  // The executor's GPUs that none of its leases holds, in its order.
  std::vector<int> free_gpus(const std::string& route, const ExecutorEntry& executor) const {
    std::vector<int> free;
    for (const GpuInfo& g : executor.resources.gpus) {
      const bool held = std::any_of(leases.begin(), leases.end(), [&](const auto& l) {
        return l.second.route == route &&
               std::find(l.second.gpus.begin(), l.second.gpus.end(), g.index) != l.second.gpus.end();
      });
      if (!held) free.push_back(g.index);
    }
    return free;
  }

  void dispatch() {
    for (auto& [route, executor] : executors) {
      int held = static_cast<int>(std::count_if(
          leases.begin(), leases.end(), [&](const auto& l) { return l.second.route == route; }));
      while (executor.credit > 0 && held < executor.resources.cpu_slots && may_lease_more()) {
        std::vector<int> gpus;
        if (gpus_per_trial > 0) {
          gpus = free_gpus(route, executor);
          if (static_cast<int>(gpus.size()) < gpus_per_trial) break;  // wait for its GPUs
          gpus.resize(static_cast<size_t>(gpus_per_trial));
        }
        std::optional<Prepared> work = next_work();
        if (!work) return;
        if (!lease_to(executor, std::move(*work), std::move(gpus))) break;
        ++held;
      }
    }
  }

  // Sends TRIAL; false (and the work kept for another executor) when the executor is gone.
  bool lease_to(ExecutorEntry& executor, Prepared work, std::vector<int> gpus) {
    Lease lease;
    lease.id = next_lease_id++;
    lease.executor_id = executor.executor_id;
    lease.route = executor.route;
    TrialMessage message{.lease_id = lease.id,
                         .study_name = study.name(),
                         .trial_id = work.trial->id(),
                         .number = work.trial->number(),
                         .attempt = work.attempt,
                         .params = work.params,
                         .job_json = options.job_json,
                         .heartbeat_interval_ms = options.heartbeat_interval.count(),
                         .gpus = gpus};
    if (!send(executor.route, message)) {
      log("executor " + executor.executor_id + " is unreachable; trial " +
          std::to_string(work.trial->number()) + " waits for another");
      prepared.push_front(std::move(work));
      executor.credit = 0;
      return false;
    }
    --executor.credit;
    lease.work = std::move(work);
    lease.gpus = std::move(gpus);
    lease.deadline = clock->steady_now() + options.lease_timeout;
    leases.emplace(lease.id, std::move(lease));
    return true;
  }

  // --- Lease ends -------------------------------------------------------------------------------

  void expire(uint64_t lease_id, const std::string& why) {
    auto it = leases.find(lease_id);
    if (it == leases.end()) return;
    Lease lease = std::move(it->second);
    leases.erase(it);
    ++stats.leases_expired;
    const std::string reason = describe(lease) + " expired: " + why;
    log(reason);
    std::string detail = "lease " + std::to_string(lease.id) + " of trial " +
                         std::to_string(lease.work.trial->number()) + " expired (" + why + ")";
    if (fail_and_rerun(lease.work, reason)) detail += "; the trial is run again as a new trial";
    remember_end(lease.id, false, detail);
  }

  // Tells a lost trial FAIL and, up to max_retries attempts, enqueues it to run again with the
  // same params. True when a re-run was enqueued.
  bool fail_and_rerun(Prepared& work, const std::string& reason) {
    Trial& trial = *work.trial;
    bool told = false;
    try {
      const FrozenTrial failed = study.tell(trial, TrialState::kFail, reason);
      ++stats.failed;
      told = true;
      if (options.on_trial_finished) options.on_trial_finished(failed);
    } catch (const Error& e) {
      // Finished elsewhere (kFailedPrecondition) or the storage refuses: in the second case the
      // trial stays RUNNING and the study's stale-trial policy takes it when it is loaded again.
      log("trial " + std::to_string(trial.number()) + ": cannot record the expiry: " + e.what());
    }
    if (told && work.attempt < options.max_retries) {
      PendingRetry retry{
          .params = work.params, .attempt = work.attempt + 1, .history = work.history};
      retry.history.push_back(trial.number());
      try {
        study.enqueue_trial(retry.params);
        // Drained: the study's next ask() (a resumed sweep) runs it, without its lineage.
        if (!draining) retries.push_back(std::move(retry));
        return true;
      } catch (const Error& e) {
        log("trial " + std::to_string(trial.number()) + ": cannot enqueue its re-run: " + e.what());
      }
    } else if (told) {
      log("trial " + std::to_string(trial.number()) +
          " is not run again: " + std::to_string(work.attempt + 1) +
          " attempt(s), max_retries " + std::to_string(options.max_retries));
    }
    return false;
  }

  // --- Trials of an earlier coordinator ---------------------------------------------------------

  // The study's RUNNING trials, which nobody here holds: an earlier coordinator leased them.
  void find_orphans() {
    const SteadyTime deadline = clock->steady_now() + 2 * options.lease_timeout;
    for (const FrozenTrial& t : study.trials({.states = std::vector{TrialState::kRunning}})) {
      orphans[t.trial_id] = Orphan{.number = t.number, .deadline = deadline};
    }
    if (!orphans.empty()) {
      log(std::to_string(orphans.size()) +
          " trial(s) were running under an earlier coordinator; waiting " +
          std::to_string(to_ms(2 * options.lease_timeout)) +
          " ms for their executors to take them back");
    }
  }

  // A live handle for an orphan, with its attempt and retry history from its system attributes.
  Prepared adopt(int64_t trial_id) {
    Prepared work;
    work.trial.emplace(study.adopt(trial_id));
    work.params = work.trial->params();
    const FrozenTrial frozen = study.storage().get_trial(trial_id);
    if (auto h = frozen.system_attrs.find(kRetryHistoryAttr); h != frozen.system_attrs.end()) {
      try {
        work.history = nlohmann::json::parse(h->second).get<std::vector<int>>();
      } catch (const std::exception&) {
        // Not written by us: the trial counts as a first attempt.
      }
    }
    work.attempt = static_cast<int>(work.history.size());
    return work;
  }

  // HELLO's leases that name orphans become this executor's leases again.
  void reattach(const ExecutorEntry& executor, const std::vector<HeldLease>& held) {
    for (const HeldLease& h : held) {
      auto orphan = orphans.find(h.trial_id);
      if (h.study_name != study.name() || orphan == orphans.end() || leases.contains(h.lease_id)) {
        continue;
      }
      const int number = orphan->second.number;
      orphans.erase(orphan);
      Lease lease;
      lease.id = h.lease_id;
      lease.executor_id = executor.executor_id;
      lease.route = executor.route;
      lease.gpus = h.gpus;
      lease.deadline = clock->steady_now() + options.lease_timeout;
      try {
        lease.work = adopt(h.trial_id);
      } catch (const Error& e) {
        log("trial " + std::to_string(number) + ": cannot take it back: " + e.what());
        continue;
      }
      ++stats.reattached;
      log(describe(lease) + " taken back from an earlier coordinator");
      leases.emplace(lease.id, std::move(lease));
    }
  }

  void expire_orphans(SteadyTime now) {
    for (auto it = orphans.begin(); it != orphans.end();) {
      if (now < it->second.deadline) {
        ++it;
        continue;
      }
      const auto [trial_id, orphan] = *it;
      it = orphans.erase(it);
      const std::string reason = "trial " + std::to_string(orphan.number) +
                                 " was running under an earlier coordinator, and no executor "
                                 "took it back within " +
                                 std::to_string(to_ms(2 * options.lease_timeout)) + " ms";
      log(reason);
      ++stats.leases_expired;
      try {
        Prepared work = adopt(trial_id);
        fail_and_rerun(work, reason);
      } catch (const Error& e) {
        log("trial " + std::to_string(orphan.number) + ": " + e.what());
      }
    }
  }

  // Answers a RESULT or FAIL for a lease that is not held (any more).
  void answer_ended(const std::string& route, uint64_t lease_id) {
    auto it = ended.find(lease_id);
    AckMessage ack{.lease_id = lease_id};
    if (it != ended.end() && it->second.committed) {
      ack.reason = "already committed";
    } else {
      ack.accepted = false;
      ack.reason =
          it != ended.end() ? it->second.detail : "unknown lease " + std::to_string(lease_id);
      ++stats.stale_outcomes_refused;
      log("refused the outcome of " +
          (it != ended.end() ? it->second.detail : "unknown lease " + std::to_string(lease_id)) +
          " from " + peer_name(route));
    }
    send(route, ack);
  }

  // The lease `lease_id` when `executor` holds it; otherwise answers and returns null.
  Lease* held_by(const ExecutorEntry& executor, uint64_t lease_id) {
    auto it = leases.find(lease_id);
    if (it == leases.end()) {
      answer_ended(executor.route, lease_id);
      return nullptr;
    }
    if (it->second.executor_id != executor.executor_id) {
      ++stats.stale_outcomes_refused;
      send(executor.route, AckMessage{.lease_id = lease_id,
                                      .accepted = false,
                                      .reason = "lease " + std::to_string(lease_id) +
                                                " is held by executor " + it->second.executor_id});
      return nullptr;
    }
    return &it->second;
  }

  void commit(const ExecutorEntry& executor, Lease& lease,
              const std::function<FrozenTrial(Trial&)>& tell) {
    FrozenTrial finished;
    try {
      finished = tell(*lease.work.trial);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kFailedPrecondition) {
        // Not committed: no ACK, the executor sends it again.
        log(describe(lease) +
            ": cannot commit the outcome (waiting for it to be resent): " + e.what());
        return;
      }
      const uint64_t id = lease.id;
      const std::string detail =
          describe(lease) + ": the trial was finished elsewhere: " + e.what();
      leases.erase(id);
      remember_end(id, false, detail);
      ++stats.stale_outcomes_refused;
      send(executor.route, AckMessage{.lease_id = id, .accepted = false, .reason = detail});
      return;
    }
    switch (finished.state) {
      case TrialState::kComplete:
        ++stats.completed;
        break;
      case TrialState::kPruned:
        ++stats.pruned;
        break;
      default:
        ++stats.failed;
        break;
    }
    const uint64_t id = lease.id;
    leases.erase(id);
    remember_end(id, true, "");
    send(executor.route, AckMessage{.lease_id = id});
    if (options.on_trial_finished) options.on_trial_finished(finished);
  }

  // --- Messages ---------------------------------------------------------------------------------

  void on_hello(const std::string& route, const HelloMessage& hello) {
    unknown_peers.erase(route);
    if (hello.executor_id.empty() || hello.resources.cpu_slots < 0) {
      send_error(route, "HELLO: executor_id must not be empty and cpu_slots must be >= 0");
      return;
    }
    // A reconnect: the same executor on a new connection takes its leases along.
    for (auto it = executors.begin(); it != executors.end();) {
      if (it->first != route && it->second.executor_id == hello.executor_id) {
        it = executors.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& [id, lease] : leases) {
      if (lease.executor_id == hello.executor_id) lease.route = route;
    }
    ExecutorEntry& e = executors[route];
    const bool known = !e.executor_id.empty();
    e.route = route;
    e.executor_id = hello.executor_id;
    e.hostname = hello.hostname;
    e.pid = hello.pid;
    e.resources = hello.resources;
    e.credit = 0;
    e.last_heard = clock->steady_now();
    if (!known) {
      log("executor " + hello.executor_id + " (" + hello.hostname + ", pid " +
          std::to_string(hello.pid) + ") joined with " + std::to_string(hello.resources.cpu_slots) +
          " slot(s), " + std::to_string(hello.resources.gpus.size()) + " GPU(s)" +
          (static_cast<int>(hello.resources.gpus.size()) < gpus_per_trial
               ? "; the job needs " + std::to_string(gpus_per_trial) +
                     " GPU(s) per trial, so no trial goes there"
               : ""));
    }
    if (!orphans.empty()) reattach(e, hello.leases);
  }

  void on_report(ExecutorEntry& executor, const ReportMessage& report) {
    ++stats.reports;
    auto it = leases.find(report.lease_id);
    if (it == leases.end() || it->second.executor_id != executor.executor_id) {
      // Nobody wants this job's progress any more: tell it to stop.
      send(executor.route,
           DecisionMessage{.lease_id = report.lease_id, .decision = JobDecision::kStop});
      return;
    }
    Lease& lease = it->second;
    lease.deadline = clock->steady_now() + options.lease_timeout;
    bool stop = false;
    auto metric = report.metrics.find(objective_metric);
    if (metric != report.metrics.end()) {
      try {
        if (!std::isnan(metric->second)) lease.work.trial->report(report.step, metric->second);
        stop = lease.work.trial->should_stop();
      } catch (const Error& e) {
        log(describe(lease) + ": cannot store the report of step " + std::to_string(report.step) +
            ": " + e.what());
      }
    }
    send(executor.route,
         DecisionMessage{.lease_id = lease.id,
                         .decision = stop ? JobDecision::kStop : JobDecision::kContinue});
  }

  void on_result(ExecutorEntry& executor, const ResultMessage& result) {
    Lease* lease = held_by(executor, result.lease_id);
    if (!lease) return;
    commit(executor, *lease, [&](Trial& trial) {
      // Every final metric stays with the trial as a user attribute (as a W&B run keeps its
      // summary): test accuracy, the best epoch, whatever the job printed.
      for (const auto& [name, value] : result.metrics) trial.set_user_attr(name, metric_json(value));
      if (trial.stop_requested()) return study.tell(trial, TrialState::kPruned);
      if (!result.values.empty()) return study.tell(trial, result.values);
      auto metric = result.metrics.find(objective_metric);
      if (metric == result.metrics.end()) {
        return study.tell(
            trial, TrialState::kFail,
            "RESULT has no value for the objective metric '" + objective_metric + "'");
      }
      return study.tell(trial, metric->second);
    });
  }

  void on_fail(ExecutorEntry& executor, const FailMessage& fail) {
    Lease* lease = held_by(executor, fail.lease_id);
    if (!lease) return;
    commit(executor, *lease, [&](Trial& trial) {
      Storage& storage = study.storage();
      if (fail.exit_code) {
        storage.set_trial_system_attr(trial.id(), "exit_code", std::to_string(*fail.exit_code));
      }
      if (!fail.log_tail.empty()) {
        storage.set_trial_system_attr(trial.id(), "log_tail", json_string(fail.log_tail));
      }
      log(describe(*lease) + " failed: " + fail.reason);
      return study.tell(trial, TrialState::kFail, fail.reason);
    });
  }

  void on_heartbeat(ExecutorEntry& executor, const HeartbeatMessage& heartbeat) {
    const SteadyTime deadline = clock->steady_now() + options.lease_timeout;
    for (uint64_t id : heartbeat.lease_ids) {
      auto it = leases.find(id);
      if (it != leases.end() && it->second.executor_id == executor.executor_id) {
        it->second.deadline = deadline;
      }
    }
  }

  void on_bye(const std::string& route) {
    auto it = executors.find(route);
    const std::string id = it->second.executor_id;
    log("executor " + id + " said BYE");
    std::vector<uint64_t> held;
    for (const auto& [lease_id, lease] : leases) {
      if (lease.executor_id == id) held.push_back(lease_id);
    }
    for (uint64_t lease_id : held) expire(lease_id, "its executor " + id + " left (BYE)");
    executors.erase(it);
  }

  void handle(RoutedFrames& in) {
    Message message;
    try {
      message = decode(in.frames);
    } catch (const ProtocolError& e) {
      send_error(in.peer, std::string("cannot decode your message: ") + e.what());
      return;
    }
    const MessageType type = message_type(message);
    if (auto* hello = std::get_if<HelloMessage>(&message)) {
      on_hello(in.peer, *hello);
      return;
    }
    auto it = executors.find(in.peer);
    if (it == executors.end()) {
      if (type == MessageType::kError || type == MessageType::kBye) return;  // not worth a reply
      // One ERROR per heartbeat interval and peer: a forgotten executor's queued messages would
      // otherwise each get one.
      const SteadyTime now = clock->steady_now();
      if (unknown_peers.size() > kMaxUnknownPeers) unknown_peers.clear();
      auto [told, first] = unknown_peers.try_emplace(in.peer, now);
      if (!first && now - told->second < options.heartbeat_interval) return;
      told->second = now;
      send_error(in.peer, "unknown executor " + peer_name(in.peer) + ": say HELLO first (got " +
                              std::string(to_string(type)) + ")");
      return;
    }
    ExecutorEntry& executor = it->second;
    executor.last_heard = clock->steady_now();
    std::visit(
        [&](const auto& m) {
          using T = std::decay_t<decltype(m)>;
          if constexpr (std::is_same_v<T, ReadyMessage>) {
            executor.credit = std::clamp(m.free_slots, 0, executor.resources.cpu_slots);
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
            on_bye(in.peer);
          } else {
            send_error(in.peer, std::string("unexpected ") + std::string(to_string(type)) +
                                    " from an executor");
          }
        },
        message);
  }

  // --- Timers -----------------------------------------------------------------------------------

  void on_timers() {
    const SteadyTime now = clock->steady_now();
    std::vector<std::pair<uint64_t, std::string>> overdue;
    for (const auto& [id, lease] : leases) {
      if (now >= lease.deadline) {
        overdue.emplace_back(
            id, "no heartbeat for " +
                    std::to_string(to_ms(now - lease.deadline) + options.lease_timeout.count()) +
                    " ms (lease timeout " + std::to_string(options.lease_timeout.count()) + " ms)");
      }
    }
    for (const auto& [id, why] : overdue) expire(id, why);
    expire_orphans(now);
    for (auto it = executors.begin(); it != executors.end();) {
      if (now - it->second.last_heard >= options.lease_timeout) {
        log("executor " + it->second.executor_id + " is silent for " +
            std::to_string(to_ms(now - it->second.last_heard)) + " ms: forgotten");
        it = executors.erase(it);
      } else {
        ++it;
      }
    }
    if (now >= next_heartbeat) {
      for (const auto& [route, executor] : executors) {
        HeartbeatMessage heartbeat;
        for (const auto& [id, lease] : leases) {
          if (lease.executor_id == executor.executor_id) heartbeat.lease_ids.push_back(id);
        }
        send(route, heartbeat);
      }
      next_heartbeat = now + options.heartbeat_interval;
    }
  }

  milliseconds wait_limit(milliseconds timeout) const {
    SteadyTime next = next_heartbeat;
    for (const auto& [id, lease] : leases) next = std::min(next, lease.deadline);
    for (const auto& [id, orphan] : orphans) next = std::min(next, orphan.deadline);
    auto until =
        std::chrono::duration_cast<milliseconds>(next - clock->steady_now()) + milliseconds(1);
    return std::clamp(until, milliseconds(0), timeout);
  }

  void poll_once(milliseconds timeout) {
    ZmqPollEntry entries[2] = {{.socket = &router->socket()}};
    const size_t n_entries = authenticator ? 2 : 1;
    if (authenticator) entries[1].socket = &authenticator->socket();
    zmq_wait({entries, n_entries}, wait_limit(timeout));
    if (authenticator) authenticator->answer_requests();
    for (int i = 0; i < kMaxMessagesPerTurn; ++i) {
      std::optional<RoutedFrames> in = router->receive();
      if (!in) break;
      try {
        handle(*in);
      } catch (const std::exception& e) {
        send_error(in->peer,
                   std::string("the coordinator could not handle your message: ") + e.what());
      }
    }
    try {
      on_timers();
      dispatch();
    } catch (const std::exception& e) {
      log(std::string("error in the loop (continuing): ") + e.what());
    }
  }

  bool done() const {
    return leases.empty() && retries.empty() && prepared.empty() && orphans.empty() &&
           (draining || exhausted ||
            (options.n_trials && stats.trials_started >= *options.n_trials));
  }

  void drain() {
    if (draining) return;
    draining = true;
    for (Prepared& p : prepared) {
      try {
        study.tell(*p.trial, TrialState::kFail, "not started: the coordinator was drained");
        study.enqueue_trial(p.params);
      } catch (const Error& e) {
        log("trial " + std::to_string(p.trial->number()) + ": cannot requeue it: " + e.what());
      }
    }
    prepared.clear();
    for (const PendingRetry& r : retries) {
      try {
        study.enqueue_trial(r.params);
      } catch (const Error& e) {
        log(std::string("cannot requeue a re-run: ") + e.what());
      }
    }
    retries.clear();
    log("draining: no new trials; " + std::to_string(leases.size()) + " still running");
  }

  void abandon(const std::string& reason) {
    drain();
    orphans.clear();  // still RUNNING in storage: the next coordinator of the study looks again
    for (auto& [id, lease] : leases) {
      Trial& trial = *lease.work.trial;
      try {
        const FrozenTrial failed = study.tell(trial, TrialState::kFail, "abandoned: " + reason);
        ++stats.failed;
        study.enqueue_trial(lease.work.params);
        if (options.on_trial_finished) options.on_trial_finished(failed);
      } catch (const Error& e) {
        log("trial " + std::to_string(trial.number()) + ": cannot abandon it: " + e.what());
      }
      remember_end(id, false, describe(lease) + " was abandoned: " + reason);
    }
    leases.clear();
  }
};

Coordinator::Coordinator(Study study, CoordinatorOptions options)
    : impl_(std::make_unique<Impl>(std::move(study), std::move(options))) {
  CoordinatorOptions& o = impl_->options;
  if (o.endpoint.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "coordinator: no endpoint to bind given");
  }
  if (o.heartbeat_interval <= milliseconds(0) || o.lease_timeout <= o.heartbeat_interval) {
    throw Error(ErrorCode::kInvalidArgument,
                "coordinator: lease_timeout (" + std::to_string(o.lease_timeout.count()) +
                    " ms) must exceed heartbeat_interval (" +
                    std::to_string(o.heartbeat_interval.count()) + " ms), which must be > 0");
  }
  if (o.max_retries < 0 || (o.n_trials && *o.n_trials < 0)) {
    throw Error(ErrorCode::kInvalidArgument, "coordinator: max_retries and n_trials must be >= 0");
  }
  if (impl_->study.directions().size() != 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "coordinator: study '" + impl_->study.name() + "' has " +
                    std::to_string(impl_->study.directions().size()) +
                    " objectives; a command job has one objective metric");
  }
  const JobSpec job =
      parse_job_spec(o.job_json, "coordinator: study '" + impl_->study.name() + "': job");
  impl_->objective_metric = job.objective_metric;
  // A CUDA engine trial takes one GPU per rank, on one executor.
  if (job.kind == JobKind::kEngine && job.engine.backend == "cuda") {
    impl_->gpus_per_trial = job.engine.ranks;
  }
  if (!o.clock) o.clock = system_clock();
  impl_->clock = o.clock.get();
  // Lease ids never repeat, not even across restarts of the coordinator: they start at the
  // wall time in ms, times 1024.
  impl_->next_lease_id = static_cast<uint64_t>(std::chrono::duration_cast<milliseconds>(
                                                   o.clock->system_now().time_since_epoch())
                                                   .count()) *
                             1024 +
                         1;
  impl_->find_orphans();
  impl_->context = std::make_unique<ZmqContext>();
  ZmqSocketOptions socket_options;
  socket_options.max_frame_bytes = static_cast<int64_t>(kMaxMessageBytes) + 1024;
  socket_options.linger = milliseconds(200);
  const CoordinatorSecurity& security = o.security;
  if (security.curve_keys) {
    check_curve_key(security.curve_keys->secret_key, "coordinator: CURVE secret key");
    if (security.executor_keys.empty()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "coordinator: CURVE needs the public keys of the executors to accept");
    }
    // Bound before the router: without it ZeroMQ would let in any client.
    impl_->authenticator = std::make_unique<CurveAuthenticator>(
        *impl_->context, security.executor_keys, [this](const std::string& line) { impl_->log(line); });
    socket_options.curve_public_key = security.curve_keys->public_key;
    socket_options.curve_secret_key = security.curve_keys->secret_key;
  } else if (!security.allow_insecure_tcp && !endpoint_is_local(o.endpoint)) {
    throw Error(ErrorCode::kInvalidArgument,
                "coordinator: '" + o.endpoint +
                    "' can be reached from other hosts, and without CURVE anyone there could "
                    "take trials: give CURVE keys (tuner keygen; --key and --executor-keys) or "
                    "allow plain TCP explicitly (--insecure)");
  }
  impl_->router = std::make_unique<RouterEndpoint>(*impl_->context, o.endpoint, socket_options);
  impl_->next_heartbeat = impl_->clock->steady_now();
  impl_->log("listening on " + impl_->router->endpoint() + " for study '" + impl_->study.name() +
             "'");
}

Coordinator::~Coordinator() {
  for (const auto& [route, executor] : impl_->executors) impl_->send(route, ByeMessage{});
  impl_->router.reset();
  impl_->authenticator.reset();
  impl_->context.reset();
}

const std::string& Coordinator::endpoint() const { return impl_->router->endpoint(); }

void Coordinator::poll_once(std::chrono::milliseconds timeout) { impl_->poll_once(timeout); }

void Coordinator::run(std::stop_token stop) {
  while (!stop.stop_requested() && !impl_->done()) impl_->poll_once(kMaxWait);
}

bool Coordinator::done() const { return impl_->done(); }

void Coordinator::drain() { impl_->drain(); }

void Coordinator::abandon(const std::string& reason) { impl_->abandon(reason); }

bool Coordinator::draining() const { return impl_->draining; }

CoordinatorStats Coordinator::stats() const {
  CoordinatorStats s = impl_->stats;
  s.executors = static_cast<int>(impl_->executors.size());
  s.active_leases = static_cast<int>(impl_->leases.size());
  return s;
}

const Study& Coordinator::study() const { return impl_->study; }

}  // namespace tuner
