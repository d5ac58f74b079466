#include "coordinator/outbox.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "trials/error.h"
#include "wire/message_socket.h"

namespace tuner {
namespace {

TEST(OutboxTest, LogLinesArePrefixedAndGoToTheSink) {
  std::vector<std::string> lines;
  auto log = coordinator_log([&](const std::string& line) { lines.push_back(line); });
  log("listening on ipc://x");
  EXPECT_EQ(lines, std::vector<std::string>{"coordinator: listening on ipc://x"});
}

TEST(OutboxTest, TheRouterOutboxSendsToKnownPeersAndLogsWhatCannotBeEncoded) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tuner-outbox-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    CoordinatorServiceOptions options;
    options.endpoint = "ipc://" + (dir / "outbox.sock").string();
    std::vector<std::string> lines;
    RouterOutbox outbox(options,
                        coordinator_log([&](const std::string& l) { lines.push_back(l); }));
    ZmqContext context;
    DealerEndpoint peer(context, outbox.router().endpoint(), {.routing_id = "e1#1"});
    ASSERT_TRUE(peer.send(ReadyMessage{.free_slots = 1}));  // the ROUTER learns the peer
    std::optional<RoutedFrames> in;
    for (int i = 0; i < 200 && !in; ++i) {
      in = outbox.router().receive();
      if (!in) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE(in);

    EXPECT_TRUE(outbox.send("e1#1", HeartbeatMessage{.lease_ids = {7}}));
    std::optional<std::vector<std::string>> frames;
    for (int i = 0; i < 200 && !frames; ++i) {
      frames = peer.receive();
      if (!frames) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE(frames);
    EXPECT_EQ(std::get<HeartbeatMessage>(decode(*frames)).lease_ids, std::vector<uint64_t>{7});

    EXPECT_FALSE(outbox.send("nobody", HeartbeatMessage{}));
    // Too large to encode: not sent, and logged, not thrown.
    EXPECT_FALSE(outbox.send("e1#1", ErrorMessage{.message = std::string(kMaxMessageBytes, 'x')}));
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines.back().rfind("coordinator: cannot encode ERROR for ", 0), 0u) << lines.back();
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

TEST(OutboxTest, AnEndpointOtherHostsCanReachNeedsCurveOrAnExplicitInsecure) {
  CoordinatorServiceOptions options;
  options.endpoint = "tcp://0.0.0.0:*";
  try {
    RouterOutbox outbox(options, coordinator_log([](const std::string&) {}));
    FAIL() << "bound " << options.endpoint << " without CURVE";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("allow plain TCP explicitly (--insecure)"),
              std::string::npos);
  }
  options.security.curve_keys = CurveKeyPair{};  // malformed keys
  EXPECT_THROW(RouterOutbox(options, coordinator_log([](const std::string&) {})), Error);
}

}  // namespace
}  // namespace tuner
