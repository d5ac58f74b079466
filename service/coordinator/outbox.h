// Outbox: what the coordinator's parts send to executors and write to the log, behind one small
// interface, so that a part can be tested with a recording outbox instead of sockets.
//
// The coordinator's outbox is a RouterOutbox: it sends through the service's ZeroMQ ROUTER
// (TRIAL, ACK, ERROR, HEARTBEAT, DECISION, STORE_KEYS, BYE) and writes each log line, prefixed
// "coordinator: ", to CoordinatorServiceOptions::log (standard error without one). A test's
// outbox (coordinator/recording_outbox.h) keeps both in vectors.
//
// Thread safety: an outbox is used by the coordinator's loop thread only.
#ifndef TUNER_SERVICE_COORDINATOR_OUTBOX_H_
#define TUNER_SERVICE_COORDINATOR_OUTBOX_H_

#include <functional>
#include <string>

#include "trials/protocol.h"

namespace tuner {

class RouterEndpoint;

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
std::function<void(const std::string&)> coordinator_log(std::function<void(const std::string&)> sink);

// The ZeroMQ ROUTER's outbox. REQUIRES: `router` outlives it.
class RouterOutbox final : public Outbox {
 public:
  RouterOutbox(RouterEndpoint& router, std::function<void(const std::string&)> log)
      : router_(router), log_(std::move(log)) {}

  bool send(const std::string& route, const Message& message) override;
  void log(const std::string& line) override { log_(line); }

 private:
  RouterEndpoint& router_;
  std::function<void(const std::string&)> log_;  // coordinator_log(): prefixes the lines
};

}  // namespace tuner

#endif  // TUNER_SERVICE_COORDINATOR_OUTBOX_H_
