#include "wire/zmq_socket.h"

#include <cerrno>
#include <utility>
#include <zmq.hpp>

#include "trials/error.h"

namespace tuner {

struct ZmqContext::Impl {
  zmq::context_t context;
};

ZmqContext::ZmqContext() {
  try {
    impl_ = std::make_unique<Impl>();
  } catch (const zmq::error_t& e) {
    throw Error(ErrorCode::kInternal, std::string("cannot create a ZeroMQ context: ") + e.what());
  }
}

ZmqContext::~ZmqContext() = default;

struct ZmqSocket::Impl {
  zmq::socket_t socket;
};

namespace {

const char* type_name(ZmqSocketType type) {
  switch (type) {
    case ZmqSocketType::kRouter:
      return "ROUTER";
    case ZmqSocketType::kDealer:
      return "DEALER";
    case ZmqSocketType::kReply:
      return "REP";
  }
  return "?";
}

zmq::socket_type zmq_type(ZmqSocketType type) {
  switch (type) {
    case ZmqSocketType::kRouter:
      return zmq::socket_type::router;
    case ZmqSocketType::kDealer:
      return zmq::socket_type::dealer;
    case ZmqSocketType::kReply:
      return zmq::socket_type::rep;
  }
  return zmq::socket_type::dealer;
}

void set_curve(zmq::socket_t& s, ZmqSocketType type, const ZmqSocketOptions& options) {
  if (options.curve_secret_key.empty()) return;
  if (type == ZmqSocketType::kRouter) {
    s.set(zmq::sockopt::curve_server, 1);
    s.set(zmq::sockopt::curve_secretkey, options.curve_secret_key);
    // A domain makes ZeroMQ ask the authenticator about every client.
    s.set(zmq::sockopt::zap_domain, "tuner");
  } else {
    s.set(zmq::sockopt::curve_publickey, options.curve_public_key);
    s.set(zmq::sockopt::curve_secretkey, options.curve_secret_key);
    s.set(zmq::sockopt::curve_serverkey, options.curve_server_key);
  }
}

}  // namespace

ZmqSocket::ZmqSocket(ZmqContext& context, ZmqSocketType type, const ZmqSocketOptions& options)
    : type_(type) {
  try {
    impl_ = std::make_unique<Impl>(Impl{zmq::socket_t(context.impl_->context, zmq_type(type))});
    zmq::socket_t& s = impl_->socket;
    s.set(zmq::sockopt::linger, static_cast<int>(options.linger.count()));
    s.set(zmq::sockopt::maxmsgsize, options.max_frame_bytes);
    s.set(zmq::sockopt::sndhwm, options.high_water_mark);
    s.set(zmq::sockopt::rcvhwm, options.high_water_mark);
    if (type == ZmqSocketType::kRouter) {
      // A send to a peer that is not connected fails (EHOSTUNREACH) instead of vanishing, and a
      // peer that reconnects with a routing id in use takes it over.
      s.set(zmq::sockopt::router_mandatory, 1);
      s.set(zmq::sockopt::router_handover, 1);
    } else if (type == ZmqSocketType::kDealer && !options.routing_id.empty()) {
      s.set(zmq::sockopt::routing_id, zmq::buffer(options.routing_id));
    }
    set_curve(s, type, options);
  } catch (const zmq::error_t& e) {
    throw Error(ErrorCode::kInternal,
                std::string("cannot create a ZeroMQ ") + type_name(type) + " socket: " + e.what());
  }
}

ZmqSocket::~ZmqSocket() = default;
ZmqSocket::ZmqSocket(ZmqSocket&&) noexcept = default;
ZmqSocket& ZmqSocket::operator=(ZmqSocket&&) noexcept = default;

std::string ZmqSocket::bind(const std::string& endpoint) {
  try {
    impl_->socket.bind(endpoint);
    return impl_->socket.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    ErrorCode code = (e.num() == EINVAL || e.num() == EPROTONOSUPPORT) ? ErrorCode::kInvalidArgument
                                                                       : ErrorCode::kUnavailable;
    throw Error(code, "cannot bind " + std::string(type_name(type_)) + " to '" + endpoint +
                          "': " + e.what());
  }
}

void ZmqSocket::connect(const std::string& endpoint) {
  try {
    impl_->socket.connect(endpoint);
  } catch (const zmq::error_t& e) {
    throw Error(ErrorCode::kInvalidArgument, "cannot connect " + std::string(type_name(type_)) +
                                                 " to '" + endpoint + "': " + e.what());
  }
}

bool ZmqSocket::send(std::span<const std::string> frames) {
  try {
    for (size_t i = 0; i < frames.size(); ++i) {
      auto flags = zmq::send_flags::dontwait;
      if (i + 1 < frames.size()) flags = flags | zmq::send_flags::sndmore;
      // ZeroMQ queues a multipart message atomically: only the first frame can be refused.
      if (!impl_->socket.send(zmq::buffer(frames[i]), flags)) return false;
    }
    return true;
  } catch (const zmq::error_t& e) {
    if (e.num() == EHOSTUNREACH || e.num() == EAGAIN) return false;
    throw Error(ErrorCode::kInternal,
                std::string("ZeroMQ ") + type_name(type_) + " send failed: " + e.what());
  }
}

std::optional<std::vector<std::string>> ZmqSocket::receive() {
  try {
    std::vector<std::string> frames;
    zmq::message_t part;
    if (!impl_->socket.recv(part, zmq::recv_flags::dontwait)) return std::nullopt;
    frames.emplace_back(part.to_string());
    while (part.more()) {
      // The rest of a multipart message has arrived with its first frame.
      if (!impl_->socket.recv(part, zmq::recv_flags::none)) break;
      frames.emplace_back(part.to_string());
    }
    return frames;
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return std::nullopt;
    throw Error(ErrorCode::kInternal,
                std::string("ZeroMQ ") + type_name(type_) + " receive failed: " + e.what());
  }
}

bool endpoint_is_local(const std::string& endpoint) {
  if (endpoint.starts_with("ipc://") || endpoint.starts_with("inproc://")) return true;
  if (!endpoint.starts_with("tcp://")) return false;
  std::string host = endpoint.substr(6);
  // tcp://[::1]:PORT, tcp://HOST:PORT; a "source;destination" form names the destination last.
  if (const auto semicolon = host.rfind(';'); semicolon != std::string::npos) {
    host = host.substr(semicolon + 1);
  }
  if (const auto colon = host.rfind(':'); colon != std::string::npos) host.resize(colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

int zmq_wait(std::span<ZmqPollEntry> entries, std::chrono::milliseconds timeout) {
  std::vector<zmq::pollitem_t> items(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    items[i].socket = entries[i].socket ? entries[i].socket->impl_->socket.handle() : nullptr;
    items[i].fd = entries[i].socket ? 0 : entries[i].fd;
    items[i].events = ZMQ_POLLIN;
    items[i].revents = 0;
  }
  int n = ::zmq_poll(items.data(), static_cast<int>(items.size()),
                     timeout.count() < 0 ? -1L : static_cast<long>(timeout.count()));
  if (n < 0) {
    if (zmq_errno() == EINTR)
      n = 0;
    else {
      throw Error(ErrorCode::kInternal,
                  std::string("zmq_poll failed: ") + zmq_strerror(zmq_errno()));
    }
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    entries[i].readable = n > 0 && (items[i].revents & ZMQ_POLLIN) != 0;
  }
  return n;
}

}  // namespace tuner
