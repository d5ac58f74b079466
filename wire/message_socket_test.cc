#include "wire/message_socket.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "executor/unique_fd.h"
#include "trials/error.h"

namespace tuner {
namespace {

using std::chrono::milliseconds;

// A directory for ipc:// socket files, removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir()
      : path_(std::filesystem::temp_directory_path() /
              ("tuner-transport-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string endpoint(const std::string& name) const { return "ipc://" + (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Waits up to 2 s for a message on `socket`.
std::optional<std::vector<std::string>> receive_within(ZmqSocket& socket) {
  for (int i = 0; i < 40; ++i) {
    ZmqPollEntry entry{.socket = &socket};
    zmq_wait({&entry, 1}, milliseconds(50));
    if (auto frames = socket.receive()) return frames;
  }
  return std::nullopt;
}

TEST(MessageSocketTest, RouterAndDealerExchangeMessagesOverIpc) {
  TempDir dir;
  ZmqContext context;
  RouterEndpoint router(context, dir.endpoint("exchange.sock"));
  DealerEndpoint dealer(context, router.endpoint(), {.routing_id = "executor-1"});

  HelloMessage hello{
      .executor_id = "e1", .hostname = "h", .pid = 42, .resources = {.cpu_slots = 2}};
  ASSERT_TRUE(dealer.send(hello));
  std::optional<RoutedFrames> got;
  for (int i = 0; i < 40 && !got; ++i) {
    ZmqPollEntry entry{.socket = &router.socket()};
    zmq_wait({&entry, 1}, milliseconds(50));
    got = router.receive();
  }
  ASSERT_TRUE(got);
  EXPECT_EQ(got->peer, "executor-1");
  EXPECT_EQ(std::get<HelloMessage>(decode(got->frames)), hello);

  AckMessage ack{.lease_id = 7, .accepted = false, .reason = "stale"};
  ASSERT_TRUE(router.send(got->peer, ack));
  auto reply = receive_within(dealer.socket());
  ASSERT_TRUE(reply);
  EXPECT_EQ(std::get<AckMessage>(decode(*reply)), ack);
}

TEST(MessageSocketTest, TcpBindChoosesAPort) {
  ZmqContext context;
  RouterEndpoint router(context, "tcp://127.0.0.1:*");
  EXPECT_EQ(router.endpoint().rfind("tcp://127.0.0.1:", 0), 0u) << router.endpoint();
  EXPECT_NE(router.endpoint(), "tcp://127.0.0.1:*");
}

TEST(MessageSocketTest, RouterRefusesUnknownPeer) {
  TempDir dir;
  ZmqContext context;
  RouterEndpoint router(context, dir.endpoint("unknown.sock"));
  EXPECT_FALSE(router.send("nobody", ByeMessage{}));
}

TEST(MessageSocketTest, BadEndpointIsAnErrorNamingIt) {
  ZmqContext context;
  try {
    RouterEndpoint router(context, "carrier-pigeon://roof");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("carrier-pigeon://roof"), std::string::npos) << e.what();
  }
}

TEST(MessageSocketTest, WaitWatchesFileDescriptors) {
  TempDir dir;
  ZmqContext context;
  RouterEndpoint router(context, dir.endpoint("fd.sock"));
  UniqueFd fd(::eventfd(0, EFD_NONBLOCK));
  ASSERT_TRUE(fd.valid());
  ZmqPollEntry entries[2] = {{.socket = &router.socket()}, {.fd = fd.get()}};
  EXPECT_EQ(zmq_wait(entries, milliseconds(0)), 0);
  uint64_t one = 1;
  ASSERT_EQ(::write(fd.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
  EXPECT_EQ(zmq_wait(entries, milliseconds(1000)), 1);
  EXPECT_FALSE(entries[0].readable);
  EXPECT_TRUE(entries[1].readable);
}

TEST(MessageSocketTest, PeerNameShowsBinaryIdsInHex) {
  EXPECT_EQ(peer_name("exec-1"), "exec-1");
  EXPECT_EQ(peer_name(std::string("\0\x8b", 2)), "0x008b");
}

}  // namespace
}  // namespace tuner
