// HttpServer: HTTP/1.1 on a TCP port, with kept-alive connections, for the model server. A
// request is handed to the handler with a Respond callback that may be called later, from any
// thread: the handler of POST /invocations queues the request for the micro-batcher and answers
// when its batch has run, so a few I/O threads serve many waiting clients.
//
// Boost.Beast and Asio stay in http_server.cc.
//
// A request with `Expect: 100-continue` is answered 100 Continue once its header is taken (or
// refused then, 413 or 503, before its body is sent).
//
// Thread safety: the handler runs on the I/O threads, concurrently; Respond may be called from
// any thread, once. stop() from any thread but the I/O threads.
#ifndef TUNER_SERVING_HTTP_SERVER_H_
#define TUNER_SERVING_HTTP_SERVER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tuner::serving {

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // an address to bind: 127.0.0.1, 0.0.0.0, ::1, ...
  uint16_t port = 0;               // 0: a free port, which port() tells
  int threads = 1;                 // I/O threads, >= 1
  // The largest request body taken; a larger one is answered 413 (before it is sent, when its
  // Content-Length says so). Default 64 MiB.
  uint64_t max_body_bytes = uint64_t{64} << 20;
  // The most body bytes buffered across all connections, counted from each request's
  // Content-Length (a chunked body counts as max_body_bytes) from its header until its answer is
  // written or its connection closes. A request whose body would pass it is answered 503 with
  // Retry-After and its connection closed. 0: four times max_body_bytes; less than
  // max_body_bytes counts as max_body_bytes.
  uint64_t max_buffered_bytes = 0;
  // A connection idle this long (or a request that takes longer to arrive) is closed.
  std::chrono::seconds idle_timeout{60};
};

struct HttpRequestIn {
  std::string method;  // "GET", "POST", ...
  std::string target;  // the path and query: "/invocations"
  std::string content_type;
  std::string body;
};

struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

// Answers the request it was given; call it exactly once, from any thread.
using Respond = std::function<void(HttpReply)>;
using HttpHandler = std::function<void(HttpRequestIn request, Respond respond)>;

class HttpServer {
 public:
  // Binds and listens, then serves on options.threads threads. Throws Error(kUnavailable) naming
  // host:port when it cannot bind (in use, not an address of this host), kInvalidArgument for an
  // address that does not parse.
  HttpServer(const HttpServerOptions& options, HttpHandler handler);
  // stop(), with no grace.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The port it listens on.
  uint16_t port() const;
  // Requests read and not yet answered.
  int64_t in_flight() const;

  // Stops accepting connections, waits up to `grace` for the requests in flight to be answered
  // and written, then closes every connection and joins the threads. Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(0));

  struct Impl;  // http_server.cc's own

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tuner::serving

#endif  // TUNER_SERVING_HTTP_SERVER_H_
