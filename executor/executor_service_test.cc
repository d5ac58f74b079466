#include "executor/executor_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "trials/error.h"
#include "trials/param_value.h"
#include "wire/message_socket.h"
#include "wire/protocol.h"

namespace tuner {
namespace {

using std::chrono::milliseconds;

// A fake coordinator (a ROUTER in the test) and an ExecutorService on a thread of its own.
class ExecutorServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tuner-executor-service-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    router_.emplace(context_, "ipc://" + (dir_ / "coordinator.sock").string());
  }
  void TearDown() override {
    if (thread_.joinable()) {
      thread_.request_stop();
      thread_.join();
    }
    router_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  void start(milliseconds coordinator_timeout = milliseconds(5000),
             const std::string& tuner_path = {}) {
    ExecutorOptions options;
    if (!tuner_path.empty()) options.tuner_path = tuner_path;
    options.coordinator = router_->endpoint();
    options.executor_id = "test-executor";
    options.slots = 2;
    options.gpus = std::vector<int>{};
    options.heartbeat_interval = milliseconds(50);
    options.coordinator_timeout = coordinator_timeout;
    options.stop_grace = milliseconds(500);
    options.log = log_ ? log_ : [](const std::string& line) { std::cerr << line << "\n"; };
    if (configure_) configure_(options);
    service_ = std::make_unique<ExecutorService>(options);
    thread_ = std::jthread([this](std::stop_token stop) { service_->run(stop); });
  }

  // The next message of type T from the executor (others are skipped), within 5 s. With a
  // keepalive set, a HEARTBEAT goes to that peer every turn meanwhile, as a live coordinator's
  // would, so that a slow job start on a loaded machine does not make the executor reconnect.
  template <typename T>
  T next(std::string* peer = nullptr) {
    auto end = std::chrono::steady_clock::now() + milliseconds(5000);
    while (std::chrono::steady_clock::now() < end) {
      if (keepalive_)
        router_->send(keepalive_->first, HeartbeatMessage{.lease_ids = keepalive_->second});
      ZmqPollEntry entry{.socket = &router_->socket()};
      zmq_wait({&entry, 1}, milliseconds(20));
      while (auto in = router_->receive()) {
        Message m = decode(in->frames);
        if (auto* t = std::get_if<T>(&m)) {
          if (peer) *peer = in->peer;
          return *t;
        }
      }
    }
    ADD_FAILURE() << "no such message within 5 s";
    return T{};
  }

  // The stopping executor's messages for 10 s or until its BYE (returned): each FILE chunk is
  // given to `on_chunk` and acknowledged, as the coordinator does; any other message to
  // `on_other`.
  std::optional<ByeMessage> ack_files_until_bye(
      const std::string& peer, const std::function<void(const FileChunkMessage&)>& on_chunk,
      const std::function<void(const Message&)>& on_other = [](const Message&) {}) {
    for (auto end = std::chrono::steady_clock::now() + milliseconds(10000);
         std::chrono::steady_clock::now() < end;) {
      ZmqPollEntry entry{.socket = &router_->socket()};
      zmq_wait({&entry, 1}, milliseconds(20));
      while (auto in = router_->receive()) {
        Message m = decode(in->frames);
        if (auto* chunk = std::get_if<FileChunkMessage>(&m)) {
          on_chunk(*chunk);
          router_->send(peer, FileAckMessage{.lease_id = chunk->lease_id,
                                             .kind = chunk->kind,
                                             .path = chunk->path,
                                             .offset = chunk->offset});
        } else if (auto* b = std::get_if<ByeMessage>(&m)) {
          return *b;
        } else {
          on_other(m);
        }
      }
    }
    return std::nullopt;
  }

  // REQUIRES: `code` has no braces (argv templates read them as placeholders).
  static std::string python_job(const std::string& code) {
    return nlohmann::json{
        {"kind", "command"}, {"argv", {"python3", "-c", code}}, {"objective_metric", "loss"}}
        .dump();
  }

  std::function<void(const std::string&)> log_;      // default: standard error
  std::function<void(ExecutorOptions&)> configure_;  // options beyond start()'s
  std::optional<std::pair<std::string, std::vector<uint64_t>>> keepalive_;  // peer, leases
  std::filesystem::path dir_;
  ZmqContext context_;
  std::optional<RouterEndpoint> router_;
  std::unique_ptr<ExecutorService> service_;
  std::jthread thread_;
};

TEST_F(ExecutorServiceTest, RunsATrialAndResendsItsResultUntilAcked) {
  start(milliseconds(500));
  std::string peer;
  HelloMessage hello = next<HelloMessage>(&peer);
  EXPECT_EQ(hello.executor_id, "test-executor");
  EXPECT_EQ(hello.resources.cpu_slots, 2);
  EXPECT_EQ(next<ReadyMessage>().free_slots, 2);

  TrialMessage trial{
      .lease_id = 5,
      .study_name = "s",
      .trial_id = 9,
      .number = 3,
      .params = {{"x", 0.25}},
      .job_json = python_job("import json, os\n"
                             "x = json.loads(os.environ['TUNER_PARAMS'])['x']\n"
                             "print(json.dumps(dict(step=1, loss=1.0)), flush=True)\n"
                             "print(json.dumps(dict(loss=x * x)))\n"),
      .heartbeat_interval_ms = 50};
  ASSERT_TRUE(router_->send(peer, trial));
  keepalive_ = {peer, {5}};
  ReportMessage report = next<ReportMessage>();
  EXPECT_EQ(report.lease_id, 5u);
  EXPECT_EQ(report.step, 1);
  ResultMessage result = next<ResultMessage>();
  EXPECT_EQ(result.lease_id, 5u);
  EXPECT_TRUE(result.values.empty());  // the coordinator picks them from the metrics
  EXPECT_EQ(result.metrics.at("loss"), 0.0625);
  keepalive_.reset();
  // Not ACKed within coordinator_timeout: sent again. Meanwhile the executor's heartbeats list
  // the lease, and ours keep it from reconnecting.
  bool resent = false;
  for (int i = 0; i < 100 && !resent; ++i) {
    ASSERT_TRUE(router_->send(peer, HeartbeatMessage{.lease_ids = {5}}));
    ZmqPollEntry entry{.socket = &router_->socket()};
    zmq_wait({&entry, 1}, milliseconds(50));
    while (auto in = router_->receive()) {
      Message m = decode(in->frames);
      if (auto* h = std::get_if<HeartbeatMessage>(&m)) {
        EXPECT_EQ(h->lease_ids, std::vector<uint64_t>{5});
      }
      if (auto* r = std::get_if<ResultMessage>(&m)) resent = r->lease_id == 5;
      EXPECT_FALSE(std::holds_alternative<HelloMessage>(m)) << "reconnected";
    }
  }
  EXPECT_TRUE(resent);
  ASSERT_TRUE(router_->send(peer, AckMessage{.lease_id = 5}));
  ASSERT_TRUE(router_->send(peer, HeartbeatMessage{}));
  for (int i = 0; i < 5; ++i) {
    HeartbeatMessage heartbeat = next<HeartbeatMessage>();
    if (heartbeat.lease_ids.empty()) return;
  }
  ADD_FAILURE() << "the ACKed lease is still in the heartbeats";
}

// An executor that sends its trials' files runs the trial with its artifacts folder on its own
// host, then sends the log and the folder's files in chunks before RESULT; a file past the limit
// per trial stays, named to the coordinator and in the log.
TEST_F(ExecutorServiceTest, ASendingExecutorSendsATrialsFilesBeforeItsOutcome) {
  const std::filesystem::path files = dir_ / "files";
  configure_ = [&](ExecutorOptions& o) {
    o.send_files = true;
    o.files_dir = files.string();
    o.max_trial_files_bytes = 2 << 20;
  };
  start();
  std::string peer;
  next<HelloMessage>(&peer);
  const std::string job =
      nlohmann::json{{"kind", "command"},
                     {"argv",
                      {"python3", "-c",
                       "import json, os\n"
                       "d = os.environ['TUNER_ARTIFACTS_DIR']\n"
                       "open(os.path.join(d, 'data.bin'), 'wb').write(bytes(range(256)) * 6144)\n"
                       "open(os.path.join(d, 'huge.bin'), 'wb').write(b'h' * 3145728)\n"
                       "print(json.dumps(dict(step=1, loss=1.0)), flush=True)\n"
                       "print('to the log')\n"
                       "print(json.dumps(dict(loss=0.5)))\n"}},
                     {"objective_metric", "loss"},
                     {"artifacts_dir", "/coordinator/only/artifacts"}}
          .dump();
  ASSERT_TRUE(router_->send(peer, TrialMessage{.lease_id = 5,
                                               .study_name = "s/1",
                                               .number = 3,
                                               .job_json = job,
                                               .heartbeat_interval_ms = 50}));
  std::map<std::string, std::string> received;  // by path ("" the log)
  std::optional<FilesLeftMessage> left;
  std::optional<ResultMessage> result;
  bool chunk_after_result = false;
  for (auto end = std::chrono::steady_clock::now() + milliseconds(10000);
       !result && std::chrono::steady_clock::now() < end;) {
    router_->send(peer, HeartbeatMessage{.lease_ids = {5}});
    ZmqPollEntry entry{.socket = &router_->socket()};
    zmq_wait({&entry, 1}, milliseconds(20));
    while (auto in = router_->receive()) {
      Message m = decode(in->frames);
      if (auto* chunk = std::get_if<FileChunkMessage>(&m)) {
        chunk_after_result = chunk_after_result || result.has_value();
        std::string& file = received[chunk->path];
        EXPECT_EQ(chunk->offset, file.size()) << chunk->path;
        file += chunk->data;
        router_->send(
            peer,
            FileAckMessage{
                .lease_id = 5, .kind = chunk->kind, .path = chunk->path, .offset = chunk->offset});
      } else if (auto* l = std::get_if<FilesLeftMessage>(&m)) {
        left = *l;
      } else if (auto* r = std::get_if<ResultMessage>(&m)) {
        result = *r;
      }
    }
  }
  ASSERT_TRUE(result) << "no RESULT within 10 s";
  EXPECT_FALSE(chunk_after_result);
  ASSERT_TRUE(left);
  const std::filesystem::path folder = files / "s_1" / "trial-3";  // the study's folder here
  ASSERT_EQ(left->files.size(), 1u);
  EXPECT_EQ(left->files[0].path, (folder / "huge.bin").string());
  EXPECT_EQ(left->files[0].size, 3145728u);
  EXPECT_EQ(left->limit_bytes, uint64_t{2} << 20);
  EXPECT_TRUE(std::filesystem::exists(folder / "huge.bin")) << "a file left stays";

  ASSERT_TRUE(received.contains("data.bin"));
  EXPECT_EQ(received["data.bin"].size(), 256u * 6144);
  EXPECT_EQ(received["data.bin"].substr(0, 3), std::string("\x00\x01\x02", 3));
  EXPECT_TRUE(std::any_of(received.begin(), received.end(), [](const auto& f) {
    return f.first.starts_with("events.out.tfevents.");
  })) << "the report's TensorBoard scalars";
  ASSERT_TRUE(received.contains(""));
  EXPECT_THAT(received[""], ::testing::HasSubstr("to the log"));
  EXPECT_THAT(received[""], ::testing::HasSubstr("[tuner] 1 file(s) of 3 MiB in all stay on host"));
  EXPECT_THAT(received[""], ::testing::HasSubstr((folder / "huge.bin").string()));
  EXPECT_TRUE(std::filesystem::exists(files / "logs" / "trial-3-lease-5.log"));
  EXPECT_FALSE(std::filesystem::exists("/coordinator/only/artifacts"));
  ASSERT_TRUE(router_->send(peer, AckMessage{.lease_id = 5}));
  thread_.request_stop();
  thread_.join();
  EXPECT_EQ(service_->stats().files_sent, 3);
}

// A coordinator that no longer holds the lease takes no more of its files: the outcome goes
// anyway, for the coordinator to refuse.
TEST_F(ExecutorServiceTest, FilesOfALeaseThatEndedAreNotSentAndTheOutcomeStillGoes) {
  configure_ = [&](ExecutorOptions& o) {
    o.send_files = true;
    o.files_dir = (dir_ / "files").string();
  };
  start();
  std::string peer;
  next<HelloMessage>(&peer);
  const std::string job = nlohmann::json{
      {"kind", "command"},
      {"argv", {"python3", "-c", "import json; print(json.dumps(dict(loss=1)))"}},
      {"objective_metric", "loss"},
      {"artifacts_dir", "a"}}.dump();
  ASSERT_TRUE(router_->send(peer, TrialMessage{.lease_id = 9, .number = 1, .job_json = job}));
  keepalive_ = {peer, {9}};
  const FileChunkMessage log = next<FileChunkMessage>();
  EXPECT_EQ(log.kind, TrialFileKind::kLog);
  ASSERT_TRUE(router_->send(peer, FileAckMessage{.lease_id = 9,
                                                 .kind = log.kind,
                                                 .offset = 0,
                                                 .accepted = false,
                                                 .lease_ended = true,
                                                 .reason = "lease 9 expired"}));
  EXPECT_EQ(next<ResultMessage>().lease_id, 9u);
}

TEST_F(ExecutorServiceTest, ADecisionToStopEndsTheJobAsAResult) {
  start();
  std::string peer;
  next<HelloMessage>(&peer);
  TrialMessage trial{
      .lease_id = 6,
      .number = 0,
      .job_json = python_job("import json, time\n"
                             "for i in range(1, 400):\n"
                             "    print(json.dumps(dict(step=i, loss=10.0 / i)), flush=True)\n"
                             "    time.sleep(0.05)\n")};
  ASSERT_TRUE(router_->send(peer, trial));
  next<ReportMessage>();
  ASSERT_TRUE(router_->send(peer, DecisionMessage{.lease_id = 6, .decision = JobDecision::kStop}));
  auto start = std::chrono::steady_clock::now();
  ResultMessage result = next<ResultMessage>();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(3000));
  EXPECT_EQ(result.lease_id, 6u);
  EXPECT_TRUE(result.metrics.contains("loss"));
}

TEST_F(ExecutorServiceTest, ABadJobIsAFailNamingTheJsonPath) {
  start();
  std::string peer;
  next<HelloMessage>(&peer);
  ASSERT_TRUE(router_->send(
      peer,
      TrialMessage{.lease_id = 7,
                   .number = 4,
                   .job_json = R"({"kind": "command", "argv": [1], "objective_metric": "m"})"}));
  FailMessage fail = next<FailMessage>();
  EXPECT_EQ(fail.lease_id, 7u);
  EXPECT_NE(fail.reason.find("trial 4: job.argv[0]: expected a string"), std::string::npos)
      << fail.reason;
}

TEST_F(ExecutorServiceTest, ACudaEngineJobWithMoreRanksThanGpusFailsBeforeStarting) {
  start();
  std::string peer;
  next<HelloMessage>(&peer);
  const nlohmann::json job = {
      {"kind", "engine"},
      {"model",
       {{"input", {1, 28, 28}},
        {"layers", {{{"type", "flatten"}}, {{"type", "linear"}, {"out", 10}}}}}},
      {"data", {{"dataset", "fashion-mnist"}, {"train", 8}, {"validation", 0}}},
      {"training", {{"batch_size", 4}}},
      {"backend", "cuda"},
      {"ranks", 2},
      {"objective_metric", "train_loss"}};
  ASSERT_TRUE(router_->send(
      peer, TrialMessage{.lease_id = 9, .number = 5, .job_json = job.dump(), .gpus = {0}}));
  FailMessage fail = next<FailMessage>();
  EXPECT_EQ(fail.lease_id, 9u);
  EXPECT_NE(fail.reason.find("trial 5: job.ranks: 2 CUDA ranks need one GPU each, but the trial "
                             "was given 1 (TUNER_GPUS=0)"),
            std::string::npos)
      << fail.reason;
}

// A node of a multi-node trial: the service bridges the node's store directory and the
// coordinator's store. A stand-in for `tuner trial` publishes key "1" and waits for key "0".
TEST_F(ExecutorServiceTest, ANodesStoreIsBridgedToTheCoordinator) {
  const std::filesystem::path fake = dir_ / "fake-tuner.sh";
  std::ofstream(fake) << R"sh(#!/bin/sh
[ "$TUNER_NODE" = 1 ] && [ "$TUNER_RANK_HOST" = 127.0.0.1 ] || exit 6
printf 'addr-1' > "$TUNER_NODE_STORE/.tmp-1" && mv "$TUNER_NODE_STORE/.tmp-1" "$TUNER_NODE_STORE/k31"
for i in $(seq 1 250); do
  if [ -f "$TUNER_NODE_STORE/k30" ]; then [ "$(cat "$TUNER_NODE_STORE/k30")" = addr-0 ] && exit 0; exit 5; fi
  sleep 0.02
done
exit 4
)sh";
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  start(milliseconds(5000), fake.string());
  std::string peer;
  next<HelloMessage>(&peer);
  const nlohmann::json job = {
      {"kind", "engine"},
      {"model",
       {{"input", {1, 28, 28}},
        {"layers", {{{"type", "flatten"}}, {{"type", "linear"}, {"out", 10}}}}}},
      {"data", {{"dataset", "fashion-mnist"}, {"train", 8}, {"validation", 0}}},
      {"training", {{"batch_size", 4}}},
      {"ranks", 2},
      {"nodes", 2},
      {"objective_metric", "train_loss"}};
  ASSERT_TRUE(router_->send(
      peer,
      TrialMessage{.lease_id = 11, .number = 2, .job_json = job.dump(), .node = 1, .nodes = 2}));
  keepalive_ = {peer, {11}};
  const StoreSetMessage set = next<StoreSetMessage>();
  EXPECT_EQ(set.lease_id, 11u);
  EXPECT_EQ(set.key, "1");
  EXPECT_EQ(set.value, "addr-1");
  ASSERT_TRUE(router_->send(peer, StoreKeysMessage{.lease_id = 11, .entries = {{"0", "addr-0"}}}));
  // Node 1's part ended well: RESULT without metrics (node 0 reports the trial's).
  const ResultMessage result = next<ResultMessage>();
  EXPECT_EQ(result.lease_id, 11u);
  EXPECT_TRUE(result.metrics.empty());
  EXPECT_TRUE(result.values.empty());
}

TEST_F(ExecutorServiceTest, OnlyAnEngineJobOfAsManyNodesSpansExecutors) {
  start();
  std::string peer;
  next<HelloMessage>(&peer);
  ASSERT_TRUE(router_->send(
      peer,
      TrialMessage{
          .lease_id = 12, .number = 3, .job_json = python_job("print(1)"), .node = 1, .nodes = 2}));
  const FailMessage fail = next<FailMessage>();
  EXPECT_EQ(fail.lease_id, 12u);
  EXPECT_NE(fail.reason.find("trial 3: job: the coordinator sent node 1 of 2, but only an engine "
                             "job of as many \"nodes\" spans executors"),
            std::string::npos)
      << fail.reason;
}

TEST_F(ExecutorServiceTest, ACoordinatorHeartbeatWithoutTheLeaseStopsTheJob) {
  start();
  std::string peer;
  next<HelloMessage>(&peer);
  ASSERT_TRUE(router_->send(
      peer, TrialMessage{.lease_id = 8, .job_json = python_job("import time\ntime.sleep(30)\n")}));
  std::this_thread::sleep_for(milliseconds(200));
  ASSERT_TRUE(router_->send(peer, HeartbeatMessage{}));  // the lease is given up
  FailMessage fail = next<FailMessage>();
  EXPECT_EQ(fail.lease_id, 8u);
  EXPECT_NE(fail.reason.find("gave up lease 8"), std::string::npos) << fail.reason;
}

// A stopped executor (SIGTERM to `tuner executor`: a preemption) stops its jobs with their grace,
// in which a program may save its checkpoint, and says BYE listing its running and queued trials
// as preempted, with whether each has a checkpoint.
TEST_F(ExecutorServiceTest, AStoppedExecutorSaysByeListingItsTrialsAsPreempted) {
  start();
  std::string peer;
  next<HelloMessage>(&peer);
  const std::string checkpointing = python_job(
      "import json, os, signal, sys, time\n"
      "def stop(*args):\n"
      "    open(os.environ['TUNER_CHECKPOINT_PATH'], 'w').write('step 1')\n"
      "    sys.exit(143)\n"
      "signal.signal(signal.SIGTERM, stop)\n"
      "print(json.dumps(dict(step=1, loss=1.0)), flush=True)\n"
      "time.sleep(30)\n");
  // The lineage's first trial's folder does not exist yet: the executor makes it.
  const std::filesystem::path checkpoint = dir_ / "artifacts" / "trial-0" / "resume.ckpt";
  ASSERT_TRUE(router_->send(peer, TrialMessage{.lease_id = 8,
                                               .number = 2,
                                               .job_json = checkpointing,
                                               .checkpoint_path = checkpoint.string()}));
  ASSERT_TRUE(
      router_->send(peer, TrialMessage{.lease_id = 9, .number = 3, .job_json = checkpointing}));
  ASSERT_TRUE(
      router_->send(peer, TrialMessage{.lease_id = 10, .number = 4, .job_json = checkpointing}));
  keepalive_ = {peer, {8, 9, 10}};
  std::set<uint64_t> reported;
  while (reported.size() < 2 && !::testing::Test::HasFailure()) {
    reported.insert(next<ReportMessage>().lease_id);
  }
  EXPECT_EQ(reported, (std::set<uint64_t>{8, 9}));  // 10 waits for a slot
  keepalive_.reset();

  thread_.request_stop();
  ByeMessage bye = next<ByeMessage>();
  std::sort(
      bye.preempted.begin(), bye.preempted.end(),
      [](const PreemptedLease& a, const PreemptedLease& b) { return a.lease_id < b.lease_id; });
  EXPECT_EQ(bye.preempted, (std::vector<PreemptedLease>{{.lease_id = 8, .checkpoint = true},
                                                        {.lease_id = 9, .checkpoint = false},
                                                        {.lease_id = 10, .checkpoint = false}}));
  std::ifstream saved(checkpoint);
  std::string text((std::istreambuf_iterator<char>(saved)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "step 1");
}

// Slurm and Kubernetes signal every process of a job at once: a job's SIGTERM from outside, with
// the executor's own stop coming a moment later, is a preemption, not a failure (the trial runs
// again without a retry counted). Without the executor's stop it stays a failure.
TEST_F(ExecutorServiceTest, AJobEndedByASigtermFromOutsideJustBeforeTheExecutorsStopIsPreempted) {
  start();
  std::string peer;
  next<HelloMessage>(&peer);
  const std::filesystem::path marker = dir_ / "signalled";
  const std::string job = python_job(
      "import os, signal\n"
      "open('" +
      marker.string() +
      "', 'w').close()\n"
      "os.kill(os.getpid(), signal.SIGTERM)\n");
  ASSERT_TRUE(router_->send(peer, TrialMessage{.lease_id = 8, .number = 2, .job_json = job}));
  keepalive_ = {peer, {8}};
  for (int i = 0; i < 1000 && !std::filesystem::exists(marker); ++i) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  ASSERT_TRUE(std::filesystem::exists(marker)) << "the job did not start";
  std::this_thread::sleep_for(milliseconds(300));  // the job has ended; the executor's stop comes
  keepalive_.reset();
  thread_.request_stop();
  const std::optional<ByeMessage> bye = ack_files_until_bye(
      peer, [](const FileChunkMessage&) {},
      [](const Message& m) {
        EXPECT_FALSE(std::holds_alternative<FailMessage>(m)) << "the trial was failed";
      });
  ASSERT_TRUE(bye) << "no BYE within 10 s";
  EXPECT_EQ(bye->preempted, (std::vector<PreemptedLease>{{.lease_id = 8}}));
}

TEST_F(ExecutorServiceTest, AJobEndedByASigtermFromOutsideWithoutTheExecutorsStopFails) {
  start();
  std::string peer;
  next<HelloMessage>(&peer);
  ASSERT_TRUE(router_->send(
      peer, TrialMessage{.lease_id = 8,
                         .number = 2,
                         .job_json = python_job("import os, signal\n"
                                                "os.kill(os.getpid(), signal.SIGTERM)\n")}));
  keepalive_ = {peer, {8}};
  const FailMessage fail = next<FailMessage>();
  EXPECT_EQ(fail.lease_id, 8u);
  EXPECT_EQ(fail.reason, "killed by signal 15 (SIGTERM)");
}

// A stopped executor that sends its files sends the checkpoint files its stopped job wrote, as
// FILEs marked `checkpoint` named in the lineage's checkpoint folder, before BYE; a file of the
// checkpoint that the job did not write (the coordinator has it, or a newer copy) stays.
TEST_F(ExecutorServiceTest, AStoppedExecutorSendsTheCheckpointItsJobWroteBeforeBye) {
  const std::filesystem::path files = dir_ / "files";
  configure_ = [&](ExecutorOptions& o) {
    o.send_files = true;
    o.files_dir = files.string();
    o.stop_grace = milliseconds(5000);  // the job ends at SIGTERM: the rest is the send's
  };
  // An earlier attempt of the lineage left its checkpoint and best model on this host.
  const std::filesystem::path here = files / "s" / "trial-0";
  std::filesystem::create_directories(here);
  std::ofstream(here / "resume.ckpt") << "step 0";
  std::ofstream(here / "model.ckpt") << "best model";
  start();
  std::string peer;
  next<HelloMessage>(&peer);
  const std::string job = nlohmann::json{{"kind", "command"},
                                         {"argv",
                                          {"python3", "-c",
                                           "import json, os, signal, sys, time\n"
                                           "def stop(*args):\n"
                                           "    p = os.environ['TUNER_CHECKPOINT_PATH']\n"
                                           "    open(p + '.history.json', 'w').write('[1]')\n"
                                           "    open(p, 'w').write('step 12')\n"
                                           "    sys.exit(143)\n"
                                           "signal.signal(signal.SIGTERM, stop)\n"
                                           "print(json.dumps(dict(step=1, loss=1.0)), flush=True)\n"
                                           "time.sleep(30)\n"}},
                                         {"objective_metric", "loss"},
                                         {"artifacts_dir", "/coordinator/only/artifacts"}}
                              .dump();
  ASSERT_TRUE(router_->send(
      peer, TrialMessage{.lease_id = 8,
                         .study_name = "s",
                         .number = 2,
                         .attempt = 1,
                         .job_json = job,
                         .checkpoint_path = "/coordinator/only/artifacts/trial-0/resume.ckpt"}));
  keepalive_ = {peer, {8}};
  // The re-run asks whether the coordinator has a newer copy than this host's; it has none.
  const CheckpointGetMessage stat = next<CheckpointGetMessage>();
  EXPECT_TRUE(stat.stat);
  ASSERT_TRUE(
      router_->send(peer, CheckpointDataMessage{.lease_id = 8,
                                                .of = stat.of,
                                                .file = stat.file,
                                                .found = false,
                                                .reason = "not on the coordinator's host"}));
  EXPECT_EQ(next<ReportMessage>().lease_id, 8u);
  keepalive_.reset();

  thread_.request_stop();
  std::vector<std::string> order;
  std::map<std::string, std::string> received;
  const std::optional<ByeMessage> bye = ack_files_until_bye(peer, [&](const FileChunkMessage& c) {
    EXPECT_TRUE(c.checkpoint) << c.path;
    EXPECT_EQ(c.lease_id, 8u);
    if (c.offset == 0) order.push_back(c.path);
    received[c.path] += c.data;
  });
  ASSERT_TRUE(bye) << "no BYE within 10 s";
  EXPECT_EQ(bye->preempted, (std::vector<PreemptedLease>{{.lease_id = 8, .checkpoint = true}}));
  EXPECT_EQ(order, (std::vector<std::string>{"resume.ckpt.history.json", "resume.ckpt"}))
      << "the checkpoint last, after its companions; the model it did not write stays";
  EXPECT_EQ(received["resume.ckpt"], "step 12");
  EXPECT_EQ(received["resume.ckpt.history.json"], "[1]");
  thread_.join();
  EXPECT_EQ(service_->stats().files_sent, 2);
}

// A stopped executor's whole stop is bounded by the longest grace, the job's (0.6 s) here, not
// the job's grace and the executor's (0.3 s) one after the other: a job that saves its checkpoint
// on SIGTERM and then runs on until it is killed at its grace leaves no time to send it, and the
// BYE goes at once.
TEST_F(ExecutorServiceTest, AStoppedExecutorSendsCheckpointsOnlyWithinTheLongestGrace) {
  const std::filesystem::path files = dir_ / "files";
  std::mutex log_mutex;
  std::vector<std::string> lines;
  log_ = [&](const std::string& line) {
    std::lock_guard lock(log_mutex);
    lines.push_back(line);
  };
  configure_ = [&](ExecutorOptions& o) {
    o.send_files = true;
    o.files_dir = files.string();
    o.stop_grace = milliseconds(300);
  };
  start();
  std::string peer;
  next<HelloMessage>(&peer);
  const std::string job = nlohmann::json{{"kind", "command"},
                                         {"argv",
                                          {"python3", "-c",
                                           "import json, os, signal, time\n"
                                           "def stop(*args):\n"
                                           "    p = os.environ['TUNER_CHECKPOINT_PATH']\n"
                                           "    open(p, 'w').write('step 3')\n"
                                           "signal.signal(signal.SIGTERM, stop)\n"
                                           "print(json.dumps(dict(step=1, loss=1.0)), flush=True)\n"
                                           "while True: time.sleep(1)\n"}},
                                         {"objective_metric", "loss"},
                                         {"stop_grace_s", 0.6},
                                         {"artifacts_dir", "/coordinator/only/artifacts"}}
                              .dump();
  ASSERT_TRUE(router_->send(
      peer, TrialMessage{.lease_id = 8,
                         .study_name = "s",
                         .number = 2,
                         .job_json = job,
                         .checkpoint_path = "/coordinator/only/artifacts/trial-2/resume.ckpt"}));
  keepalive_ = {peer, {8}};
  EXPECT_EQ(next<ReportMessage>().lease_id, 8u);
  keepalive_.reset();

  thread_.request_stop();
  int chunks = 0;
  const std::optional<ByeMessage> bye =
      ack_files_until_bye(peer, [&](const FileChunkMessage&) { ++chunks; });
  ASSERT_TRUE(bye) << "no BYE within 10 s";
  EXPECT_EQ(bye->preempted, (std::vector<PreemptedLease>{{.lease_id = 8, .checkpoint = true}}));
  EXPECT_EQ(chunks, 0) << "sent after the job's grace, past the stop's bound";
  thread_.join();
  std::lock_guard lock(log_mutex);
  EXPECT_THAT(lines, ::testing::Contains(::testing::HasSubstr(
                         "its checkpoint was not all sent within the stop grace (600 ms)")));
}

// The processes of group `pgid` that are not zombies (an orphan's zombie waits for init, which
// in some containers reaps late).
std::vector<pid_t> live_members(pid_t pgid) {
  std::vector<pid_t> live;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;  // "self", ...
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!stat || !std::getline(stat, line)) continue;
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));  // " S ppid pgrp ..."
    char state = 0;
    pid_t ppid = 0, group = 0;
    if (rest >> state >> ppid >> group && group == pgid && state != 'Z') {
      live.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return live;
}

// Regression: a hanging trial ran until a second Ctrl-C. A job's "timeout_s" stops it
// (SIGTERM to its process group) and its trial is FAIL "timed out after ...", while its lease
// stays in the heartbeats (a timed-out trial is not a lost lease).
TEST_F(ExecutorServiceTest, HangingJobIsFailedTimedOutAfterItsTimeoutAndItsGroupIsGone) {
  start();
  std::string peer;
  next<HelloMessage>(&peer);
  const std::string pid_file = (dir_ / "hang.pid").string();
  const std::string job = nlohmann::json{
      {"kind", "command"},
      {"argv", {"/bin/sh", "-c", "sleep 1000 & echo $$ > " + pid_file + "; wait"}},
      {"objective_metric", "loss"},
      {"timeout_s", 1}}.dump();
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_TRUE(router_->send(peer, TrialMessage{.lease_id = 21, .number = 4, .job_json = job}));
  keepalive_ = {peer, {21}};
  const FailMessage fail = next<FailMessage>();
  const auto took = std::chrono::steady_clock::now() - sent;
  EXPECT_EQ(fail.lease_id, 21u);
  EXPECT_EQ(fail.reason,
            "timed out after 1 s (the job's timeout_s); killed by signal 15 (SIGTERM)");
  EXPECT_NE(fail.log_tail.find("[tuner] time limit of 1000 ms reached: SIGTERM to process group"),
            std::string::npos)
      << fail.log_tail;
  EXPECT_GE(took, milliseconds(1000));
  EXPECT_LT(took, milliseconds(10000));
  // The shell and the sleep it left in the background: the whole group is gone (SIGKILL went to
  // it before FAIL was sent; the sleep's reaping by init completes asynchronously).
  std::ifstream in(pid_file);
  pid_t group = 0;
  ASSERT_TRUE(in >> group);
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(1000);
  while (!live_members(group).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(live_members(group), std::vector<pid_t>{}) << "process group " << group;
}

TEST_F(ExecutorServiceTest, TimedOutJobThatIgnoresSigtermIsKilledAfterItsStopGrace) {
  start();
  std::string peer;
  next<HelloMessage>(&peer);
  const std::string job = nlohmann::json{
      {"kind", "command"},
      {"argv", {"/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"}},
      {"objective_metric", "loss"},
      {"timeout_s", 0.5},
      {"stop_grace_s", 0.3}}.dump();
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_TRUE(router_->send(peer, TrialMessage{.lease_id = 22, .number = 5, .job_json = job}));
  keepalive_ = {peer, {22}};
  const FailMessage fail = next<FailMessage>();
  const auto took = std::chrono::steady_clock::now() - sent;
  EXPECT_EQ(fail.lease_id, 22u);
  EXPECT_EQ(fail.reason,
            "timed out after 0.5 s (the job's timeout_s); killed by signal 9 (SIGKILL)");
  EXPECT_NE(fail.log_tail.find("still running 300 ms after SIGTERM: SIGKILL to process group"),
            std::string::npos)
      << fail.log_tail;
  EXPECT_GE(took, milliseconds(800));
  EXPECT_LT(took, milliseconds(10000));
}

TEST_F(ExecutorServiceTest, ASilentCoordinatorMakesItReconnectAndSayHelloAgain) {
  start(milliseconds(300));
  std::string first, second;
  next<HelloMessage>(&first);
  HelloMessage again = next<HelloMessage>(&second);
  EXPECT_EQ(again.executor_id, "test-executor");
  EXPECT_NE(first, second);  // a new connection
  EXPECT_GE(service_->stats().connections, 2);
}

// Regression: a plain executor pointed at a CURVE coordinator (which never answers it)
// said nothing about keys.
TEST_F(ExecutorServiceTest, ASilentCoordinatorIsReportedWithWhatToCheck) {
  // Shared with the service's thread, which logs until TearDown stops it.
  struct Lines {
    std::mutex mutex;
    std::vector<std::string> said;
  };
  auto lines = std::make_shared<Lines>();
  log_ = [lines](const std::string& line) {
    std::lock_guard lock(lines->mutex);
    lines->said.push_back(line);
  };
  start(milliseconds(200));
  next<HelloMessage>();
  next<HelloMessage>();  // it reconnected
  std::lock_guard lock(lines->mutex);
  const auto said = std::find_if(lines->said.begin(), lines->said.end(), [](const std::string& l) {
    return l.find("nothing from the coordinator") != std::string::npos;
  });
  ASSERT_NE(said, lines->said.end());
  EXPECT_THAT(*said, ::testing::HasSubstr("one that uses CURVE answers only executors started "
                                          "with --key and --coordinator-key"));
}

// Options of an executor on its own (no job runs) that talks to router_ with short timers.
ExecutorOptions lone_executor_options(const std::string& endpoint, const std::string& id) {
  ExecutorOptions options;
  options.coordinator = endpoint;
  options.executor_id = id;
  options.gpus = std::vector<int>{};
  options.heartbeat_interval = milliseconds(20);
  options.coordinator_timeout = milliseconds(100);
  options.log = [](const std::string&) {};
  return options;
}

// Runs an executor with `options` until it stops on its own (for up to 5 s), calling
// `each_turn` meanwhile; returns the message of the Error it stopped with ("" for none), and
// whether it stopped on its own in `ended`.
std::string run_until_it_stops(const ExecutorOptions& options,
                               const std::function<void()>& each_turn, bool* ended_out) {
  ExecutorService service(options);
  std::string error;  // written by the runner, read after it is joined
  std::atomic<bool> ended = false;
  std::jthread runner([&](std::stop_token stop) {
    try {
      service.run(stop);
    } catch (const Error& e) {
      error = e.what();
    }
    ended = true;
  });
  const auto end = std::chrono::steady_clock::now() + milliseconds(5000);
  while (!ended && std::chrono::steady_clock::now() < end) each_turn();
  *ended_out = ended;
  runner.request_stop();
  runner.join();
  return error;
}

// Regression: a second executor started with an id in use took turns with the first.
// Refused for good (longer than twice its coordinator timeout), it stops with the reason.
TEST_F(ExecutorServiceTest, ALastingRefusalStopsTheExecutorWithTheReason) {
  bool ended = false;
  const std::string error = run_until_it_stops(
      lone_executor_options(router_->endpoint(), "twin"),
      [this] {
        ZmqPollEntry entry{.socket = &router_->socket()};
        zmq_wait({&entry, 1}, milliseconds(10));
        while (auto in = router_->receive()) {
          router_->send(in->peer,
                        ErrorMessage{.message = "executor id 'twin' is in use", .refused = true});
        }
      },
      &ended);
  EXPECT_TRUE(ended) << "the executor went on after a lasting refusal";
  EXPECT_EQ(error, "the coordinator refused this executor: executor id 'twin' is in use");
}

// Regression: executors a cluster started for a sweep that was killed before it could cancel
// them (SIGKILL, a crashed host) reconnected for ever, holding the cluster's nodes.
TEST_F(ExecutorServiceTest, AnExecutorThatHearsNothingForGiveUpAfterStopsWithTheReason) {
  ExecutorOptions options = lone_executor_options(router_->endpoint(), "orphan");  // no answers
  options.give_up_after = milliseconds(400);
  bool ended = false;
  const std::string error = run_until_it_stops(
      options, [] { std::this_thread::sleep_for(milliseconds(10)); }, &ended);
  EXPECT_TRUE(ended) << "the executor went on without a coordinator";
  EXPECT_THAT(error, ::testing::StartsWith("nothing came from the coordinator at " +
                                           router_->endpoint() + " for "));
  EXPECT_THAT(error, ::testing::EndsWith("(give_up_after): giving up"));
}

// ExecutorOptions::job_runner (for benchmarks and embedding): trials run in-process through it,
// with the job's command never started; reports, a DECISION to stop and a throwing runner end as
// they would for a command.
TEST_F(ExecutorServiceTest, AJobRunnerRunsTrialsInProcessInsteadOfTheCommand) {
  ExecutorOptions options;
  options.coordinator = router_->endpoint();
  options.executor_id = "runner-executor";
  options.slots = 2;
  options.gpus = std::vector<int>{};
  options.heartbeat_interval = milliseconds(50);
  options.log = [](const std::string& line) { std::cerr << line << "\n"; };
  options.job_runner = [](const CommandTrial& trial, const ReportCallback& on_report,
                          std::stop_token stop) {
    if (trial.number == 2) throw std::runtime_error("no such model");
    const double x = as_double(trial.params.at("x"));
    CommandOutcome outcome;
    if (trial.number == 1) {
      // Reports until told to stop (the DECISION, or the stop token).
      for (int64_t step = 1; step < 1000 && !stop.stop_requested(); ++step) {
        CommandReport report{.step = step, .metrics = {{"loss", x + step}}};
        outcome.last_report = report;
        if (on_report(report) != JobDecision::kContinue) break;
        std::this_thread::sleep_for(milliseconds(10));
      }
      outcome.stopped_by = JobDecision::kStop;
    } else if (on_report(CommandReport{.step = 1, .metrics = {{"loss", 2 * x}}}) !=
               JobDecision::kContinue) {
      outcome.stopped_by = JobDecision::kStop;
    }
    outcome.exit_code = 0;
    outcome.final_metrics = Metrics{{"loss", x * x}, {"accuracy", 0.5}};
    return outcome;
  };
  service_ = std::make_unique<ExecutorService>(options);
  thread_ = std::jthread([this](std::stop_token stop) { service_->run(stop); });
  std::string peer;
  next<HelloMessage>(&peer);
  // The command does not exist: had it been started, the trial would FAIL.
  const std::string job =
      R"({"kind": "command", "argv": ["/nonexistent/program"], "objective_metric": "loss"})";
  keepalive_ = {peer, {10, 11, 12}};
  ASSERT_TRUE(router_->send(
      peer, TrialMessage{.lease_id = 10, .number = 0, .params = {{"x", 0.5}}, .job_json = job}));
  ReportMessage report = next<ReportMessage>();
  EXPECT_EQ(report.lease_id, 10u);
  EXPECT_EQ(report.metrics.at("loss"), 1.0);
  ResultMessage result = next<ResultMessage>();
  EXPECT_EQ(result.lease_id, 10u);
  EXPECT_TRUE(result.values.empty());
  EXPECT_EQ(result.metrics.at("loss"), 0.25);
  EXPECT_EQ(result.metrics.at("accuracy"), 0.5);

  ASSERT_TRUE(router_->send(
      peer, TrialMessage{.lease_id = 11, .number = 1, .params = {{"x", 0.0}}, .job_json = job}));
  EXPECT_EQ(next<ReportMessage>().lease_id, 11u);
  ASSERT_TRUE(router_->send(peer, DecisionMessage{.lease_id = 11, .decision = JobDecision::kStop}));
  ResultMessage stopped = next<ResultMessage>();  // pruned: the coordinator records it so
  EXPECT_EQ(stopped.lease_id, 11u);

  ASSERT_TRUE(router_->send(
      peer, TrialMessage{.lease_id = 12, .number = 2, .params = {{"x", 0.0}}, .job_json = job}));
  FailMessage fail = next<FailMessage>();
  EXPECT_EQ(fail.lease_id, 12u);
  EXPECT_NE(fail.reason.find("no such model"), std::string::npos) << fail.reason;
  EXPECT_EQ(service_->stats().results_sent, 2);
}

// Jobs run on one thread per slot, kept from trial to trial; trials beyond the slots wait. With
// prefetch, READY offers that many trials more than the free slots.
TEST_F(ExecutorServiceTest, JobsRunOnAThreadPerSlotAndTheRestWait) {
  std::mutex mutex;
  std::set<std::thread::id> threads;
  int running = 0, most_running = 0;
  ExecutorOptions options;
  options.coordinator = router_->endpoint();
  options.executor_id = "pool-executor";
  options.slots = 2;
  options.prefetch = 1;
  options.gpus = std::vector<int>{};
  options.heartbeat_interval = milliseconds(50);
  options.log = [](const std::string& line) { std::cerr << line << "\n"; };
  options.job_runner = [&](const CommandTrial& trial, const ReportCallback&, std::stop_token) {
    {
      std::lock_guard lock(mutex);
      threads.insert(std::this_thread::get_id());
      most_running = std::max(most_running, ++running);
    }
    std::this_thread::sleep_for(milliseconds(10));
    {
      std::lock_guard lock(mutex);
      --running;
    }
    CommandOutcome outcome;
    outcome.exit_code = 0;
    outcome.final_metrics = Metrics{{"loss", static_cast<double>(trial.number)}};
    return outcome;
  };
  service_ = std::make_unique<ExecutorService>(options);
  thread_ = std::jthread([this](std::stop_token stop) { service_->run(stop); });
  std::string peer;
  next<HelloMessage>(&peer);
  EXPECT_EQ(next<ReadyMessage>().free_slots, 3);
  const std::string job = R"({"kind": "command", "argv": ["unused"], "objective_metric": "loss"})";
  constexpr int kTrials = 6;
  keepalive_ = {peer, {}};
  for (uint64_t lease = 1; lease <= kTrials; ++lease) {
    keepalive_->second.push_back(lease);
    ASSERT_TRUE(router_->send(peer, TrialMessage{.lease_id = lease,
                                                 .number = static_cast<int>(lease),
                                                 .params = {{"x", 0.0}},
                                                 .job_json = job}));
  }
  std::set<uint64_t> results;
  for (int i = 0; i < kTrials; ++i) {
    const ResultMessage result = next<ResultMessage>();
    EXPECT_EQ(result.metrics.at("loss"), static_cast<double>(result.lease_id));
    results.insert(result.lease_id);
  }
  EXPECT_EQ(results.size(), static_cast<size_t>(kTrials));
  std::lock_guard lock(mutex);
  EXPECT_LE(most_running, 2);
  EXPECT_LE(threads.size(), 2u);  // a thread per trial would have used six
}

}  // namespace
}  // namespace tuner
