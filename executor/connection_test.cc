#include "executor/connection.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

namespace tuner {
namespace {

using std::chrono::milliseconds;

// A connection to an endpoint where nobody listens (a DEALER connects lazily), on a fake clock.
ExecutorOptions test_options() {
  ExecutorOptions options;
  options.coordinator = "ipc://" + (std::filesystem::temp_directory_path() /
                                    ("tuner-connection-" + std::to_string(::getpid())))
                                       .string();
  options.executor_id = "test";
  options.heartbeat_interval = milliseconds(100);
  options.coordinator_timeout = milliseconds(1000);
  return options;
}

class ConnectionTest : public ::testing::Test {
 protected:
  ExecutorOptions options_ = test_options();
  FakeClock clock_;
  std::vector<std::string> log_;
  CoordinatorConnection connection_{options_, clock_,
                                    [this](const std::string& line) { log_.push_back(line); }};
};

TEST_F(ConnectionTest, HeartbeatsAndResendsComeDueOnTheirIntervals) {
  connection_.open();
  EXPECT_FALSE(connection_.due().heartbeat);
  clock_.advance(milliseconds(100));
  connection_.heard();
  CoordinatorConnection::Due due = connection_.due();
  EXPECT_TRUE(due.heartbeat);
  EXPECT_FALSE(due.hello || due.resend || due.reconnect);
  EXPECT_FALSE(connection_.due().heartbeat);  // started again
  EXPECT_EQ(connection_.wait_time(milliseconds(200)), milliseconds(101));
  EXPECT_EQ(connection_.wait_time(milliseconds(20)), milliseconds(20));
  clock_.advance(milliseconds(900));
  connection_.heard();
  due = connection_.due();
  EXPECT_TRUE(due.heartbeat && due.resend);
}

TEST_F(ConnectionTest, SilenceForTheTimeoutAsksForAReconnect) {
  connection_.open();
  clock_.advance(milliseconds(1000));
  CoordinatorConnection::Due due = connection_.due();
  EXPECT_TRUE(due.reconnect);
  EXPECT_FALSE(due.heartbeat || due.resend);
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_NE(log_[0].find("nothing from the coordinator for 1000 ms"), std::string::npos);
}

TEST_F(ConnectionTest, AnErrorMakesTheNextHeartbeatAHello) {
  connection_.open();
  connection_.on_message(ErrorMessage{.message = "who?", .say_hello = true});
  connection_.on_message(ErrorMessage{.message = "who?", .say_hello = true});
  EXPECT_EQ(log_.size(), 1u);  // once per socket
  clock_.advance(milliseconds(100));
  connection_.heard();
  EXPECT_TRUE(connection_.due().hello);
  connection_.said_hello();
  clock_.advance(milliseconds(100));
  connection_.heard();
  EXPECT_FALSE(connection_.due().hello);
}

TEST_F(ConnectionTest, OnlyARefusalThatLastsIsFinal) {
  connection_.open();
  const ErrorMessage refused{.message = "id in use", .refused = true};
  connection_.on_message(refused);
  clock_.advance(milliseconds(2001));
  connection_.on_message(ReadyMessage{});  // let in meanwhile: the refusal starts again
  connection_.on_message(refused);
  EXPECT_TRUE(connection_.refusal().empty());
  clock_.advance(milliseconds(2001));
  connection_.on_message(refused);
  EXPECT_EQ(connection_.refusal(), "id in use");
}

TEST_F(ConnectionTest, HeartbeatsComeAtLeastAsOftenAsATrialAsks) {
  connection_.shorten_heartbeat(milliseconds(20));
  connection_.open();
  clock_.advance(milliseconds(20));
  EXPECT_TRUE(connection_.due().heartbeat);
}

TEST(ConnectionNames, DefaultExecutorIdIsHostAndPid) {
  EXPECT_EQ(default_executor_id(), host_name() + "-" + std::to_string(::getpid()));
}

}  // namespace
}  // namespace tuner
