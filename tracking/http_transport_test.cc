// The Beast transport against a real HTTP server on a loopback port (Beast's own, in this test).
#include "tracking/http_transport.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <thread>

#include "trials/error.h"

namespace tuner::tracking {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

// Serves one connection at a time: echoes method, target and body as "METHOD TARGET BODY", with
// the request's Authorization header in X-Auth. `close_after` answers per connection, then it
// closes it (0: keep it open); `silent`: reads requests and never answers; `lose`: the request
// of that number (1: the first it reads) is read and its connection closed without an answer.
class LoopbackServer {
 public:
  explicit LoopbackServer(int close_after = 0, bool silent = false, int lose = 0)
      : acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
        close_after_(close_after),
        silent_(silent),
        lose_(lose) {
    thread_ = std::thread([this] { serve(); });
  }
  ~LoopbackServer() {
    stop_ = true;
    beast::error_code ignored;
    // Wake the accept with a connection of our own.
    tcp::socket poke(ioc_);
    poke.connect(acceptor_.local_endpoint(), ignored);
    thread_.join();
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }
  int connections() const { return connections_; }
  int requests() const { return requests_; }

 private:
  void serve() {
    while (!stop_) {
      tcp::socket socket(ioc_);
      beast::error_code ec;
      acceptor_.accept(socket, ec);
      if (ec || stop_) return;
      ++connections_;
      beast::flat_buffer buffer;
      for (int answered = 0;;) {
        http::request<http::string_body> req;
        http::read(socket, buffer, req, ec);
        if (ec) break;
        if (++requests_ == lose_) break;  // read, and the answer lost with the connection
        if (silent_) {
          while (!stop_) std::this_thread::sleep_for(10ms);
          return;
        }
        http::response<http::string_body> res{http::status::ok, 11};
        res.body() =
            std::string(req.method_string()) + " " + std::string(req.target()) + " " + req.body();
        res.set("X-Auth", req[http::field::authorization]);
        res.keep_alive(true);
        res.prepare_payload();
        http::write(socket, res, ec);
        if (ec) break;
        if (close_after_ > 0 && ++answered == close_after_) break;  // drop it while it is idle
      }
      socket.close(ec);
    }
  }

  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  const int close_after_;
  const bool silent_;
  const int lose_;
  std::atomic<bool> stop_ = false;
  std::atomic<int> requests_ = 0;
  std::atomic<int> connections_ = 0;
  std::thread thread_;
};

TEST(HttpTransportTest, KeepsOneConnectionForManyExchanges) {
  LoopbackServer server;
  auto transport =
      make_http_transport(server.url() + "/base/", {.headers = {{"Authorization", "Bearer t"}}});
  for (int i = 0; i < 5; ++i) {
    const HttpResponse r =
        transport->send({.method = "POST", .target = "/x?y=1", .body = "b" + std::to_string(i)});
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "POST /base/x?y=1 b" + std::to_string(i));
  }
  EXPECT_EQ(server.connections(), 1);
}

TEST(HttpTransportTest, AConnectionTheServerDroppedIsReplaced) {
  LoopbackServer server(/*close_after=*/1);
  auto transport = make_http_transport(server.url());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(transport->send({.method = "GET", .target = "/a"}).body, "GET /a ");
    std::this_thread::sleep_for(20ms);  // the server closes the idle connection meanwhile
  }
  EXPECT_EQ(server.connections(), 3);
}

// Regression: a create whose answer was lost with its kept-alive connection was sent again at
// once on a new one, and the server made a second run.
TEST(HttpTransportTest, ARequestThatMustNotRepeatIsSentOnceWhenItsAnswerIsLost) {
  LoopbackServer server(/*close_after=*/0, /*silent=*/false, /*lose=*/2);
  auto transport = make_http_transport(server.url());
  EXPECT_EQ(transport->send({.method = "GET", .target = "/a"}).status, 200);
  try {
    transport->send({.method = "POST", .target = "/create", .body = "x", .repeatable = false});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
  }
  EXPECT_EQ(server.requests(), 2);
  // A repeatable request whose answer is lost on a reused connection is sent again.
  LoopbackServer again(/*close_after=*/0, /*silent=*/false, /*lose=*/2);
  auto other = make_http_transport(again.url());
  EXPECT_EQ(other->send({.method = "GET", .target = "/a"}).status, 200);
  EXPECT_EQ(other->send({.method = "GET", .target = "/b"}).body, "GET /b ");
  EXPECT_EQ(again.requests(), 3);
}

TEST(HttpTransportTest, NoServerIsUnavailable) {
  std::string url;
  {
    LoopbackServer gone;
    url = gone.url();
  }
  auto transport = make_http_transport(url);
  try {
    transport->send({.method = "GET", .target = "/api/2.0/mlflow/runs/get"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_NE(std::string(e.what()).find(url + ": GET /api/2.0/mlflow/runs/get: cannot connect"),
              std::string::npos)
        << e.what();
  }
}

TEST(HttpTransportTest, AServerThatDoesNotAnswerTimesOut) {
  LoopbackServer server(0, /*silent=*/true);
  auto transport = make_http_transport(server.url(), {.request_timeout = 200ms});
  const auto start = std::chrono::steady_clock::now();
  try {
    transport->send({.method = "POST", .target = "/slow", .body = "{}"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_NE(std::string(e.what()).find("no answer within 200 ms"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

}  // namespace
}  // namespace tuner::tracking
