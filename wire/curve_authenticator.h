// CurveAuthenticator: the coordinator's gatekeeper for CURVE connections. ZeroMQ asks a handler
// bound in the same context (ZAP, ZeroMQ RFC 27) whether to accept each client that completed the
// CURVE handshake; this one accepts exactly the executor public keys it was given and refuses
// everything else (another key, another mechanism). Without a handler ZeroMQ would accept any
// client that knows the server's public key, so the authenticator must exist before the CURVE
// server socket binds and live until it is closed.
//
// It is passive: the owner polls socket() with its other sockets and calls answer_requests()
// when it is readable, so refusals are logged on the owner's thread.
//
// Thread safety: one thread at a time, as a ZmqSocket.
#ifndef TUNER_WIRE_CURVE_AUTHENTICATOR_H_
#define TUNER_WIRE_CURVE_AUTHENTICATOR_H_

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "wire/zmq_socket.h"

namespace tuner {

class CurveAuthenticator {
 public:
  // Binds ZeroMQ's authentication endpoint in `context`. `authorized_keys` are Z85 public keys.
  // Throws Error(kInvalidArgument) for a malformed key or none, and Error(kUnavailable) when the
  // context has an authenticator already. `log` gets one line per refused key (the first time).
  CurveAuthenticator(ZmqContext& context, const std::vector<std::string>& authorized_keys,
                     std::function<void(const std::string&)> log);

  ZmqSocket& socket() { return socket_; }
  // Answers every request waiting. Never blocks.
  void answer_requests();

  int64_t accepted() const { return accepted_; }
  int64_t refused() const { return refused_; }

 private:
  ZmqSocket socket_;
  std::set<std::string> authorized_;  // 32-byte binary keys
  std::set<std::string> refused_logged_;
  std::function<void(const std::string&)> log_;
  int64_t accepted_ = 0;
  int64_t refused_ = 0;
};

}  // namespace tuner

#endif  // TUNER_WIRE_CURVE_AUTHENTICATOR_H_
