#include "executor/executor_service.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <variant>

#include "executor/connection.h"
#include "executor/held_job.h"
#include "executor/held_trials.h"
#include "executor/job_events.h"
#include "executor/job_threads.h"
#include "executor/node_store_relay.h"
#include "executor/trial_files.h"
#include "executor/trial_job.h"
#include "executor/trial_run.h"
#include "training/device/gpu_inventory.h"
#include "trials/error.h"
#include "util/strings.h"
#include "wire/message_socket.h"
#include "wire/protocol.h"

namespace tuner {

namespace {

using std::chrono::milliseconds;

// The longest single wait for input, so that clock deadlines are looked at now and then even when
// nothing arrives (a FakeClock moves without waking anyone).
constexpr milliseconds kMaxWait{200};

// The absolute folder where a sending executor keeps its trials' files: `dir`, else a new one in
// the system's temporary folder. Throws Error(kUnavailable) naming it when it cannot be made.
std::string files_folder(const std::string& dir) {
  std::error_code ec;
  if (!dir.empty()) {
    std::filesystem::path path = std::filesystem::absolute(dir, ec);
    if (!ec) std::filesystem::create_directories(path, ec);
    if (ec) {
      throw Error(ErrorCode::kUnavailable,
                  "executor: cannot create the files folder " + dir + ": " + ec.message());
    }
    return path.lexically_normal().string();
  }
  std::string pattern =
      (std::filesystem::temp_directory_path(ec) / "tuner-executor-XXXXXX").string();
  if (ec || ::mkdtemp(pattern.data()) == nullptr) {
    throw Error(ErrorCode::kUnavailable,
                "executor: cannot create a files folder in the temporary folder (" +
                    (ec ? ec.message() : std::string(std::strerror(errno))) +
                    "); give one (--files-dir)");
  }
  return pattern;
}

// Throws Error(kInvalidArgument) for options that break a REQUIRES of ExecutorOptions.
void check_options(const ExecutorOptions& o) {
  auto invalid = [](const std::string& what) {
    return Error(ErrorCode::kInvalidArgument, "executor: " + what);
  };
  if (o.coordinator.empty()) throw invalid("no coordinator endpoint given");
  if (o.slots < 1) throw invalid("slots must be >= 1, got " + std::to_string(o.slots));
  if (o.prefetch < 0 || o.prefetch > o.slots) {
    throw invalid("prefetch must be in [0, slots = " + std::to_string(o.slots) + "], got " +
                  std::to_string(o.prefetch));
  }
  if (o.heartbeat_interval <= milliseconds(0) || o.coordinator_timeout <= o.heartbeat_interval) {
    throw invalid("coordinator_timeout (" + std::to_string(o.coordinator_timeout.count()) +
                  " ms) must exceed heartbeat_interval (" +
                  std::to_string(o.heartbeat_interval.count()) + " ms), which must be > 0");
  }
  if (o.curve_keys) {
    check_curve_key(o.curve_keys->public_key, "executor: CURVE public key");
    check_curve_key(o.curve_keys->secret_key, "executor: CURVE secret key");
    check_curve_key(o.coordinator_key, "executor: the coordinator's CURVE public key");
  }
}

// `o` checked, with its defaults filled in.
ExecutorOptions completed(ExecutorOptions o) {
  check_options(o);
  if (o.executor_id.empty()) o.executor_id = default_executor_id();
  if (o.tuner_path.empty()) {
    std::error_code ec;
    std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) {
      throw Error(ErrorCode::kUnavailable,
                  "executor: cannot resolve /proc/self/exe for running engine jobs (" +
                      ec.message() + "); set tuner_path");
    }
    o.tuner_path = self.string();
  }
  if (!o.clock) o.clock = system_clock();
  if (!o.gpu_memory && (!o.gpus || !o.gpus->empty())) o.gpu_memory = nvml_memory_probe();
  if (o.rank_host.empty()) {
    const char* host = std::getenv("TUNER_RANK_HOST");
    o.rank_host = host != nullptr && *host != '\0' ? host : "127.0.0.1";
  }
  if (o.send_files) o.files_dir = files_folder(o.files_dir);
  return o;
}

// A sending executor's trials keep their artifacts under FILES_DIR/<study>: the study's name
// with anything but letters, digits, '.', '-' and '_' as '_' (and never "." or "..").
std::string study_folder(const std::string& files_dir, const std::string& study) {
  std::string name = study;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  }
  if (name.empty() || name == "." || name == "..") name = "_" + name;
  return files_dir + "/" + name;
}

// `job_json` with its "artifacts_dir" (when it has one) replaced by `dir`.
std::string with_artifacts_dir(const std::string& job_json, const std::string& dir) {
  nlohmann::json job = nlohmann::json::parse(job_json, nullptr, false);
  if (!job.is_object() || !job.contains("artifacts_dir")) return job_json;
  job["artifacts_dir"] = dir;
  return job.dump();
}

}  // namespace

Resources offered_resources(const ExecutorOptions& o) {
  Resources r{.cpu_slots = o.slots};
  const std::vector<training::GpuInfo> found = training::list_gpus();
  if (found.empty() && o.gpus) {
    for (int index : *o.gpus) r.gpus.push_back(GpuInfo{.index = index});
    return r;
  }
  auto wanted = [&](int index) {
    return !o.gpus || std::find(o.gpus->begin(), o.gpus->end(), index) != o.gpus->end();
  };
  for (const training::GpuInfo& g : found) {
    if (!wanted(g.index)) continue;
    r.gpus.push_back(GpuInfo{.index = g.index, .name = g.name, .memory_bytes = g.memory_bytes});
  }
  for (int index : o.gpus.value_or(std::vector<int>{})) {
    if (std::none_of(found.begin(), found.end(),
                     [&](const training::GpuInfo& g) { return g.index == index; })) {
      throw Error(ErrorCode::kInvalidArgument, "executor: GPU " + std::to_string(index) +
                                                   " is not visible to this process (" +
                                                   std::to_string(found.size()) + " GPU(s) found)");
    }
  }
  return r;
}

// The service's loop, which wires the parts together: the connection and its timers
// (executor/connection.h), the trials held (executor/held_trials.h, held_job.h), the job threads
// (job_threads.h) that run each trial (trial_run.h, whose outcome rule is outcome.h) and hand
// their events back (job_events.h), and the node stores of multi-node trials
// (node_store_relay.h). Everything but `events` and the stats is the loop thread's.
struct ExecutorService::Impl {
  explicit Impl(ExecutorOptions o)
      : options(completed(std::move(o))), resources(offered_resources(options)) {}

  // Constant after construction.
  const ExecutorOptions options;
  const Resources resources;

  // Job threads -> loop (thread-safe).
  JobEvents events;

  // State below is protected by stats_mutex.
  mutable std::mutex stats_mutex;
  ExecutorStats stats_;

  // State below is used by run()'s thread only.
  std::unique_ptr<CoordinatorConnection> connection;  // while run() runs
  bool shutting_down = false;
  HeldTrials held;
  NodeStoreWatch store_watch;
  // The last job JSON parsed (and, sending files, its study), and its job: a study sends the
  // same job with every trial.
  std::string last_job_json;
  std::string last_job_study;
  std::shared_ptr<const TrialJob> last_trial_job;
  std::string last_job_artifacts_dir;  // its artifacts_dir as the coordinator sent it
  // Runs the jobs of `held`; after it, so that it is joined before they go.
  std::unique_ptr<JobThreads> job_threads;

  void log(const std::string& line) const {
    const std::string text = "executor " + options.executor_id + ": " + line;
    if (options.log) {
      options.log(text);
    } else {
      std::cerr << text << std::endl;
    }
  }

  void count(int64_t ExecutorStats::*field) {
    std::lock_guard lock(stats_mutex);
    ++(stats_.*field);
  }

  bool send(const Message& message) { return connection->send(message); }

  // Trials held at once: the slots, and `prefetch` more to start as slots free.
  int capacity() const { return options.slots + options.prefetch; }

  // --- The connection ---------------------------------------------------------------------------

  void connect() {
    connection->open();
    count(&ExecutorStats::connections);
    introduce();
  }

  // HELLO, what this executor holds, what is not ACKed, and READY. File chunks unanswered are
  // taken for lost (a new connection, or a coordinator that does not know this one).
  void introduce() {
    for (auto& [id, s] : held.sending) log_file_problem(s.files->restart());
    send(HelloMessage{.executor_id = options.executor_id,
                      .hostname = host_name(),
                      .pid = ::getpid(),
                      .resources = resources,
                      .leases = held.leases()});
    send(HeartbeatMessage{.lease_ids = held.lease_ids()});
    resend_unacked();
    for (const auto& [id, job] : held.running) {
      if (!job->node_store) continue;
      for (const auto& [key, value] : job->node_store->published()) {
        send(StoreSetMessage{.lease_id = id, .key = key, .value = value});
      }
    }
    send_ready();
    connection->said_hello();
  }

  void send_ready() {
    send(ReadyMessage{.free_slots = std::max(0, capacity() - held.jobs()),
                      .free_gpus = held.free_gpus(resources.gpus)});
  }

  void resend_unacked() {
    for (const auto& [id, u] : held.unacked) send(u.outcome);
  }

  void on_timers() {
    const CoordinatorConnection::Due due = connection->due();
    if (due.reconnect) {
      connect();
      return;
    }
    if (due.hello) {
      introduce();
    } else if (due.heartbeat) {
      send(HeartbeatMessage{.lease_ids = held.lease_ids()});
    }
    if (due.resend) resend_unacked();
  }

  // --- Jobs -------------------------------------------------------------------------------------

  // Sends a trial's outcome, after its files when it has some to send, and keeps it until ACKed.
  void finish(const TrialMessage& trial, Message outcome, TrialFilesPlan files = {}) {
    if (!files.left.empty()) {
      send(FilesLeftMessage{.lease_id = trial.lease_id,
                            .hostname = host_name(),
                            .limit_bytes = files.limit_bytes,
                            .files = std::move(files.left)});
    }
    if (files.send.empty()) {
      send_outcome(trial.lease_id, std::move(outcome), held_lease(trial));
      return;
    }
    held.sending[trial.lease_id] = HeldTrials::Sending{
        .outcome = std::move(outcome),
        .lease = held_lease(trial),
        .files = std::make_unique<FileSender>(trial.lease_id, std::move(files.send))};
  }

  void send_outcome(uint64_t lease_id, Message outcome, HeldLease lease) {
    count(std::holds_alternative<ResultMessage>(outcome) ? &ExecutorStats::results_sent
                                                         : &ExecutorStats::fails_sent);
    send(outcome);
    held.unacked[lease_id] = HeldTrials::Unacked{std::move(outcome), std::move(lease)};
  }

  void log_file_problem(const std::string& problem) {
    if (!problem.empty()) log(problem);
  }

  // Sends what the trials' file windows allow; a trial whose files are all sent (or given up)
  // sends its outcome.
  void send_files() {
    for (auto it = held.sending.begin(); it != held.sending.end();) {
      FileSender& files = *it->second.files;
      std::vector<std::string> problems;
      while (std::optional<FileChunkMessage> chunk = files.next_chunk(problems)) {
        if (!send(*chunk)) {
          files.unsend(*chunk);  // the queue is full: again at the next turn
          break;
        }
      }
      for (const std::string& problem : problems) log(problem);
      if (!files.done()) {
        ++it;
        continue;
      }
      {
        std::lock_guard lock(stats_mutex);
        stats_.files_sent += files.files_delivered();
        stats_.file_bytes_sent += static_cast<int64_t>(files.bytes_delivered());
      }
      send_outcome(it->first, std::move(it->second.outcome), std::move(it->second.lease));
      it = held.sending.erase(it);
    }
  }

  void on_file_ack(const FileAckMessage& ack) {
    auto it = held.sending.find(ack.lease_id);
    if (it == held.sending.end()) return;  // given up meanwhile
    log_file_problem(it->second.files->on_ack(ack));
  }

  void start(std::unique_ptr<HeldJob> job) {
    HeldJob* j = job.get();
    held.running[j->trial.lease_id] = std::move(job);
    if (!job_threads) job_threads = std::make_unique<JobThreads>(options.slots);
    job_threads->post([this, j] { run_trial(*j, options, events); });
  }

  // The job of `trial`. Throws Error naming what makes the executor refuse the trial.
  // An executor that sends its trials' files runs them with the artifacts folder on this host
  // (study_folder()), and a TRIAL's checkpoint path under the job's folder moves along; the
  // nodes of a multi-node trial keep the job's folder, which every node must see (its
  // checkpoint).
  std::unique_ptr<HeldJob> make_job(TrialMessage& trial) {
    const bool local_artifacts = options.send_files && trial.nodes == 1;
    const std::string study = local_artifacts ? "here:" + trial.study_name : "";
    if (trial.job_json != last_job_json || study != last_job_study || last_job_json.empty()) {
      const std::string context = "trial " + std::to_string(trial.number) + ": job";
      last_trial_job = parse_trial_job(trial.job_json, context);
      last_job_artifacts_dir = last_trial_job->artifacts_dir();
      if (local_artifacts && !last_job_artifacts_dir.empty()) {
        last_trial_job = parse_trial_job(
            with_artifacts_dir(trial.job_json, study_folder(options.files_dir, trial.study_name)),
            context);
      }
      last_job_json = trial.job_json;
      last_job_study = study;
    }
    if (local_artifacts && !last_job_artifacts_dir.empty()) {
      const std::string from = last_job_artifacts_dir + "/";
      for (std::optional<std::string>* path :
           {&trial.checkpoint_path, &trial.start_checkpoint_path}) {
        if (*path && (*path)->starts_with(from)) {
          **path = last_trial_job->artifacts_dir() + "/" + (*path)->substr(from.size());
        }
      }
    }
    auto job = std::make_unique<HeldJob>();
    job->trial_job = last_trial_job;
    if (trial.nodes > 1) job->node_store = make_node_store(trial, *job->trial_job);
    return job;
  }

  std::unique_ptr<NodeStoreRelay> make_node_store(const TrialMessage& trial, const TrialJob& job) {
    if (job.needs().nodes != trial.nodes) {
      throw Error(ErrorCode::kInvalidArgument,
                  "trial " + std::to_string(trial.number) + ": job: the coordinator sent node " +
                      std::to_string(trial.node) + " of " + std::to_string(trial.nodes) +
                      ", but only an engine job of as many \"nodes\" spans executors");
    }
    auto store = std::make_unique<NodeStoreRelay>();
    if (std::string problem = store_watch.watch(store->path()); !problem.empty()) log(problem);
    return store;
  }

  void on_trial(TrialMessage trial) {
    count(&ExecutorStats::trials_received);
    if (held.contains(trial.lease_id)) return;  // a duplicate
    if (trial.heartbeat_interval_ms > 0) {
      connection->shorten_heartbeat(milliseconds(trial.heartbeat_interval_ms));
    }
    std::unique_ptr<HeldJob> job;
    try {
      job = make_job(trial);  // a sending executor's checkpoint path moves to this host
    } catch (const Error& e) {
      log("refusing lease " + std::to_string(trial.lease_id) + ": " + e.what());
      finish(trial, FailMessage{.lease_id = trial.lease_id, .reason = e.what()});
      return;
    }
    job->trial = std::move(trial);
    // A trial taken ahead goes to the job threads at once: the first thread that frees starts it.
    if (static_cast<int>(held.running.size()) < capacity()) {
      start(std::move(job));
    } else {
      held.queued.push_back(std::move(job));
    }
  }

  // True when the event ended a running job.
  bool on_job_event(JobEvent& e) {
    if (!e.note.empty()) {
      log(e.note);
      return false;
    }
    if (e.report) {
      send(*e.report);
      return false;
    }
    if (e.checkpoint_get) {
      send(*e.checkpoint_get);
      return false;
    }
    auto it = held.running.find(e.lease_id);
    if (it == held.running.end()) return false;
    std::unique_ptr<HeldJob> job = std::move(it->second);
    held.running.erase(it);  // the event was the job's last act on its thread
    if (!shutting_down && e.outcome) {
      finish(job->trial, std::move(*e.outcome), std::move(job->files));
    }
    return true;
  }

  void handle_job_events() {
    bool freed = false;
    for (JobEvent& e : events.take()) freed = on_job_event(e) || freed;
    if (!freed || shutting_down) return;
    while (!held.queued.empty() && static_cast<int>(held.running.size()) < capacity()) {
      std::unique_ptr<HeldJob> next = std::move(held.queued.front());
      held.queued.pop_front();
      start(std::move(next));
    }
    send_ready();
  }

  // --- Node stores of multi-node trials ---------------------------------------------------------

  // Sends STORE_SET for each key the ranks of a node wrote since the last look.
  void publish_node_stores() {
    store_watch.drain();
    for (auto& [id, job] : held.running) {
      if (!job->node_store) continue;
      for (auto& [key, value] : job->node_store->take_new_keys()) {
        send(StoreSetMessage{.lease_id = id, .key = std::move(key), .value = std::move(value)});
      }
    }
  }

  // Writes the keys other nodes set into the node's store.
  void on_store_keys(const StoreKeysMessage& keys) {
    const std::string lease = "lease " + std::to_string(keys.lease_id);
    auto it = held.running.find(keys.lease_id);
    if (it == held.running.end() || !it->second->node_store) {
      log("STORE_KEYS for " + lease +
          ", which is not a running node of a multi-node trial here: "
          "ignored");
      return;
    }
    for (const std::string& problem : it->second->node_store->write_keys(keys.entries)) {
      log(lease + ": " + problem);
    }
  }

  // --- Coordinator messages ---------------------------------------------------------------------

  void handle(const std::vector<std::string>& frames) {
    connection->heard();
    Message message;
    try {
      message = decode(frames);
    } catch (const ProtocolError& e) {
      log(std::string("undecodable message from the coordinator: ") + e.what());
      send(ErrorMessage{.message = "executor " + options.executor_id +
                                   ": cannot decode your message: " + e.what()});
      return;
    }
    connection->on_message(message);  // an ERROR: logged, and HELLO at the next heartbeat
    if (std::holds_alternative<ErrorMessage>(message)) return;
    dispatch(message);
  }

  void dispatch(Message& message) {
    if (auto* m = std::get_if<TrialMessage>(&message)) {
      on_trial(std::move(*m));
    } else if (auto* d = std::get_if<DecisionMessage>(&message)) {
      auto it = held.running.find(d->lease_id);
      if (it != held.running.end()) it->second->decide(d->decision);  // else: finished meanwhile
    } else if (auto* a = std::get_if<AckMessage>(&message)) {
      on_ack(*a);
    } else if (auto* h = std::get_if<HeartbeatMessage>(&message)) {
      on_heartbeat(*h);
    } else if (auto* keys = std::get_if<StoreKeysMessage>(&message)) {
      on_store_keys(*keys);
    } else if (auto* file_ack = std::get_if<FileAckMessage>(&message)) {
      on_file_ack(*file_ack);
    } else if (auto* data = std::get_if<CheckpointDataMessage>(&message)) {
      auto it = held.running.find(data->lease_id);
      if (it != held.running.end()) it->second->deliver(std::move(*data));  // else: ended
    } else if (std::holds_alternative<ByeMessage>(message)) {
      log("the coordinator said BYE; reconnecting");
      connect();
    } else {
      const std::string type(to_string(message_type(message)));
      log("unexpected " + type + " from the coordinator");
      send(ErrorMessage{.message = "executor " + options.executor_id + ": unexpected " + type});
    }
  }

  void on_ack(const AckMessage& ack) {
    if (held.unacked.erase(ack.lease_id) && !ack.accepted) {
      count(&ExecutorStats::acks_refused);
      log("the coordinator refused the outcome of lease " + std::to_string(ack.lease_id) + ": " +
          ack.reason);
    }
  }

  // A running lease the coordinator no longer lists was given up: its job is stopped (its
  // outcome still goes, for the coordinator to refuse); a queued one is dropped.
  void on_heartbeat(const HeartbeatMessage& heartbeat) {
    const std::set<uint64_t> honoured(heartbeat.lease_ids.begin(), heartbeat.lease_ids.end());
    for (auto& [id, job] : held.running) {
      if (honoured.contains(id) || !job->stop_reason().empty()) continue;
      log("the coordinator no longer holds lease " + std::to_string(id) + " (trial " +
          std::to_string(job->trial.number) + "): stopping its job");
      job->stop("the coordinator gave up lease " + std::to_string(id));
    }
    held.drop_queued_except(honoured);
    for (auto& [id, s] : held.sending) {
      if (honoured.contains(id) || s.files->done()) continue;
      log("the coordinator no longer holds lease " + std::to_string(id) +
          ": its files are not sent");
      s.files->give_up();
    }
  }

  // --- The loop ---------------------------------------------------------------------------------

  void serve(std::stop_token stop) {
    connection = std::make_unique<CoordinatorConnection>(
        options, *options.clock, [this](const std::string& line) { log(line); });
    std::stop_callback wake_on_stop(stop, [this] { events.wake(); });
    if (options.send_files) {
      log("sends each trial's files to the coordinator (at most " +
          byte_size_text(options.max_trial_files_bytes) + " a trial) and keeps them in " +
          options.files_dir);
    }
    connect();
    while (!stop.stop_requested() && connection->refusal().empty() && connection->gone().empty()) {
      turn();
    }
    const std::string refusal = connection->refusal();
    const std::string gone = connection->gone();
    if (!gone.empty()) log(gone);
    shut_down();
    if (!refusal.empty()) {
      throw Error(ErrorCode::kFailedPrecondition,
                  "the coordinator refused this executor: " + refusal);
    }
    if (!gone.empty()) throw Error(ErrorCode::kUnavailable, gone);
  }

  // One wait for input and what follows it.
  void turn() {
    wait_for_input();
    while (std::optional<std::vector<std::string>> frames = connection->receive()) handle(*frames);
    handle_job_events();
    if (!held.sending.empty()) send_files();
    if (held.has_node_stores()) publish_node_stores();
    on_timers();
  }

  void wait_for_input() {
    ZmqPollEntry entries[3] = {
        {.socket = &connection->socket()}, {.fd = events.fd()}, {.fd = store_watch.fd()}};
    const milliseconds most =
        store_watch.polling() && held.has_node_stores() ? kNodeStorePoll : kMaxWait;
    zmq_wait({entries, store_watch.fd() >= 0 ? size_t{3} : size_t{2}}, connection->wait_time(most));
    if (entries[1].readable) events.drain();
  }

  // Stops the jobs, each with its grace, and says BYE listing their leases and the queued ones as
  // preempted (the coordinator re-runs them without counting the attempt). The outcomes of
  // trials still sending their files go first, without the rest of their files. The whole stop
  // takes at most the longest grace of the running jobs and the executor's (stop_grace_bound()):
  // their checkpoints are sent in what the jobs leave of it.
  void shut_down() {
    shutting_down = true;
    const std::chrono::steady_clock::time_point deadline =
        std::chrono::steady_clock::now() + stop_grace_bound();
    for (auto& [id, s] : held.sending) send(s.outcome);
    ByeMessage bye;
    for (const auto& job : held.queued) bye.preempted.push_back({.lease_id = job->trial.lease_id});
    held.queued.clear();
    for (auto& [id, job] : held.running) job->stop("the executor is shutting down");
    job_threads.reset();  // the stopped jobs end (checkpointing in their grace), then their threads
    if (options.send_files) send_checkpoints(bye, deadline);
    for (const auto& [id, job] : held.running) {
      const bool checkpoint = has_checkpoint(job->trial);
      bye.preempted.push_back({.lease_id = id, .checkpoint = checkpoint});
      log("stopped trial " + std::to_string(job->trial.number) + " (lease " + std::to_string(id) +
          "): preempted, " +
          (checkpoint ? "its checkpoint " + *job->trial.checkpoint_path + " is kept"
                      : std::string("no checkpoint saved")));
    }
    held.running.clear();
    events.clear();
    send(bye);
    log("stopped");
    connection.reset();  // lingers to deliver BYE
  }

  // The bound of a stop: the longest grace of the running jobs (their "stop_grace_s", else
  // stop_grace), and never less than stop_grace.
  milliseconds stop_grace_bound() const {
    milliseconds bound = options.stop_grace;
    for (const auto& [id, job] : held.running) {
      if (job->trial_job) {
        bound = std::max(bound, job->trial_job->stop_grace().value_or(options.stop_grace));
      }
    }
    return bound;
  }

  // The checkpoint files that the stopped jobs wrote go to the coordinator before BYE, as FILEs
  // marked `checkpoint` (docs/protocol.md, "Preemption"), until `deadline` (the stop's bound):
  // their re-runs fetch them on another host. No trial starts meanwhile: a TRIAL that arrives is
  // listed in `bye` as preempted. Heartbeats keep the leases.
  void send_checkpoints(ByeMessage& bye, std::chrono::steady_clock::time_point deadline) {
    std::map<uint64_t, std::unique_ptr<FileSender>> senders;
    for (const auto& [id, job] : held.running) {
      if (job->checkpoint.empty() || job->trial.nodes > 1) continue;
      std::vector<std::string> problems;
      TrialFilesPlan plan = plan_checkpoint_files(job->checkpoint, job->checkpoint_before,
                                                  options.max_trial_files_bytes, &problems);
      const std::string trial = "trial " + std::to_string(job->trial.number) + ": ";
      for (const std::string& problem : problems) log(trial + problem);
      if (!plan.left.empty()) {
        log(trial + files_left_text(plan.left, plan.limit_bytes, host_name()));
      }
      if (!plan.send.empty()) {
        senders[id] = std::make_unique<FileSender>(id, std::move(plan.send));
      }
    }
    if (senders.empty()) return;
    std::set<uint64_t> listed;
    for (const PreemptedLease& l : bye.preempted) listed.insert(l.lease_id);
    using Steady = std::chrono::steady_clock;
    Steady::time_point next_heartbeat = Steady::now();
    auto all_done = [&] {
      return std::all_of(senders.begin(), senders.end(),
                         [](const auto& s) { return s.second->done(); });
    };
    while (!all_done() && Steady::now() < deadline) {
      for (auto& [id, files] : senders) {
        std::vector<std::string> problems;
        while (std::optional<FileChunkMessage> chunk = files->next_chunk(problems)) {
          if (!send(*chunk)) {
            files->unsend(*chunk);
            break;
          }
        }
        for (const std::string& problem : problems) log(problem);
      }
      if (Steady::now() >= next_heartbeat) {
        std::vector<uint64_t> ids = held.lease_ids();  // the queued ones are in `listed`
        for (uint64_t id : listed) {
          if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
        }
        send(HeartbeatMessage{.lease_ids = std::move(ids)});
        next_heartbeat = Steady::now() + options.heartbeat_interval;
      }
      ZmqPollEntry entry{.socket = &connection->socket()};
      const Steady::time_point until = std::min(deadline, next_heartbeat);
      zmq_wait({&entry, 1}, std::max(milliseconds(1), std::chrono::duration_cast<milliseconds>(
                                                          until - Steady::now())));
      while (std::optional<std::vector<std::string>> frames = connection->receive()) {
        Message message;
        try {
          message = decode(*frames);
        } catch (const ProtocolError& e) {
          log(std::string("undecodable message from the coordinator: ") + e.what());
          continue;
        }
        if (auto* ack = std::get_if<FileAckMessage>(&message)) {
          if (auto it = senders.find(ack->lease_id); it != senders.end()) {
            log_file_problem(it->second->on_ack(*ack));
          }
        } else if (auto* trial = std::get_if<TrialMessage>(&message)) {
          if (!held.contains(trial->lease_id) && listed.insert(trial->lease_id).second) {
            bye.preempted.push_back({.lease_id = trial->lease_id});
          }
        } else if (auto* error = std::get_if<ErrorMessage>(&message)) {
          log("the coordinator sent ERROR: " + error->message);
        }
      }
    }
    for (const auto& [id, files] : senders) {
      const HeldJob& job = *held.running.at(id);
      log("trial " + std::to_string(job.trial.number) + " (lease " + std::to_string(id) + "): " +
          (files->done() ? "sent " + std::to_string(files->files_delivered()) +
                               " file(s) of its checkpoint to the coordinator"
                         : "its checkpoint was not all sent within the stop grace (" +
                               std::to_string(stop_grace_bound().count()) + " ms)"));
      std::lock_guard lock(stats_mutex);
      stats_.files_sent += files->files_delivered();
      stats_.file_bytes_sent += static_cast<int64_t>(files->bytes_delivered());
    }
  }

  // Whether a checkpoint is at the trial's checkpoint path.
  static bool has_checkpoint(const TrialMessage& trial) {
    std::error_code ec;
    return trial.checkpoint_path && std::filesystem::is_regular_file(*trial.checkpoint_path, ec);
  }
};

ExecutorService::ExecutorService(ExecutorOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

ExecutorService::~ExecutorService() = default;

void ExecutorService::run(std::stop_token stop) { impl_->serve(stop); }

const ExecutorOptions& ExecutorService::options() const { return impl_->options; }

ExecutorStats ExecutorService::stats() const {
  std::lock_guard lock(impl_->stats_mutex);
  return impl_->stats_;
}

}  // namespace tuner
