#include "wire/message_socket.h"

#include <cstdio>
#include <span>

namespace tuner {

std::string peer_name(const std::string& routing_id) {
  bool printable = !routing_id.empty();
  for (unsigned char c : routing_id) printable = printable && c >= 0x20 && c < 0x7f;
  if (printable) return routing_id;
  std::string hex = "0x";
  char buf[3];
  for (unsigned char c : routing_id) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    hex += buf;
  }
  return hex;
}

RouterEndpoint::RouterEndpoint(ZmqContext& context, const std::string& endpoint,
                               const ZmqSocketOptions& options)
    : socket_(context, ZmqSocketType::kRouter, options), endpoint_(socket_.bind(endpoint)) {}

bool RouterEndpoint::send(const std::string& peer, const Message& message) {
  std::vector<std::string> frames = encode(message);
  frames.insert(frames.begin(), peer);
  return socket_.send(frames);
}

bool RouterEndpoint::send_frames(const std::string& peer, const std::vector<std::string>& frames) {
  std::vector<std::string> all;
  all.reserve(frames.size() + 1);
  all.push_back(peer);
  all.insert(all.end(), frames.begin(), frames.end());
  return socket_.send(all);
}

std::optional<RoutedFrames> RouterEndpoint::receive() {
  std::optional<std::vector<std::string>> frames = socket_.receive();
  if (!frames) return std::nullopt;
  RoutedFrames routed;
  if (frames->empty()) return routed;
  routed.peer = std::move(frames->front());
  routed.frames.assign(std::make_move_iterator(frames->begin() + 1),
                       std::make_move_iterator(frames->end()));
  return routed;
}

DealerEndpoint::DealerEndpoint(ZmqContext& context, const std::string& endpoint,
                               const ZmqSocketOptions& options)
    : socket_(context, ZmqSocketType::kDealer, options) {
  socket_.connect(endpoint);
}

bool DealerEndpoint::send(const Message& message) { return socket_.send(encode(message)); }

bool DealerEndpoint::send_frames(const std::vector<std::string>& frames) {
  return socket_.send(frames);
}

}  // namespace tuner
