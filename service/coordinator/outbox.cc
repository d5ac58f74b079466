#include "service/coordinator/outbox.h"

#include <iostream>
#include <utility>

#include "executor/transport/message_socket.h"

namespace tuner {

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

bool RouterOutbox::send(const std::string& route, const Message& message) {
  try {
    if (router_.send(route, message)) return true;
  } catch (const ProtocolError& e) {
    log(std::string("cannot encode ") + std::string(to_string(message_type(message))) + " for " +
        peer_name(route) + ": " + e.what());
    return false;
  }
  return false;
}

}  // namespace tuner
