// CURVE keys, key files and the authenticator, over real tcp:// sockets on loopback.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "trials/error.h"
#include "wire/curve_authenticator.h"
#include "wire/curve_keys.h"
#include "wire/message_socket.h"

namespace tuner {
namespace {

using std::chrono::milliseconds;

class CurveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!curve_available()) GTEST_SKIP() << "this ZeroMQ was built without CURVE";
    dir_ = std::filesystem::temp_directory_path() /
           ("tuner-curve-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
  }

  std::filesystem::path dir_;
};

TEST_F(CurveTest, KeyFilesRoundTripAndTheSecretOneIsPrivate) {
  const CurveKeyPair keys = generate_curve_key_pair();
  write_curve_key_files(path("executor"), keys, /*overwrite=*/false);

  const CurveKeyPair read = read_curve_secret_key_file(path("executor.key"));
  EXPECT_EQ(read.public_key, keys.public_key);
  EXPECT_EQ(read.secret_key, keys.secret_key);
  EXPECT_EQ(read_curve_public_key_file(path("executor.pub")), keys.public_key);
  EXPECT_EQ(read_curve_public_key_file(path("executor.key")), keys.public_key);
  struct stat st {};
  ASSERT_EQ(::stat(path("executor.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  try {
    write_curve_key_files(path("executor"), generate_curve_key_pair(), /*overwrite=*/false);
    FAIL() << "overwrote a key pair";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kAlreadyExists);
    EXPECT_NE(std::string(e.what()).find("--force"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_curve_public_key_file(path("executor.pub")), keys.public_key);
}

TEST_F(CurveTest, MalformedKeysAreErrorsNamingTheFileAndLine) {
  const CurveKeyPair keys = generate_curve_key_pair();
  const auto message_of = [](const auto& call) {
    try {
      call();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  write("short.pub", "# comment\npublic-key = \"abc\"\n");
  EXPECT_NE(message_of([&] {
              read_curve_public_key_file(path("short.pub"));
            }).find("short.pub:2: a CURVE key is 40 characters of Z85, this one has 3"),
            std::string::npos);
  write("bad.pub", std::string(40, '~') + "\n");  // '~' is not in Z85's alphabet
  EXPECT_NE(message_of([&] {
              read_curve_public_key_file(path("bad.pub"));
            }).find("bad.pub:1: not a Z85-encoded CURVE key"),
            std::string::npos);
  write("other.key", "public-key = \"" + generate_curve_key_pair().public_key +
                         "\"\nsecret-key = \"" + keys.secret_key + "\"\n");
  EXPECT_NE(message_of([&] {
              read_curve_secret_key_file(path("other.key"));
            }).find("the public-key does not belong to the secret-key"),
            std::string::npos);
  write("only.pub", "public-key = \"" + keys.public_key + "\"\n");
  EXPECT_NE(
      message_of([&] { read_curve_secret_key_file(path("only.pub")); }).find("no secret-key line"),
      std::string::npos);
  write("typo.pub", "publik-key = \"" + keys.public_key + "\"\n");
  // Z85 has '=' in its alphabet: a bare key with one is still a key.
  write("equals.pub", "Z?V-TdGblE0<v&UZ>o-}E=pPBYVb2jK$Zc(Z0PXz\n");
  EXPECT_EQ(read_curve_public_key_file(path("equals.pub")),
            "Z?V-TdGblE0<v&UZ>o-}E=pPBYVb2jK$Zc(Z0PXz");
  EXPECT_NE(message_of([&] {
              read_curve_public_key_file(path("typo.pub"));
            }).find("typo.pub:1: expected public-key"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              read_curve_public_key_file(path("missing.pub"));
            }).find("cannot read the key file"),
            std::string::npos);
}

TEST_F(CurveTest, AuthorizedKeysComeFromAFileOrAFolderOfPubFiles) {
  const CurveKeyPair a = generate_curve_key_pair(), b = generate_curve_key_pair();
  std::filesystem::create_directories(path("keys"));
  write_curve_key_files(path("keys/a"), a, false);
  std::filesystem::remove(path("keys/a.key"));
  write("keys/b.pub", b.public_key + "\n");
  write("keys/notes.txt", "not a key");
  EXPECT_EQ(read_curve_authorized_keys(path("keys")),
            (std::vector<std::string>{a.public_key, b.public_key}));

  write("list", "# executors\n" + a.public_key + "\npublic-key = \"" + b.public_key + "\"\n");
  EXPECT_EQ(read_curve_authorized_keys(path("list")),
            (std::vector<std::string>{a.public_key, b.public_key}));

  write_curve_key_files(path("secret"), a, false);
  EXPECT_THROW(read_curve_authorized_keys(path("secret.key")), Error);
  write("empty", "# nobody\n");
  EXPECT_THROW(read_curve_authorized_keys(path("empty")), Error);
}

TEST(EndpointTest, OnlyLoopbackAndLocalSocketsAreLocal) {
  EXPECT_TRUE(endpoint_is_local("ipc:///tmp/x.sock"));
  EXPECT_TRUE(endpoint_is_local("tcp://127.0.0.1:5555"));
  EXPECT_TRUE(endpoint_is_local("tcp://127.0.0.1:*"));
  EXPECT_TRUE(endpoint_is_local("tcp://localhost:5555"));
  EXPECT_TRUE(endpoint_is_local("tcp://[::1]:5555"));
  EXPECT_FALSE(endpoint_is_local("tcp://*:5555"));
  EXPECT_FALSE(endpoint_is_local("tcp://0.0.0.0:5555"));
  EXPECT_FALSE(endpoint_is_local("tcp://10.0.0.5:5555"));
  EXPECT_FALSE(endpoint_is_local("tcp://eth0:5555"));
}

// A CURVE server on loopback TCP with an authenticator, the way the coordinator runs it.
class CurveServer {
 public:
  CurveServer(const CurveKeyPair& keys, const std::vector<std::string>& executor_keys)
      : authenticator_(context_, executor_keys,
                       [this](const std::string& line) { log_ += line + "\n"; }),
        router_(context_, "tcp://127.0.0.1:*",
                {.curve_public_key = keys.public_key, .curve_secret_key = keys.secret_key}) {}

  // Serves the authenticator for up to `limit`, returning the first message that arrives.
  std::optional<RoutedFrames> receive_within(milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      ZmqPollEntry entries[2] = {{.socket = &router_.socket()},
                                 {.socket = &authenticator_.socket()}};
      zmq_wait(entries, milliseconds(20));
      authenticator_.answer_requests();
      if (auto got = router_.receive()) return got;
    }
    return std::nullopt;
  }

  const std::string& endpoint() const { return router_.endpoint(); }
  const CurveAuthenticator& authenticator() const { return authenticator_; }
  const std::string& log() const { return log_; }

 private:
  ZmqContext context_;
  std::string log_;
  CurveAuthenticator authenticator_;
  RouterEndpoint router_;
};

TEST_F(CurveTest, OnlyAuthorizedExecutorsGetThrough) {
  const CurveKeyPair server_keys = generate_curve_key_pair();
  const CurveKeyPair allowed = generate_curve_key_pair(), stranger = generate_curve_key_pair();
  CurveServer server(server_keys, {allowed.public_key});
  const HelloMessage hello{.executor_id = "e", .hostname = "h", .pid = 1};

  ZmqContext client_context;
  DealerEndpoint good(client_context, server.endpoint(),
                      {.routing_id = "good",
                       .curve_public_key = allowed.public_key,
                       .curve_secret_key = allowed.secret_key,
                       .curve_server_key = server_keys.public_key});
  ASSERT_TRUE(good.send(hello));
  std::optional<RoutedFrames> got = server.receive_within(milliseconds(3000));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->peer, "good");
  EXPECT_EQ(decode(got->frames).index(), Message(hello).index());
  EXPECT_EQ(server.authenticator().accepted(), 1);

  DealerEndpoint unknown(client_context, server.endpoint(),
                         {.routing_id = "unknown",
                          .curve_public_key = stranger.public_key,
                          .curve_secret_key = stranger.secret_key,
                          .curve_server_key = server_keys.public_key});
  DealerEndpoint plain(client_context, server.endpoint(), {.routing_id = "plain"});
  unknown.send(hello);
  plain.send(hello);
  EXPECT_FALSE(server.receive_within(milliseconds(600)).has_value());
  EXPECT_GE(server.authenticator().refused(), 1);
  EXPECT_NE(server.log().find("key " + stranger.public_key + " is not authorized"),
            std::string::npos)
      << server.log();

  // A client that trusts another server key never reaches this one.
  const CurveKeyPair impostor = generate_curve_key_pair();
  DealerEndpoint misled(client_context, server.endpoint(),
                        {.routing_id = "misled",
                         .curve_public_key = allowed.public_key,
                         .curve_secret_key = allowed.secret_key,
                         .curve_server_key = impostor.public_key});
  misled.send(hello);
  EXPECT_FALSE(server.receive_within(milliseconds(600)).has_value());
}

}  // namespace
}  // namespace tuner
