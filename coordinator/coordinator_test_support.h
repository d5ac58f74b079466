// What the coordinator's tests share: a temporary directory for the endpoint, a FakeClock,
// in-memory studies of one float parameter "x" sampled at random, and fake executors (DEALER
// sockets) whose messages are read while the coordinator's loop turns. Test-only.
#ifndef TUNER_COORDINATOR_COORDINATOR_TEST_SUPPORT_H_
#define TUNER_COORDINATOR_COORDINATOR_TEST_SUPPORT_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/coordinator.h"
#include "search/samplers/random_sampler.h"
#include "storage/in_memory_storage.h"
#include "trials/error.h"
#include "wire/message_socket.h"
#include "wire/protocol.h"

namespace tuner::testing {

// A sampler whose asks fail or succeed as scripted: ask k (counted from 0) throws
// Error(kInvalidArgument, "scripted failure of ask k") when script[k] is false, and samples at
// random otherwise (and after the script's end). Stands for a space or sampler that cannot
// sample (an overflowing float range: "inf is not in float[...]").
class ScriptedSampler : public Sampler {
 public:
  explicit ScriptedSampler(std::vector<bool> script) : script_(std::move(script)) {}

  Params sample(const SearchSpace& space, const History& history, const TrialContext& trial,
                Rng& rng) override {
    const size_t k = asks_++;
    if (k < script_.size() && !script_[k]) {
      throw Error(ErrorCode::kInvalidArgument, "scripted failure of ask " + std::to_string(k));
    }
    return Sampler::sample(space, history, trial, rng);
  }
  ParamValue sample_independent(const std::string& name, const Distribution& distribution,
                                const History& history, const TrialContext& trial,
                                Rng& rng) override {
    return random_.sample_independent(name, distribution, history, trial, rng);
  }
  size_t asks() const { return asks_; }

 private:
  std::vector<bool> script_;
  size_t asks_ = 0;
  RandomSampler random_;
};

class CoordinatorTestBase : public ::testing::Test {
 protected:
  // `name` names the temporary directory (with the process id).
  explicit CoordinatorTestBase(const std::string& name)
      : dir_(std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {}

  void SetUp() override {
    std::filesystem::create_directories(dir_);
    clock_ = std::make_shared<FakeClock>();
  }
  void TearDown() override {
    coordinator_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // A study on the fake clock, in memory, without the study's own heartbeat thread; "x" in
  // [x_low, x_high].
  StudyOptions study_options(const std::string& name, double x_low, double x_high) const {
    StudyOptions o;
    o.name = name;
    o.sampler = std::make_shared<RandomSampler>();
    o.seed = 7;
    o.storage = std::make_shared<InMemoryStorage>();
    o.clock = clock_;
    o.heartbeat_interval = std::nullopt;
    SearchSpace space;
    space.add_float("x", x_low, x_high);
    o.space = space;
    return o;
  }

  // A service on `socket` in the temporary directory, on the fake clock, logging into log_.
  CoordinatorServiceOptions service_options(const std::string& socket,
                                            std::chrono::milliseconds heartbeat,
                                            std::chrono::milliseconds lease_timeout) {
    CoordinatorServiceOptions o;
    o.endpoint = "ipc://" + (dir_ / socket).string();
    o.heartbeat_interval = heartbeat;
    o.lease_timeout = lease_timeout;
    o.clock = clock_;
    o.log = [this](const std::string& line) { log_.push_back(line); };
    return o;
  }

  // One study's coordinator on "coordinator.sock" (see service_options()).
  CoordinatorOptions coordinator_options(const std::string& job, int n_trials, int max_retries,
                                         std::chrono::milliseconds heartbeat,
                                         std::chrono::milliseconds lease_timeout) {
    CoordinatorOptions o;
    static_cast<CoordinatorServiceOptions&>(o) =
        service_options("coordinator.sock", heartbeat, lease_timeout);
    o.job_json = job;
    o.n_trials = n_trials;
    o.max_retries = max_retries;
    return o;
  }

  // The next message for `peer` (HEARTBEAT skipped unless `skip_heartbeats` is false), turning
  // the coordinator's loop meanwhile; nullopt when none comes within `turns` turns of 5 ms.
  std::optional<Message> poll_for_message(Coordinator& coordinator, DealerEndpoint& peer,
                                          int turns = 400, bool skip_heartbeats = true) {
    for (int i = 0; i < turns; ++i) {
      coordinator.poll_once(std::chrono::milliseconds(0));
      while (auto frames = peer.receive()) {
        Message m = decode(*frames);
        if (skip_heartbeats && std::holds_alternative<HeartbeatMessage>(m)) continue;
        return m;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return std::nullopt;
  }

  std::filesystem::path dir_;
  std::shared_ptr<FakeClock> clock_;
  std::optional<Study> study_;
  std::vector<std::string> log_;
  ZmqContext context_;  // before coordinator_ and the tests' sockets: they close first
  std::optional<Coordinator> coordinator_;
};

}  // namespace tuner::testing

#endif  // TUNER_COORDINATOR_COORDINATOR_TEST_SUPPORT_H_
