// The executor's side of the store of a multi-node trial (executor/node_store.h; docs/protocol.md,
// STORE_SET and STORE_KEYS): NodeStoreRelay is one node's store directory with the keys the
// executor has seen in it, so that each key the node's ranks write goes to the coordinator once
// (and again after a reconnect), and the keys the other nodes set are written there once.
// NodeStoreWatch wakes the executor's loop when a rank writes into any of the directories
// (inotify), or, where that cannot be, tells the loop to look every kNodeStorePoll.
//
// Thread safety: both are used by the executor's loop thread only (the ranks are other
// processes, which write through the directory).
#ifndef TUNER_EXECUTOR_NODE_STORE_RELAY_H_
#define TUNER_EXECUTOR_NODE_STORE_RELAY_H_

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "executor/node_store.h"
#include "executor/unique_fd.h"

namespace tuner {

// Without inotify, how often the loop looks at the node stores.
inline constexpr std::chrono::milliseconds kNodeStorePoll{20};

class NodeStoreRelay {
 public:
  // Makes a fresh store directory (removed with this). Throws Error(kUnavailable) when it cannot.
  NodeStoreRelay() = default;

  const std::filesystem::path& path() const { return dir_.path(); }

  // The keys the node's ranks wrote since the last call, each once (not those written from the
  // coordinator); they are kept in published().
  std::vector<std::pair<std::string, std::string>> take_new_keys();
  // Every key the node's ranks wrote: what a new connection sends again.
  const std::map<std::string, std::string>& published() const { return published_; }

  // Writes the keys of `entries` (set by the other nodes) that are not here yet. Returns the
  // problem of each key that could not be written, for the log (the ranks' rendezvous then fails
  // within its collective timeout, naming the key they waited for).
  std::vector<std::string> write_keys(const std::map<std::string, std::string>& entries);

 private:
  NodeStoreDir dir_;
  std::set<std::string> seen_;                    // published, or written from the coordinator
  std::map<std::string, std::string> published_;  // the node's own keys
};

class NodeStoreWatch {
 public:
  // Watches `dir` for new keys. Where that cannot be done, the watch polls from then on and the
  // line to log is returned (once); else an empty string.
  std::string watch(const std::filesystem::path& dir);

  // The inotify descriptor for the loop's poll: -1 when there is none.
  int fd() const { return fd_.get(); }
  // True when the stores must be looked at every kNodeStorePoll instead.
  bool polling() const { return polling_; }
  // Reads the notifications pending on fd().
  void drain();

 private:
  UniqueFd fd_;
  bool polling_ = false;
};

}  // namespace tuner

#endif  // TUNER_EXECUTOR_NODE_STORE_RELAY_H_
