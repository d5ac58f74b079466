#include "serving/http_server.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "trials/error.h"

namespace tuner::serving {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct HttpServer::Impl {
  Impl(const HttpServerOptions& o, HttpHandler h)
      : options(o),
        handler(std::move(h)),
        max_buffered(std::max(o.max_body_bytes, o.max_buffered_bytes > 0 ? o.max_buffered_bytes
                                                                         : 4 * o.max_body_bytes)),
        acceptor(asio::make_strand(ioc)),
        retry(ioc) {}

  void accept();

  // Takes `bytes` of the body budget; false, taking nothing, when they are not left.
  bool reserve(uint64_t bytes) {
    uint64_t used = buffered.load();
    do {
      if (bytes > max_buffered - used) return false;
    } while (!buffered.compare_exchange_weak(used, used + bytes));
    return true;
  }
  void release(uint64_t bytes) { buffered.fetch_sub(bytes); }

  const HttpServerOptions options;
  const HttpHandler handler;
  const uint64_t max_buffered;        // the body budget, bytes
  std::atomic<uint64_t> buffered{0};  // of it, reserved by requests not yet answered
  asio::io_context ioc;
  // Keeps the threads running while no operation is pending: between stop()'s closing of the
  // acceptor and the last answers, the only work may be a batch still to run.
  asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
  tcp::acceptor acceptor;  // on a strand of its own: accepts, retries and the close of stop()
  asio::steady_timer retry;
  std::atomic<int64_t> in_flight{0};
  std::vector<std::thread> threads;
  std::mutex stop_mutex;
  bool stopped = false;
};

namespace {

// One connection: read a request, hand it to the handler, write its reply when it comes, read
// the next one (keep-alive). Every operation runs on the connection's strand.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(HttpServer::Impl& server, tcp::socket socket)
      : server_(server), stream_(std::move(socket)) {}
  ~Session() { server_.release(reserved_); }

  void read() {
    parser_.emplace();
    parser_->body_limit(server_.options.max_body_bytes);
    stream_.expires_after(server_.options.idle_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::on_header, shared_from_this()));
  }

 private:
  // The header is in: take the body's share of the budget, answer `Expect: 100-continue`, then
  // read the body.
  void on_header(beast::error_code ec, size_t bytes) {
    if (ec) return on_read(ec, bytes);
    http::request<http::string_body>& req = parser_->get();
    version_ = req.version();
    const uint64_t body = parser_->content_length() ? *parser_->content_length()
                          : parser_->chunked()      ? server_.options.max_body_bytes
                                                    : 0;
    if (body > 0) {
      if (!server_.reserve(body)) {
        return refuse(503,
                      "the server holds as many request bodies as it may (" +
                          std::to_string(server_.max_buffered) + " bytes): retry shortly",
                      {{"Retry-After", "1"}});
      }
      reserved_ = body;
    }
    if (body > 0 && beast::iequals(req[http::field::expect], "100-continue")) {
      continue_ = http::response<http::empty_body>(http::status::continue_, version_);
      return http::async_write(
          stream_, continue_, beast::bind_front_handler(&Session::on_continue, shared_from_this()));
    }
    read_body();
  }

  void on_continue(beast::error_code ec, size_t) {
    if (ec) return close();
    read_body();
  }

  void read_body() {
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, size_t) {
    if (ec == http::error::body_limit) {
      return refuse(413, "the body is larger than " +
                             std::to_string(server_.options.max_body_bytes) + " bytes");
    }
    if (ec && ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message) {
      return refuse(400, std::string("not an HTTP request: ") + ec.message());
    }
    if (ec) return close();  // the client left, or the connection timed out while idle
    http::request<http::string_body>& req = parser_->get();
    keep_alive_ = req.keep_alive();
    version_ = req.version();
    HttpRequestIn in;
    in.method = std::string(req.method_string());
    in.target = std::string(req.target());
    in.content_type = std::string(req[http::field::content_type]);
    in.body = std::move(req.body());
    server_.in_flight.fetch_add(1);
    stream_.expires_never();  // the answer may wait for a batch; the client decides how long
    auto self = shared_from_this();
    Respond respond = [self](HttpReply reply) {
      // Inline when already on the connection's strand (a forward pass run by this thread).
      asio::dispatch(self->stream_.get_executor(),
                     [self, r = std::move(reply)]() mutable { self->write(std::move(r)); });
    };
    try {
      server_.handler(std::move(in), respond);
    } catch (const std::exception& e) {
      HttpReply reply;
      reply.status = 500;
      reply.content_type = "text/plain";
      reply.body = std::string("internal error: ") + e.what();
      respond(std::move(reply));
    }
  }

  // Answers a request that could not be read, then closes.
  void refuse(int status, const std::string& message,
              std::vector<std::pair<std::string, std::string>> headers = {}) {
    keep_alive_ = false;
    server_.in_flight.fetch_add(1);
    HttpReply reply;
    reply.status = status;
    reply.content_type = "text/plain";
    reply.body = message + "\n";
    reply.headers = std::move(headers);
    write(std::move(reply));
  }

  void write(HttpReply reply) {
    response_ = {};
    response_.version(version_);
    response_.result(static_cast<unsigned>(reply.status));
    response_.set(http::field::server, "tuner");
    response_.set(http::field::content_type, reply.content_type);
    for (const auto& [name, value] : reply.headers) response_.set(name, value);
    response_.keep_alive(keep_alive_);
    response_.body() = std::move(reply.body);
    response_.prepare_payload();
    stream_.expires_after(server_.options.idle_timeout);
    http::async_write(stream_, response_,
                      beast::bind_front_handler(&Session::on_write, shared_from_this()));
  }

  void on_write(beast::error_code ec, size_t) {
    server_.in_flight.fetch_sub(1);
    server_.release(reserved_);  // the request is answered
    reserved_ = 0;
    if (ec || !keep_alive_) return close();
    read();
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  HttpServer::Impl& server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  http::response<http::empty_body> continue_;  // 100 Continue
  uint64_t reserved_ = 0;                      // bytes of the body budget this request holds
  bool keep_alive_ = true;
  unsigned version_ = 11;
};

}  // namespace

void HttpServer::Impl::accept() {
  acceptor.async_accept(asio::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (!acceptor.is_open()) return;  // stopped
    if (ec) {
      // Out of file descriptors, say: try again shortly rather than spin.
      retry.expires_after(std::chrono::milliseconds(50));
      retry.async_wait([this](beast::error_code) {
        asio::post(acceptor.get_executor(), [this] {
          if (acceptor.is_open()) accept();
        });
      });
      return;
    }
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);  // answers are small: send them at once
    std::make_shared<Session>(*this, std::move(socket))->read();
    accept();
  });
}

HttpServer::HttpServer(const HttpServerOptions& options, HttpHandler handler)
    : impl_(std::make_unique<Impl>(options, std::move(handler))) {
  const std::string where = options.host + ":" + std::to_string(options.port);
  beast::error_code ec;
  const asio::ip::address address = asio::ip::make_address(options.host, ec);
  if (ec) {
    throw Error(ErrorCode::kInvalidArgument,
                "--host " + options.host + ": not an IP address (" + ec.message() + ")");
  }
  const tcp::endpoint endpoint(address, options.port);
  tcp::acceptor& acceptor = impl_->acceptor;
  auto check = [&](const char* what) {
    if (ec)
      throw Error(ErrorCode::kUnavailable,
                  "cannot " + std::string(what) + " " + where + ": " + ec.message());
  };
  acceptor.open(endpoint.protocol(), ec);
  check("open a socket for");
  acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  check("set up");
  acceptor.bind(endpoint, ec);
  check("bind to");
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  check("listen on");
  asio::post(acceptor.get_executor(), [impl = impl_.get()] { impl->accept(); });
  const int threads = std::max(1, options.threads);
  for (int i = 0; i < threads; ++i)
    impl_->threads.emplace_back([impl = impl_.get()] { impl->ioc.run(); });
}

HttpServer::~HttpServer() { stop(); }

uint16_t HttpServer::port() const {
  beast::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

int64_t HttpServer::in_flight() const { return impl_->in_flight.load(); }

void HttpServer::stop(std::chrono::milliseconds grace) {
  std::lock_guard<std::mutex> lock(impl_->stop_mutex);
  if (impl_->stopped) return;
  impl_->stopped = true;
  std::promise<void> closed;
  asio::post(impl_->acceptor.get_executor(), [this, &closed] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
    impl_->retry.cancel();
    closed.set_value();
  });
  closed.get_future().wait();
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (impl_->in_flight.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  impl_->ioc.stop();
  for (std::thread& t : impl_->threads) t.join();
}

}  // namespace tuner::serving
