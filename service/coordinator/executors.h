// The executor registry: each executor that said HELLO, by its connection (routing id).
//
// An entry is made or renewed by HELLO (coordinator.cc, on_hello: one live process per
// executor id; a reconnect replaces the old connection's entry), credited by READY, marked
// heard by every message it sends, and forgotten after BYE or lease_timeout of silence.
// Placement reads its free slots (`credit`) and resources.
//
// Thread safety: used by the coordinator's loop thread only.
#ifndef TUNER_SERVICE_COORDINATOR_EXECUTORS_H_
#define TUNER_SERVICE_COORDINATOR_EXECUTORS_H_

#include <cstdint>
#include <map>
#include <string>

#include "trials/clock.h"
#include "trials/protocol.h"

namespace tuner {

struct ExecutorEntry {
  std::string route;  // the connection's routing id
  std::string executor_id;
  std::string hostname;
  int64_t pid = 0;
  Resources resources;
  int credit = 0;  // slots offered by the last READY, less the TRIALs sent since
  Clock::SteadyTime last_heard{};
};

// By route, in the routing ids' order (placement's executor order).
using ExecutorRegistry = std::map<std::string, ExecutorEntry>;

}  // namespace tuner

#endif  // TUNER_SERVICE_COORDINATOR_EXECUTORS_H_
