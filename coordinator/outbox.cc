#include "coordinator/outbox.h"

#include <iostream>
#include <utility>

#include "trials/error.h"
#include "wire/curve_authenticator.h"
#include "wire/message_socket.h"

namespace tuner {

namespace {

// With CURVE, the authenticator (bound before the router: without it ZeroMQ would let in any
// client); null without.
std::unique_ptr<CurveAuthenticator> make_authenticator(
    ZmqContext& context, const CoordinatorSecurity& security,
    const std::function<void(const std::string&)>& log) {
  if (!security.curve_keys) return nullptr;
  check_curve_key(security.curve_keys->secret_key, "coordinator: CURVE secret key");
  if (security.executor_keys.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "coordinator: CURVE needs the public keys of the executors to accept");
  }
  return std::make_unique<CurveAuthenticator>(context, security.executor_keys, log);
}

std::unique_ptr<RouterEndpoint> make_router(ZmqContext& context,
                                            const CoordinatorServiceOptions& o) {
  ZmqSocketOptions socket_options;
  socket_options.max_frame_bytes = static_cast<int64_t>(kMaxMessageBytes) + 1024;
  socket_options.linger = std::chrono::milliseconds(200);
  const CoordinatorSecurity& security = o.security;
  if (security.curve_keys) {
    socket_options.curve_public_key = security.curve_keys->public_key;
    socket_options.curve_secret_key = security.curve_keys->secret_key;
  } else if (!security.allow_insecure_tcp && !endpoint_is_local(o.endpoint)) {
    throw Error(ErrorCode::kInvalidArgument,
                "coordinator: '" + o.endpoint +
                    "' can be reached from other hosts, and without CURVE anyone there could "
                    "take trials: give CURVE keys (tuner keygen; --key and --executor-keys) or "
                    "allow plain TCP explicitly (--insecure)");
  }
  return std::make_unique<RouterEndpoint>(context, o.endpoint, socket_options);
}

}  // namespace

std::function<void(const std::string&)> coordinator_log(
    std::function<void(const std::string&)> sink) {
  return [sink = std::move(sink)](const std::string& line) {
    const std::string text = "coordinator: " + line;
    if (sink) {
      sink(text);
    } else {
      std::cerr << text << std::endl;
    }
  };
}

RouterOutbox::RouterOutbox(const CoordinatorServiceOptions& options,
                           std::function<void(const std::string&)> log)
    : log_(std::move(log)),
      context_(std::make_unique<ZmqContext>()),
      authenticator_(make_authenticator(*context_, options.security, log_)),
      router_(make_router(*context_, options)) {}

RouterOutbox::~RouterOutbox() {
  router_.reset();
  authenticator_.reset();
  context_.reset();
}

bool RouterOutbox::send(const std::string& route, const Message& message) {
  try {
    if (router_->send(route, message)) return true;
  } catch (const ProtocolError& e) {
    log(std::string("cannot encode ") + std::string(to_string(message_type(message))) + " for " +
        peer_name(route) + ": " + e.what());
    return false;
  }
  return false;
}

}  // namespace tuner
