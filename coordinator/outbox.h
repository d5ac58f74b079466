// Outbox: what the coordinator's parts send to executors and write to the log, behind one small
// interface, so that a part can be tested with a recording outbox instead of sockets.
//
// The coordinator's outbox is a RouterOutbox: it binds the service's ZeroMQ ROUTER (behind a
// CURVE authenticator when the service has keys), sends through it (TRIAL, ACK, ERROR,
// HEARTBEAT, DECISION, STORE_KEYS, BYE) and writes each log line, prefixed "coordinator: ", to
// CoordinatorServiceOptions::log (standard error without one). The loop receives from the same
// ROUTER (router()). A test's outbox (coordinator/recording_outbox.h) keeps both in vectors.
//
// Thread safety: an outbox is used by the coordinator's loop thread only.
#ifndef TUNER_COORDINATOR_OUTBOX_H_
#define TUNER_COORDINATOR_OUTBOX_H_

#include <functional>
#include <memory>
#include <string>

#include "coordinator/coordinator.h"
#include "wire/protocol.h"

namespace tuner {

class CurveAuthenticator;
class RouterEndpoint;
class ZmqContext;

class Outbox {
 public:
  virtual ~Outbox() = default;
  // Queues `message` for the peer whose routing id is `route`. False when it cannot go: the peer
  // is gone or its queue is full, or the message cannot be encoded (logged, not thrown).
  virtual bool send(const std::string& route, const Message& message) = 0;
  // One line of the coordinator's log, without the "coordinator: " prefix.
  virtual void log(const std::string& line) = 0;
};

// Where the coordinator's log lines go: `sink` (CoordinatorServiceOptions::log) or, without one,
// standard error; each line prefixed "coordinator: ".
std::function<void(const std::string&)> coordinator_log(
    std::function<void(const std::string&)> sink);

// The ZeroMQ ROUTER's outbox, which owns the ROUTER.
class RouterOutbox final : public Outbox {
 public:
  // Binds options.endpoint. Throws Error(kInvalidArgument) for malformed CURVE keys, CURVE
  // without executor keys, or an endpoint other hosts can reach without CURVE (unless
  // allow_insecure_tcp), and the socket's errors (Error(kUnavailable) when it cannot bind).
  // `log`: coordinator_log()'s, which the authenticator logs through too.
  RouterOutbox(const CoordinatorServiceOptions& options,
               std::function<void(const std::string&)> log);
  // Closes the router, then the authenticator, then the context.
  ~RouterOutbox() override;

  bool send(const std::string& route, const Message& message) override;
  void log(const std::string& line) override { log_(line); }

  RouterEndpoint& router() { return *router_; }
  CurveAuthenticator* authenticator() { return authenticator_.get(); }  // null without CURVE

 private:
  std::function<void(const std::string&)> log_;  // coordinator_log(): prefixes the lines
  std::unique_ptr<ZmqContext> context_;
  std::unique_ptr<CurveAuthenticator> authenticator_;  // before the router, which closes first
  std::unique_ptr<RouterEndpoint> router_;
};

}  // namespace tuner

#endif  // TUNER_COORDINATOR_OUTBOX_H_
