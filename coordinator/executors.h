// ExecutorRegistry: each executor that said HELLO, by its connection (routing id).
//
// It owns the entries: made or renewed by HELLO (admit(): one live process per executor id; the
// same executor on a new connection replaces its old entry), credited by READY, marked heard by
// every message (the loop does that as it reads), and forgotten after BYE or lease_timeout of
// silence (forget_silent()). Placement reads their free slots (`credit`) and resources, in the
// routing ids' order.
// It also remembers the peers that sent something before HELLO (at most kMaxUnknownPeers), to
// rate-limit the ERRORs they get.
// Invariant: at most one entry per executor id.
//
// Thread safety: not thread-safe; the coordinator's loop thread uses it.
#ifndef TUNER_COORDINATOR_EXECUTORS_H_
#define TUNER_COORDINATOR_EXECUTORS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trials/clock.h"
#include "wire/protocol.h"

namespace tuner {

// Peers without HELLO remembered (to rate-limit their ERRORs).
inline constexpr size_t kMaxUnknownPeers = 10'000;

struct ExecutorEntry {
  std::string route;  // the connection's routing id
  std::string executor_id;
  std::string hostname;
  int64_t pid = 0;
  Resources resources;
  // Slots offered by the last READY, less the TRIALs sent since. Placement takes at most
  // `capacity` less the leases it holds of it (a READY may be counted before TRIALs in flight
  // arrived, or read before the outcome of the trial whose slot it offers).
  int credit = 0;
  // The most trials it takes at once (its slots and what it takes ahead, ExecutorOptions::
  // prefetch), as its READYs showed: at least its slots. A reconnect keeps it.
  int capacity = 0;
  // TRIALs sent again when it said HELLO (on_hello): in flight when its first READY after HELLO
  // is read; -1 once that READY was read.
  int resent_at_hello = -1;
  Clock::SteadyTime last_heard{};
  // Since when it has held no lease, as the coordinator's loop last noted (each turn); nullopt
  // while it holds some. A reconnect keeps it.
  std::optional<Clock::SteadyTime> idle_since;
};

class ExecutorRegistry {
 public:
  using Map = std::map<std::string, ExecutorEntry>;  // by route

  // `lease_timeout`: an executor not heard from for this long is dead (its id may be reused)
  // and is forgotten.
  explicit ExecutorRegistry(std::chrono::milliseconds lease_timeout)
      : lease_timeout_(lease_timeout) {}

  // What HELLO came to.
  struct Admission {
    ExecutorEntry* entry = nullptr;  // null when refused
    bool joined = false;             // a new executor (not a renewed entry)
    // Refused: the ERROR to answer with, and a log line of its own (none: log the ERROR).
    std::optional<ErrorMessage> refusal;
    std::optional<std::string> refusal_log;
  };
  // HELLO from `route`, at `now`. Refuses an empty id or negative slots, and an id that another
  // live process (another host or pid, heard within lease_timeout) holds. Otherwise the entry,
  // with the HELLO's resources and no credit.
  Admission admit(const std::string& route, const HelloMessage& hello, Clock::SteadyTime now);

  ExecutorEntry* find(const std::string& route);
  bool contains(const std::string& route) const { return executors_.contains(route); }
  void erase(const std::string& route) { executors_.erase(route); }
  size_t size() const { return executors_.size(); }
  Map& all() { return executors_; }
  const Map& all() const { return executors_; }

  // A message from `route`, which has not said HELLO, at `now`: whether to tell it to say HELLO
  // (once per `interval` and peer, so that a forgotten executor's queued messages do not each
  // get an ERROR), and whether for the first time.
  enum class Unknown { kFirstTime, kAgain, kToldAlready };
  Unknown unknown(const std::string& route, Clock::SteadyTime now,
                  std::chrono::milliseconds interval);

  // Forgets the executors not heard from for lease_timeout; returns a log line for each.
  std::vector<std::string> forget_silent(Clock::SteadyTime now);
  // Every executor's last_heard `by` later, as LeaseTable::postpone_all.
  void postpone_silence(std::chrono::milliseconds by);

 private:
  // Constant after construction.
  const std::chrono::milliseconds lease_timeout_;

  Map executors_;
  std::map<std::string, Clock::SteadyTime> unknown_;  // route -> when it was last told to say HELLO
};

}  // namespace tuner

#endif  // TUNER_COORDINATOR_EXECUTORS_H_
