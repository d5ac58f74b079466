// The executors file of a Ray launcher: what it last heard of its executors' actors, in its
// status directory ("executors.json"), for `tuner status` to show while the sweep runs.
//
//   {"version": 1, "pid": 4242, "launcher": "ray-q3x9ab", "address": "ray://head:10001",
//    "endpoint": "tcp://login1:41234",
//    "executors": [{"id": "ray-q3x9ab-1", "state": "alive", "node": "10.0.3.17",
//                   "actor_id": "3f1c...", "reason": ""}, ...]}
//
// Thread safety: pure functions on files; the file is replaced whole (written beside, renamed).
#ifndef TUNER_LAUNCH_RAY_EXECUTORS_FILE_H_
#define TUNER_LAUNCH_RAY_EXECUTORS_FILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tuner {

inline constexpr int kRayExecutorsFileVersion = 1;

// An executor of a Ray launcher as it last heard of it, in the words of Ray's actor states.
struct RayExecutorStatus {
  std::string id;        // its executor id, "ray-<launcher>-<n>", also its actor's name in Ray
  std::string state;     // "pending" (not placed yet), "alive" (placed) or "dead" (ended)
  std::string node;      // where it runs: the node's address; empty while pending
  std::string actor_id;  // Ray's actor id (hex), known once it is alive; else empty
  // Why it is pending (Ray cannot place it now, or ever) or why it died; may be empty.
  std::string reason;
  bool operator==(const RayExecutorStatus&) const = default;
};

struct RayExecutorsRecord {
  int64_t pid = 0;       // the process that runs the launcher
  std::string launcher;  // "ray-<random>": the prefix of its executors' ids
  std::string address;   // the cluster, as executors.ray.address gives it
  std::string endpoint;  // where the executors connect
  std::vector<RayExecutorStatus> executors;
  bool operator==(const RayExecutorsRecord&) const = default;
};

// Where the Ray launcher of `study` in the SQLite file `storage_path` keeps its file:
// "<storage_path>.ray/<study>".
std::string ray_status_dir(const std::string& storage_path, const std::string& study);

// Replaces dir/executors.json, making dir where needed. Throws Error(kUnavailable) when it cannot
// be written.
void write_ray_executors_file(const std::string& dir, const RayExecutorsRecord& record);
// Removes it, and dir and dir's parent where that leaves them empty; no error when there is
// none.
void remove_ray_executors_file(const std::string& dir);
// The record in dir/executors.json; nullopt when there is none, it is not one of this version, or
// its process no longer runs.
std::optional<RayExecutorsRecord> read_ray_executors_file(const std::string& dir);

}  // namespace tuner

#endif  // TUNER_LAUNCH_RAY_EXECUTORS_FILE_H_
