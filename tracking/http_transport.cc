#include "tracking/http_transport.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <mutex>
#include <optional>

#include "trials/error.h"

namespace tuner::tracking {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::string HttpUrl::authority() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + port;
}

HttpUrl parse_http_url(const std::string& url) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument,
                 "'" + url + "' is not a tracking server's URL: " + why +
                     " (expected http://HOST[:PORT][/PATH], e.g. http://127.0.0.1:5000)");
  };
  if (url.rfind("https://", 0) == 0) {
    throw bad(
        "https is not supported: this client speaks plain HTTP; reach a TLS server "
        "through a local proxy, or run it with plain HTTP on a trusted network");
  }
  constexpr std::string_view kScheme = "http://";
  if (url.rfind(kScheme, 0) != 0) throw bad("it does not start with http://");
  std::string rest = url.substr(kScheme.size());
  HttpUrl out;
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  out.base = slash == std::string::npos ? "" : rest.substr(slash);
  while (!out.base.empty() && out.base.back() == '/') out.base.pop_back();
  if (out.base.find_first_of("?#") != std::string::npos) throw bad("it has a query or fragment");
  if (authority.find('@') != std::string::npos) {
    throw bad(
        "credentials in the URL are not read: set MLFLOW_TRACKING_USERNAME and "
        "MLFLOW_TRACKING_PASSWORD, or MLFLOW_TRACKING_TOKEN");
  }
  std::string port_text;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) throw bad("an IPv6 address without its ']'");
    out.host = authority.substr(1, close - 1);
    const std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw bad("text after the IPv6 address");
      port_text = after.substr(1);
    }
  } else {
    const size_t colon = authority.rfind(':');
    out.host = authority.substr(0, colon);
    if (colon != std::string::npos) port_text = authority.substr(colon + 1);
  }
  if (out.host.empty()) throw bad("no host");
  if (port_text.empty()) port_text = "80";
  if (port_text.find_first_not_of("0123456789") != std::string::npos || port_text.size() > 5 ||
      std::stoi(port_text) == 0 || std::stoi(port_text) > 65535) {
    throw bad("port '" + port_text + "' is not a number in 1..65535");
  }
  out.port = port_text;
  out.text = url;
  while (!out.text.empty() && out.text.back() == '/') out.text.pop_back();
  return out;
}

std::string url_escape(const std::string& text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t n =
        (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[(n >> shift) & 63];
  }
  if (i + 1 == bytes.size()) {
    const uint32_t n = uint8_t(bytes[i]) << 16;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += "==";
  } else if (i + 2 == bytes.size()) {
    const uint32_t n = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += '=';
  }
  return out;
}

namespace {

// Beast over one kept-alive connection. Every operation is asynchronous on a private
// io_context, run to completion, so that the stream's deadline bounds it.
class BeastTransport final : public HttpTransport {
 public:
  BeastTransport(HttpUrl url, HttpOptions options)
      : url_(std::move(url)), options_(std::move(options)) {}

  HttpResponse send(const HttpRequest& request) override {
    std::lock_guard lock(mutex_);
    // A reused connection may have been closed by the server while idle: the first write or
    // read then fails before any answer, and one fresh connection is tried. A request that
    // must not be sent twice takes a fresh connection from the start (its failure is final).
    if (!request.repeatable) stream_.reset();
    const bool reused = stream_.has_value();
    try {
      return exchange(request);
    } catch (const StaleConnection& stale) {
      stream_.reset();
      if (!reused) throw unavailable(request, stale.what());
    }
    try {
      return exchange(request);
    } catch (const StaleConnection& stale) {
      stream_.reset();
      throw unavailable(request, stale.what());
    }
  }

  const std::string& url() const override { return url_.text; }

 private:
  struct StaleConnection : std::runtime_error {
    using std::runtime_error::runtime_error;
  };

  Error unavailable(const HttpRequest& request, const std::string& why) const {
    return Error(ErrorCode::kUnavailable,
                 url_.text + ": " + request.method + " " + request.target + ": " + why);
  }

  // Runs the io_context until the pending operation has completed.
  void run() {
    ioc_.restart();
    ioc_.run();
  }

  std::string describe(const beast::error_code& ec, std::chrono::milliseconds timeout) const {
    if (ec == beast::error::timeout) {
      return "no answer within " + std::to_string(timeout.count()) + " ms";
    }
    return ec.message();
  }

  void connect(const HttpRequest& request) {
    tcp::resolver resolver(ioc_);
    beast::error_code ec;
    const tcp::resolver::results_type endpoints = resolver.resolve(url_.host, url_.port, ec);
    if (ec) throw unavailable(request, "cannot resolve " + url_.host + ": " + ec.message());
    stream_.emplace(ioc_);
    stream_->expires_after(options_.connect_timeout);
    stream_->async_connect(endpoints,
                           [&](const beast::error_code& e, const tcp::endpoint&) { ec = e; });
    run();
    if (ec) {
      stream_.reset();
      throw unavailable(request, "cannot connect: " + describe(ec, options_.connect_timeout));
    }
    stream_->socket().set_option(tcp::no_delay(true));
  }

  HttpResponse exchange(const HttpRequest& request) {
    if (!stream_) connect(request);
    const http::verb verb = http::string_to_verb(request.method);
    if (verb == http::verb::unknown) {
      throw Error(ErrorCode::kInternal, "HTTP method '" + request.method + "' is unknown");
    }
    http::request<http::string_body> req{verb, url_.base + request.target, 11};
    req.set(http::field::host, url_.authority());
    req.set(http::field::user_agent, "tuner");
    req.set(http::field::accept, "application/json");
    for (const auto& [name, value] : options_.headers) req.set(name, value);
    if (!request.body.empty()) req.set(http::field::content_type, request.content_type);
    req.body() = request.body;
    req.keep_alive(true);
    req.prepare_payload();

    beast::error_code ec;
    size_t read_bytes = 0;
    stream_->expires_after(options_.request_timeout);
    http::async_write(*stream_, req, [&](const beast::error_code& e, size_t) { ec = e; });
    run();
    if (ec) fail(request, ec, read_bytes);

    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(options_.max_response_bytes);
    http::async_read(*stream_, buffer, parser, [&](const beast::error_code& e, size_t n) {
      ec = e;
      read_bytes = n;
    });
    run();
    if (ec) fail(request, ec, read_bytes + buffer.size());
    http::response<http::string_body> res = parser.release();
    if (!res.keep_alive()) {
      beast::error_code ignored;
      stream_->socket().shutdown(tcp::socket::shutdown_both, ignored);
      stream_.reset();
    }
    return HttpResponse{.status = static_cast<int>(res.result_int()),
                        .body = std::move(res.body())};
  }

  [[noreturn]] void fail(const HttpRequest& request, const beast::error_code& ec, size_t read) {
    stream_.reset();
    // Closed or reset before any byte of an answer: the server dropped an idle connection.
    const bool closed = ec == http::error::end_of_stream || ec == asio::error::connection_reset ||
                        ec == asio::error::broken_pipe || ec == asio::error::eof;
    if (closed && read == 0) throw StaleConnection(ec.message());
    throw unavailable(request, describe(ec, options_.request_timeout));
  }

  // Constant after construction.
  const HttpUrl url_;
  const HttpOptions options_;

  // State below is protected by mutex_.
  std::mutex mutex_;
  asio::io_context ioc_;
  std::optional<beast::tcp_stream> stream_;
};

}  // namespace

std::unique_ptr<HttpTransport> make_http_transport(const std::string& url, HttpOptions options) {
  return std::make_unique<BeastTransport>(parse_http_url(url), std::move(options));
}

}  // namespace tuner::tracking
