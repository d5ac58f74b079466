#include "launch/ray_launcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "trials/error.h"

namespace tuner {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

// What a fake Python launcher was sent and has to say, shared with the test.
struct FakeSide {
  std::vector<Json> sent;
  std::vector<std::string> to_say;
  std::optional<std::string> end;
  bool closed = false;
  // The ops sent, in order ("init", "start", ...).
  std::vector<std::string> ops() const {
    std::vector<std::string> out;
    for (const Json& j : sent) out.push_back(j.value("op", ""));
    return out;
  }
};

class FakeChannel final : public LineChannel {
 public:
  explicit FakeChannel(std::shared_ptr<FakeSide> side) : side_(std::move(side)) {}
  void send(const std::string& line) override { side_->sent.push_back(Json::parse(line)); }
  std::vector<std::string> receive() override { return std::exchange(side_->to_say, {}); }
  std::optional<std::string> ended() override { return side_->end; }
  void close(std::chrono::milliseconds) override { side_->closed = true; }

 private:
  std::shared_ptr<FakeSide> side_;
};

class RayLauncherTest : public ::testing::Test {
 protected:
  RayLauncherOptions options() {
    RayLauncherOptions o;
    o.ray.address = "ray://head:10001";
    o.ray.cpus_per_executor = 2;
    o.ray.gpus_per_executor = 1;
    o.ray.memory = "2G";
    o.ray.max_executors = 2;
    o.ray.idle_grace = std::chrono::seconds(30);
    o.ray.tuner_path = "/opt/tuner/bin/tuner";
    o.ray.runtime_env = R"({"env_vars":{"A":"1"}})";
    o.connect_endpoint = "tcp://login1:5555";
    o.coordinator_public_key = "coordinator-public";
    o.executor_keys = {.public_key = "executor-public", .secret_key = "executor-secret"};
    o.name = "mlp";
    o.clock = clock_;
    o.log = [this](const std::string& line) { logged_.push_back(line); };
    o.start_launcher = [this] { return std::make_unique<FakeChannel>(side_); };
    return o;
  }
  void say(const Json& message) { side_->to_say.push_back(message.dump()); }
  static LaunchQueueState waiting(int trials) { return {.startable_trials = trials}; }
  std::vector<std::string> started_ids() const {
    std::vector<std::string> ids;
    for (const Json& j : side_->sent) {
      if (j.value("op", "") == "start") {
        for (const Json& id : j["ids"]) ids.push_back(id.get<std::string>());
      }
    }
    return ids;
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  std::shared_ptr<FakeSide> side_ = std::make_shared<FakeSide>();
  std::vector<std::string> logged_;
};

TEST_F(RayLauncherTest, InitHandsOverTheClusterTheResourcesAndTheKeys) {
  RayLauncher launcher(options());
  ASSERT_EQ(side_->sent.size(), 1u);
  const Json& init = side_->sent[0];
  EXPECT_EQ(init["op"], "init");
  EXPECT_EQ(init["version"], kRayLauncherProtocolVersion);
  EXPECT_EQ(init["address"], "ray://head:10001");
  EXPECT_EQ(init["num_cpus"], 2.0);
  EXPECT_EQ(init["num_gpus"], 1.0);
  EXPECT_EQ(init["memory"], int64_t{2} << 30);
  EXPECT_EQ(init["runtime_env"], Json::parse(R"({"env_vars":{"A":"1"}})"));
  EXPECT_EQ(init["tuner"], "/opt/tuner/bin/tuner");
  EXPECT_EQ(init["connect"], "tcp://login1:5555");
  EXPECT_EQ(init["slots"], 1);
  // The keys as the executor's key files have them (wire/curve_keys.h).
  EXPECT_THAT(init["key"].get<std::string>(), HasSubstr("secret-key = \"executor-secret\""));
  EXPECT_THAT(init["key"].get<std::string>(), HasSubstr("public-key = \"executor-public\""));
  EXPECT_EQ(init["coordinator_key"], "public-key = \"coordinator-public\"\n");
}

TEST_F(RayLauncherTest, StartsNothingBeforeRayIsReadyThenWhatTheTrialsNeed) {
  RayLauncher launcher(options());
  launcher.tick(waiting(5));
  EXPECT_EQ(side_->ops(), std::vector<std::string>{"init"});
  say({{"event", "ready"}, {"version", kRayLauncherProtocolVersion}, {"message", "CPU 4"}});
  launcher.tick(waiting(5));
  // Five trials wait; max_executors is 2.
  ASSERT_EQ(started_ids().size(), 2u);
  EXPECT_THAT(started_ids()[0], ::testing::MatchesRegex("ray-[a-z0-9]{6}-1"));
  EXPECT_THAT(started_ids()[1], ::testing::MatchesRegex("ray-[a-z0-9]{6}-2"));
  EXPECT_THAT(logged_, ::testing::Contains(HasSubstr("ray: connected to the cluster")));
  // Pending ones count: nothing more is asked for while they come.
  launcher.tick(waiting(5));
  EXPECT_EQ(started_ids().size(), 2u);
  EXPECT_EQ(launcher.executors().size(), 2u);
  EXPECT_EQ(launcher.executors()[0].state, "pending");
}

TEST_F(RayLauncherTest, StopsAnExecutorIdleForItsGraceWhenNoTrialWaits) {
  RayLauncher launcher(options());
  say({{"event", "ready"}, {"version", kRayLauncherProtocolVersion}});
  launcher.tick(waiting(1));
  ASSERT_EQ(started_ids().size(), 1u);
  const std::string id = started_ids()[0];
  say({{"event", "state"},
       {"id", id},
       {"state", "running"},
       {"node", "10.0.0.7"},
       {"actor_id", "3f1c"}});
  LaunchQueueState state{.free_slots = 1,
                         .executors = {{.id = id, .idle_since = clock_->steady_now()}}};
  launcher.tick(state);
  EXPECT_EQ(launcher.executors()[0], (RayExecutorStatus{
                                         .id = id,
                                         .state = "alive",
                                         .node = "10.0.0.7",
                                         .actor_id = "3f1c",
                                     }));
  EXPECT_EQ(side_->ops().back(), "start");  // idle, within its grace: kept
  clock_->advance(std::chrono::seconds(31));
  launcher.tick(state);
  ASSERT_EQ(side_->ops().back(), "stop");
  EXPECT_EQ(side_->sent.back()["ids"], Json::array({id}));
  // Its end, as the launcher reports it, is no failure.
  say({{"event", "state"}, {"id", id}, {"state", "exited"}, {"reason", "stopped"}});
  EXPECT_NO_THROW(launcher.tick(waiting(0)));
  EXPECT_TRUE(launcher.executors().empty());
}

TEST_F(RayLauncherTest, KeepsItsExecutorsInTheStatusFileWhileItRuns) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("ray_launcher_test_" + std::to_string(::getpid())) / "mlp";
  RayLauncherOptions o = options();
  o.status_dir = dir.string();
  std::optional<RayLauncher> launcher(std::move(o));
  say({{"event", "ready"}, {"version", kRayLauncherProtocolVersion}});
  launcher->tick(waiting(2));
  ASSERT_EQ(started_ids().size(), 2u);
  const std::string first = started_ids()[0];
  const std::string second = started_ids()[1];
  say({{"event", "state"},
       {"id", first},
       {"state", "running"},
       {"node", "10.0.0.7"},
       {"actor_id", "3f1c"}});
  say({{"event", "state"},
       {"id", second},
       {"state", "pending"},
       {"reason", "infeasible: no live node has GPU 1"}});
  launcher->tick(waiting(2));
  std::optional<RayExecutorsRecord> record = read_ray_executors_file(dir.string());
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->pid, ::getpid());
  EXPECT_EQ(record->launcher + "-1", first);
  EXPECT_EQ(record->address, "ray://head:10001");
  EXPECT_EQ(record->endpoint, "tcp://login1:5555");
  EXPECT_EQ(
      record->executors,
      (std::vector<RayExecutorStatus>{
          {.id = first, .state = "alive", .node = "10.0.0.7", .actor_id = "3f1c"},
          {.id = second, .state = "pending", .reason = "infeasible: no live node has GPU 1"}}));
  // One that dies on its own, long after its start, is kept with Ray's reason.
  clock_->advance(std::chrono::minutes(10));
  say({{"event", "state"},
       {"id", first},
       {"state", "exited"},
       {"reason", "its actor failed: the actor's node died"}});
  launcher->tick(waiting(0));
  record = read_ray_executors_file(dir.string());
  ASSERT_TRUE(record.has_value());
  ASSERT_EQ(record->executors.size(), 2u);
  EXPECT_EQ(record->executors[0],
            (RayExecutorStatus{.id = first,
                               .state = "dead",
                               .node = "10.0.0.7",
                               .actor_id = "3f1c",
                               .reason = "its actor failed: the actor's node died"}));
  launcher.reset();  // stops: the file goes
  EXPECT_EQ(read_ray_executors_file(dir.string()), std::nullopt);
  std::filesystem::remove_all(dir.parent_path());
}

TEST_F(RayLauncherTest, AnErrorOfTheLauncherStopsItWithItsWords) {
  RayLauncher launcher(options());
  say({{"event", "error"},
       {"message", "Ray cannot place the executor ray-x-1 of sweep 'mlp': it asks for GPU 8"}});
  try {
    launcher.tick(waiting(1));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_THAT(e.what(), HasSubstr("executors.ray: Ray cannot place the executor ray-x-1"));
  }
  EXPECT_EQ(side_->ops().back(), "stop_all");
  EXPECT_TRUE(side_->closed);
  EXPECT_NO_THROW(launcher.tick(waiting(1)));  // stopped: nothing more
}

TEST_F(RayLauncherTest, AnExecutorThatEndsSoonAfterItsStartIsAnError) {
  RayLauncher launcher(options());
  say({{"event", "ready"}, {"version", kRayLauncherProtocolVersion}});
  launcher.tick(waiting(1));
  const std::string id = started_ids().at(0);
  say({{"event", "state"}, {"id", id}, {"state", "running"}});
  launcher.tick(waiting(1));
  clock_->advance(std::chrono::seconds(2));
  say({{"event", "state"},
       {"id", id},
       {"state", "exited"},
       {"reason", "tuner executor exited with code 127; its output:\n    | cannot run /x/tuner"}});
  try {
    launcher.tick(waiting(1));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("executors.ray: the executor " + id +
                                    " of sweep 'mlp' ended after 2 s: tuner executor exited "
                                    "with code 127"));
    EXPECT_THAT(e.what(), HasSubstr("cannot run /x/tuner"));
  }
}

TEST_F(RayLauncherTest, AnExecutorThatEndsLaterIsReplaced) {
  RayLauncher launcher(options());
  say({{"event", "ready"}, {"version", kRayLauncherProtocolVersion}});
  launcher.tick(waiting(1));
  const std::string id = started_ids().at(0);
  say({{"event", "state"}, {"id", id}, {"state", "running"}});
  launcher.tick(waiting(1));
  clock_->advance(std::chrono::minutes(10));
  say({{"event", "state"}, {"id", id}, {"state", "exited"}, {"reason", "its actor failed"}});
  launcher.tick(waiting(1));
  EXPECT_THAT(logged_, ::testing::Contains(HasSubstr("executor " + id + " ended: its actor")));
  ASSERT_EQ(started_ids().size(), 2u);
  EXPECT_NE(started_ids()[1], id);
}

// Regression: an executor whose node was lost within a minute of its start stopped the sweep as
// if the executor had failed to start, though it had connected and run trials.
TEST_F(RayLauncherTest, AnExecutorThatConnectedIsReplacedHoweverSoonItEnds) {
  RayLauncher launcher(options());
  say({{"event", "ready"}, {"version", kRayLauncherProtocolVersion}});
  launcher.tick(waiting(1));
  const std::string id = started_ids().at(0);
  say({{"event", "state"}, {"id", id}, {"state", "running"}});
  launcher.tick({.executors = {{.id = id}}});
  clock_->advance(std::chrono::seconds(5));
  say({{"event", "state"},
       {"id", id},
       {"state", "exited"},
       {"reason", "its actor failed: the actor's node died"}});
  launcher.tick(waiting(1));
  EXPECT_THAT(logged_, ::testing::Contains(HasSubstr("executor " + id + " ended: its actor")));
  ASSERT_EQ(started_ids().size(), 2u);
}

TEST_F(RayLauncherTest, TheLauncherEndingIsAnErrorWithItsOutput) {
  RayLauncher launcher(options());
  side_->end = "exited with code 1\n    | Traceback (most recent call last):";
  try {
    launcher.tick(waiting(1));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("executors.ray: tuner's Ray launcher"));
    EXPECT_THAT(e.what(), HasSubstr("ended: exited with code 1"));
    EXPECT_THAT(e.what(), HasSubstr("Traceback"));
  }
}

TEST_F(RayLauncherTest, DestroyingItStopsEveryExecutor) {
  {
    RayLauncher launcher(options());
    say({{"event", "ready"}, {"version", kRayLauncherProtocolVersion}});
    launcher.tick(waiting(2));
    ASSERT_EQ(started_ids().size(), 2u);
  }
  EXPECT_EQ(side_->ops().back(), "stop_all");
  EXPECT_TRUE(side_->closed);
  EXPECT_THAT(logged_, ::testing::Contains(HasSubstr("(the study's run ended)")));
}

TEST_F(RayLauncherTest, ARayInitThatDoesNotConnectIsAnErrorAfterTwoMinutes) {
  RayLauncher launcher(options());
  clock_->advance(std::chrono::seconds(30));
  launcher.tick(waiting(1));
  EXPECT_THAT(logged_, ::testing::Contains(
                           "ray: still connecting to the cluster at ray://head:10001 (ray.init)"));
  clock_->advance(std::chrono::seconds(90));
  try {
    launcher.tick(waiting(1));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("executors.ray: ray.init(address='ray://head:10001') did not "
                                    "connect in 120 s"));
  }
}

TEST_F(RayLauncherTest, ALineNotOfTheProtocolIsShownNotActedOn) {
  RayLauncher launcher(options());
  side_->to_say = {"Traceback (most recent call last):", R"({"event": "state", "id": 7})"};
  EXPECT_NO_THROW(launcher.tick(waiting(1)));
  EXPECT_THAT(logged_, ::testing::Contains(
                           "ray: the Ray launcher said: Traceback (most recent call last):"));
  EXPECT_EQ(side_->ops(), std::vector<std::string>{"init"});
}

TEST_F(RayLauncherTest, AnotherProtocolVersionIsRefused) {
  RayLauncher launcher(options());
  say({{"event", "ready"}, {"version", kRayLauncherProtocolVersion + 1}});
  EXPECT_THROW(launcher.tick(waiting(1)), Error);
}

// Waits (bounded) for the lines a real channel receives.
std::vector<std::string> receive_lines(LineChannel& channel, size_t count) {
  std::vector<std::string> lines;
  for (int i = 0; i < 500 && lines.size() < count; ++i) {
    for (std::string& line : channel.receive()) lines.push_back(std::move(line));
    if (lines.size() < count) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return lines;
}

TEST(LineChannelTest, TalksToAProgramInLinesAndSaysHowItEnded) {
  std::unique_ptr<LineChannel> channel = spawn_line_channel(
      {"sh", "-c", "while read line; do echo \"got $line\"; done; echo bye >&2; exit 3"});
  channel->send("one");
  channel->send("two");
  EXPECT_EQ(receive_lines(*channel, 2), (std::vector<std::string>{"got one", "got two"}));
  EXPECT_FALSE(channel->ended().has_value());
  channel->close(std::chrono::seconds(5));
  const std::optional<std::string> ended = channel->ended();
  ASSERT_TRUE(ended.has_value());
  EXPECT_THAT(*ended, HasSubstr("exited with code 3"));
  EXPECT_THAT(*ended, HasSubstr("| bye"));
  EXPECT_THROW(channel->send("three"), Error);
}

TEST(LineChannelTest, AProgramThatDoesNotExistIsNotFound) {
  try {
    spawn_line_channel({"/nonexistent/python3"});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/python3"));
  }
}

TEST(LineChannelTest, AProgramThatKeepsRunningIsKilledAfterTheGrace) {
  std::unique_ptr<LineChannel> channel = spawn_line_channel({"sleep", "60"});
  channel->close(std::chrono::milliseconds(50));
  const std::optional<std::string> ended = channel->ended();
  ASSERT_TRUE(ended.has_value());
  EXPECT_THAT(*ended, HasSubstr("SIGKILL"));
}

// The real ray_launcher.py, with a Python that cannot import ray (-S: no site packages): it
// answers its init line with an error event that says so.
TEST(RayLauncherScriptTest, SaysWhenItsPythonHasNoRay) {
  RayLauncherOptions o;
  o.ray.address = "127.0.0.1:1";
  o.ray.tuner_path = "/opt/tuner/bin/tuner";
  o.connect_endpoint = "tcp://127.0.0.1:5555";
  o.name = "mlp";
  o.start_launcher = [] {
    return spawn_line_channel({"python3", "-S", "-u", ray_launcher_script()});
  };
  RayLauncher launcher(std::move(o));
  std::string error;
  for (int i = 0; i < 500 && error.empty(); ++i) {
    try {
      launcher.tick({.startable_trials = 1});
    } catch (const Error& e) {
      error = e.what();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_THAT(error, HasSubstr("executors.ray: "));
  EXPECT_THAT(error, HasSubstr("cannot import ray"));
  EXPECT_THAT(error, HasSubstr("executors.ray.python"));
}

// The real ray_launcher.py with a stand-in `ray` module whose first ray.init through Ray Client
// fails on the server's side (its process for the connection died as it started): the launcher
// says so, tries again, and connects.
TEST(RayLauncherScriptTest, TriesRayClientAgainWhenItsServerFailsToStartTheConnection) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tuner-fake-ray-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "ray");
  {
    std::ofstream module(dir / "ray" / "__init__.py");
    module << "calls = 0\n"
              "def init(**kwargs):\n"
              "    global calls\n"
              "    calls += 1\n"
              "    if calls == 1:\n"
              "        raise ConnectionAbortedError('Initialization failure from server: "
              "Starting Ray client server failed')\n"
              "def shutdown():\n"
              "    pass\n"
              "def cluster_resources():\n"
              "    return {'CPU': 2.0}\n"
              "def remote(**options):\n"
              "    return lambda actor_class: actor_class\n";
  }
  RayLauncherOptions o;
  o.ray.address = "ray://127.0.0.1:1";
  o.ray.tuner_path = "/opt/tuner/bin/tuner";
  o.connect_endpoint = "tcp://127.0.0.1:5555";
  o.name = "mlp";
  std::vector<std::string> logged;
  o.log = [&logged](const std::string& line) { logged.push_back(line); };
  o.start_launcher = [&dir] {
    return spawn_line_channel(
        {"env", "PYTHONPATH=" + dir.string(), "python3", "-u", ray_launcher_script()});
  };
  {
    RayLauncher launcher(std::move(o));
    const auto connected = [&logged] {
      return std::any_of(logged.begin(), logged.end(), [](const std::string& line) {
        return line.find("connected to the cluster") != std::string::npos;
      });
    };
    for (int i = 0; i < 1000 && !connected(); ++i) {
      launcher.tick({.startable_trials = 0});
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(connected()) << ::testing::PrintToString(logged);
  }
  std::filesystem::remove_all(dir);
  EXPECT_THAT(logged, ::testing::Contains(HasSubstr(
                          "Ray Client's server failed to start the connection (Initialization "
                          "failure from server: Starting Ray client server failed); trying again "
                          "(2 of 3)")));
}

}  // namespace
}  // namespace tuner
