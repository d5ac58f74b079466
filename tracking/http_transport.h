// HttpTransport: one HTTP/1.1 exchange at a time with one server, the edge between the MLflow
// client and the network, so that tests replace it (a recorded transport, a fake server).
//
// make_http_transport() gives the real one: Boost.Beast over a kept-alive TCP connection, with a
// timeout on the connect and on each exchange. A connection the server closed while it was idle
// is replaced once, transparently; any other failure is Error(kUnavailable) naming the URL and
// the request. HTTP error statuses are not errors here: the caller reads them.
//
// Thread safety: send() may be called from several threads; the exchanges are serialized.
#ifndef TUNER_TRACKING_HTTP_TRANSPORT_H_
#define TUNER_TRACKING_HTTP_TRANSPORT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tuner::tracking {

struct HttpRequest {
  std::string method;  // "GET", "POST", "PUT", "PATCH", "DELETE"
  // The path and query below the base URL's path: "/api/2.0/mlflow/runs/get?run_id=abc".
  std::string target;
  std::string body;
  std::string content_type = "application/json";  // sent when body is not empty
  // False for a call that must not reach the server twice (MLflow's creates): it is sent once,
  // on a fresh connection, so that an answer lost with a closing connection is never followed
  // by a second send; the caller looks the object up instead. True: a connection the server
  // closed while idle is replaced and the request sent again.
  bool repeatable = true;
};

struct HttpResponse {
  int status = 0;  // 200, 404, ...
  std::string body;
};

// A parsed http:// URL: "http://host[:port][/base/path]".
struct HttpUrl {
  std::string host;  // without brackets for an IPv6 literal
  std::string port;  // default "80"
  std::string base;  // the path without its trailing '/': "" or "/mlflow"
  std::string text;  // the URL as given, without a trailing '/': for messages

  // "host:port" as the Host header writes it ([::1]:5000 for an IPv6 literal).
  std::string authority() const;
};

// Throws Error(kInvalidArgument) naming `url` for what is not an http:// URL with a host (https
// is refused with a word on why: this client speaks plain HTTP only).
HttpUrl parse_http_url(const std::string& url);

struct HttpOptions {
  // Connecting, then each request and its response. Defaults 5 s and 30 s.
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds request_timeout{30000};
  // The largest response body read; a larger one fails the exchange. Default 256 MiB.
  uint64_t max_response_bytes = uint64_t{256} << 20;
  // Sent with every request, e.g. {"Authorization", "Bearer ..."}. Default none.
  std::vector<std::pair<std::string, std::string>> headers;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // One exchange. Throws Error(kUnavailable) when there is no answer (refused, reset, timed
  // out), naming the URL and the request.
  virtual HttpResponse send(const HttpRequest& request) = 0;
  // The server, for messages: "http://127.0.0.1:5000".
  virtual const std::string& url() const = 0;
};

// Boost.Beast over TCP to `url` (parse_http_url's form). Connects lazily, on the first send().
std::unique_ptr<HttpTransport> make_http_transport(const std::string& url,
                                                   HttpOptions options = {});

// "%"-escapes `text` for a URL's query (RFC 3986: every byte but unreserved ones).
std::string url_escape(const std::string& text);

// Base64 (RFC 4648, with padding), for HTTP basic authentication.
std::string base64(const std::string& bytes);

}  // namespace tuner::tracking

#endif  // TUNER_TRACKING_HTTP_TRANSPORT_H_
