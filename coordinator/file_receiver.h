// FileReceiver: the trial files that executors send (FILE; docs/protocol.md, "Trial files"),
// written where the coordinator's own executors write them: an attempt's log to its log file, a
// file of a trial's artifacts folder below that folder.
//
// Never outside it: a path must pass trial_file_path_problem() (relative, no "." or ".."
// components), and every folder on the way below the trial's folder must be a folder, not a
// symbolic link or anything else. A file is written under a temporary name in its folder
// (".tuner-incoming-<lease>-<n>") and renamed into place when its last chunk is written, so that
// a half-received file is never taken for a whole one. One file at a time per lease: a chunk of
// another file, or one at offset 0, drops the lease's file under way.
//
// A file that cannot be written (a full disk, a folder that cannot be made) is refused
// (FILE_ACK accepted = false) and logged with its path; nothing else changes.
//
// A file of a lease's checkpoint (FILE marked `checkpoint`, from a preempted trial) goes to the
// folder of the lease's own checkpoint. A later lease's copy of a file there is never replaced by
// an earlier lease's (lease ids grow with time): such a file is refused. Which lease sent each
// such file is recorded beside it (executor/checkpoint_writer.h), where a restarted coordinator
// finds it and CHECKPOINT_DATA reports it (`written_by_lease`).
//
// Thread safety: not thread-safe; the coordinator's loop thread uses it.
#ifndef TUNER_COORDINATOR_FILE_RECEIVER_H_
#define TUNER_COORDINATOR_FILE_RECEIVER_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "executor/unique_fd.h"
#include "wire/protocol.h"

namespace tuner {

// Where one lease's files go on this host.
struct FileDestination {
  std::string log_path;  // the attempt's log file; empty: logs are refused
  // The trial's artifacts folder (made when missing); empty: artifacts are refused.
  std::string artifacts_folder;
  std::string log_refusal;        // why logs are refused, when log_path is empty
  std::string artifacts_refusal;  // why artifacts are refused, when artifacts_folder is empty
  // The folder of the lease's own checkpoint (its lineage's first trial's folder; made when
  // missing), where the files of a FILE marked `checkpoint` go; empty: they are refused, for
  // checkpoint_refusal.
  std::string checkpoint_folder;
  std::string checkpoint_refusal;
};

class FileReceiver {
 public:
  using Log = std::function<void(const std::string&)>;

  // `log` gets a line for every file that cannot be written.
  explicit FileReceiver(Log log) : log_(std::move(log)) {}
  // Removes the files under way.
  ~FileReceiver();
  FileReceiver(const FileReceiver&) = delete;
  FileReceiver& operator=(const FileReceiver&) = delete;

  // Writes `chunk` of the lease's file to `where` and returns the answer; `lease` names the
  // lease in log lines ("lease 7 (trial 3, ...)").
  FileAckMessage receive(const FileChunkMessage& chunk, const FileDestination& where,
                         const std::string& lease);
  // Drops (removes) the files under way of the leases `current` says are not.
  void drop_ended(const std::function<bool(uint64_t lease_id)>& current);
  // Files under way.
  size_t partial_files() const { return partial_.size(); }

 private:
  struct Partial {
    TrialFileKind kind = TrialFileKind::kLog;
    bool checkpoint = false;
    std::string path;
    uint64_t size = 0;
    uint64_t next_offset = 0;
    std::filesystem::path temp;
    std::filesystem::path target;
    UniqueFd fd;
  };

  // The file `chunk` starts, opened under a temporary name; or the refusal's reason.
  std::string start(const FileChunkMessage& chunk, const FileDestination& where, Partial& file);
  void drop(uint64_t lease_id);

  // Constant after construction.
  const Log log_;

  std::map<uint64_t, Partial> partial_;  // by lease
  // The lease whose copy is in place, by the path of each checkpoint file received.
  std::map<std::filesystem::path, uint64_t> checkpoint_writers_;
  uint64_t temp_names_ = 0;
};

}  // namespace tuner

#endif  // TUNER_COORDINATOR_FILE_RECEIVER_H_
