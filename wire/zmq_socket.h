// ZeroMQ sockets with RAII, for the coordinator <-> executor protocol (wire/protocol.h).
//
// The coordinator binds a ROUTER, each executor connects a DEALER (docs/protocol.md). This header
// keeps <zmq.h> out of the code that includes it: a ZmqContext and a ZmqSocket own their ZeroMQ
// handles through an Impl defined in zmq_socket.cc.
//
// Endpoints: "tcp://HOST:PORT" ("tcp://127.0.0.1:*" binds a free port; bind() returns the port
// chosen) and "ipc://PATH" (a Unix-domain socket file).
//
// Sends never block: a message that ZeroMQ cannot queue now (the peer's queue is full, or a
// ROUTER's peer is not connected) is refused with `false`, and the caller decides (the protocol
// recovers lost messages through heartbeats, lease expiry and resent results).
//
// Thread safety: a ZmqContext may be shared by threads. A ZmqSocket, as every ZeroMQ socket, is
// used by one thread at a time (it may be moved to another thread between uses).
#ifndef TUNER_WIRE_ZMQ_SOCKET_H_
#define TUNER_WIRE_ZMQ_SOCKET_H_

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tuner {

struct ZmqPollEntry;

// Owns a ZeroMQ context (its I/O thread). REQUIRES: outlives every socket made from it.
class ZmqContext {
 public:
  // Throws Error(kInternal) when ZeroMQ cannot create a context.
  ZmqContext();
  ~ZmqContext();
  ZmqContext(const ZmqContext&) = delete;
  ZmqContext& operator=(const ZmqContext&) = delete;

 private:
  friend class ZmqSocket;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

enum class ZmqSocketType {
  kRouter,  // the coordinator's: frame 0 of every message is the peer's routing id
  kDealer,  // an executor's
  kReply,   // answers requests in turn (the CURVE authenticator's)
};

struct ZmqSocketOptions {
  // DEALER: the routing id the ROUTER sees for this connection (at most 255 bytes). Empty (the
  // default): ZeroMQ picks one.
  std::string routing_id;
  // A received frame larger than this makes ZeroMQ drop the connection that sent it (a guard
  // against memory exhaustion; smaller oversized messages are refused by the protocol decoder).
  // Default 32 MiB.
  int64_t max_frame_bytes = int64_t{32} << 20;
  // Messages queued per peer, each way, before sends are refused. Default 100,000.
  int high_water_mark = 100'000;
  // How long closing the socket keeps trying to deliver queued messages. Default 0: drop them.
  std::chrono::milliseconds linger{0};
  // CURVE (wire/curve_keys.h), Z85 keys. A ROUTER with curve_secret_key is a CURVE
  // server: it accepts only clients that a CurveAuthenticator in its context approves. A DEALER
  // with all three keys is a CURVE client that talks only to the server holding curve_server_key.
  // Empty (the default): no encryption.
  std::string curve_public_key;
  std::string curve_secret_key;
  std::string curve_server_key;
};

class ZmqSocket {
 public:
  // Throws Error(kInternal) when ZeroMQ refuses to create or configure the socket.
  ZmqSocket(ZmqContext& context, ZmqSocketType type, const ZmqSocketOptions& options = {});
  ~ZmqSocket();  // closes the socket (queued messages are handled as options.linger says)
  ZmqSocket(ZmqSocket&&) noexcept;
  ZmqSocket& operator=(ZmqSocket&&) noexcept;

  // Binds to `endpoint` and returns the endpoint bound (with the port chosen for "tcp://H:*").
  // Throws Error(kUnavailable) naming the endpoint (in use, no permission) or
  // Error(kInvalidArgument) for an endpoint ZeroMQ cannot parse.
  std::string bind(const std::string& endpoint);
  // Connects to `endpoint`. ZeroMQ connects (and reconnects) in the background: this returns at
  // once, and messages sent before the connection exists are queued.
  // Throws Error(kInvalidArgument) naming the endpoint when ZeroMQ cannot parse it.
  void connect(const std::string& endpoint);

  // Sends `frames` as one multipart message, without blocking; on a ROUTER frames[0] is the
  // peer's routing id. False when the message cannot be queued now (full queue; ROUTER: no such
  // peer). REQUIRES: frames is not empty.
  bool send(std::span<const std::string> frames);
  // The next whole multipart message, or nullopt when none is waiting. Never blocks.
  std::optional<std::vector<std::string>> receive();

  ZmqSocketType type() const { return type_; }

 private:
  friend int zmq_wait(std::span<ZmqPollEntry> entries, std::chrono::milliseconds timeout);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  ZmqSocketType type_;
};

// True for endpoints that only this host can reach: ipc://, inproc://, and tcp:// on a loopback
// address (127.x.x.x, ::1, localhost).
bool endpoint_is_local(const std::string& endpoint);

// What zmq_wait() watches: a socket or a file descriptor (e.g. an eventfd that worker threads
// signal), and whether it became readable.
struct ZmqPollEntry {
  ZmqSocket* socket = nullptr;  // borrowed; null when fd is used
  int fd = -1;
  bool readable = false;  // out
};

// Waits up to `timeout` (negative: without limit) until some entry is readable, and sets the
// entries' `readable`. Returns how many are readable; 0 on timeout or when a signal interrupted
// the wait. Throws Error(kInternal) for any other failure of zmq_poll.
int zmq_wait(std::span<ZmqPollEntry> entries, std::chrono::milliseconds timeout);

}  // namespace tuner

#endif  // TUNER_WIRE_ZMQ_SOCKET_H_
