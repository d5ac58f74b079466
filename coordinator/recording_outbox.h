// RecordingOutbox: an Outbox for the coordinator's parts' tests that keeps what is sent and
// logged, and can play a peer that cannot be reached. Test-only.
#ifndef TUNER_COORDINATOR_RECORDING_OUTBOX_H_
#define TUNER_COORDINATOR_RECORDING_OUTBOX_H_

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/outbox.h"

namespace tuner::testing {

class RecordingOutbox final : public Outbox {
 public:
  bool send(const std::string& route, const Message& message) override {
    if (unreachable.contains(route)) return false;
    sent.emplace_back(route, message);
    return true;
  }
  void log(const std::string& line) override { lines.push_back(line); }

  // The messages of type T sent to `route`, in order.
  template <typename T>
  std::vector<T> sent_to(const std::string& route) const {
    std::vector<T> found;
    for (const auto& [to, message] : sent) {
      if (to == route && std::holds_alternative<T>(message)) found.push_back(std::get<T>(message));
    }
    return found;
  }
  // Whether a log line contains `text`.
  bool logged(const std::string& text) const {
    for (const std::string& line : lines) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }

  std::vector<std::pair<std::string, Message>> sent;
  std::vector<std::string> lines;
  std::set<std::string> unreachable;  // send() to these fails
};

}  // namespace tuner::testing

#endif  // TUNER_COORDINATOR_RECORDING_OUTBOX_H_
