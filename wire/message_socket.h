// The protocol's two ends on ZeroMQ: RouterEndpoint (the coordinator's) and DealerEndpoint (an
// executor's). They send typed messages (wire/protocol.h) and receive raw frames, so that the
// receiver decodes them itself and can answer what it cannot decode with ERROR.
//
// Thread safety: as ZmqSocket: one thread at a time.
#ifndef TUNER_WIRE_MESSAGE_SOCKET_H_
#define TUNER_WIRE_MESSAGE_SOCKET_H_

#include <optional>
#include <string>
#include <vector>

#include "wire/protocol.h"
#include "wire/zmq_socket.h"

namespace tuner {

// A message as a ROUTER receives it: who sent it and its frames (routing envelope removed).
struct RoutedFrames {
  std::string peer;  // the sender's routing id (binary; see peer_name())
  std::vector<std::string> frames;
};

// A routing id as text for logs and errors: printable ids as they are, others in hex.
std::string peer_name(const std::string& routing_id);

class RouterEndpoint {
 public:
  // Binds a ROUTER to `endpoint` (see ZmqSocket::bind for the forms and errors).
  RouterEndpoint(ZmqContext& context, const std::string& endpoint,
                 const ZmqSocketOptions& options = {});

  // The endpoint bound, with the port chosen for "tcp://HOST:*".
  const std::string& endpoint() const { return endpoint_; }

  // Sends `message` to `peer`; false when the peer is not connected or its queue is full.
  // Throws ProtocolError when the message cannot be encoded (wire/protocol.h).
  bool send(const std::string& peer, const Message& message);
  // Sends raw frames after the routing id (tests use it to send what encode() would refuse).
  bool send_frames(const std::string& peer, const std::vector<std::string>& frames);
  // The next message waiting, or nullopt. Never blocks. A message without a routing envelope
  // (impossible on a ROUTER) is returned with an empty peer and no frames.
  std::optional<RoutedFrames> receive();

  ZmqSocket& socket() { return socket_; }

 private:
  ZmqSocket socket_;
  std::string endpoint_;
};

class DealerEndpoint {
 public:
  // Connects a DEALER to `endpoint` with `options` (routing id, limits).
  DealerEndpoint(ZmqContext& context, const std::string& endpoint,
                 const ZmqSocketOptions& options = {});

  // Queues `message` for the coordinator; false when the queue is full.
  // Throws ProtocolError when the message cannot be encoded.
  bool send(const Message& message);
  bool send_frames(const std::vector<std::string>& frames);
  // The next message's frames, or nullopt. Never blocks.
  std::optional<std::vector<std::string>> receive() { return socket_.receive(); }

  ZmqSocket& socket() { return socket_; }

 private:
  ZmqSocket socket_;
};

}  // namespace tuner

#endif  // TUNER_WIRE_MESSAGE_SOCKET_H_
