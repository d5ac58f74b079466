#include "launch/ray_launcher.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "launch/scaling.h"
#include "trials/error.h"
#include "util/strings.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// An executor that ends this soon after it started (or before) failed to start: an error to
// show, not an executor to replace again and again.
constexpr std::chrono::seconds kFailFast{60};
// Running executors that have not connected after this long are said once.
constexpr std::chrono::seconds kConnectWarning{60};
// ray.init not done after kInitNotice is said once; after kInitTimeout it is an error (ray.init
// retries an address where no cluster answers for minutes).
constexpr std::chrono::seconds kInitNotice{20};
constexpr std::chrono::seconds kInitTimeout{120};
// How many executors that ended on their own executors.json keeps.
constexpr size_t kDeadKept = 4;

std::string random_suffix() {
  std::random_device device;
  std::uniform_int_distribution<int> digit(0, 35);
  std::string s;
  for (int i = 0; i < 6; ++i) s += "0123456789abcdefghijklmnopqrstuvwxyz"[digit(device)];
  return s;
}

std::string key_file_text(const CurveKeyPair& keys) {
  return "# tuner CURVE key pair of the sweep's Ray executors: keep it secret\npublic-key = \"" +
         keys.public_key + "\"\nsecret-key = \"" + keys.secret_key + "\"\n";
}

std::string list_of(const std::vector<std::string>& ids) {
  std::string list;
  for (const std::string& id : ids) list += (list.empty() ? "" : ", ") + id;
  return list;
}

}  // namespace

int64_t ray_memory_bytes(const std::string& memory) {
  if (memory.empty()) return 0;
  const std::optional<uint64_t> bytes = parse_memory_size(memory);
  if (!bytes) {
    throw Error(ErrorCode::kInvalidArgument,
                "expected a memory size such as \"8G\" or \"512M\", got \"" + memory + "\"");
  }
  return static_cast<int64_t>(*bytes);
}

std::string ray_launcher_script() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    const fs::path installed = self.parent_path().parent_path() / "share/tuner/ray_launcher.py";
    if (fs::exists(installed, error)) return installed.string();
  }
  return TUNER_RAY_LAUNCHER_SOURCE;
}

RayLauncher::RayLauncher(RayLauncherOptions options) : options_(std::move(options)) {
  const RayOptions& r = options_.ray;
  if (options_.connect_endpoint.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "RayLauncher: no endpoint for the executors");
  }
  check_scaling_bounds(r.min_executors, r.max_executors, r.slots, "RayLauncher");
  if (!options_.clock) options_.clock = system_clock();
  if (!options_.start_launcher) {
    const std::vector<std::string> argv = {r.python, "-u", ray_launcher_script()};
    options_.start_launcher = [argv] { return spawn_line_channel(argv); };
  }
  id_prefix_ = "ray-" + random_suffix() + "-";
  started_ = options_.clock->steady_now();
  start_python();
}

RayLauncher::~RayLauncher() { stop_all(); }

void RayLauncher::start_python() {
  std::string tuner_path = options_.ray.tuner_path;
  std::error_code error;
  if (tuner_path.empty()) tuner_path = fs::read_symlink("/proc/self/exe", error).string();
  if (tuner_path.empty()) {
    throw Error(ErrorCode::kUnavailable,
                "cannot find the path of this tuner binary for the Ray executors; give "
                "executors.ray.tuner");
  }
  try {
    python_ = options_.start_launcher();
  } catch (const Error& e) {
    throw Error(ErrorCode::kFailedPrecondition,
                "executors.ray: cannot start tuner's Ray launcher: " + std::string(e.what()) +
                    "; give executors.ray.python, a Python that has the ray package");
  }
  const RayOptions& r = options_.ray;
  Json init = {{"op", "init"},
               {"version", kRayLauncherProtocolVersion},
               {"name", options_.name},
               {"address", r.address},
               {"num_cpus", r.cpus_per_executor},
               {"num_gpus", r.gpus_per_executor},
               {"tuner", tuner_path},
               {"connect", options_.connect_endpoint},
               {"slots", r.slots},
               {"key", key_file_text(options_.executor_keys)},
               {"coordinator_key", "public-key = \"" + options_.coordinator_public_key + "\"\n"},
               {"infeasible_timeout", options_.infeasible_timeout.count()}};
  if (!r.memory.empty()) init["memory"] = ray_memory_bytes(r.memory);
  if (!r.runtime_env.empty()) init["runtime_env"] = Json::parse(r.runtime_env);
  send(init.dump());
}

void RayLauncher::send(const std::string& line) {
  try {
    python_->send(line);
  } catch (const Error&) {
    // Its end, and why, is found at the next tick.
  }
}

void RayLauncher::say(const std::string& line) {
  if (options_.log) options_.log("ray: " + line);
}

void RayLauncher::tick(const LaunchQueueState& state) {
  if (stopped_) return;
  try {
    for (const std::string& line : python_->receive()) {
      try {
        handle(line);
      } catch (const Json::exception&) {
        say("the Ray launcher said: " + line);  // not the protocol: shown, not acted on
      }
    }
    if (std::optional<std::string> ended = python_->ended()) {
      throw Error(ErrorCode::kFailedPrecondition, "executors.ray: tuner's Ray launcher (" +
                                                      options_.ray.python + " " +
                                                      ray_launcher_script() + ") ended: " + *ended);
    }
    if (ready_) {
      scale(state);
      record();
    } else {
      const auto waited = options_.clock->steady_now() - started_;
      if (waited >= kInitTimeout) {
        throw Error(ErrorCode::kFailedPrecondition,
                    "executors.ray: ray.init(address='" + options_.ray.address +
                        "') did not connect in " + std::to_string(kInitTimeout.count()) +
                        " s: is a Ray cluster running there, and reachable from this host "
                        "(executors.ray.address)?");
      }
      if (waited >= kInitNotice && !said_connecting_) {
        said_connecting_ = true;
        say("still connecting to the cluster at " + options_.ray.address + " (ray.init)");
      }
    }
  } catch (...) {
    stop("stopping on an error");
    throw;
  }
}

void RayLauncher::handle(const std::string& line) {
  const Json message = Json::parse(line);  // throws Json::exception: not the protocol
  const std::string event = message.value("event", "");
  const std::string text = message.value("message", "");
  if (event == "ready") {
    if (message.value("version", 0) != kRayLauncherProtocolVersion) {
      throw Error(ErrorCode::kFailedPrecondition,
                  "executors.ray: the Ray launcher " + ray_launcher_script() +
                      " speaks another version of its protocol than this tuner (" +
                      std::to_string(kRayLauncherProtocolVersion) + "): install the two together");
    }
    ready_ = true;
    say("connected to the cluster at " + options_.ray.address +
        (text.empty() ? std::string() : " (" + text + ")"));
  } else if (event == "error") {
    throw Error(ErrorCode::kFailedPrecondition, "executors.ray: " + text);
  } else if (event == "log") {
    say(text);
  } else if (event == "state") {
    const std::string id = message.value("id", "");
    const std::string state = message.value("state", "");
    auto it = std::find_if(executors_.begin(), executors_.end(),
                           [&](const Executor& e) { return e.id == id; });
    if (it == executors_.end()) return;  // one stop_all() already forgot
    if (state == "pending") {
      it->reason = message.value("reason", "");
    } else if (state == "running" && !it->running_since) {
      it->running_since = options_.clock->steady_now();
      it->node = message.value("node", "");
      it->actor_id = message.value("actor_id", "");
      it->reason.clear();
      say("executor " + id + " started" + (it->node.empty() ? "" : " on " + it->node));
    } else if (state == "exited") {
      executor_ended(id, message.value("reason", "ended"));
    }
  }
}

void RayLauncher::executor_ended(const std::string& id, const std::string& reason) {
  auto it = std::find_if(executors_.begin(), executors_.end(),
                         [&](const Executor& e) { return e.id == id; });
  const Executor ended = *it;
  executors_.erase(it);
  if (ended.stopping) return;
  dead_.push_back({.id = ended.id,
                   .state = "dead",
                   .node = ended.node,
                   .actor_id = ended.actor_id,
                   .reason = reason});
  if (dead_.size() > kDeadKept) dead_.erase(dead_.begin());
  const Clock::SteadyTime now = options_.clock->steady_now();
  const std::chrono::seconds ran =
      ended.running_since
          ? std::chrono::duration_cast<std::chrono::seconds>(now - *ended.running_since)
          : std::chrono::seconds(0);
  // Only an executor that never connected failed to start: a connected one may have lost its
  // node, or its actor may have been killed, at any time.
  if (!ended.connected && (!ended.running_since || ran < kFailFast)) {
    throw Error(ErrorCode::kFailedPrecondition,
                "executors.ray: the executor " + id + " of sweep '" + options_.name + "' ended " +
                    (ended.running_since ? "after " + std::to_string(ran.count()) + " s"
                                         : std::string("before it started")) +
                    ": " + reason);
  }
  say("executor " + id + " ended: " + reason + "; a new one is started when trials wait");
}

void RayLauncher::scale(const LaunchQueueState& state) {
  const Clock::SteadyTime now = options_.clock->steady_now();
  ScalingInput input{.min_executors = options_.ray.min_executors,
                     .max_executors = options_.ray.max_executors,
                     .slots_per_executor = options_.ray.slots,
                     .idle_grace = options_.ray.idle_grace,
                     .startable_trials = state.startable_trials,
                     .free_slots = state.free_slots};
  int unconnected = 0;
  for (Executor& e : executors_) {
    if (e.stopping) continue;
    LaunchedJob job{.id = e.id, .state = LaunchedJob::State::kPending};
    if (e.running_since) {
      auto connected = std::find_if(state.executors.begin(), state.executors.end(),
                                    [&](const ConnectedExecutor& c) { return c.id == e.id; });
      if (connected == state.executors.end()) {
        job.state = LaunchedJob::State::kStarting;
        ++unconnected;
      } else {
        job.state = LaunchedJob::State::kRunning;
        e.connected = true;
        if (connected->idle_since) {
          job.idle_for =
              std::chrono::duration_cast<std::chrono::seconds>(now - *connected->idle_since);
        }
      }
    }
    input.jobs.push_back(job);
  }
  if (unconnected > 0) {
    if (!unconnected_since_) unconnected_since_ = now;
    if (!warned_unconnected_ && now - *unconnected_since_ >= kConnectWarning) {
      warned_unconnected_ = true;
      say(std::to_string(unconnected) + " running executor(s) have not connected to " +
          options_.connect_endpoint + " after " + std::to_string(kConnectWarning.count()) +
          " s: can the cluster's nodes reach it? (give executors.ray.endpoint)");
    }
  } else {
    unconnected_since_.reset();
  }

  const ScalingDecision decision = decide_scaling(input);
  if (!decision.cancel.empty()) {
    for (Executor& e : executors_) {
      if (std::find(decision.cancel.begin(), decision.cancel.end(), e.id) !=
          decision.cancel.end()) {
        e.stopping = true;
      }
    }
    send(Json{{"op", "stop"}, {"ids", decision.cancel}}.dump());
    say("stopped executor" + std::string(decision.cancel.size() == 1 ? " " : "s ") +
        list_of(decision.cancel) + " (not needed now)");
  }
  if (decision.submit > 0) {
    std::vector<std::string> ids;
    for (int i = 0; i < decision.submit; ++i) {
      ids.push_back(id_prefix_ + std::to_string(next_number_++));
      executors_.push_back({.id = ids.back()});
    }
    started_any_ = true;
    send(Json{{"op", "start"}, {"ids", ids}}.dump());
    say("asked Ray for executor" + std::string(ids.size() == 1 ? " " : "s ") + list_of(ids));
  }
}

void RayLauncher::stop_all() { stop("the study's run ended"); }

void RayLauncher::stop(const std::string& why) {
  if (stopped_) return;
  stopped_ = true;
  std::vector<std::string> ids;
  for (const Executor& e : executors_) {
    if (!e.stopping) ids.push_back(e.id);
  }
  if (python_) {
    send(Json{{"op", "stop_all"}}.dump());
    python_->close(options_.stop_grace);
    try {
      for (const std::string& line : python_->receive()) {
        const Json message = Json::parse(line, nullptr, false);
        if (message.is_object() && message.value("event", "") == "log") {
          say(message.value("message", ""));
        }
      }
    } catch (const std::exception&) {
      // What it said at its end is not needed to end.
    }
  }
  if (!ids.empty()) {
    say("stopped executor" + std::string(ids.size() == 1 ? " " : "s ") + list_of(ids) + " (" + why +
        ")");
  }
  executors_.clear();
  if (!options_.status_dir.empty()) remove_ray_executors_file(options_.status_dir);
}

void RayLauncher::record() {
  if (options_.status_dir.empty()) return;
  RayExecutorsRecord now{.pid = ::getpid(),
                         .launcher = id_prefix_.substr(0, id_prefix_.size() - 1),
                         .address = options_.ray.address,
                         .endpoint = options_.connect_endpoint,
                         .executors = dead_};
  for (const RayExecutorStatus& e : executors()) now.executors.push_back(e);
  if (recorded_ && now == *recorded_) return;
  try {
    write_ray_executors_file(options_.status_dir, now);
    recorded_ = std::move(now);
  } catch (const Error& e) {
    if (!said_record_error_) say(e.what());  // only tuner status reads it: said once
    said_record_error_ = true;
  }
}

std::vector<RayExecutorStatus> RayLauncher::executors() const {
  std::vector<RayExecutorStatus> out;
  for (const Executor& e : executors_) {
    out.push_back({.id = e.id,
                   .state = e.running_since ? "alive" : "pending",
                   .node = e.node,
                   .actor_id = e.actor_id,
                   .reason = e.reason});
  }
  return out;
}

}  // namespace tuner
