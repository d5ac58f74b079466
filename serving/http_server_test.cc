// The HTTP layer on a loopback port, spoken to over raw sockets: what a client sees before and
// while it sends a body.
#include "serving/http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <thread>

namespace tuner::serving {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// A server answering 200 with the body's size.
std::unique_ptr<HttpServer> echo_server(HttpServerOptions options) {
  options.port = 0;
  return std::make_unique<HttpServer>(options, [](HttpRequestIn request, Respond respond) {
    HttpReply reply;
    reply.content_type = "text/plain";
    reply.body = std::to_string(request.body.size());
    respond(std::move(reply));
  });
}

// One client connection.
class Client {
 public:
  explicit Client(uint16_t port) : socket_(ioc_) {
    socket_.connect({asio::ip::make_address("127.0.0.1"), port});
  }
  void send(const std::string& text) { asio::write(socket_, asio::buffer(text)); }
  // The next response (a 100 Continue is one).
  http::response<http::string_body> receive() {
    http::response<http::string_body> response;
    http::read(socket_, buffer_, response);
    return response;
  }
  // Whether the server closed the connection (reads end of stream).
  bool closed() {
    char byte;
    beast::error_code ec;
    socket_.read_some(asio::buffer(&byte, 1), ec);
    return ec == asio::error::eof || ec == asio::error::connection_reset;
  }

 private:
  asio::io_context ioc_;
  asio::ip::tcp::socket socket_;
  beast::flat_buffer buffer_;
};

std::string post_header(size_t content_length, bool expect_continue = false) {
  return "POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: " +
         std::to_string(content_length) + "\r\n" +
         (expect_continue ? "Expect: 100-continue\r\n" : "") + "\r\n";
}

TEST(HttpServerTest, ExpectContinueIsAnsweredBeforeTheBodyIsSent) {
  auto server = echo_server({});
  Client client(server->port());
  client.send(post_header(4, /*expect_continue=*/true));
  const auto interim = client.receive();  // before any body byte is sent
  EXPECT_EQ(interim.result(), http::status::continue_);
  client.send("abcd");
  const auto answer = client.receive();
  EXPECT_EQ(answer.result(), http::status::ok);
  EXPECT_EQ(answer.body(), "4");
}

TEST(HttpServerTest, ExpectContinuePastTheBodyLimitIsRefused413AtOnce) {
  HttpServerOptions options;
  options.max_body_bytes = 100;
  auto server = echo_server(options);
  Client client(server->port());
  client.send(post_header(101, /*expect_continue=*/true));
  const auto answer = client.receive();
  EXPECT_EQ(answer.result(), http::status::payload_too_large);
  EXPECT_THAT(answer.body(), HasSubstr("larger than 100 bytes"));
}

TEST(HttpServerTest, BodiesPastTheBufferBudgetAre503WithRetryAfterUntilOneCompletes) {
  HttpServerOptions options;
  options.max_body_bytes = 1000;
  options.max_buffered_bytes = 1500;  // one 1000-byte body at a time, and 500 bytes beside it
  auto server = echo_server(options);
  Client first(server->port());
  // Its header read and its 1000 bytes reserved: the server says so with 100 Continue.
  first.send(post_header(1000, /*expect_continue=*/true));
  ASSERT_EQ(first.receive().result(), http::status::continue_);
  first.send(std::string(10, 'x'));  // unfinished: holds 1000 bytes

  Client second(server->port());
  second.send(post_header(1000) + std::string(1000, 'y'));
  const auto refused = second.receive();
  EXPECT_EQ(refused.result(), http::status::service_unavailable);
  EXPECT_EQ(refused[http::field::retry_after], "1");
  EXPECT_THAT(refused.body(), HasSubstr("1500 bytes"));
  EXPECT_TRUE(second.closed());

  Client small(server->port());  // what is left of the budget is still taken
  small.send(post_header(500) + std::string(500, 'z'));
  EXPECT_EQ(small.receive().body(), "500");

  first.send(std::string(990, 'x'));
  EXPECT_EQ(first.receive().body(), "1000");  // answered: its 1000 bytes are given back
  Client third(server->port());
  third.send(post_header(1000) + std::string(1000, 'w'));
  EXPECT_EQ(third.receive().body(), "1000");
}

TEST(HttpServerTest, AConnectionClosedMidBodyGivesItsBudgetBack) {
  HttpServerOptions options;
  options.max_body_bytes = 1000;
  options.max_buffered_bytes = 1000;
  auto server = echo_server(options);
  {
    Client gone(server->port());
    gone.send(post_header(1000, /*expect_continue=*/true));
    ASSERT_EQ(gone.receive().result(), http::status::continue_);  // reserved
    gone.send("partial");
  }  // closed before its body was complete
  for (int attempt = 0;; ++attempt) {
    Client next(server->port());
    next.send(post_header(1000) + std::string(1000, 'a'));
    const auto answer = next.receive();
    if (answer.result() == http::status::ok) break;
    ASSERT_LT(attempt, 100) << "the budget was not given back";
    std::this_thread::sleep_for(20ms);  // the server has yet to see the close
  }
}

}  // namespace
}  // namespace tuner::serving
