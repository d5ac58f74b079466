#include "launch/endpoints.h"

#include <unistd.h>

#include "trials/error.h"

namespace tuner {

std::string launcher_bind_endpoint(const std::string& endpoint) {
  return "tcp://0.0.0.0:" +
         (endpoint.empty() ? std::string("*") : endpoint.substr(endpoint.rfind(':') + 1));
}

std::string launcher_connect_endpoint(const std::string& endpoint, const std::string& bound,
                                      std::string_view section) {
  if (!endpoint.empty()) return endpoint;
  constexpr std::string_view kTcp = "tcp://";
  const size_t colon = bound.rfind(':');
  if (bound.rfind(kTcp, 0) != 0 || colon == std::string::npos || colon < kTcp.size()) return bound;
  const std::string host = bound.substr(kTcp.size(), colon - kTcp.size());
  if (host != "0.0.0.0" && host != "*" && host != "[::]") return bound;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') {
    throw Error(ErrorCode::kUnavailable,
                std::string(section) +
                    ": cannot tell this host's name for the executors to connect to; give " +
                    std::string(section) + ".endpoint");
  }
  return "tcp://" + std::string(name) + bound.substr(colon);
}

}  // namespace tuner
