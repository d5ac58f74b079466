// NodeStore: one node's copy of the rendezvous store of a trial whose ranks span several
// executors (docs/engine_jobs.md, "Nodes"). The coordinator holds the store of each attempt; on
// every node the executor keeps a copy in a directory of its own for the trial and bridges the two
// (STORE_SET, STORE_KEYS: docs/protocol.md): a key the node's ranks write there goes to the
// coordinator, and the keys the other nodes set are written there. The ranks (processes of the
// trial's `tuner trial`) see only the directory: Gloo exchanges its TCP addresses through it, and
// the nodes other than node 0 read the NCCL id of rank 0 from it.
//
// Layout: one file per key, named "k" + the key in hex (keys may hold any byte), written to a
// temporary name beginning with "." and renamed, so a reader never sees half a value. Keys are
// written once (a second write of a key replaces it with what must be the same value).
//
// Thread safety: the functions may be called from any thread and process at once; a NodeStore
// from its constructing thread (as RendezvousStore).
#ifndef TUNER_EXECUTOR_NODE_STORE_H_
#define TUNER_EXECUTOR_NODE_STORE_H_

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "training/distributed/gloo_communicator.h"

namespace tuner {

// The key of the NCCL id that node 0's launcher publishes for the other nodes.
inline constexpr char kNcclIdKey[] = "nccl_id";

// The file that holds `key` in a store directory.
std::string node_store_file(std::string_view key);
// The key that a file of a store directory holds; nullopt for temporaries and other files.
std::optional<std::string> node_store_key(std::string_view file_name);

// Writes `key` into `dir` atomically. Throws Error(kUnavailable) naming the file when it cannot.
void write_node_store_key(const std::filesystem::path& dir, std::string_view key,
                          std::string_view value);
// Every key in `dir` with its value (a missing directory holds none).
std::map<std::string, std::string> read_node_store(const std::filesystem::path& dir);
// The value of `key`, waiting up to `timeout` for it to appear (polling); nullopt after that.
std::optional<std::string> wait_node_store_key(const std::filesystem::path& dir,
                                               std::string_view key,
                                               std::chrono::milliseconds timeout);

// A fresh store directory for one node of one trial (in `parent`; empty: the system's temporary
// directory), removed with what it holds when this goes away. Throws Error(kUnavailable) naming
// the parent when it cannot be made.
class NodeStoreDir {
 public:
  explicit NodeStoreDir(const std::filesystem::path& parent = {});
  ~NodeStoreDir();
  NodeStoreDir(const NodeStoreDir&) = delete;
  NodeStoreDir& operator=(const NodeStoreDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The RendezvousStore of a rank on one node of a multi-node trial: the directory above.
class NodeStore final : public training::RendezvousStore {
 public:
  explicit NodeStore(std::filesystem::path dir) : dir_(std::move(dir)) {}
  void set(const std::string& key, const std::vector<char>& value) override;
  std::optional<std::vector<char>> get(const std::string& key,
                                       std::chrono::milliseconds timeout) override;

 private:
  const std::filesystem::path dir_;
};

}  // namespace tuner

#endif  // TUNER_EXECUTOR_NODE_STORE_H_
