// What `tuner sweep` and `tuner serve` share when the study database fails under them: the check
// made each turn of their loop, stopping the running trials, and saving the open file after the
// one at its path was deleted or replaced (docs/storage.md, "When the file fails under a running
// sweep").
//
// Thread safety: functions of the coordinator's loop thread.
#ifndef TUNER_SWEEP_STORAGE_WATCH_H_
#define TUNER_SWEEP_STORAGE_WATCH_H_

#include <chrono>
#include <optional>
#include <string>

#include "coordinator/coordinator.h"
#include "storage/sqlite_storage.h"

namespace tuner {

// Why the owner of a coordinator must stop for its database's sake.
struct StorageStop {
  enum class Kind {
    // Writes kept failing (a full disk, a read-only file, a lock held past the busy timeout:
    // Coordinator::storage_failure()), or they fail now and a stop was asked.
    kWritesFail,
    // The file at the storage's path is not the one open (SqliteStorage::file_replaced()).
    kFileReplaced,
  };
  Kind kind = Kind::kWritesFail;
  std::string reason;  // names the file and the cause
};

// nullopt while `coordinator` may go on with `storage` (the file its studies are in). `stop_asked`:
// a stop (Ctrl-C, SIGTERM) was asked; while writes fail, nothing running could be stored, so it
// stops at once. One stat(2).
std::optional<StorageStop> storage_stop(const Coordinator& coordinator,
                                        const SqliteStorage& storage, bool stop_asked);

// What stop_running() did with the trials that ran.
struct StoppedTrials {
  int stored = 0;      // stored as stopped (FAIL, and run first on resume)
  int not_stored = 0;  // the storage refused: still RUNNING in the file, run again on resume
};

// Gives up the running trials (Coordinator::abandon(why)). With `heartbeat_interval`, turns the
// loop for one more interval, so that executors elsewhere hear that their leases are gone and
// stop those jobs.
StoppedTrials stop_running(Coordinator& coordinator, const std::string& why,
                           std::optional<std::chrono::milliseconds> heartbeat_interval);

// After StorageStop::kFileReplaced: copies the open database (SQLite's online backup) to
// "<path>.recovered-<UTC time>" (with "-2", "-3", ... when that exists) and returns that path;
// returns "" and adds why to `reason` when the copy fails too.
std::string save_open_copy(SqliteStorage& storage, std::string& reason);

}  // namespace tuner

#endif  // TUNER_SWEEP_STORAGE_WATCH_H_
