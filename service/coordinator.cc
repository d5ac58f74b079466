#include "service/coordinator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "executor/trial_job.h"
#include "executor/transport/curve_authenticator.h"
#include "executor/transport/message_socket.h"
#include "trials/error.h"
#include "trials/protocol.h"
#include "trials/system_attrs.h"

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
// A study whose ask() fails this many times in a row (no trial asked in between) stops.
constexpr int kMaxFailedAsksInARow = 3;
// Peers without HELLO remembered (to rate-limit their ERRORs).
constexpr size_t kMaxUnknownPeers = 10'000;
// Ended leases remembered (to answer resent and stale outcomes).
constexpr size_t kMaxEndedLeases = 100'000;
// After the first node of a multi-node trial fails, how long the coordinator waits for the other
// nodes' outcomes before it tells the trial FAIL, so that the reason names every node that failed
// (the node that died first, and the others whose collectives failed on it).
constexpr milliseconds kNodeFailureSettle{1000};
// Keys one multi-node trial's store may hold (a Gloo rendezvous sets one per rank).
constexpr size_t kMaxStoreKeys = 4096;

std::string json_string(const std::string& s) { return nlohmann::json(s).dump(); }

int64_t to_ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<milliseconds>(d).count();
}

// A final metric as JSON text the way Python's json.dumps writes it (NaN and the infinities
// included), which is how Optuna's tools read user attributes; one the job wrote as an integer
// stays one.
std::string metric_json(double value, bool integer) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  if (integer && value == std::trunc(value) && std::abs(value) <= 0x1p53) {
    return std::to_string(static_cast<int64_t>(value));
  }
  return nlohmann::json(value).dump();
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
  bool asked_in_batch = false;  // asked in the open batch: gone if the batch fails
};

// A trial left RUNNING by an earlier coordinator of the study: an executor may still run it and
// take it back (HELLO lists it); unclaimed at `deadline`, it fails and is re-run.
struct Orphan {
  int number = -1;
  SteadyTime deadline{};
};

// One study and what the coordinator keeps for it.
struct StudyRun {
  StudyRunId id = 0;
  Study study;
  StudyRunOptions options;
  std::string objective_metric;
  // The job (options.job_json parsed): what placing a trial takes, where its checkpoint lives.
  std::shared_ptr<const TrialJob> job;
  int gpus_per_trial = 0;   // GPUs on each executor of a trial (job->needs())
  int nodes_per_trial = 1;  // executors per trial (job->needs())
  int told_executors = 0;   // the executors (fewer than its nodes) it last logged it waits with
  // Re-runs WAITING in storage (Study::fail_and_retry made them with their lineage), which ask()
  // serves before new samples: asked for even when the budget of new trials is spent.
  int pending_retries = 0;
  std::deque<Prepared> prepared;
  std::map<int64_t, Orphan> orphans;  // by trial id
  bool exhausted = false;             // the sampler has nothing left
  bool draining = false;
  bool paused = false;
  SteadyTime ask_blocked_until{};  // after a failed ask(): wait before asking again
  int failed_asks_in_a_row = 0;
  // Why the study's run stopped early (sampling kept failing); it drains then.
  std::optional<std::string> failure;
  int leased = 0;                  // its entries in the lease table
  int finishing = 0;               // of those, the ones whose outcome the open batch commits
  CoordinatorStats stats;

  // An earlier coordinator's trials that no executor took back yet count against
  // max_concurrency: their executors may still run them.
  bool may_lease_more() const {
    return options.max_concurrency <= 0 ||
           leased - finishing + static_cast<int>(orphans.size()) < options.max_concurrency;
  }
  bool may_start_new() const {
    return !exhausted && (!options.n_trials || stats.trials_started < *options.n_trials);
  }
  // Something to lease now or later (draining or paused studies wait).
  bool wants_slots() const {
    return !draining && !paused && may_lease_more() &&
           (!prepared.empty() || pending_retries > 0 || may_start_new());
  }
  // Draining, its re-runs wait in storage for the study's next run.
  bool done() const {
    return leased == 0 && (draining || pending_retries == 0) && prepared.empty() &&
           orphans.empty() &&
           (draining || exhausted ||
            (options.n_trials && stats.trials_started >= *options.n_trials));
  }
};

struct Lease {
  uint64_t id = 0;
  StudyRun* run = nullptr;
  std::string executor_id;
  std::string route;
  // The trial (its live handle in work.trial; a multi-node trial's nodes other than 0 have none:
  // node 0's lease tells the outcome).
  Prepared work;
  int64_t trial_id = -1;
  int trial_number = -1;
  // A node of a multi-node trial: its group (the lease id of node 0; 0 for one-node trials).
  uint64_t group = 0;
  int node = 0;
  int nodes = 1;
  SteadyTime deadline{};
  std::vector<int> gpus;  // the executor's GPUs given to this trial
  // Group commit: TRIAL goes out once the batch that leased it is durable.
  bool unsent = false;
  // Group commit: its outcome is told in the open batch; ACKed once that is durable.
  bool outcome_pending = false;
};

// The leases of one attempt of a multi-node trial, and its rendezvous store. While it is not
// settled, the lease of node 0 is in the lease table (the others may have ended).
struct NodeGroup {
  std::vector<uint64_t> leases;  // by node
  std::map<std::string, std::string> store;
  std::vector<std::string> failures;      // "node 1 of 2 (executor b): ...", in the order they came
  std::optional<FailMessage> first_fail;  // its exit code and log tail go with the trial
  std::vector<uint64_t> failed_leases;    // FAILs not ACKed yet: ACKed once the trial is told
  int ended = 0;                          // nodes whose part ended (well or not)
  std::optional<SteadyTime> settle_at;    // a node failed: tell the trial FAIL then
  bool settled = false;                   // the trial's outcome is told
};

struct EndedLease {
  bool committed = false;  // false: expired
  std::string detail;
};

// A message received, decoded (or not: then `message` is empty and `problem` says why).
struct Inbound {
  std::string peer;
  std::optional<Message> message;
  std::string problem;
};

}  // namespace

struct Coordinator::Impl {
  explicit Impl(CoordinatorServiceOptions o) : options(std::move(o)) {}

  // Constant after construction.
  CoordinatorServiceOptions options;
  Clock* clock = nullptr;

  // State below is used by the loop's thread only.
  std::unique_ptr<ZmqContext> context;
  std::unique_ptr<CurveAuthenticator> authenticator;  // with CURVE; before the router, which
                                                     // must close first
  std::unique_ptr<RouterEndpoint> router;
  std::map<StudyRunId, std::unique_ptr<StudyRun>> runs;
  StudyRunId next_run_id = 0;
  std::map<std::string, ExecutorEntry> executors;  // by route
  std::map<uint64_t, Lease> leases;
  std::map<uint64_t, NodeGroup> groups;  // by the lease of node 0
  std::map<uint64_t, EndedLease> ended;
  std::deque<uint64_t> ended_order;
  std::map<std::string, SteadyTime> unknown_peers;  // route -> when it was last told to say HELLO
  uint64_t next_lease_id = 1;
  SteadyTime next_heartbeat{};
  CoordinatorStats stats;  // service-wide counts only (errors_sent, unknown leases refused)
  // Group commit (in_batch): while a batch is open, what may go out only once it is durable.
  bool batching = false;
  std::vector<std::pair<uint64_t, FrozenTrial>> told_in_batch;  // lease, outcome: ACK after
  std::vector<uint64_t> leased_in_batch;                        // TRIAL after
  // Failed asks whose FAIL trial the open batch stores: on_trial_finished after.
  std::vector<std::pair<StudyRun*, FrozenTrial>> ask_failures_in_batch;
  // Messages received and not yet handled, in arrival order. Their senders were credited on
  // receipt (note_alive): a lease or executor is never given up for silent while what it sent
  // waits here.
  std::deque<Inbound> backlog;

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

  std::string describe(const Lease& lease) const {
    return "lease " + std::to_string(lease.id) + " (" +
           (runs.size() > 1 ? "study " + lease.run->study.name() + ", " : std::string()) +
           "trial " + std::to_string(lease.trial_number) + ", attempt " +
           std::to_string(lease.work.attempt) +
           (lease.nodes > 1
                ? ", node " + std::to_string(lease.node) + " of " + std::to_string(lease.nodes)
                : std::string()) +
           ", executor " + lease.executor_id + ")";
  }

  static std::string node_label(const Lease& lease) {
    return "node " + std::to_string(lease.node) + " of " + std::to_string(lease.nodes) +
           " (executor " + lease.executor_id + ")";
  }

  void remember_end(uint64_t lease_id, bool committed, std::string detail) {
    ended[lease_id] = EndedLease{committed, std::move(detail)};
    ended_order.push_back(lease_id);
    while (ended_order.size() > kMaxEndedLeases) {
      ended.erase(ended_order.front());
      ended_order.pop_front();
    }
  }

  // A study's `leased` counts trials: a multi-node trial's node 0 only.
  void add_lease(Lease lease) {
    if (lease.node == 0) ++lease.run->leased;
    leases.emplace(lease.id, std::move(lease));
  }

  // Removes a lease from the table and returns it.
  Lease take_lease(std::map<uint64_t, Lease>::iterator it) {
    Lease lease = std::move(it->second);
    leases.erase(it);
    if (lease.node == 0) --lease.run->leased;
    return lease;
  }

  // --- Studies ----------------------------------------------------------------------------------

  StudyRunId add_study(Study study, StudyRunOptions o) {
    for (const auto& [id, run] : runs) {
      if (run->study.name() == study.name()) {
        throw Error(ErrorCode::kAlreadyExists,
                    "coordinator: study '" + study.name() + "' runs here already");
      }
    }
    if (study.directions().size() != 1) {
      throw Error(ErrorCode::kInvalidArgument,
                  "coordinator: study '" + study.name() + "' has " +
                      std::to_string(study.directions().size()) +
                      " objectives; a job has one objective metric");
    }
    if (o.max_retries < 0 || (o.n_trials && *o.n_trials < 0)) {
      throw Error(ErrorCode::kInvalidArgument,
                  "coordinator: study '" + study.name() + "': max_retries and n_trials must be >= 0");
    }
    std::shared_ptr<const TrialJob> job =
        parse_trial_job(o.job_json, "coordinator: study '" + study.name() + "': job");
    auto run = std::make_unique<StudyRun>(StudyRun{.study = std::move(study), .options = std::move(o)});
    run->id = next_run_id++;
    run->objective_metric = job->objective_metric();
    run->gpus_per_trial = job->needs().gpus_per_node;
    run->nodes_per_trial = job->needs().nodes;
    run->job = std::move(job);
    find_orphans(*run);
    const StudyRunId id = run->id;
    runs.emplace(id, std::move(run));
    return id;
  }

  // --- Budget and dispatch ----------------------------------------------------------------------

  // The next trial of `run` to lease: one already asked, or a new ask() (a waiting re-run first,
  // which the study serves before new samples). nullopt when its budget is spent or the study
  // cannot give one now.
  std::optional<Prepared> next_work(StudyRun& run) {
    if (!run.prepared.empty()) {
      Prepared p = std::move(run.prepared.front());
      run.prepared.pop_front();
      return p;
    }
    if (run.draining || (run.pending_retries == 0 && !run.may_start_new())) return std::nullopt;
    if (clock->steady_now() < run.ask_blocked_until) return std::nullopt;
    std::optional<Trial> trial;
    try {
      trial.emplace(run.options.space ? run.study.ask(*run.options.space) : run.study.ask());
    } catch (const Error& e) {
      // Sampling failed after the trial was stored: it is FAIL, and counted as such.
      if (const auto* ask_error = dynamic_cast<const AskError*>(&e);
          ask_error && ask_error->failed_trial()) {
        ++run.stats.failed_asks;
        if (batching) {
          ask_failures_in_batch.emplace_back(&run, *ask_error->failed_trial());
        } else if (run.options.on_trial_finished) {
          run.options.on_trial_finished(*ask_error->failed_trial());
        }
      }
      if (e.code() == ErrorCode::kFailedPrecondition) {
        if (!run.exhausted) log(std::string("no more trials: ") + e.what());
        run.exhausted = true;
        run.pending_retries = 0;  // none waits: ask() would have served it
        return std::nullopt;
      }
      ask_failed(run, e.what(), /*transient=*/e.code() == ErrorCode::kUnavailable);
      return std::nullopt;
    } catch (const std::exception& e) {
      ask_failed(run, e.what(), /*transient=*/false);
      return std::nullopt;
    }
    run.failed_asks_in_a_row = 0;
    Prepared p;
    p.params = trial->params();
    p.history = trial->retry_history();
    p.attempt = static_cast<int>(p.history.size());
    if (p.attempt > 0) {
      // A re-run (made by fail_and_retry here or by an earlier coordinator, or by the study's
      // stale-trial policy): not a new trial of the budget.
      ++run.stats.retries_started;
      if (run.pending_retries > 0) --run.pending_retries;
    } else {
      ++run.stats.trials_started;
    }
    p.trial = std::move(trial);
    p.asked_in_batch = batching;
    return p;
  }

  // An ask() that failed (not for an exhausted sampler): asked again a heartbeat interval later,
  // unless it failed kMaxFailedAsksInARow times in a row: then the study stops (drains) with
  // that error, instead of storing a FAIL trial every interval for ever. A transient failure (a
  // busy database: kUnavailable) is retried without counting.
  void ask_failed(StudyRun& run, const std::string& what, bool transient) {
    if (!transient) ++run.failed_asks_in_a_row;
    if (run.failed_asks_in_a_row >= kMaxFailedAsksInARow) {
      run.failure = "sampling failed " + std::to_string(run.failed_asks_in_a_row) +
                    " times in a row: " + what;
      log("study '" + run.study.name() + "': " + *run.failure +
          "; no new trials are started (the running ones finish)");
      drain(run);
      return;
    }
    log("study '" + run.study.name() + "': ask() failed (" +
        (transient ? std::string("transient")
                   : std::to_string(run.failed_asks_in_a_row) + " of " +
                         std::to_string(kMaxFailedAsksInARow) + " in a row stop the study") +
        "; retrying in one heartbeat interval): " + what);
    run.ask_blocked_until = clock->steady_now() + options.heartbeat_interval;
  }

  // The executor's GPUs that none of its leases holds, in its order.
  std::vector<int> free_gpus(const std::string& route, const ExecutorEntry& executor) const {
    std::vector<int> free;
    for (const GpuInfo& g : executor.resources.gpus) {
      const bool held = std::any_of(leases.begin(), leases.end(), [&](const auto& l) {
        return l.second.route == route && !l.second.outcome_pending &&
               std::find(l.second.gpus.begin(), l.second.gpus.end(), g.index) != l.second.gpus.end();
      });
      if (!held) free.push_back(g.index);
    }
    return free;
  }

  // The studies that want a slot of `executor`, the fewest leased first (fair sharing; ties go to
  // the study added first).
  std::vector<StudyRun*> claimants(const std::string& route, const ExecutorEntry& executor) const {
    std::vector<StudyRun*> wanting;
    for (const auto& [id, run] : runs) {
      if (!run->wants_slots() || run->nodes_per_trial > 1) continue;  // groups: dispatch_groups
      if (run->gpus_per_trial > 0 &&
          static_cast<int>(free_gpus(route, executor).size()) < run->gpus_per_trial) {
        continue;  // waits for GPUs
      }
      wanting.push_back(run.get());
    }
    std::stable_sort(wanting.begin(), wanting.end(),
                     [](const StudyRun* a, const StudyRun* b) { return a->leased < b->leased; });
    return wanting;
  }

  // The most trials an executor holds at once: its slots, and as many again that it may take
  // ahead, to start as its slots free (ExecutorOptions::prefetch), when its READY offers them.
  static int lease_limit(const ExecutorEntry& executor) { return 2 * executor.resources.cpu_slots; }

  // The leases an executor holds whose outcome is not being committed.
  int held_by_executor(const std::string& route) const {
    return static_cast<int>(std::count_if(leases.begin(), leases.end(), [&](const auto& l) {
      return l.second.route == route && !l.second.outcome_pending;
    }));
  }

  // Multi-node trials: each goes to `nodes` distinct executors at once, each with a free slot
  // (not one taken ahead: every node must start now, or the others wait for it) and, for CUDA,
  // the GPUs of its ranks; or to none.
  void dispatch_groups() {
    for (auto& [id, run] : runs) {
      if (run->nodes_per_trial <= 1) continue;
      const int joined = static_cast<int>(executors.size());
      if (run->wants_slots() && joined < run->nodes_per_trial) {
        if (joined > 0 && joined != run->told_executors) {
          log("study '" + run->study.name() + "': each trial runs on " +
              std::to_string(run->nodes_per_trial) + " executors (the job's \"nodes\"), and " +
              std::to_string(joined) + " have joined: its trials wait for more");
          run->told_executors = joined;
        }
        continue;
      }
      while (run->wants_slots()) {
        std::vector<ExecutorEntry*> chosen;
        for (auto& [route, executor] : executors) {
          if (executor.credit <= 0 || held_by_executor(route) >= executor.resources.cpu_slots) {
            continue;
          }
          if (run->gpus_per_trial > 0 &&
              static_cast<int>(free_gpus(route, executor).size()) < run->gpus_per_trial) {
            continue;
          }
          chosen.push_back(&executor);
          if (static_cast<int>(chosen.size()) == run->nodes_per_trial) break;
        }
        if (static_cast<int>(chosen.size()) < run->nodes_per_trial) break;
        std::optional<Prepared> work = next_work(*run);
        if (!work) break;
        if (!lease_group(chosen, *run, std::move(*work))) break;
      }
    }
  }

  // Leases `work` to `nodes` (node n to nodes[n]) and sends their TRIALs (inside a batch: once
  // the batch is durable); false (and the work kept for other executors) when one is gone.
  bool lease_group(const std::vector<ExecutorEntry*>& nodes, StudyRun& run, Prepared work) {
    const uint64_t group_id = next_lease_id;
    NodeGroup& group = groups[group_id];
    const int64_t trial_id = work.trial->id();
    const int number = work.trial->number();
    for (size_t n = 0; n < nodes.size(); ++n) {
      ExecutorEntry& executor = *nodes[n];
      Lease lease;
      lease.id = next_lease_id++;
      lease.run = &run;
      lease.executor_id = executor.executor_id;
      lease.route = executor.route;
      lease.trial_id = trial_id;
      lease.trial_number = number;
      lease.group = group_id;
      lease.node = static_cast<int>(n);
      lease.nodes = static_cast<int>(nodes.size());
      if (n == 0) {
        lease.work = std::move(work);
      } else {
        const Prepared& first = leases.at(group_id).work;
        lease.work.params = first.params;
        lease.work.attempt = first.attempt;
        lease.work.history = first.history;
      }
      if (run.gpus_per_trial > 0) {
        lease.gpus = free_gpus(executor.route, executor);
        lease.gpus.resize(static_cast<size_t>(run.gpus_per_trial));
      }
      lease.deadline = clock->steady_now() + options.lease_timeout;
      --executor.credit;
      group.leases.push_back(lease.id);
      if (batching) {
        lease.unsent = true;
        leased_in_batch.push_back(lease.id);
      }
      add_lease(std::move(lease));
    }
    if (batching) return true;
    for (uint64_t lease_id : std::vector<uint64_t>(group.leases)) {
      auto it = leases.find(lease_id);
      if (it == leases.end() || !send_trial(it->second)) return false;
    }
    return true;
  }

  // The executors kept from single-node trials for multi-node trials whose turn it is. Without
  // this, single-node trials would take each slot as it frees, and a trial that needs `nodes`
  // free executors at once could wait forever. A multi-node study that wants a slot and has no
  // more trials leased than the single-node studies that want one (the fair share of claimants())
  // reserves its `nodes` executors: those with enough GPUs that hold the fewest leases. They take
  // no single-node trial, not even ahead, until dispatch_groups() leases the trial to them.
  std::set<std::string> reserved_for_groups() const {
    std::set<std::string> reserved;
    int fewest_single_node = std::numeric_limits<int>::max();
    for (const auto& [id, run] : runs) {
      if (run->nodes_per_trial == 1 && run->wants_slots()) {
        fewest_single_node = std::min(fewest_single_node, run->leased);
      }
    }
    for (const auto& [id, run] : runs) {
      if (run->nodes_per_trial <= 1 || !run->wants_slots() || run->leased > fewest_single_node) {
        continue;
      }
      std::vector<std::pair<int, const std::string*>> eligible;  // (leases held, route)
      for (const auto& [route, executor] : executors) {
        if (reserved.contains(route)) continue;
        if (static_cast<int>(executor.resources.gpus.size()) < run->gpus_per_trial) continue;
        eligible.emplace_back(held_by_executor(route), &route);
      }
      if (static_cast<int>(eligible.size()) < run->nodes_per_trial) continue;
      std::stable_sort(eligible.begin(), eligible.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (int n = 0; n < run->nodes_per_trial; ++n) reserved.insert(*eligible[n].second);
    }
    return reserved;
  }

  void dispatch() {
    dispatch_groups();
    const std::set<std::string> reserved = reserved_for_groups();
    for (auto& [route, executor] : executors) {
      if (reserved.contains(route)) continue;
      // A lease whose outcome the open batch commits frees its slot already.
      int held = static_cast<int>(std::count_if(leases.begin(), leases.end(), [&](const auto& l) {
        return l.second.route == route && !l.second.outcome_pending;
      }));
      while (executor.credit > 0 && held < lease_limit(executor)) {
        bool leased = false;
        for (StudyRun* run : claimants(route, executor)) {
          std::vector<int> gpus;
          if (run->gpus_per_trial > 0) {
            gpus = free_gpus(route, executor);
            gpus.resize(static_cast<size_t>(run->gpus_per_trial));
          }
          std::optional<Prepared> work = next_work(*run);
          if (!work) continue;  // nothing from this study now: the next may have some
          if (!lease_to(executor, *run, std::move(*work), std::move(gpus))) break;
          leased = true;
          break;
        }
        if (!leased) break;
        ++held;
      }
    }
  }

  // Leases `work` to the executor and sends TRIAL (inside a batch: once the batch is durable);
  // false (and the work kept for another executor) when the executor is gone.
  bool lease_to(ExecutorEntry& executor, StudyRun& run, Prepared work, std::vector<int> gpus) {
    Lease lease;
    lease.id = next_lease_id++;
    lease.run = &run;
    lease.executor_id = executor.executor_id;
    lease.route = executor.route;
    lease.trial_id = work.trial->id();
    lease.trial_number = work.trial->number();
    lease.work = std::move(work);
    lease.gpus = std::move(gpus);
    lease.deadline = clock->steady_now() + options.lease_timeout;
    const uint64_t id = lease.id;
    --executor.credit;
    if (batching) {
      lease.unsent = true;
      leased_in_batch.push_back(id);
      add_lease(std::move(lease));
      return true;
    }
    add_lease(std::move(lease));
    return send_trial(leases.at(id));
  }

  // Sends the lease's TRIAL; when the executor cannot be reached, the lease is undone and its
  // trial waits for another executor (false).
  bool send_trial(Lease& lease) {
    const Prepared& work = lease.work;
    TrialMessage message{.lease_id = lease.id,
                         .study_name = lease.run->study.name(),
                         .trial_id = lease.trial_id,
                         .number = lease.trial_number,
                         .attempt = work.attempt,
                         .params = work.params,
                         .job_json = lease.run->options.job_json,
                         .heartbeat_interval_ms = options.heartbeat_interval.count(),
                         .gpus = lease.gpus,
                         .node = lease.node,
                         .nodes = lease.nodes};
    // The lineage's first trial names the checkpoint, so that a re-run after a lost lease
    // continues where the lost attempt last saved.
    const int64_t first = work.history.empty() ? lease.trial_number : work.history.front();
    if (std::string path = lease.run->job->checkpoint_path(first); !path.empty()) {
      message.checkpoint_path = std::move(path);
    }
    lease.unsent = false;
    if (send(lease.route, message)) return true;
    log("executor " + lease.executor_id + " is unreachable; trial " +
        std::to_string(lease.trial_number) + " waits for another");
    auto executor = executors.find(lease.route);
    if (executor != executors.end()) executor->second.credit = 0;
    if (lease.group != 0) {
      undo_group(lease.group, "executor " + lease.executor_id + " of another node was unreachable");
      return false;
    }
    Lease undone = take_lease(leases.find(lease.id));
    undone.work.asked_in_batch = false;
    undone.run->prepared.push_front(std::move(undone.work));
    return false;
  }

  // Takes back every lease of a multi-node trial not yet under way (a node's executor could not
  // be reached): the trial waits for other executors. Nodes that got their TRIAL stop when their
  // heartbeats no longer list their leases.
  void undo_group(uint64_t group_id, const std::string& why) {
    auto g = groups.find(group_id);
    if (g == groups.end()) return;
    std::optional<Prepared> work;
    StudyRun* run = nullptr;
    for (uint64_t lease_id : g->second.leases) {
      auto it = leases.find(lease_id);
      if (it == leases.end()) continue;
      Lease lease = take_lease(it);
      if (lease.node == 0) {
        work = std::move(lease.work);
        run = lease.run;
      }
      remember_end(lease.id, false,
                   "lease " + std::to_string(lease.id) + " was taken back: " + why);
    }
    groups.erase(g);
    if (run && work && work->trial) {
      work->asked_in_batch = false;
      run->prepared.push_front(std::move(*work));
    }
  }

  // --- Group commit -----------------------------------------------------------------------------

  // Runs `body` (which must not throw) as one storage batch of the study (Study::run_batch) when
  // the coordinator runs one study (with several, every write commits on its own): the outcomes it tells and the trials it asks are committed together, and
  // only then are the ACKs and TRIALs sent, so an outcome is durable before its ACK and a trial
  // before anyone runs it. When the commit fails, nothing of it is stored: the outcomes are not
  // ACKed (their executors send them again) and the trials asked are dropped.
  void in_batch(const std::function<void()>& body) {
    if (runs.size() != 1) {
      body();
      return;
    }
    StudyRun& run = *runs.begin()->second;
    batching = true;
    try {
      run.study.run_batch(body);
    } catch (const std::exception& e) {
      batching = false;
      undo_batch(run, e.what());
      return;
    }
    batching = false;
    std::vector<std::pair<uint64_t, FrozenTrial>> told;
    told.swap(told_in_batch);
    std::vector<uint64_t> leased;
    leased.swap(leased_in_batch);
    std::vector<std::pair<StudyRun*, FrozenTrial>> ask_failures;
    ask_failures.swap(ask_failures_in_batch);
    for (auto& [lease_id, finished] : told) {
      auto it = leases.find(lease_id);
      if (it != leases.end()) acknowledge(it, finished);
    }
    for (const auto& [failed_run, failed] : ask_failures) {
      if (failed_run->options.on_trial_finished) failed_run->options.on_trial_finished(failed);
    }
    for (uint64_t lease_id : leased) {
      auto it = leases.find(lease_id);
      if (it != leases.end() && it->second.unsent) send_trial(it->second);
    }
  }

  void undo_batch(StudyRun& run, const std::string& why) {
    log("cannot commit this round's outcomes and new trials (the outcomes are to be sent again, "
        "the trials asked again): " + why);
    for (const auto& [lease_id, finished] : told_in_batch) {
      auto it = leases.find(lease_id);
      if (it != leases.end() && it->second.outcome_pending) {
        it->second.outcome_pending = false;
        --it->second.run->finishing;
      }
    }
    told_in_batch.clear();
    for (const auto& [failed_run, failed] : ask_failures_in_batch) --failed_run->stats.failed_asks;
    ask_failures_in_batch.clear();  // their FAIL trials were not stored either
    for (uint64_t lease_id : leased_in_batch) {
      auto it = leases.find(lease_id);
      if (it == leases.end()) continue;
      Lease lease = take_lease(it);
      auto executor = executors.find(lease.route);
      if (executor != executors.end()) ++executor->second.credit;
      if (lease.group != 0) groups.erase(lease.group);
      if (lease.node > 0) continue;  // node 0's lease holds the trial
      Prepared& work = lease.work;
      if (!work.asked_in_batch) {  // asked in an earlier round: stored, and still to run
        lease.run->prepared.push_front(std::move(work));
        continue;
      }
      // Not stored: the trial does not exist. A re-run's WAITING trial waits again.
      if (work.attempt > 0) {
        --lease.run->stats.retries_started;
        ++lease.run->pending_retries;
      } else {
        --lease.run->stats.trials_started;
      }
    }
    leased_in_batch.clear();
    run.ask_blocked_until = clock->steady_now() + options.heartbeat_interval;
  }

  // --- Lease ends -------------------------------------------------------------------------------

  void expire(uint64_t lease_id, const std::string& why) {
    auto it = leases.find(lease_id);
    if (it == leases.end()) return;
    if (it->second.group != 0) {
      expire_node(it, why);
      return;
    }
    Lease lease = take_lease(it);
    ++lease.run->stats.leases_expired;
    const std::string reason = describe(lease) + " expired: " + why;
    log(reason);
    std::string detail = "lease " + std::to_string(lease.id) + " of trial " +
                         std::to_string(lease.work.trial->number()) + " expired (" + why + ")";
    if (fail_and_rerun(*lease.run, lease.work, reason)) {
      detail += "; the trial is run again as a new trial";
    }
    remember_end(lease.id, false, detail);
  }

  // A node of a multi-node trial is lost: the attempt fails at once on every node (the others'
  // leases end, so their executors stop them) and, as for any lost lease, the trial runs again.
  void expire_node(std::map<uint64_t, Lease>::iterator it, const std::string& why) {
    Lease lost = take_lease(it);
    ++lost.run->stats.leases_expired;
    auto g = groups.find(lost.group);
    if (g == groups.end() || g->second.settled) {  // the trial was told already: nothing is lost
      remember_end(lost.id, false, describe(lost) + " expired after its trial was told");
      forget_group_if_done(lost.group);
      return;
    }
    NodeGroup& group = g->second;
    group.failures.push_back(node_label(lost) + ": lease expired: " + why);
    const std::string reason =
        "trial " + std::to_string(lost.trial_number) + " lost a node: " + join_failures(group);
    log(describe(lost) + " expired: " + why + "; the trial fails on every node");
    // Node 0's lease holds the trial: it is `lost`, or still in the table (not settled).
    std::optional<Lease> first;
    if (lost.node != 0) {
      auto f = leases.find(group.leases.front());
      if (f != leases.end()) first = take_lease(f);
    }
    Lease* holder = lost.node == 0 ? &lost : first ? &*first : nullptr;
    std::string detail = "lease " + std::to_string(lost.id) + " of trial " +
                         std::to_string(lost.trial_number) + " expired (" + why + ")";
    const bool rerun =
        holder && holder->work.trial && fail_and_rerun(*holder->run, holder->work, reason);
    if (rerun) detail += "; the trial is run again as a new trial";
    remember_end(lost.id, false, detail);
    group.settled = true;
    if (first) end_node_lease(group, std::move(*first), reason, /*committed=*/true);
    end_group_leases(lost.group, reason);
  }

  // "node 1 of 2 (executor b): exited with code 3; node 0 of 2 (executor a): ..."
  static std::string join_failures(const NodeGroup& group) {
    std::string text;
    for (const std::string& f : group.failures) text += (text.empty() ? "" : "; ") + f;
    return text;
  }

  // A lease of a group whose trial was told: a FAIL it sent is ACKed now (the trial's FAIL is
  // committed); otherwise its outcome, should it come, is refused and its executor stops it.
  void end_node_lease(NodeGroup& group, Lease lease, const std::string& reason, bool committed) {
    auto failed = std::find(group.failed_leases.begin(), group.failed_leases.end(), lease.id);
    if (failed != group.failed_leases.end()) {
      group.failed_leases.erase(failed);
      remember_end(lease.id, committed, "");
      send(lease.route, AckMessage{.lease_id = lease.id});
      return;
    }
    remember_end(lease.id, false,
                 describe(lease) + " ended: the trial was told on another node (" + reason + ")");
  }

  // Ends every lease of a settled group still in the table, then forgets the group.
  void end_group_leases(uint64_t group_id, const std::string& reason) {
    auto g = groups.find(group_id);
    if (g == groups.end()) return;
    for (uint64_t lease_id : std::vector<uint64_t>(g->second.leases)) {
      auto it = leases.find(lease_id);
      if (it != leases.end()) end_node_lease(g->second, take_lease(it), reason, true);
    }
    groups.erase(g);
  }

  void forget_group_if_done(uint64_t group_id) {
    auto g = groups.find(group_id);
    if (g == groups.end() || !g->second.settled) return;
    const bool any = std::any_of(g->second.leases.begin(), g->second.leases.end(),
                                 [&](uint64_t id) { return leases.contains(id); });
    if (!any) groups.erase(g);
  }

  // A node's FAIL (or, from node 0, its end without a RESULT the trial can take): remembered;
  // the trial is told FAIL when every node has ended or kNodeFailureSettle later, with every
  // node's reason (settle_failed_groups).
  void on_node_fail(Lease& lease, const FailMessage& fail) {
    auto g = groups.find(lease.group);
    if (g == groups.end() || g->second.settled) {
      // The trial was told (node 0's RESULT): this node's end changes nothing.
      log(describe(lease) + " failed after its trial was told: " + fail.reason);
      const uint64_t group_id = lease.group;
      Lease ended_lease = take_lease(leases.find(lease.id));
      remember_end(ended_lease.id, true, "");
      send(ended_lease.route,
           AckMessage{.lease_id = ended_lease.id, .reason = "already committed"});
      forget_group_if_done(group_id);
      return;
    }
    NodeGroup& group = g->second;
    if (std::find(group.failed_leases.begin(), group.failed_leases.end(), lease.id) !=
        group.failed_leases.end()) {
      return;  // sent again: its ACK comes when the trial is told
    }
    log(describe(lease) + " failed: " + fail.reason);
    group.failures.push_back(node_label(lease) + ": " + fail.reason);
    if (!group.first_fail) group.first_fail = fail;
    group.failed_leases.push_back(lease.id);
    ++group.ended;
    lease.deadline = clock->steady_now() + options.lease_timeout;
    const SteadyTime now = clock->steady_now();
    if (!group.settle_at)
      group.settle_at = now + std::min(kNodeFailureSettle, options.lease_timeout);
    if (group.ended >= static_cast<int>(group.leases.size())) group.settle_at = now;
  }

  // A node other than 0 ended well: its part is done (node 0's RESULT tells the trial).
  void on_node_done(Lease& lease) {
    const uint64_t group_id = lease.group;
    auto g = groups.find(group_id);
    const bool settled = g == groups.end() || g->second.settled;
    Lease done = take_lease(leases.find(lease.id));
    remember_end(done.id, true, "");
    send(done.route, AckMessage{.lease_id = done.id,
                                .reason = settled ? "already committed"
                                                  : "node " + std::to_string(done.node) +
                                                        " done; node 0 tells the trial"});
    if (g == groups.end()) return;
    NodeGroup& group = g->second;
    ++group.ended;
    if (!settled && group.settle_at && group.ended >= static_cast<int>(group.leases.size())) {
      group.settle_at = clock->steady_now();
    }
    forget_group_if_done(group_id);
  }

  // Tells FAIL for each multi-node trial whose nodes failed and whose settle time has come.
  void settle_failed_groups(SteadyTime now) {
    std::vector<uint64_t> due;
    for (const auto& [id, group] : groups) {
      if (!group.settled && group.settle_at && now >= *group.settle_at) due.push_back(id);
    }
    for (uint64_t group_id : due) {
      NodeGroup& group = groups.at(group_id);
      auto first = leases.find(group.leases.front());
      if (first == leases.end()) {  // not expected: node 0's lease stays until the group settles
        group.settled = true;
        end_group_leases(group_id, "node 0's lease ended");
        continue;
      }
      Lease& holder = first->second;
      StudyRun& run = *holder.run;
      const std::string reason = "trial " + std::to_string(holder.trial_number) +
                                 " failed on its nodes: " + join_failures(group);
      try {
        Storage& storage = run.study.storage();
        const FailMessage& fail = *group.first_fail;
        if (fail.exit_code) {
          storage.set_trial_system_attr(holder.trial_id, "exit_code",
                                        std::to_string(*fail.exit_code));
        }
        if (!fail.log_tail.empty()) {
          storage.set_trial_system_attr(holder.trial_id, "log_tail", json_string(fail.log_tail));
        }
        const FrozenTrial failed = run.study.tell(*holder.work.trial, TrialState::kFail, reason);
        ++run.stats.failed;
        if (run.options.on_trial_finished) run.options.on_trial_finished(failed);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kFailedPrecondition) {
          log(describe(holder) +
              ": cannot commit the failure (trying again in one heartbeat "
              "interval): " +
              e.what());
          group.settle_at = now + options.heartbeat_interval;
          continue;
        }
        log(describe(holder) + ": the trial was finished elsewhere: " + e.what());
      }
      log(reason);
      group.settled = true;
      end_group_leases(group_id, reason);
    }
  }

  // Tells a lost trial FAIL and, up to max_retries attempts, makes its re-run in the same storage
  // step (Study::fail_and_retry: a WAITING trial with the same params and the lineage in
  // "failed_trial" and "retry_history", so that the attempt count goes on across restarts of the
  // coordinator and the re-run is not a new trial of the budget). True when a re-run was made.
  bool fail_and_rerun(StudyRun& run, Prepared& work, const std::string& reason) {
    Trial& trial = *work.trial;
    Study::Rerun rerun;
    try {
      rerun = run.study.fail_and_retry(trial, reason, run.options.max_retries);
    } catch (const Error& e) {
      // Finished elsewhere (kFailedPrecondition) or the storage refuses: in the second case the
      // trial stays RUNNING and the study's stale-trial policy takes it when it is loaded again.
      log("trial " + std::to_string(trial.number()) + ": cannot record the expiry: " + e.what());
      return false;
    }
    ++run.stats.failed;
    if (run.options.on_trial_finished) run.options.on_trial_finished(rerun.failed);
    if (!rerun.retry) {
      log("trial " + std::to_string(trial.number()) +
          " is not run again: " + std::to_string(work.attempt + 1) +
          " attempt(s), max_retries " + std::to_string(run.options.max_retries));
      return false;
    }
    // Draining, it waits in storage for the study's next run (tuner resume).
    ++run.pending_retries;
    return true;
  }

  // --- Trials of an earlier coordinator ---------------------------------------------------------

  // The study's RUNNING trials, which nobody here holds: an earlier coordinator leased them.
  // And its WAITING re-runs (an earlier coordinator's lost trials), to run before new samples.
  void find_orphans(StudyRun& run) {
    const SteadyTime deadline = clock->steady_now() + 2 * options.lease_timeout;
    for (const FrozenTrial& t :
         run.study.trials({.states = std::vector{TrialState::kRunning, TrialState::kWaiting}})) {
      if (t.state == TrialState::kWaiting) {
        if (t.system_attrs.contains(kFailedTrialAttr)) ++run.pending_retries;
        continue;
      }
      run.orphans[t.trial_id] = Orphan{.number = t.number, .deadline = deadline};
    }
    if (!run.orphans.empty()) {
      log("study '" + run.study.name() + "': " + std::to_string(run.orphans.size()) +
          " trial(s) were running under an earlier coordinator; waiting " +
          std::to_string(to_ms(2 * options.lease_timeout)) +
          " ms for their executors to take them back");
    }
  }

  // A live handle for an orphan, with its attempt and retry history from its system attributes.
  static Prepared adopt(StudyRun& run, int64_t trial_id) {
    Prepared work;
    work.trial.emplace(run.study.adopt(trial_id));
    work.params = work.trial->params();
    work.history = work.trial->retry_history();
    work.attempt = static_cast<int>(work.history.size());
    return work;
  }

  // HELLO's leases that name orphans become this executor's leases again.
  void reattach(const ExecutorEntry& executor, const std::vector<HeldLease>& held) {
    for (const HeldLease& h : held) {
      // A multi-node trial's node 0 is taken back as a trial of its own (its ranks have met, or
      // will fail); the other nodes' parts are not: node 0 tells the trial.
      if (leases.contains(h.lease_id) || h.node > 0) continue;
      for (auto& [id, run] : runs) {
        auto orphan = run->orphans.find(h.trial_id);
        if (run->study.name() != h.study_name || orphan == run->orphans.end()) continue;
        const int number = orphan->second.number;
        run->orphans.erase(orphan);
        Lease lease;
        lease.id = h.lease_id;
        lease.run = run.get();
        lease.executor_id = executor.executor_id;
        lease.route = executor.route;
        lease.gpus = h.gpus;
        lease.deadline = clock->steady_now() + options.lease_timeout;
        lease.trial_id = h.trial_id;
        lease.trial_number = number;
        try {
          lease.work = adopt(*run, h.trial_id);
        } catch (const Error& e) {
          log("trial " + std::to_string(number) + ": cannot take it back: " + e.what());
          break;
        }
        ++run->stats.reattached;
        log(describe(lease) + " taken back from an earlier coordinator");
        // Lease ids never repeat: the ones to come start after every id taken back (the earlier
        // coordinator's ids may run ahead of this one's start, a wall time).
        next_lease_id = std::max(next_lease_id, h.lease_id + 1);
        add_lease(std::move(lease));
        break;
      }
    }
  }

  void expire_orphans(StudyRun& run, SteadyTime now) {
    for (auto it = run.orphans.begin(); it != run.orphans.end();) {
      if (now < it->second.deadline) {
        ++it;
        continue;
      }
      const auto [trial_id, orphan] = *it;
      it = run.orphans.erase(it);
      const std::string reason = "trial " + std::to_string(orphan.number) +
                                 " was running under an earlier coordinator, and no executor "
                                 "took it back within " +
                                 std::to_string(to_ms(2 * options.lease_timeout)) + " ms";
      log(reason);
      ++run.stats.leases_expired;
      try {
        Prepared work = adopt(run, trial_id);
        fail_and_rerun(run, work, reason);
      } catch (const Error& e) {
        log("trial " + std::to_string(orphan.number) + ": " + e.what());
      }
    }
  }

  // --- Outcomes ---------------------------------------------------------------------------------

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
      log("refused the outcome of " + ack.reason + " from " + peer_name(route));
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

  void commit(const ExecutorEntry& executor, Lease& held,
              const std::function<FrozenTrial(Trial&)>& tell) {
    if (held.outcome_pending) return;  // sent again within the batch: its ACK follows the commit
    FrozenTrial finished;
    try {
      finished = tell(*held.work.trial);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kFailedPrecondition) {
        // Not committed: no ACK, the executor sends it again.
        log(describe(held) +
            ": cannot commit the outcome (waiting for it to be resent): " + e.what());
        return;
      }
      const std::string detail = describe(held) + ": the trial was finished elsewhere: " + e.what();
      const Lease lease = take_lease(leases.find(held.id));
      remember_end(lease.id, false, detail);
      ++lease.run->stats.stale_outcomes_refused;
      send(executor.route, AckMessage{.lease_id = lease.id, .accepted = false, .reason = detail});
      return;
    }
    if (batching) {
      held.outcome_pending = true;
      ++held.run->finishing;
      told_in_batch.emplace_back(held.id, std::move(finished));
      return;
    }
    acknowledge(leases.find(held.id), finished);
  }

  // The lease's outcome is durable: the lease ends, and its executor gets ACK.
  void acknowledge(std::map<uint64_t, Lease>::iterator it, const FrozenTrial& finished) {
    if (it->second.outcome_pending) --it->second.run->finishing;
    const Lease lease = take_lease(it);
    CoordinatorStats& counts = lease.run->stats;
    switch (finished.state) {
      case TrialState::kComplete:
        ++counts.completed;
        break;
      case TrialState::kPruned:
        ++counts.pruned;
        break;
      default:
        ++counts.failed;
        break;
    }
    remember_end(lease.id, true, "");
    send(lease.route, AckMessage{.lease_id = lease.id});
    if (lease.group != 0) {
      // Node 0 told the trial. Nodes still running end on their own, unless a node failed (a
      // part that died after the last collective): those are done with now.
      auto g = groups.find(lease.group);
      if (g != groups.end()) {
        g->second.settled = true;
        if (!g->second.failures.empty()) {
          end_group_leases(lease.group, "node 0 completed the trial");
        } else {
          forget_group_if_done(lease.group);
        }
      }
    }
    if (lease.run->options.on_trial_finished) lease.run->options.on_trial_finished(finished);
  }

  // --- Messages ---------------------------------------------------------------------------------

  void on_hello(const std::string& route, const HelloMessage& hello) {
    unknown_peers.erase(route);
    if (hello.executor_id.empty() || hello.resources.cpu_slots < 0) {
      send_error(route, "HELLO: executor_id must not be empty and cpu_slots must be >= 0");
      return;
    }
    // Another live process under the same id (two executors started with one --id) would take
    // turns with it, each HELLO dropping the other: refuse the newcomer instead. The same
    // process on a new connection, or one silent past the lease timeout (dead), is replaced.
    for (const auto& [other_route, other] : executors) {
      if (other_route == route || other.executor_id != hello.executor_id) continue;
      const bool same_process = other.hostname == hello.hostname && other.pid == hello.pid;
      if (!same_process && clock->steady_now() - other.last_heard < options.lease_timeout) {
        log("refused a second executor " + hello.executor_id + " (" + hello.hostname + ", pid " +
            std::to_string(hello.pid) + "): that id is in use");
        send_error(route, ErrorMessage{.message = "executor id '" + hello.executor_id +
                                                  "' is in use by a live executor (" +
                                                  other.hostname + ", pid " +
                                                  std::to_string(other.pid) +
                                                  "): give each executor its own --id",
                                       .refused = true});
        return;
      }
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
      if (lease.executor_id != hello.executor_id) continue;
      lease.route = route;
      // A reconnect may have lost keys sent to the old connection: the whole store again.
      auto g = groups.find(lease.group);
      if (lease.group != 0 && g != groups.end() && !g->second.store.empty() && !lease.unsent) {
        send(route, StoreKeysMessage{.lease_id = id, .entries = g->second.store});
      }
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
      int most_gpus = 0;
      for (const auto& [id, run] : runs) most_gpus = std::max(most_gpus, run->gpus_per_trial);
      log("executor " + hello.executor_id + " (" + hello.hostname + ", pid " +
          std::to_string(hello.pid) + ") joined with " + std::to_string(hello.resources.cpu_slots) +
          " slot(s), " + std::to_string(hello.resources.gpus.size()) + " GPU(s)" +
          (static_cast<int>(hello.resources.gpus.size()) < most_gpus
               ? "; a job needs " + std::to_string(most_gpus) +
                     " GPU(s) per trial, so none of its trials goes there"
               : ""));
    }
    reattach(e, hello.leases);
  }

  void on_report(ExecutorEntry& executor, const ReportMessage& report) {
    auto it = leases.find(report.lease_id);
    if (it == leases.end() || it->second.executor_id != executor.executor_id) {
      // Nobody wants this job's progress any more: tell it to stop.
      send(executor.route,
           DecisionMessage{.lease_id = report.lease_id, .decision = JobDecision::kStop});
      return;
    }
    Lease& lease = it->second;
    lease.deadline = clock->steady_now() + options.lease_timeout;
    if (!lease.work.trial) {  // a node other than 0 of a multi-node trial: node 0 reports
      send(executor.route, DecisionMessage{.lease_id = lease.id});
      return;
    }
    ++lease.run->stats.reports;
    bool stop = false;
    auto metric = report.metrics.find(lease.run->objective_metric);
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
    if (lease->node > 0) {
      on_node_done(*lease);
      return;
    }
    StudyRun& run = *lease->run;
    commit(executor, *lease, [&](Trial& trial) {
      // Every final metric stays with the trial as a user attribute (as a W&B run keeps its
      // summary): test accuracy, the best epoch, whatever the job printed. Stored with the
      // outcome, in one step.
      Attributes metrics;
      for (const auto& [name, value] : result.metrics) {
        const bool integer = std::find(result.integer_metrics.begin(), result.integer_metrics.end(),
                                       name) != result.integer_metrics.end();
        metrics[name] = metric_json(value, integer);
      }
      const std::string unfit = set_constraints(run, trial, result.metrics);
      if (trial.stop_requested()) return run.study.tell(trial, TrialState::kPruned, "", metrics);
      if (!unfit.empty()) return run.study.tell(trial, TrialState::kFail, unfit, metrics);
      if (!result.values.empty()) return run.study.tell(trial, result.values, metrics);
      auto metric = result.metrics.find(run.objective_metric);
      if (metric == result.metrics.end()) {
        return run.study.tell(
            trial, TrialState::kFail,
            "RESULT has no value for the objective metric '" + run.objective_metric + "'",
            metrics);
      }
      return run.study.tell(trial, {metric->second}, metrics);
    });
  }

  // Gives `trial` the constraint values of its study's metric constraints from a RESULT's
  // metrics. Returns why they cannot be had (a metric missing, NaN or infinite), and then sets
  // none.
  static std::string set_constraints(const StudyRun& run, Trial& trial, const Metrics& metrics) {
    if (run.options.constraints.empty()) return "";
    std::vector<double> values;
    for (const MetricConstraint& c : run.options.constraints) {
      auto metric = metrics.find(c.metric);
      if (metric == metrics.end()) {
        return "RESULT has no value for the constraint metric '" + c.metric + "' (" +
               to_string(c) + ")";
      }
      if (!std::isfinite(metric->second)) {
        return "the constraint metric '" + c.metric + "' (" + to_string(c) + ") is " +
               to_string(ParamValue(metric->second)) + "; a constraint needs a finite value";
      }
      values.push_back(constraint_value(c, metric->second));
    }
    trial.set_constraints(std::move(values));
    return "";
  }

  void on_fail(ExecutorEntry& executor, const FailMessage& fail) {
    Lease* lease = held_by(executor, fail.lease_id);
    if (!lease) return;
    if (lease->group != 0) {
      on_node_fail(*lease, fail);
      return;
    }
    StudyRun& run = *lease->run;
    log(describe(*lease) + " failed: " + fail.reason);
    commit(executor, *lease, [&](Trial& trial) {
      Storage& storage = run.study.storage();
      if (fail.exit_code) {
        storage.set_trial_system_attr(trial.id(), "exit_code", std::to_string(*fail.exit_code));
      }
      if (!fail.log_tail.empty()) {
        storage.set_trial_system_attr(trial.id(), "log_tail", json_string(fail.log_tail));
      }
      return run.study.tell(trial, TrialState::kFail, fail.reason);
    });
  }

  // A key for a multi-node trial's store: kept, and sent to the trial's other nodes.
  void on_store_set(ExecutorEntry& executor, const StoreSetMessage& set) {
    auto it = leases.find(set.lease_id);
    if (it == leases.end()) return;  // the attempt ended (its nodes are being stopped)
    Lease& lease = it->second;
    const std::string what = "STORE_SET for lease " + std::to_string(set.lease_id);
    if (lease.executor_id != executor.executor_id) {
      send_error(executor.route, what + ": the lease is held by executor " + lease.executor_id);
      return;
    }
    auto g = groups.find(lease.group);
    if (lease.group == 0 || g == groups.end()) {
      send_error(executor.route,
                 what + ": not a node of a multi-node trial (its job's \"nodes\" is 1)");
      return;
    }
    NodeGroup& group = g->second;
    if (auto known = group.store.find(set.key); known != group.store.end()) {
      if (known->second != set.value) {
        send_error(executor.route,
                   what + ": key '" + set.key +
                       "' is set already, to another value (keys are written once)");
      }
      return;  // a resend
    }
    if (group.store.size() >= kMaxStoreKeys) {
      send_error(executor.route, what + ": the trial's store holds " +
                                     std::to_string(kMaxStoreKeys) + " keys, its limit");
      return;
    }
    group.store.emplace(set.key, set.value);
    for (uint64_t other : group.leases) {
      auto o = leases.find(other);
      if (other == lease.id || o == leases.end() || o->second.unsent) continue;
      send(o->second.route, StoreKeysMessage{.lease_id = other, .entries = {{set.key, set.value}}});
    }
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

  static Inbound decode_frames(RoutedFrames& in) {
    Inbound inbound{.peer = std::move(in.peer)};
    try {
      inbound.message = decode(in.frames);
    } catch (const ProtocolError& e) {
      inbound.problem = e.what();
    }
    return inbound;
  }

  // What a batch may hold: messages whose storage writes (outcomes) wait for the batch's commit
  // before anything is sent about them. Others (HELLO, BYE, REPORT, ...) are handled between
  // batches.
  bool batchable(const Inbound& in) const {
    if (!in.message) return false;
    const MessageType type = message_type(*in.message);
    return (type == MessageType::kReady || type == MessageType::kResult ||
            type == MessageType::kFail || type == MessageType::kHeartbeat) &&
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
      send_error(in.peer, std::string("the coordinator could not handle your message: ") + e.what());
    }
  }

  void handle_message(const std::string& peer, const Message& message) {
    const MessageType type = message_type(message);
    if (auto* hello = std::get_if<HelloMessage>(&message)) {
      on_hello(peer, *hello);
      return;
    }
    auto it = executors.find(peer);
    if (it == executors.end()) {
      if (type == MessageType::kError || type == MessageType::kBye) return;  // not worth a reply
      // One ERROR per heartbeat interval and peer: a forgotten executor's queued messages would
      // otherwise each get one.
      const SteadyTime now = clock->steady_now();
      if (unknown_peers.size() > kMaxUnknownPeers) unknown_peers.clear();
      auto [told, first] = unknown_peers.try_emplace(peer, now);
      if (!first && now - told->second < options.heartbeat_interval) return;
      told->second = now;
      // After a restart every executor's connection is unknown until it says HELLO again: the
      // normal way back, logged once per connection.
      const std::string what = "unknown executor " + peer_name(peer) + ": say HELLO first (got " +
                               std::string(to_string(type)) + ")";
      if (first) log("told " + peer_name(peer) + " to say HELLO (its " +
                     std::string(to_string(type)) + " came before one)");
      send_error(peer, ErrorMessage{.message = what, .say_hello = true});
      return;
    }
    ExecutorEntry& executor = it->second;
    executor.last_heard = clock->steady_now();
    std::visit(
        [&](const auto& m) {
          using T = std::decay_t<decltype(m)>;
          if constexpr (std::is_same_v<T, ReadyMessage>) {
            executor.credit = std::clamp(m.free_slots, 0, lease_limit(executor));
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
            on_bye(peer);
          } else if constexpr (std::is_same_v<T, StoreSetMessage>) {
            on_store_set(executor, m);
          } else {
            send_error(peer, std::string("unexpected ") + std::string(to_string(type)) +
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
    settle_failed_groups(now);
    for (auto& [id, run] : runs) expire_orphans(*run, now);
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
    for (const auto& [id, group] : groups) {
      if (!group.settled && group.settle_at) next = std::min(next, *group.settle_at);
    }
    for (const auto& [id, run] : runs) {
      for (const auto& [trial_id, orphan] : run->orphans) next = std::min(next, orphan.deadline);
    }
    auto until =
        std::chrono::duration_cast<milliseconds>(next - clock->steady_now()) + milliseconds(1);
    return std::clamp(until, milliseconds(0), timeout);
  }

  // True when a lease's or an orphan's deadline has passed (on_timers() will write).
  bool expiry_due(SteadyTime now) const {
    for (const auto& [id, lease] : leases) {
      if (now >= lease.deadline) return true;
    }
    for (const auto& [id, run] : runs) {
      for (const auto& [trial_id, orphan] : run->orphans) {
        if (now >= orphan.deadline) return true;
      }
    }
    return false;
  }

  void dispatch_safely() {
    try {
      dispatch();
    } catch (const std::exception& e) {
      log(std::string("error in the loop (continuing): ") + e.what());
    }
  }

  // One round: every message that arrived is handled, and the outcomes they carry and the trials
  // asked for the slots they free are committed in one storage batch (group commit) before the
  // ACKs and TRIALs go out. Messages that are not outcomes or READY (HELLO, BYE, REPORT, ...)
  // and expired leases are handled between batches, each write committing on its own.
  void poll_once(milliseconds timeout) {
    ZmqPollEntry entries[2] = {{.socket = &router->socket()}};
    const size_t n_entries = authenticator ? 2 : 1;
    if (authenticator) entries[1].socket = &authenticator->socket();
    zmq_wait({entries, n_entries}, backlog.empty() ? wait_limit(timeout) : milliseconds(0));
    if (authenticator) authenticator->answer_requests();
    receive_waiting();
    std::vector<Inbound> inbox;
    while (!backlog.empty() && inbox.size() < kMaxMessagesPerTurn) {
      inbox.push_back(std::move(backlog.front()));
      backlog.pop_front();
    }
    size_t next = 0;
    bool dispatched = false;
    while (next < inbox.size()) {
      if (!batchable(inbox[next])) {
        handle(inbox[next++]);
        continue;
      }
      in_batch([&] {
        while (next < inbox.size() && batchable(inbox[next])) handle(inbox[next++]);
        // The slots just freed are filled in the same commit, unless leases are due to expire
        // first (their writes commit on their own, below).
        if (next == inbox.size() && !expiry_due(clock->steady_now())) {
          dispatch_safely();
          dispatched = true;
        }
      });
    }
    // However long this turn took, what arrived meanwhile (heartbeats, reports) counts before
    // a lease expires or an executor is forgotten: a busy turn cannot starve anyone.
    receive_waiting();
    try {
      on_timers();
    } catch (const std::exception& e) {
      log(std::string("error in the loop (continuing): ") + e.what());
    }
    if (!dispatched) in_batch([&] { dispatch_safely(); });
  }

  // Receives what waits on the socket into the backlog (up to kMaxBacklog), crediting each
  // sender at once (note_alive); the messages are handled in later turns, in order.
  void receive_waiting() {
    while (backlog.size() < kMaxBacklog) {
      std::optional<RoutedFrames> in = router->receive();
      if (!in) break;
      backlog.push_back(decode_frames(*in));
      note_alive(backlog.back());
    }
  }

  // A message from a registered executor shows it alive, and renews the leases it names (all of a
  // HEARTBEAT's; a REPORT's, RESULT's, FAIL's or STORE_SET's one) that it holds: as handling the
  // message would, before it is handled.
  void note_alive(const Inbound& in) {
    if (!in.message) return;
    auto it = executors.find(in.peer);
    if (it == executors.end()) return;
    ExecutorEntry& executor = it->second;
    const SteadyTime now = clock->steady_now();
    executor.last_heard = now;
    auto renew = [&](uint64_t lease_id) {
      auto lease = leases.find(lease_id);
      if (lease != leases.end() && lease->second.executor_id == executor.executor_id) {
        lease->second.deadline = std::max(lease->second.deadline, now + options.lease_timeout);
      }
    };
    std::visit(
        [&](const auto& m) {
          using T = std::decay_t<decltype(m)>;
          if constexpr (std::is_same_v<T, HeartbeatMessage>) {
            for (uint64_t id : m.lease_ids) renew(id);
          } else if constexpr (std::is_same_v<T, ReportMessage> ||
                               std::is_same_v<T, ResultMessage> || std::is_same_v<T, FailMessage> ||
                               std::is_same_v<T, StoreSetMessage>) {
            renew(m.lease_id);
          }
        },
        *in.message);
  }

  // --- Stopping ---------------------------------------------------------------------------------

  void drain(StudyRun& run) {
    if (run.draining) return;
    run.draining = true;
    // A trial asked and not yet leased waits as a re-run (with its lineage: not a new trial of
    // the budget) for the study's next run; so do the re-runs waiting in storage already.
    for (Prepared& p : run.prepared) {
      try {
        run.study.fail_and_retry(*p.trial, "not started: the coordinator was drained",
                                 std::nullopt);
      } catch (const Error& e) {
        log("trial " + std::to_string(p.trial->number()) + ": cannot requeue it: " + e.what());
      }
    }
    run.prepared.clear();
    log("study '" + run.study.name() + "' draining: no new trials; " +
        std::to_string(run.leased) + " still running");
  }

  void abandon(const std::string& reason) {
    for (auto& [id, run] : runs) {
      drain(*run);
      run->orphans.clear();  // still RUNNING in storage: the next coordinator looks again
    }
    for (auto& [id, lease] : leases) {
      StudyRun& run = *lease.run;
      if (!lease.work.trial) {  // a node other than 0: node 0's lease tells the trial
        remember_end(id, false, describe(lease) + " was abandoned: " + reason);
        continue;
      }
      Trial& trial = *lease.work.trial;
      try {
        // Its re-run carries the lineage: the next run of the study (a resumed sweep) runs it
        // first, and not as a new trial of the budget.
        const Study::Rerun rerun =
            run.study.fail_and_retry(trial, "abandoned: " + reason, std::nullopt);
        ++run.stats.failed;
        if (run.options.on_trial_finished) run.options.on_trial_finished(rerun.failed);
      } catch (const Error& e) {
        log("trial " + std::to_string(trial.number()) + ": cannot abandon it: " + e.what());
      }
      remember_end(id, false, describe(lease) + " was abandoned: " + reason);
      --run.leased;
    }
    leases.clear();
    groups.clear();
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

// The counts of `add` added to `sum`.
void accumulate(CoordinatorStats& sum, const CoordinatorStats& add) {
  sum.trials_started += add.trials_started;
  sum.retries_started += add.retries_started;
  sum.completed += add.completed;
  sum.pruned += add.pruned;
  sum.failed += add.failed;
  sum.failed_asks += add.failed_asks;
  sum.leases_expired += add.leases_expired;
  sum.reattached += add.reattached;
  sum.stale_outcomes_refused += add.stale_outcomes_refused;
  sum.reports += add.reports;
}

}  // namespace

Coordinator::Coordinator(CoordinatorServiceOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {
  CoordinatorServiceOptions& o = impl_->options;
  check_service_options(o);
  if (!o.clock) o.clock = system_clock();
  impl_->clock = o.clock.get();
  // Lease ids never repeat, not even across restarts of the coordinator: they start at the
  // wall time in ms, times 1024.
  impl_->next_lease_id = static_cast<uint64_t>(std::chrono::duration_cast<milliseconds>(
                                                   o.clock->system_now().time_since_epoch())
                                                   .count()) *
                             1024 +
                         1;
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
        *impl_->context, security.executor_keys,
        [this](const std::string& line) { impl_->log(line); });
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
  impl_->log("listening on " + impl_->router->endpoint());
}

Coordinator::Coordinator(Study study, CoordinatorOptions options)
    : Coordinator(static_cast<CoordinatorServiceOptions>(options)) {
  add_study(std::move(study), static_cast<StudyRunOptions>(std::move(options)));
}

Coordinator::~Coordinator() {
  for (const auto& [route, executor] : impl_->executors) impl_->send(route, ByeMessage{});
  impl_->router.reset();
  impl_->authenticator.reset();
  impl_->context.reset();
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
  impl_->runs.erase(id);
}

const std::string& Coordinator::endpoint() const { return impl_->router->endpoint(); }

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
  for (auto& [id, run] : impl_->runs) impl_->drain(*run);
}

void Coordinator::drain(StudyRunId id) { impl_->drain(impl_->run_of(id)); }

bool Coordinator::draining() const {
  return !impl_->runs.empty() &&
         std::all_of(impl_->runs.begin(), impl_->runs.end(),
                     [](const auto& r) { return r.second->draining; });
}

void Coordinator::abandon(const std::string& reason) { impl_->abandon(reason); }

void Coordinator::pause(StudyRunId id) { impl_->run_of(id).paused = true; }

void Coordinator::unpause(StudyRunId id) { impl_->run_of(id).paused = false; }

CoordinatorStats Coordinator::stats() const {
  CoordinatorStats s = impl_->stats;
  for (const auto& [id, run] : impl_->runs) accumulate(s, run->stats);
  s.executors = static_cast<int>(impl_->executors.size());
  s.active_leases = static_cast<int>(impl_->leases.size());
  return s;
}

CoordinatorStats Coordinator::stats(StudyRunId id) const {
  const StudyRun& run = impl_->run_of(id);
  CoordinatorStats s = run.stats;
  s.executors = static_cast<int>(impl_->executors.size());
  s.active_leases = run.leased;
  return s;
}

const Study& Coordinator::study(StudyRunId id) const { return impl_->run_of(id).study; }

std::optional<std::string> Coordinator::failure(StudyRunId id) const {
  return impl_->run_of(id).failure;
}

}  // namespace tuner
