// A finished trial's files on their way to the coordinator (docs/protocol.md, "Trial files"),
// for an executor that does not share a file system with it (ExecutorOptions::send_files).
//
// plan_trial_files() chooses what goes: the attempt's log first, then the regular files of the
// trial's artifacts folder in path order (symbolic links and anything else that is not a regular
// file are not followed or sent), each while the files chosen stay within the limit per trial; the
// others stay on this host (FILES_LEFT names them). A FileSender then sends the chosen files as
// FILE chunks of at most kMaxFileChunkBytes, at most kFileWindow chunks unanswered at once (the
// coordinator's FILE_ACKs pace it), one file after another.
//
// Thread safety: plan_trial_files() runs on a job thread; a FileSender is used by the executor's
// loop thread only.
#ifndef TUNER_EXECUTOR_TRIAL_FILES_H_
#define TUNER_EXECUTOR_TRIAL_FILES_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "executor/unique_fd.h"
#include "wire/protocol.h"

namespace tuner {

// The default limit on the bytes of one trial's files that are sent (1 GiB).
inline constexpr uint64_t kDefaultMaxTrialFilesBytes = uint64_t{1} << 30;
// FILE chunks sent and not yet answered, at most, per trial.
inline constexpr size_t kFileWindow = 4;
// Times one file is started over (a reconnect, chunks unanswered for coordinator_timeout)
// before it is given up.
inline constexpr int kMaxFileRestarts = 3;

// One file to send.
struct TrialFile {
  TrialFileKind kind = TrialFileKind::kLog;
  std::string path;    // as FILE names it: empty for the log, else its path in the trial's folder
  std::string source;  // where it is on this host
  uint64_t size = 0;   // its bytes when planned; what is sent
  // A file of the lease's own checkpoint (FILE `checkpoint`): `path` is its name there.
  bool checkpoint = false;
};

// What plan_trial_files() chose.
struct TrialFilesPlan {
  std::vector<TrialFile> send;  // in sending order: the log first
  std::vector<LeftFile> left;   // absolute paths on this host
  uint64_t limit_bytes = 0;

  bool empty() const { return send.empty() && left.empty(); }
};

// The files of an attempt whose log is `log_path` (empty or missing: none) and whose artifacts
// folder is `folder` (empty or missing: none), with at most `limit_bytes` bytes chosen to send.
// A file whose path in the folder is no FILE path (trial_file_path_problem, or not UTF-8) is
// left too. Never throws: what cannot be read is left out, and named in `problems` (if given).
TrialFilesPlan plan_trial_files(const std::string& log_path, const std::string& folder,
                                uint64_t limit_bytes, std::vector<std::string>* problems = nullptr);

// The size and modification time of each file of a checkpoint (checkpoint_file_names) that
// exists, by name: what they were before a job ran, to tell which ones it wrote.
using CheckpointStamps = std::map<std::string, std::pair<uint64_t, int64_t>>;

// The files that travel with the checkpoint at `checkpoint` (as fetch_own_checkpoint fetches
// them), in sending order: the best epoch's "model.ckpt", the engine's history (NAME +
// ".history.json") and a PBT segment's pause record (NAME + ".paused.json",
// executor/checkpoint_writer.h) in its folder, then the checkpoint itself, last, so that a copy
// of a checkpoint has its companions.
std::vector<std::string> checkpoint_file_names(const std::filesystem::path& checkpoint);
CheckpointStamps stamp_checkpoint(const std::filesystem::path& checkpoint);

// The files of the checkpoint at `checkpoint` that a stopped job wrote (absent from `before`, or
// of another size or modification time), to send to the coordinator as FILEs marked
// `checkpoint`, in checkpoint_file_names' order, within `limit_bytes`; the others past it are
// left. A file the job did not write is not sent: the coordinator has it already, or a newer
// copy. Never throws; what cannot be read is left out and named in `problems` (if given).
TrialFilesPlan plan_checkpoint_files(const std::filesystem::path& checkpoint,
                                     const CheckpointStamps& before, uint64_t limit_bytes,
                                     std::vector<std::string>* problems = nullptr);

// "2 file(s) of 1.5 GiB in all stay on host H, past the limit of 1 GiB per trial (...): PATH
// (SIZE), ...": what FILES_LEFT says, for the trial's log, the executor's and the coordinator's.
std::string files_left_text(const std::vector<LeftFile>& left, uint64_t limit_bytes,
                            const std::string& host);

class FileSender {
 public:
  FileSender(uint64_t lease_id, std::vector<TrialFile> files);

  // The next chunk to send now; nullopt when the window is full or nothing is left to read. A
  // file that cannot be read (gone, changed size) is given up, and why is appended to
  // `problems`.
  std::optional<FileChunkMessage> next_chunk(std::vector<std::string>& problems);
  // `chunk` (from next_chunk()) could not be queued: it goes again next.
  void unsend(const FileChunkMessage& chunk);
  // The coordinator's answer. A refusal gives up the file (lease_ended: every file) and returns
  // why, for the log; empty otherwise. Answers to no chunk in flight are ignored.
  std::string on_ack(const FileAckMessage& ack);
  // The chunks in flight are lost (a new connection, a coordinator that forgot this executor):
  // the first file they belong to goes again from its start, and those after it. A file started
  // over more than kMaxFileRestarts times is given up, and why is returned; else empty.
  std::string restart();
  // For the timer that runs every coordinator_timeout: chunks in flight and no answer since the
  // last call mean they were lost: restart(). Returns restart()'s note.
  std::string check_progress();
  // Nothing more is sent (the coordinator gave up the lease).
  void give_up();

  // Every file sent and answered, or given up.
  bool done() const;
  uint64_t lease_id() const { return lease_id_; }
  // Files whose every chunk the coordinator accepted, and their bytes.
  int files_delivered() const { return files_delivered_; }
  uint64_t bytes_delivered() const { return bytes_delivered_; }

 private:
  struct InFlight {
    size_t file = 0;
    uint64_t offset = 0;
    uint64_t bytes = 0;
    bool last = false;  // the file's last chunk
  };

  void give_up_file(size_t index);
  // Moves past files fully read or given up; opens the next one.
  void advance(std::vector<std::string>& problems);
  // Starts file `index` again from its start.
  void rewind_to(size_t index);

  // Constant after construction.
  const uint64_t lease_id_;
  const std::vector<TrialFile> files_;

  std::vector<bool> given_up_;
  std::vector<int> restarts_;
  size_t current_ = 0;        // the file being read
  UniqueFd fd_;               // its descriptor, once opened
  uint64_t next_offset_ = 0;  // of its next chunk
  bool read_all_ = false;     // its last chunk was read
  std::deque<InFlight> in_flight_;
  bool answered_ = false;  // an answer came since the last check_progress()
  int files_delivered_ = 0;
  uint64_t bytes_delivered_ = 0;
};

}  // namespace tuner

#endif  // TUNER_EXECUTOR_TRIAL_FILES_H_
