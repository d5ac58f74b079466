#include "bench/scale/simulated_executors.h"

#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <queue>
#include <random>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include "trials/error.h"
#include "wire/message_socket.h"
#include "wire/protocol.h"

namespace tuner::bench {

namespace {

using SteadyClock = std::chrono::steady_clock;

int64_t steady_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             SteadyClock::now().time_since_epoch())
      .count();
}

int64_t unix_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double process_cpu_s() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

// ZeroMQ's default limit is 1023 sockets per context (lingering closed ones included).
constexpr int kExecutorsPerContext = 250;
constexpr size_t kErrorSamples = 5;

struct Running {
  int64_t trial_id = -1;
  std::string study;
  double duration_s = 0;
  double hz = 0;
  int64_t step = 0;
  double loss = 0;
};

struct Unacked {
  Message outcome;
  int64_t trial_id = -1;
  std::string study;
  int64_t first_sent_us = 0;
  int64_t last_sent_us = 0;
  double duration_s = 0;  // 0 for a FAIL
};

struct Executor {
  std::string id;
  int generation = 0;  // events of an earlier generation are stale
  std::unique_ptr<DealerEndpoint> socket;
  std::unordered_map<uint64_t, Running> running;
  std::deque<std::pair<uint64_t, Running>> queued;  // TRIALs that found every slot busy
  std::unordered_map<uint64_t, Unacked> unacked;
  std::deque<int64_t> free_since;  // steady us at which each free slot became free
  int64_t heartbeat_us = 0;
};

enum class EventKind { kEnd, kReport, kHeartbeat, kChurn };

struct Event {
  int64_t due_us;
  EventKind kind;
  int executor;
  int generation;
  uint64_t lease;
  bool operator>(const Event& other) const { return due_us > other.due_us; }
};

class Simulator {
 public:
  Simulator(const SimConfig& config, int stop_fd)
      : config_(config), stop_fd_(stop_fd), rng_(config.seed * 1'000'003 + config.process) {
    const int contexts = (config.executors + kExecutorsPerContext - 1) / kExecutorsPerContext;
    for (int c = 0; c < contexts; ++c) contexts_.push_back(std::make_unique<ZmqContext>());
    executors_.resize(static_cast<size_t>(config.executors));
    entries_.resize(static_cast<size_t>(config.executors) + 1);
    entries_.back().fd = stop_fd_;
    hello_ = HelloMessage{.executor_id = "",
                          .hostname = "sim-host-" + std::to_string(config.process),
                          .pid = ::getpid(),
                          .resources = Resources{.cpu_slots = config.slots, .gpus = {}},
                          .leases = {}};
    const double churn = (config.lost_per_hour + config.preempted_per_hour) / 100.0;
    churn_per_us_ = churn * config.executors * config.time_scale / 3600.0 / 1e6;
  }

  SimReport run() {
    const int64_t start = steady_us();
    const double cpu_start = process_cpu_s();
    for (int e = 0; e < config_.executors; ++e) join(e);
    schedule_churn(start);
    while (true) {
      // The timers due now; those that come due meanwhile wait for the next turn, so that a
      // loop that falls behind still reads its sockets.
      const int64_t turn = steady_us();
      int64_t now = turn;
      while (!events_.empty() && events_.top().due_us <= turn) {
        const Event event = events_.top();
        events_.pop();
        if (event.kind != EventKind::kChurn) {
          report_.lateness_ms.add(static_cast<double>(now - event.due_us) / 1000.0);
        }
        handle(event, now);
        now = steady_us();
      }
      int64_t wait_ms = 100;
      if (!events_.empty()) {
        wait_ms = std::clamp<int64_t>((events_.top().due_us - now + 999) / 1000, 0, 100);
      }
      const int64_t before_wait = steady_us();
      const int ready = zmq_wait(entries_, std::chrono::milliseconds(wait_ms));
      report_.wait_s += static_cast<double>(steady_us() - before_wait) * 1e-6;
      ++report_.turns;
      if (ready <= 0) continue;
      if (entries_.back().readable || stop_pipe_closed()) break;
      for (size_t e = 0; e + 1 < entries_.size(); ++e) {
        if (entries_[e].readable) receive(static_cast<int>(e));
      }
    }
    for (Executor& executor : executors_) {
      if (executor.socket) executor.socket->send(ByeMessage{});
    }
    report_.wall_s = static_cast<double>(steady_us() - start) * 1e-6;
    report_.cpu_s = process_cpu_s() - cpu_start;
    return std::move(report_);
  }

 private:
  // The driver wrote to the stop pipe, or died (zmq_poll reports a closed pipe as an error, not
  // as readable).
  bool stop_pipe_closed() const {
    pollfd entry{.fd = stop_fd_, .events = POLLIN, .revents = 0};
    return ::poll(&entry, 1, 0) > 0 && (entry.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
  }

  double uniform(double lo, double hi) {
    if (hi <= lo) return lo;
    return std::uniform_real_distribution<double>(lo, hi)(rng_);
  }

  void schedule(int64_t due, EventKind kind, int e, uint64_t lease = 0) {
    events_.push(Event{.due_us = due,
                       .kind = kind,
                       .executor = e,
                       .generation = e >= 0 ? executors_[static_cast<size_t>(e)].generation : 0,
                       .lease = lease});
  }

  void schedule_churn(int64_t now) {
    if (churn_per_us_ <= 0) return;
    const double wait_us = std::exponential_distribution<double>(churn_per_us_)(rng_);
    schedule(now + static_cast<int64_t>(std::min(wait_us, 1e15)), EventKind::kChurn, -1);
  }

  // A new executor in slot `e` (a new id, a new connection), introduced to the coordinator.
  void join(int e) {
    Executor& executor = executors_[static_cast<size_t>(e)];
    const int generation = executor.generation + 1;
    executor = Executor{};
    executor.generation = generation;
    executor.id = "sim-" + std::to_string(config_.process) + "-" + std::to_string(e) + "." +
                  std::to_string(generation);
    ZmqSocketOptions options;
    options.routing_id = executor.id + "#" + std::to_string(::getpid());
    options.linger = std::chrono::milliseconds(2000);  // a BYE goes out after the close
    executor.socket = std::make_unique<DealerEndpoint>(
        *contexts_[static_cast<size_t>(e / kExecutorsPerContext)], config_.endpoint, options);
    executor.heartbeat_us = int64_t{config_.heartbeat_ms} * 1000;
    entries_[static_cast<size_t>(e)].socket = &executor.socket->socket();
    const int64_t now = steady_us();
    for (int s = 0; s < config_.slots; ++s) executor.free_since.push_back(now);
    introduce(executor);
    // Spread the heartbeats of executors that join together over one interval.
    schedule(now + static_cast<int64_t>(uniform(0, static_cast<double>(executor.heartbeat_us))),
             EventKind::kHeartbeat, e);
  }

  std::vector<uint64_t> held(const Executor& executor) const {
    std::vector<uint64_t> ids;
    ids.reserve(executor.running.size() + executor.queued.size() + executor.unacked.size());
    for (const auto& [id, r] : executor.running) ids.push_back(id);
    for (const auto& [id, r] : executor.queued) ids.push_back(id);
    for (const auto& [id, u] : executor.unacked) ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    return ids;
  }

  void introduce(Executor& executor) {
    HelloMessage hello = hello_;
    hello.executor_id = executor.id;
    for (const auto& [id, r] : executor.running) {
      hello.leases.push_back(
          HeldLease{.lease_id = id, .study_name = r.study, .trial_id = r.trial_id});
    }
    for (const auto& [id, r] : executor.queued) {
      hello.leases.push_back(
          HeldLease{.lease_id = id, .study_name = r.study, .trial_id = r.trial_id});
    }
    for (const auto& [id, u] : executor.unacked) {
      hello.leases.push_back(
          HeldLease{.lease_id = id, .study_name = u.study, .trial_id = u.trial_id});
    }
    executor.socket->send(hello);
    executor.socket->send(HeartbeatMessage{.lease_ids = held(executor)});
    for (const auto& [id, u] : executor.unacked) executor.socket->send(u.outcome);
    send_ready(executor);
  }

  static int jobs(const Executor& executor) {
    return static_cast<int>(executor.running.size() + executor.queued.size());
  }

  void send_ready(Executor& executor) {
    executor.socket->send(
        ReadyMessage{.free_slots = std::max(0, config_.slots - jobs(executor)), .free_gpus = {}});
  }

  void handle(const Event& event, int64_t now) {
    if (event.kind == EventKind::kChurn) {
      churn(now);
      schedule_churn(now);
      return;
    }
    Executor& executor = executors_[static_cast<size_t>(event.executor)];
    if (event.generation != executor.generation) return;  // that executor is gone
    switch (event.kind) {
      case EventKind::kEnd:
        if (executor.running.contains(event.lease)) {
          end_trial(event.executor, executor, event.lease, now);
        }
        break;
      case EventKind::kReport: {
        auto it = executor.running.find(event.lease);
        if (it == executor.running.end()) break;
        Running& r = it->second;
        r.loss *= 0.99;
        executor.socket->send(ReportMessage{
            .lease_id = event.lease, .step = r.step++, .metrics = {{"loss", r.loss}}});
        ++report_.reports;
        schedule(event.due_us + static_cast<int64_t>(1e6 / r.hz), EventKind::kReport,
                 event.executor, event.lease);
        break;
      }
      case EventKind::kHeartbeat:
        executor.socket->send(HeartbeatMessage{.lease_ids = held(executor)});
        for (auto& [id, u] : executor.unacked) {
          if (now - u.last_sent_us >= int64_t{config_.coordinator_timeout_ms} * 1000) {
            executor.socket->send(u.outcome);
            u.last_sent_us = now;
            ++report_.resent;
          }
        }
        schedule(event.due_us + executor.heartbeat_us, EventKind::kHeartbeat, event.executor);
        break;
      case EventKind::kChurn:
        break;
    }
  }

  // The trial ends: RESULT with its final loss; the slot goes to the next trial queued, else
  // READY offers it.
  void end_trial(int e, Executor& executor, uint64_t lease, int64_t now) {
    auto it = executor.running.find(lease);
    Running r = std::move(it->second);
    executor.running.erase(it);
    ResultMessage result{.lease_id = lease, .metrics = {{"loss", r.loss}}};
    executor.socket->send(result);
    ++report_.results;
    executor.unacked.emplace(lease, Unacked{.outcome = std::move(result),
                                            .trial_id = r.trial_id,
                                            .study = std::move(r.study),
                                            .first_sent_us = now,
                                            .last_sent_us = now,
                                            .duration_s = r.duration_s});
    if (!executor.queued.empty()) {
      auto [next, queued] = std::move(executor.queued.front());
      executor.queued.pop_front();
      start(e, executor, next, std::move(queued), now);
    } else {
      executor.free_since.push_back(now);
    }
    send_ready(executor);
  }

  void start(int e, Executor& executor, uint64_t lease, Running r, int64_t now) {
    schedule(now + static_cast<int64_t>(r.duration_s * 1e6), EventKind::kEnd, e, lease);
    if (r.hz > 0) schedule(now + static_cast<int64_t>(1e6 / r.hz), EventKind::kReport, e, lease);
    executor.running.emplace(lease, std::move(r));
  }

  void churn(int64_t now) {
    const double total = config_.lost_per_hour + config_.preempted_per_hour;
    const bool lose = uniform(0, total) < config_.lost_per_hour;
    const int e = static_cast<int>(uniform(0, config_.executors)) % config_.executors;
    Executor& executor = executors_[static_cast<size_t>(e)];
    if (lose) {
      ++report_.lost;
      report_.lost_leases += static_cast<int64_t>(jobs(executor) + executor.unacked.size());
    } else {
      ByeMessage bye;
      for (const auto& [id, r] : executor.running) {
        bye.preempted.push_back(PreemptedLease{.lease_id = id, .checkpoint = false});
      }
      for (const auto& [id, r] : executor.queued) {
        bye.preempted.push_back(PreemptedLease{.lease_id = id, .checkpoint = false});
      }
      std::sort(
          bye.preempted.begin(), bye.preempted.end(),
          [](const PreemptedLease& a, const PreemptedLease& b) { return a.lease_id < b.lease_id; });
      executor.socket->send(bye);
      ++report_.preempted;
      report_.preempted_leases += static_cast<int64_t>(bye.preempted.size());
    }
    entries_[static_cast<size_t>(e)].socket = nullptr;
    executor.socket.reset();
    (void)now;
    join(e);
  }

  void receive(int e) {
    Executor& executor = executors_[static_cast<size_t>(e)];
    const int generation = executor.generation;
    while (executor.generation == generation) {
      std::optional<std::vector<std::string>> frames = executor.socket->receive();
      if (!frames) break;
      Message message;
      try {
        message = decode(*frames);
      } catch (const ProtocolError& error) {
        std::cerr << "scale_sim: executor " << executor.id
                  << " cannot decode a message: " << error.what() << "\n";
        ++report_.errors;
        continue;
      }
      std::visit([&](const auto& m) { on_message(e, executor, m); }, message);
    }
  }

  void on_message(int e, Executor& executor, const TrialMessage& trial) {
    const int64_t now = steady_us();
    report_.starts.emplace_back(trial.trial_id, unix_us());
    ++report_.trials;
    if (!executor.free_since.empty()) {
      report_.ready_to_trial_us.push_back(now - executor.free_since.front());
      executor.free_since.pop_front();
    }

    if (trial.heartbeat_interval_ms > 0) {
      executor.heartbeat_us = std::min(executor.heartbeat_us, trial.heartbeat_interval_ms * 1000);
    }
    double loss = 0;
    for (const char* name : {"x", "y"}) {
      if (auto it = trial.params.find(name); it != trial.params.end()) {
        const double v = as_double(it->second);
        loss += v * v;
      }
    }
    Running r{.trial_id = trial.trial_id,
              .study = trial.study_name,
              .duration_s = uniform(config_.min_s, config_.max_s),
              .hz = uniform(config_.report_hz_lo, config_.report_hz_hi),
              .step = 0,
              .loss = loss};
    if (static_cast<int>(executor.running.size()) < config_.slots) {
      start(e, executor, trial.lease_id, std::move(r), now);
    } else {
      executor.queued.emplace_back(trial.lease_id, std::move(r));
      ++report_.queued;
    }
  }

  void on_message(int e, Executor& executor, const DecisionMessage& decision) {
    ++report_.decisions;
    if (decision.decision == JobDecision::kContinue) return;
    if (!executor.running.contains(decision.lease_id)) return;
    ++report_.stopped;
    end_trial(e, executor, decision.lease_id, steady_us());
  }

  void on_message(int, Executor& executor, const AckMessage& ack) {
    auto it = executor.unacked.find(ack.lease_id);
    if (it == executor.unacked.end()) return;  // an ACK of a resend already ACKed
    report_.result_to_ack_us.push_back(steady_us() - it->second.first_sent_us);
    if (ack.accepted) {
      ++report_.accepted;
      report_.work_s += it->second.duration_s;
    } else {
      ++report_.refused;
    }
    executor.unacked.erase(it);
  }

  void on_message(int, Executor& executor, const HeartbeatMessage& heartbeat) {
    // A running lease the coordinator no longer honours: stop it and say so (it is refused).
    const std::unordered_set<uint64_t> honoured(heartbeat.lease_ids.begin(),
                                                heartbeat.lease_ids.end());
    std::vector<uint64_t> gone;
    for (const auto& [id, r] : executor.running) {
      if (!honoured.contains(id)) gone.push_back(id);
    }
    for (const auto& [id, r] : executor.queued) {
      if (!honoured.contains(id)) gone.push_back(id);
    }
    const int64_t now = steady_us();
    for (uint64_t id : gone) {
      Running r;
      if (auto it = executor.running.find(id); it != executor.running.end()) {
        r = std::move(it->second);
        executor.running.erase(it);
        executor.free_since.push_back(now);
      } else {
        auto q = std::find_if(executor.queued.begin(), executor.queued.end(),
                              [id](const auto& entry) { return entry.first == id; });
        r = std::move(q->second);
        executor.queued.erase(q);
      }
      FailMessage fail{.lease_id = id,
                       .reason = "stopped: the coordinator no longer holds its lease",
                       .exit_code = std::nullopt,
                       .log_tail = "",
                       .gpu_memory_peak_bytes = std::nullopt};
      executor.socket->send(fail);
      executor.unacked.emplace(id, Unacked{.outcome = std::move(fail),
                                           .trial_id = r.trial_id,
                                           .study = std::move(r.study),
                                           .first_sent_us = now,
                                           .last_sent_us = now,
                                           .duration_s = 0});
      ++report_.dropped;
    }
    if (!gone.empty()) send_ready(executor);
  }

  void on_message(int, Executor& executor, const ErrorMessage& error) {
    ++report_.errors;
    if (report_.error_samples.size() < kErrorSamples) {
      report_.error_samples.push_back(executor.id + ": " + error.message);
    }
    if (error.say_hello) {
      ++report_.say_hello;
      introduce(executor);
    }
  }

  // BYE from the coordinator (it is closing), and what executors never receive.
  template <typename Other>
  void on_message(int, Executor&, const Other&) {}

  const SimConfig config_;
  const int stop_fd_;
  std::mt19937_64 rng_;
  double churn_per_us_ = 0;
  HelloMessage hello_;
  std::vector<std::unique_ptr<ZmqContext>> contexts_;  // declared before the sockets
  std::vector<Executor> executors_;
  std::vector<ZmqPollEntry> entries_;  // one per executor, then the stop pipe
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  SimReport report_;
};

}  // namespace

double Histogram::quantile(double q) const {
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  if (total == 0) return std::nan("");
  const auto rank = static_cast<int64_t>(std::ceil(q * static_cast<double>(total)));
  int64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += counts[i];
    if (seen >= std::max<int64_t>(rank, 1)) {
      return static_cast<double>(std::min(i + 1, kBuckets - 1)) * kBucketMs;
    }
  }
  return static_cast<double>(kBuckets - 1) * kBucketMs;
}

SimReport run_simulated_executors(const SimConfig& config, int stop_fd) {
  return Simulator(config, stop_fd).run();
}

std::string to_json(const SimConfig& c) {
  return nlohmann::json{{"endpoint", c.endpoint},
                        {"process", c.process},
                        {"executors", c.executors},
                        {"slots", c.slots},
                        {"min_s", c.min_s},
                        {"max_s", c.max_s},
                        {"report_hz_lo", c.report_hz_lo},
                        {"report_hz_hi", c.report_hz_hi},
                        {"lost_per_hour", c.lost_per_hour},
                        {"preempted_per_hour", c.preempted_per_hour},
                        {"time_scale", c.time_scale},
                        {"seed", c.seed},
                        {"heartbeat_ms", c.heartbeat_ms},
                        {"coordinator_timeout_ms", c.coordinator_timeout_ms}}
      .dump();
}

SimConfig sim_config_from_json(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  return SimConfig{.endpoint = j.at("endpoint"),
                   .process = j.at("process"),
                   .executors = j.at("executors"),
                   .slots = j.at("slots"),
                   .min_s = j.at("min_s"),
                   .max_s = j.at("max_s"),
                   .report_hz_lo = j.at("report_hz_lo"),
                   .report_hz_hi = j.at("report_hz_hi"),
                   .lost_per_hour = j.at("lost_per_hour"),
                   .preempted_per_hour = j.at("preempted_per_hour"),
                   .time_scale = j.at("time_scale"),
                   .seed = j.at("seed"),
                   .heartbeat_ms = j.at("heartbeat_ms"),
                   .coordinator_timeout_ms = j.at("coordinator_timeout_ms")};
}

std::string to_json(const SimReport& r) {
  nlohmann::json j;
  for (const auto& [name, field] : kSimCounts) j[name] = r.*field;
  for (const auto& [name, field] : kSimSeconds) j[name] = r.*field;
  j["starts"] = r.starts;
  j["result_to_ack_us"] = r.result_to_ack_us;
  j["ready_to_trial_us"] = r.ready_to_trial_us;
  j["lateness_ms"] = r.lateness_ms.counts;
  j["error_samples"] = r.error_samples;
  return j.dump();
}

SimReport sim_report_from_json(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  SimReport r;
  for (const auto& [name, field] : kSimCounts) j.at(name).get_to(r.*field);
  for (const auto& [name, field] : kSimSeconds) j.at(name).get_to(r.*field);
  j.at("starts").get_to(r.starts);
  j.at("result_to_ack_us").get_to(r.result_to_ack_us);
  j.at("ready_to_trial_us").get_to(r.ready_to_trial_us);
  j.at("lateness_ms").get_to(r.lateness_ms.counts);
  j.at("error_samples").get_to(r.error_samples);
  return r;
}

}  // namespace tuner::bench
