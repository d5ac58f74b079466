#include "coordinator/executors.h"

#include <algorithm>

namespace tuner {

ExecutorRegistry::Admission ExecutorRegistry::admit(const std::string& route,
                                                    const HelloMessage& hello,
                                                    Clock::SteadyTime now) {
  unknown_.erase(route);
  if (hello.executor_id.empty() || hello.resources.cpu_slots < 0) {
    return Admission{.refusal = ErrorMessage{
                         .message = "HELLO: executor_id must not be empty and cpu_slots must be "
                                    ">= 0"}};
  }
  // Another live process under the same id (two executors started with one --id) would take
  // turns with it, each HELLO dropping the other: refuse the newcomer instead. The same
  // process on a new connection, or one silent past the lease timeout (dead), is replaced.
  for (const auto& [other_route, other] : executors_) {
    if (other_route == route || other.executor_id != hello.executor_id) continue;
    const bool same_process = other.hostname == hello.hostname && other.pid == hello.pid;
    if (!same_process && now - other.last_heard < lease_timeout_) {
      return Admission{
          .refusal = ErrorMessage{.message = "executor id '" + hello.executor_id +
                                             "' is in use by a live executor (" + other.hostname +
                                             ", pid " + std::to_string(other.pid) +
                                             "): give each executor its own --id",
                                  .refused = true},
          .refusal_log = "refused a second executor " + hello.executor_id + " (" + hello.hostname +
                         ", pid " + std::to_string(hello.pid) + "): that id is in use"};
    }
  }
  // A reconnect: the same executor on a new connection (its leases move along with it, and
  // so does how long it has held none).
  std::optional<Clock::SteadyTime> idle_since;
  int capacity = 0;
  for (auto it = executors_.begin(); it != executors_.end();) {
    if (it->first != route && it->second.executor_id == hello.executor_id) {
      idle_since = it->second.idle_since;
      capacity = it->second.capacity;
      it = executors_.erase(it);
    } else {
      ++it;
    }
  }
  ExecutorEntry& e = executors_[route];
  const bool known = !e.executor_id.empty();
  e.route = route;
  e.executor_id = hello.executor_id;
  e.hostname = hello.hostname;
  e.pid = hello.pid;
  e.resources = hello.resources;
  e.credit = 0;
  e.capacity = std::max({e.capacity, capacity, hello.resources.cpu_slots});
  e.resent_at_hello = 0;
  e.last_heard = now;
  if (!known) e.idle_since = idle_since;
  return Admission{.entry = &e, .joined = !known};
}

ExecutorRegistry::Unknown ExecutorRegistry::unknown(const std::string& route, Clock::SteadyTime now,
                                                    std::chrono::milliseconds interval) {
  if (unknown_.size() > kMaxUnknownPeers) unknown_.clear();
  auto [told, first] = unknown_.try_emplace(route, now);
  if (!first && now - told->second < interval) return Unknown::kToldAlready;
  told->second = now;
  return first ? Unknown::kFirstTime : Unknown::kAgain;
}

ExecutorEntry* ExecutorRegistry::find(const std::string& route) {
  auto it = executors_.find(route);
  return it == executors_.end() ? nullptr : &it->second;
}

void ExecutorRegistry::postpone_silence(std::chrono::milliseconds by) {
  for (auto& [route, executor] : executors_) executor.last_heard += by;
}

std::vector<std::string> ExecutorRegistry::forget_silent(Clock::SteadyTime now) {
  std::vector<std::string> forgotten;
  for (auto it = executors_.begin(); it != executors_.end();) {
    if (now - it->second.last_heard >= lease_timeout_) {
      forgotten.push_back("executor " + it->second.executor_id + " is silent for " +
                          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                             now - it->second.last_heard)
                                             .count()) +
                          " ms: forgotten");
      it = executors_.erase(it);
    } else {
      ++it;
    }
  }
  return forgotten;
}

}  // namespace tuner
