#include "executor/executor_service.h"

#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <variant>

#include "executor/child_process.h"
#include "executor/command_job.h"
#include "executor/trial_job.h"
#include "executor/node_store.h"
#include "executor/tensorboard_events.h"
#include "wire/message_socket.h"
#include "executor/unique_fd.h"
#include "training/device/gpu_inventory.h"
#include "trials/error.h"
#include "wire/protocol.h"

namespace tuner {

namespace {

using std::chrono::milliseconds;
using SteadyTime = Clock::SteadyTime;

// The longest single wait for input, so that clock deadlines are looked at now and then even when
// nothing arrives (a FakeClock moves without waking anyone).
constexpr milliseconds kMaxWait{200};
// Time a closing socket keeps trying to deliver what is queued (BYE, a last RESULT).
constexpr milliseconds kLinger{200};
// Without inotify, how often the node stores of multi-node trials are looked at.
constexpr milliseconds kNodeStorePoll{20};

std::string default_executor_id() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "host");
  return std::string(host) + "-" + std::to_string(::getpid());
}

std::string hostname() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "";
  return host;
}

// Wakes run()'s wait from other threads (job threads, a stop request).
class Waker {
 public:
  Waker() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (!fd_.valid()) {
      throw Error(ErrorCode::kUnavailable,
                  std::string("executor: cannot create an eventfd: ") + std::strerror(errno));
    }
  }
  void wake() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(fd_.get(), &one, sizeof one);
  }
  void drain() {
    uint64_t count;
    [[maybe_unused]] ssize_t n = ::read(fd_.get(), &count, sizeof count);
  }
  int fd() const { return fd_.get(); }

 private:
  UniqueFd fd_;
};

// One trial this executor holds, from TRIAL until its outcome is handed to the main loop.
struct Job {
  TrialMessage trial;
  std::shared_ptr<const TrialJob> trial_job;
  std::stop_source stop;
  // Set by the main loop (DECISION), read by the job thread's report callback.
  std::atomic<JobDecision> decision{JobDecision::kContinue};
  // Why the executor itself stopped the job (lease given up, shutdown); empty when it did not.
  // Written before stop.request_stop() by the main loop, read by the job thread after the run.
  std::string executor_stop_reason;
  std::mutex reason_mutex;
  // A node of a multi-node trial (trial.nodes > 1): its store directory, and the keys the main
  // loop has seen there (published to the coordinator, or written from it). Main loop only.
  std::unique_ptr<NodeStoreDir> node_store;
  std::set<std::string> store_keys;
  std::map<std::string, std::string> published;  // the node's own keys, to send again
};

// The threads that run jobs: one per slot, started with the first job and kept, so that a trial
// starts without creating a thread (a new thread's stack is page faults and a clone per trial).
// A task posted when every thread is busy waits for the first to be free. Destruction runs the
// tasks still waiting, then joins. Thread-safe.
class JobThreads {
 public:
  explicit JobThreads(int size) : size_(size) {}
  ~JobThreads() {
    for (std::jthread& t : threads_) t.request_stop();
    wake_.notify_all();
    threads_.clear();  // joins
  }
  JobThreads(const JobThreads&) = delete;
  JobThreads& operator=(const JobThreads&) = delete;

  // REQUIRES: called from one thread (the service's loop), which also destroys the pool.
  void post(std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    if (static_cast<int>(threads_.size()) < size_) {
      threads_.emplace_back([this](std::stop_token stop) { work(stop); });
    }
    wake_.notify_one();
  }

 private:
  void work(std::stop_token stop) {
    std::unique_lock lock(mutex_);
    while (true) {
      wake_.wait(lock, stop, [this] { return !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopped, and nothing left to run
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  const int size_;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::deque<std::function<void()>> tasks_;  // protected by mutex_
  std::vector<std::jthread> threads_;        // the posting thread's; last: joined first
};

// What a job thread hands to the main loop.
struct JobEvent {
  uint64_t lease_id = 0;
  std::optional<ReportMessage> report;
  std::optional<Message> outcome;  // RESULT or FAIL; the job's last event
  std::string note;  // else: a line for the executor's log, and nothing more
};

}  // namespace

// A trial's reports as TensorBoard scalars in its folder (TrialJob::scalars_dir), the file made
// at the first report. A folder that cannot be written costs the scalars, never the trial: the
// first problem is returned once for the log, and nothing more is tried.
class ReportScalars {
 public:
  explicit ReportScalars(std::string dir) : dir_(std::move(dir)) {}

  // Empty, or the problem to log (once).
  std::string add(const CommandReport& report) {
    if (dir_.empty() || failed_) return {};
    try {
      if (!writer_) writer_ = std::make_unique<TensorBoardWriter>(dir_);
      const double now = std::chrono::duration<double>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
      writer_->add_scalars(report.step, report.metrics, now);
      return {};
    } catch (const std::exception& e) {
      failed_ = true;
      return std::string("no TensorBoard scalars for this trial: ") + e.what();
    }
  }

 private:
  std::string dir_;
  std::unique_ptr<TensorBoardWriter> writer_;
  bool failed_ = false;
};

struct ExecutorService::Impl {
  explicit Impl(ExecutorOptions o) : options(std::move(o)) {}

  // Constant after construction.
  ExecutorOptions options;
  Clock* clock = nullptr;
  Resources resources;

  // Job threads -> main loop. State below is protected by events_mutex.
  std::mutex events_mutex;
  std::deque<JobEvent> events;
  Waker waker;

  // State below is used by run()'s thread only (stats_ also after run()).
  ExecutorStats stats_;
  mutable std::mutex stats_mutex;
  std::unique_ptr<ZmqContext> context;
  std::unique_ptr<DealerEndpoint> dealer;
  int64_t generation = 0;
  milliseconds heartbeat_interval{0};
  SteadyTime last_heard{};
  SteadyTime next_heartbeat{};
  SteadyTime next_resend{};
  bool hello_wanted = false;
  bool shutting_down = false;
  std::map<uint64_t, std::unique_ptr<Job>> running;
  std::deque<std::unique_ptr<Job>> queued;
  // Runs the jobs of `running`; after it, so that it is joined before they go.
  std::unique_ptr<JobThreads> job_threads;
  // The last job JSON parsed, and its job: a study sends the same job with every trial.
  std::string last_job_json;
  std::shared_ptr<const TrialJob> last_trial_job;
  // RESULT or FAIL sent and not ACKed yet, by lease.
  struct Unacked {
    Message outcome;
    HeldLease lease;
  };
  std::map<uint64_t, Unacked> unacked;
  // Wakes the loop when a rank writes into a node store. When inotify fails (no watch could be
  // made), poll_node_stores: the stores are then looked at every kNodeStorePoll.
  UniqueFd store_watch;
  bool poll_node_stores = false;
  bool told_queue_full = false;  // on this connection
  bool told_say_hello = false;   // on this connection
  // The coordinator refused this executor (ErrorMessage::refused): since when, and, once it has
  // lasted, why (serve() then stops).
  std::optional<SteadyTime> refused_since;
  std::string refusal;

  void log(const std::string& line) {
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

  void post(JobEvent event) {
    {
      std::lock_guard lock(events_mutex);
      events.push_back(std::move(event));
    }
    waker.wake();
  }

  bool send(const Message& message) {
    if (!dealer) return false;
    try {
      if (dealer->send(message)) return true;
      // Once per connection: a coordinator that never reads (a CURVE endpoint that refuses a
      // plain executor, or none at all) would otherwise get a line per heartbeat.
      if (!told_queue_full) {
        log(std::string("could not queue ") + std::string(to_string(message_type(message))) +
            " for the coordinator: its queue is full, so it takes nothing from this executor " +
            connection_hint() + "; messages wait until it does");
        told_queue_full = true;
      }
    } catch (const ProtocolError& e) {
      log(std::string("cannot encode ") + std::string(to_string(message_type(message))) + ": " +
          e.what());
    }
    return false;
  }

  // Trials it takes now: its free slots, and `prefetch` more to start as slots free.
  int free_slots() const {
    return std::max(0, options.slots + options.prefetch -
                           static_cast<int>(running.size() + queued.size()));
  }

  std::vector<uint64_t> held_leases() const {
    std::set<uint64_t> ids;
    for (const auto& [id, job] : running) ids.insert(id);
    for (const auto& job : queued) ids.insert(job->trial.lease_id);
    for (const auto& [id, u] : unacked) ids.insert(id);
    return {ids.begin(), ids.end()};
  }

  // The same, with their trials, for HELLO: a restarted coordinator takes them back from it.
  std::vector<HeldLease> held_trials() const {
    std::vector<HeldLease> held;
    for (const auto& [id, job] : running) held.push_back(held_lease(job->trial));
    for (const auto& job : queued) held.push_back(held_lease(job->trial));
    for (const auto& [id, u] : unacked) held.push_back(u.lease);
    return held;
  }

  static HeldLease held_lease(const TrialMessage& trial) {
    return {.lease_id = trial.lease_id,
            .study_name = trial.study_name,
            .trial_id = trial.trial_id,
            .gpus = trial.gpus,
            .node = trial.node};
  }

  void send_ready() {
    ReadyMessage ready{.free_slots = free_slots()};
    std::set<int> held;  // by running and queued trials
    for (const auto& [id, job] : running) held.insert(job->trial.gpus.begin(), job->trial.gpus.end());
    for (const auto& job : queued) held.insert(job->trial.gpus.begin(), job->trial.gpus.end());
    for (const GpuInfo& g : resources.gpus) {
      if (!held.contains(g.index)) ready.free_gpus.push_back(g.index);
    }
    send(ready);
  }

  // HELLO, what this executor holds, what is not ACKed, and READY.
  void introduce() {
    send(HelloMessage{.executor_id = options.executor_id,
                      .hostname = hostname(),
                      .pid = ::getpid(),
                      .resources = resources,
                      .leases = held_trials()});
    send(HeartbeatMessage{.lease_ids = held_leases()});
    for (const auto& [id, u] : unacked) send(u.outcome);
    for (const auto& [id, job] : running) {
      for (const auto& [key, value] : job->published) {
        send(StoreSetMessage{.lease_id = id, .key = key, .value = value});
      }
    }
    send_ready();
    hello_wanted = false;
  }

  // What to check when the coordinator does not answer.
  std::string connection_hint() const {
    return options.curve_keys
               ? "(with CURVE: does the coordinator accept this executor's public key, and is "
                 "--coordinator-key its .pub file?)"
               : "(is a coordinator listening there? one that uses CURVE answers only executors "
                 "started with --key and --coordinator-key)";
  }

  void connect() {
    ++generation;
    told_queue_full = false;
    told_say_hello = false;
    ZmqSocketOptions socket_options;
    socket_options.routing_id = options.executor_id.substr(0, 200) + "#" +
                                std::to_string(::getpid()) + "." + std::to_string(generation);
    socket_options.linger = kLinger;
    socket_options.max_frame_bytes = static_cast<int64_t>(kMaxMessageBytes) + 1024;
    if (options.curve_keys) {
      socket_options.curve_public_key = options.curve_keys->public_key;
      socket_options.curve_secret_key = options.curve_keys->secret_key;
      socket_options.curve_server_key = options.coordinator_key;
    }
    dealer.reset();
    dealer = std::make_unique<DealerEndpoint>(*context, options.coordinator, socket_options);
    count(&ExecutorStats::connections);
    const SteadyTime now = clock->steady_now();
    last_heard = now;
    next_heartbeat = now + heartbeat_interval;
    next_resend = now + options.coordinator_timeout;
    introduce();
  }

  // --- Jobs -------------------------------------------------------------------------------------

  void run_job(Job& job) {
    JobEvent done{.lease_id = job.trial.lease_id};
    try {
      CommandTrial trial{.trial_id = job.trial.trial_id,
                         .number = job.trial.number,
                         .params = job.trial.params,
                         .checkpoint_path = job.trial.checkpoint_path};
      ReportScalars scalars(job.trial_job->scalars_dir(job.trial.number));
      ReportCallback on_report = [&](const CommandReport& r) {
        post(JobEvent{.lease_id = job.trial.lease_id,
                      .report = ReportMessage{
                          .lease_id = job.trial.lease_id, .step = r.step, .metrics = r.metrics}});
        if (std::string problem = scalars.add(r); !problem.empty()) {
          post(JobEvent{.note = "trial " + std::to_string(job.trial.number) + ": " + problem});
        }
        return job.decision.load();
      };
      CommandOutcome outcome = options.job_runner
                                   ? options.job_runner(trial, on_report, job.stop.get_token())
                                   : run_command(job, trial, on_report);
      done.outcome = outcome_message(job, outcome);
    } catch (const std::exception& e) {
      done.outcome = FailMessage{.lease_id = job.trial.lease_id,
                                 .reason = std::string("the job could not start: ") + e.what()};
    }
    post(std::move(done));
  }

  // The job's command (an engine job's `tuner trial` command) run to its end.
  CommandOutcome run_command(Job& job, const CommandTrial& trial, const ReportCallback& on_report) {
    CommandJobOptions job_options;
    job_options.stop_grace = job.trial_job->stop_grace().value_or(options.stop_grace);
    job_options.time_limit = job.trial_job->timeout().value_or(milliseconds(0));
    if (!options.log_dir.empty()) {
      job_options.log_path = options.log_dir + "/trial-" + std::to_string(job.trial.number) +
                             "-lease-" + std::to_string(job.trial.lease_id) + ".log";
    }
    CommandSpec spec = job.trial_job->command(TrialPlacement{
        .number = job.trial.number,
        .gpus = job.trial.gpus,
        .node = job.trial.node,
        .node_store_dir = job.node_store ? job.node_store->path().string() : std::string(),
        .rank_host = options.rank_host,
        .tuner_path = options.tuner_path});
    CommandJob command(std::move(spec), job_options);
    return command.run(trial, on_report, job.stop.get_token());
  }

  Message outcome_message(Job& job, const CommandOutcome& outcome) {
    const uint64_t lease = job.trial.lease_id;
    const std::string& metric = job.trial_job->objective_metric();
    Metrics metrics = outcome.result_metrics();
    auto objective = metrics.find(metric);
    std::string stop_reason;
    {
      std::lock_guard lock(job.reason_mutex);
      stop_reason = job.executor_stop_reason;
    }
    if (outcome.timed_out && job.trial_job->timeout()) {
      // The job's own limit, not a lost lease: FAIL, and not run again.
      return FailMessage{.lease_id = lease,
                         .reason = "timed out after " + seconds_text(*job.trial_job->timeout()) +
                                   " (the job's timeout_s); " +
                                   ExitStatus{outcome.exit_code, outcome.term_signal}.describe(),
                         .exit_code = outcome.exit_code,
                         .log_tail = outcome.log_tail};
    }
    if (job.decision.load() != JobDecision::kContinue) {
      // Told to stop (pruned) or pause: the coordinator records the trial as such.
      ResultMessage result{.lease_id = lease,
                           .metrics = metrics,
                           .integer_metrics = outcome.result_integer_metrics()};
      if (objective != metrics.end()) result.values.push_back(objective->second);
      return result;
    }
    if (!stop_reason.empty()) {
      return FailMessage{
          .lease_id = lease,
          .reason = "stopped by the executor (" + stop_reason + "); " + outcome.describe(),
          .exit_code = outcome.exit_code,
          .log_tail = outcome.log_tail};
    }
    if (!outcome.succeeded()) {
      // A job may say why in its output (an engine trial on its last stderr line, "error:
      // ..."): that is the reason, with the exit after it.
      std::string reason = outcome.describe();
      if (auto error = job.trial_job->failure_reason(outcome.log_tail)) {
        reason = *error + " (" + reason + ")";
      }
      return FailMessage{.lease_id = lease,
                         .reason = reason,
                         .exit_code = outcome.exit_code,
                         .log_tail = outcome.log_tail};
    }
    // A node other than 0 of a multi-node trial: its part is done; node 0 reports the metrics.
    if (job.trial.node > 0) return ResultMessage{.lease_id = lease};
    if (objective == metrics.end()) {
      std::string names;
      for (const auto& [name, value] : metrics) names += (names.empty() ? "" : ", ") + name;
      return FailMessage{
          .lease_id = lease,
          .reason = "the job exited with code 0 but its metrics have no objective metric '" +
                    metric + "' (it printed: " + (names.empty() ? "no metrics" : names) + ")",
          .exit_code = outcome.exit_code,
          .log_tail = outcome.log_tail};
    }
    return ResultMessage{.lease_id = lease,
                         .metrics = metrics,
                         .values = {objective->second},
                         .integer_metrics = outcome.result_integer_metrics()};
  }

  void start(std::unique_ptr<Job> job) {
    Job* j = job.get();
    const uint64_t lease = j->trial.lease_id;
    running[lease] = std::move(job);
    if (!job_threads) job_threads = std::make_unique<JobThreads>(options.slots);
    job_threads->post([this, j] { run_job(*j); });
  }

  void stop_job(Job& job, const std::string& reason) {
    {
      std::lock_guard lock(job.reason_mutex);
      if (job.executor_stop_reason.empty()) job.executor_stop_reason = reason;
    }
    job.stop.request_stop();
  }

  void on_trial(TrialMessage trial) {
    count(&ExecutorStats::trials_received);
    const uint64_t lease = trial.lease_id;
    bool known = running.contains(lease) || unacked.contains(lease) ||
                 std::any_of(queued.begin(), queued.end(),
                             [&](const auto& j) { return j->trial.lease_id == lease; });
    if (known) return;  // a duplicate
    if (trial.heartbeat_interval_ms > 0) {
      heartbeat_interval = std::min(heartbeat_interval, milliseconds(trial.heartbeat_interval_ms));
    }
    auto job = std::make_unique<Job>();
    try {
      if (trial.job_json != last_job_json || last_job_json.empty()) {
        last_trial_job =
            parse_trial_job(trial.job_json, "trial " + std::to_string(trial.number) + ": job");
        last_job_json = trial.job_json;
      }
      job->trial_job = last_trial_job;
    } catch (const Error& e) {
      log(std::string("refusing lease ") + std::to_string(lease) + ": " + e.what());
      finish(trial, FailMessage{.lease_id = lease, .reason = e.what()});
      return;
    }
    if (trial.nodes > 1) {
      const std::string where = "trial " + std::to_string(trial.number) + ": job";
      try {
        if (job->trial_job->needs().nodes != trial.nodes) {
          throw Error(ErrorCode::kInvalidArgument,
                      where + ": the coordinator sent node " + std::to_string(trial.node) + " of " +
                          std::to_string(trial.nodes) +
                          ", but only an engine job of as many \"nodes\" spans executors");
        }
        job->node_store = std::make_unique<NodeStoreDir>();
        watch_node_store(job->node_store->path());
      } catch (const Error& e) {
        log(std::string("refusing lease ") + std::to_string(lease) + ": " + e.what());
        finish(trial, FailMessage{.lease_id = lease, .reason = e.what()});
        return;
      }
    }
    job->trial = std::move(trial);
    // A trial taken ahead goes to the job threads at once: the first thread that frees starts it.
    if (static_cast<int>(running.size()) < options.slots + options.prefetch) {
      start(std::move(job));
    } else {
      queued.push_back(std::move(job));
    }
  }

  // --- Node stores of multi-node trials ----------------------------------------------------------

  void watch_node_store(const std::filesystem::path& dir) {
    if (poll_node_stores) return;
    if (!store_watch.valid()) store_watch.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    // A rank's key appears by a rename into the directory (node_store.h).
    if (!store_watch.valid() ||
        ::inotify_add_watch(store_watch.get(), dir.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
      log("cannot watch " + dir.string() + " with inotify (" + std::strerror(errno) +
          "): looking at node stores every " + std::to_string(kNodeStorePoll.count()) + " ms");
      poll_node_stores = true;
    }
  }

  bool has_node_stores() const {
    return std::any_of(running.begin(), running.end(),
                       [](const auto& r) { return r.second->node_store != nullptr; });
  }

  // Sends STORE_SET for each key the ranks of a node wrote since the last look.
  void publish_node_stores() {
    if (store_watch.valid()) {
      char buffer[4096];
      while (::read(store_watch.get(), buffer, sizeof buffer) > 0) {
      }
    }
    for (auto& [id, job] : running) {
      if (!job->node_store) continue;
      for (auto& [key, value] : read_node_store(job->node_store->path())) {
        if (!job->store_keys.insert(key).second) continue;
        send(StoreSetMessage{.lease_id = id, .key = key, .value = value});
        job->published.emplace(key, std::move(value));
      }
    }
  }

  // Writes the keys other nodes set into the node's store.
  void on_store_keys(const StoreKeysMessage& keys) {
    auto it = running.find(keys.lease_id);
    if (it == running.end() || !it->second->node_store) {
      log("STORE_KEYS for lease " + std::to_string(keys.lease_id) +
          ", which is not a running node of a multi-node trial here: ignored");
      return;
    }
    Job& job = *it->second;
    for (const auto& [key, value] : keys.entries) {
      if (job.store_keys.contains(key)) continue;
      try {
        write_node_store_key(job.node_store->path(), key, value);
        job.store_keys.insert(key);
      } catch (const Error& e) {
        // Its ranks' rendezvous fails within the collective timeout, naming the key they waited
        // for.
        log("lease " + std::to_string(keys.lease_id) + ": " + e.what());
      }
    }
  }

  // Sends a trial's outcome and keeps it until ACKed.
  void finish(const TrialMessage& trial, Message outcome) {
    count(std::holds_alternative<ResultMessage>(outcome) ? &ExecutorStats::results_sent
                                                         : &ExecutorStats::fails_sent);
    send(outcome);
    unacked[trial.lease_id] = Unacked{std::move(outcome), held_lease(trial)};
  }

  void handle_job_events() {
    std::deque<JobEvent> batch;
    {
      std::lock_guard lock(events_mutex);
      batch.swap(events);
    }
    bool freed = false;
    for (JobEvent& e : batch) {
      if (!e.note.empty()) {  // a note-only event
        log(e.note);
        continue;
      }
      if (e.report) {
        send(*e.report);
        continue;
      }
      auto it = running.find(e.lease_id);
      if (it == running.end()) continue;
      std::unique_ptr<Job> job = std::move(it->second);
      running.erase(it);  // the event was the job's last act on its thread
      if (!shutting_down && e.outcome) finish(job->trial, std::move(*e.outcome));
      freed = true;
    }
    if (!freed || shutting_down) return;
    while (!queued.empty() && static_cast<int>(running.size()) < options.slots + options.prefetch) {
      std::unique_ptr<Job> next = std::move(queued.front());
      queued.pop_front();
      start(std::move(next));
    }
    send_ready();
  }

  // --- Coordinator messages ---------------------------------------------------------------------

  void handle(const std::vector<std::string>& frames) {
    last_heard = clock->steady_now();
    Message message;
    try {
      message = decode(frames);
    } catch (const ProtocolError& e) {
      log(std::string("undecodable message from the coordinator: ") + e.what());
      send(ErrorMessage{.message = std::string("executor ") + options.executor_id +
                                   ": cannot decode your message: " + e.what()});
      return;
    }
    if (!std::holds_alternative<ErrorMessage>(message)) refused_since.reset();  // it is let in
    if (auto* m = std::get_if<TrialMessage>(&message)) {
      on_trial(std::move(*m));
    } else if (auto* d = std::get_if<DecisionMessage>(&message)) {
      auto it = running.find(d->lease_id);
      if (it == running.end()) return;  // finished meanwhile
      it->second->decision.store(d->decision);
      if (d->decision != JobDecision::kContinue) it->second->stop.request_stop();
    } else if (auto* a = std::get_if<AckMessage>(&message)) {
      if (unacked.erase(a->lease_id) && !a->accepted) {
        count(&ExecutorStats::acks_refused);
        log("the coordinator refused the outcome of lease " + std::to_string(a->lease_id) + ": " +
            a->reason);
      }
    } else if (auto* h = std::get_if<HeartbeatMessage>(&message)) {
      std::set<uint64_t> honoured(h->lease_ids.begin(), h->lease_ids.end());
      for (auto& [id, job] : running) {
        if (!honoured.contains(id) && job->executor_stop_reason.empty()) {
          log("the coordinator no longer holds lease " + std::to_string(id) + " (trial " +
              std::to_string(job->trial.number) + "): stopping its job");
          stop_job(*job, "the coordinator gave up lease " + std::to_string(id));
        }
      }
      std::erase_if(queued,
                    [&](const auto& job) { return !honoured.contains(job->trial.lease_id); });
    } else if (auto* err = std::get_if<ErrorMessage>(&message)) {
      if (!err->say_hello) {
        log("the coordinator reports an error: " + err->message);
      } else if (!told_say_hello) {  // a restarted coordinator: once per connection
        log("the coordinator does not know this connection (did it restart?): saying HELLO again");
        told_say_hello = true;
      }
      // A restarted executor may be refused while the coordinator still counts its dead
      // predecessor under the same id (until lease_timeout): only a refusal that lasts stops it.
      const SteadyTime now = clock->steady_now();
      if (!err->refused) {
        refused_since.reset();
      } else if (!refused_since) {
        refused_since = now;
      } else if (now - *refused_since > 2 * options.coordinator_timeout) {
        refusal = err->message;
      }
      hello_wanted = true;
    } else if (auto* keys = std::get_if<StoreKeysMessage>(&message)) {
      on_store_keys(*keys);
    } else if (std::holds_alternative<ByeMessage>(message)) {
      log("the coordinator said BYE; reconnecting");
      connect();
    } else {
      const std::string type(to_string(message_type(message)));
      log("unexpected " + type + " from the coordinator");
      send(ErrorMessage{.message = "executor " + options.executor_id + ": unexpected " + type});
    }
  }

  void on_timers() {
    const SteadyTime now = clock->steady_now();
    if (now - last_heard >= options.coordinator_timeout) {
      log("nothing from the coordinator for " +
          std::to_string(std::chrono::duration_cast<milliseconds>(now - last_heard).count()) +
          " ms; reconnecting to " + options.coordinator + " " + connection_hint());
      connect();
      return;
    }
    if (now >= next_heartbeat) {
      if (hello_wanted) {
        introduce();
      } else {
        send(HeartbeatMessage{.lease_ids = held_leases()});
      }
      next_heartbeat = now + heartbeat_interval;
    }
    if (now >= next_resend) {
      for (const auto& [id, u] : unacked) send(u.outcome);
      next_resend = now + options.coordinator_timeout;
    }
  }

  milliseconds wait_time() const {
    const SteadyTime now = clock->steady_now();
    SteadyTime next =
        std::min({next_heartbeat, next_resend, last_heard + options.coordinator_timeout});
    auto wait = std::chrono::duration_cast<milliseconds>(next - now) + milliseconds(1);
    const milliseconds most = poll_node_stores && has_node_stores() ? kNodeStorePoll : kMaxWait;
    return std::clamp(wait, milliseconds(0), most);
  }

  void serve(std::stop_token stop) {
    context = std::make_unique<ZmqContext>();
    heartbeat_interval = options.heartbeat_interval;
    std::stop_callback wake_on_stop(stop, [this] { waker.wake(); });
    connect();
    while (!stop.stop_requested() && refusal.empty()) {
      ZmqPollEntry entries[3] = {
          {.socket = &dealer->socket()}, {.fd = waker.fd()}, {.fd = store_watch.get()}};
      zmq_wait({entries, store_watch.valid() ? size_t{3} : size_t{2}}, wait_time());
      if (entries[1].readable) waker.drain();
      while (dealer) {
        std::optional<std::vector<std::string>> frames = dealer->receive();
        if (!frames) break;
        handle(*frames);
      }
      handle_job_events();
      if (has_node_stores()) publish_node_stores();
      on_timers();
    }
    shut_down();
    if (!refusal.empty()) {
      throw Error(ErrorCode::kFailedPrecondition, "the coordinator refused this executor: " + refusal);
    }
  }

  void shut_down() {
    shutting_down = true;
    queued.clear();
    for (auto& [id, job] : running) stop_job(*job, "the executor is shutting down");
    job_threads.reset();  // the stopped jobs end, then their threads
    running.clear();
    {
      std::lock_guard lock(events_mutex);
      events.clear();
    }
    send(ByeMessage{});
    log("stopped");
    dealer.reset();  // lingers up to kLinger to deliver BYE
    context.reset();
  }
};

ExecutorService::ExecutorService(ExecutorOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {
  ExecutorOptions& o = impl_->options;
  if (o.coordinator.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "executor: no coordinator endpoint given");
  }
  if (o.slots < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "executor: slots must be >= 1, got " + std::to_string(o.slots));
  }
  if (o.prefetch < 0 || o.prefetch > o.slots) {
    throw Error(ErrorCode::kInvalidArgument, "executor: prefetch must be in [0, slots = " +
                                                 std::to_string(o.slots) + "], got " +
                                                 std::to_string(o.prefetch));
  }
  if (o.heartbeat_interval <= milliseconds(0) || o.coordinator_timeout <= o.heartbeat_interval) {
    throw Error(ErrorCode::kInvalidArgument,
                "executor: coordinator_timeout (" + std::to_string(o.coordinator_timeout.count()) +
                    " ms) must exceed heartbeat_interval (" +
                    std::to_string(o.heartbeat_interval.count()) + " ms), which must be > 0");
  }
  if (o.curve_keys) {
    check_curve_key(o.curve_keys->public_key, "executor: CURVE public key");
    check_curve_key(o.curve_keys->secret_key, "executor: CURVE secret key");
    check_curve_key(o.coordinator_key, "executor: the coordinator's CURVE public key");
  }
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
  impl_->clock = o.clock.get();
  if (o.rank_host.empty()) {
    const char* host = std::getenv("TUNER_RANK_HOST");
    o.rank_host = host != nullptr && *host != '\0' ? host : "127.0.0.1";
  }

  Resources& r = impl_->resources;
  r.cpu_slots = o.slots;
  std::vector<training::GpuInfo> found = training::list_gpus();
  for (const training::GpuInfo& g : found) {
    if (o.gpus && std::find(o.gpus->begin(), o.gpus->end(), g.index) == o.gpus->end()) continue;
    r.gpus.push_back(GpuInfo{.index = g.index, .name = g.name, .memory_bytes = g.memory_bytes});
  }
  if (o.gpus) {
    for (int index : *o.gpus) {
      bool present = std::any_of(found.begin(), found.end(),
                                 [&](const training::GpuInfo& g) { return g.index == index; });
      if (!present) {
        throw Error(ErrorCode::kInvalidArgument,
                    "executor: GPU " + std::to_string(index) + " is not visible to this process (" +
                        std::to_string(found.size()) + " GPU(s) found)");
      }
    }
  }
}

ExecutorService::~ExecutorService() = default;

void ExecutorService::run(std::stop_token stop) { impl_->serve(stop); }

const ExecutorOptions& ExecutorService::options() const { return impl_->options; }

ExecutorStats ExecutorService::stats() const {
  std::lock_guard lock(impl_->stats_mutex);
  return impl_->stats_;
}

}  // namespace tuner
