// The coordinator <-> executor messages and their wire encoding (docs/protocol.md).
//
// A message travels as ZeroMQ multipart frames (this file knows nothing of ZeroMQ: a frame is a
// std::string). Exactly two frames, after any routing envelope a ROUTER socket adds:
//   frame 0, the header, 8 bytes: the magic "TUNR", the protocol version (uint16, big-endian) and
//            the message type (uint16, big-endian; the values of MessageType below never change);
//   frame 1, the body: a UTF-8 JSON object whose members are the fields of the type's struct,
//            named as in the struct (e.g. {"lease_id":7,"step":3,"metrics":{"loss":0.25}}).
// A body may carry members this build does not know (they are ignored), so a later version may
// add optional fields without bumping kProtocolVersion; removing or retyping one bumps it.
//
// Doubles (metrics, values) are JSON numbers, except NaN and the infinities, which JSON cannot
// hold: they travel as the strings "nan", "inf" and "-inf" so that a diverged trial's NaN reaches
// the coordinator to be judged. Parameters keep their types (trials/params_json.h).
//
// decode() never crashes or reads out of bounds on any input: anything malformed throws a
// ProtocolError naming the problem and the field, for the coordinator to log and answer with
// ERROR.
//
// Thread safety: the functions are pure and may be called from any thread.
#ifndef TUNER_WIRE_PROTOCOL_H_
#define TUNER_WIRE_PROTOCOL_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "trials/error.h"
#include "trials/param_value.h"

namespace tuner {

inline constexpr uint16_t kProtocolVersion = 1;
inline constexpr char kProtocolMagic[4] = {'T', 'U', 'N', 'R'};
inline constexpr size_t kProtocolHeaderBytes = 8;
// The largest message, all frames together, that encode() produces and decode() accepts.
inline constexpr size_t kMaxMessageBytes = size_t{16} << 20;  // 16 MiB

// The timing both ends start from: how often each side sends HEARTBEAT, and how long a lease (or
// an executor) goes unheard before the coordinator takes it back (forgets it).
inline constexpr std::chrono::milliseconds kDefaultHeartbeatInterval{1000};
inline constexpr std::chrono::milliseconds kDefaultLeaseTimeout{5000};

// Thrown by encode() and decode(); code() is kInvalidArgument.
class ProtocolError : public Error {
 public:
  explicit ProtocolError(const std::string& message)
      : Error(ErrorCode::kInvalidArgument, message) {}
};

// What the coordinator tells a running job after a REPORT. The same three outcomes as a
// scheduler's decision (search/schedulers/scheduler.h); trials/ cannot depend on search/, so the
// coordinator maps one to the other.
enum class JobDecision {
  kContinue,
  kStop,   // prune: terminate the job; the trial ends as PRUNED
  kPause,  // checkpoint (where the job can) and end; the trial may be resumed later
};

std::string_view to_string(JobDecision decision);  // "continue", "stop", "pause"
std::optional<JobDecision> parse_job_decision(std::string_view name);

// Metric name -> value. Values may be NaN or infinite.
using Metrics = std::map<std::string, double, std::less<>>;

// The wire values; never renumber.
enum class MessageType : uint16_t {
  kHello = 1,
  kReady = 2,
  kTrial = 3,
  kReport = 4,
  kDecision = 5,
  kResult = 6,
  kFail = 7,
  kAck = 8,
  kHeartbeat = 9,
  kError = 10,
  kBye = 11,
  kStoreSet = 12,
  kStoreKeys = 13,
  kFile = 14,
  kFileAck = 15,
  kFilesLeft = 16,
  kCheckpointGet = 17,
  kCheckpointData = 18,
};

std::string_view to_string(MessageType type);  // "HELLO", "READY", ...

struct GpuInfo {
  int index = 0;              // the device ordinal on the executor's host
  std::string name;           // e.g. "NVIDIA H200"
  uint64_t memory_bytes = 0;  // total device memory
  bool operator==(const GpuInfo&) const = default;
};

struct Resources {
  int cpu_slots = 0;  // trials that may run at once on the CPU
  std::vector<GpuInfo> gpus;
  bool operator==(const Resources&) const = default;
};

// A trial an executor holds (running, queued, or finished and not ACKed) when it says HELLO, so
// that a restarted coordinator can take it back (docs/protocol.md, "A coordinator restart").
struct HeldLease {
  uint64_t lease_id = 0;
  std::string study_name;
  int64_t trial_id = -1;
  std::vector<int> gpus;  // the GPUs its TRIAL gave it
  int node = 0;           // its TRIAL's node (optional on the wire: absent is 0)
  bool operator==(const HeldLease&) const = default;
};

// executor -> coordinator, first message of a connection.
struct HelloMessage {
  std::string executor_id;  // stable across reconnects of one executor process
  std::string hostname;
  int64_t pid = 0;
  Resources resources;
  std::vector<HeldLease> leases;  // optional on the wire (absent: none)
  bool operator==(const HelloMessage&) const = default;
};

// executor -> coordinator: ready for work.
struct ReadyMessage {
  int free_slots = 0;
  std::vector<int> free_gpus;  // indices of GPUs no running trial holds
  bool operator==(const ReadyMessage&) const = default;
};

// coordinator -> executor: run this trial under this lease.
struct TrialMessage {
  uint64_t lease_id = 0;  // unique per issue of a trial: a re-issued trial gets a new lease
  std::string study_name;
  int64_t trial_id = -1;
  int number = -1;
  int attempt = 0;  // 0 on the first issue, +1 per re-issue after a lost lease
  Params params;
  std::string job_json;  // the job (engine or command) as JSON text, parsed by the executor
  int64_t heartbeat_interval_ms = 0;
  std::vector<int> gpus;                       // GPU indices given to this trial
  std::optional<std::string> checkpoint_path;  // resume from here when set
  // A PBT segment's parent checkpoint: the executor copies it (and its engine history beside it)
  // to checkpoint_path before the job starts, unless a file is there already (a re-run's).
  // Optional on the wire: absent is unset.
  std::optional<std::string> start_checkpoint_path;
  // A PBT segment's last step: the executor pauses the job (as a DECISION pause would) at its
  // first report at or past it, also while the coordinator is out of reach. Optional on the
  // wire: absent is unset.
  std::optional<int64_t> pause_at_step;
  // A trial whose ranks span `nodes` executors (an engine job's "nodes"; docs/engine_jobs.md):
  // this executor runs the ranks of node `node`, [node * ranks / nodes, (node + 1) * ranks /
  // nodes). Node 0 holds rank 0 and alone reports and sends the trial's RESULT; the others send
  // RESULT (no metrics) or FAIL for their part. The nodes meet through the coordinator's store
  // (STORE_SET, STORE_KEYS). Optional on the wire: absent is node 0 of 1.
  int node = 0;
  int nodes = 1;
  bool operator==(const TrialMessage&) const = default;
};

// executor -> coordinator: an intermediate value. Answered by DECISION.
struct ReportMessage {
  uint64_t lease_id = 0;
  int64_t step = 0;
  Metrics metrics;
  bool operator==(const ReportMessage&) const = default;  // false when a metric is NaN
};

// coordinator -> executor: the answer to a REPORT.
struct DecisionMessage {
  uint64_t lease_id = 0;
  JobDecision decision = JobDecision::kContinue;
  bool operator==(const DecisionMessage&) const = default;
};

// executor -> coordinator: the job finished. Answered by ACK.
struct ResultMessage {
  uint64_t lease_id = 0;
  Metrics metrics;             // the job's final metrics
  std::vector<double> values;  // the objective values, one per study direction
  // The metrics the job wrote as JSON integers: stored as integers. Optional on the wire.
  std::vector<std::string> integer_metrics;
  // The most GPU memory the run's processes held, where the executor measured it. Optional on
  // the wire.
  std::optional<uint64_t> gpu_memory_peak_bytes;
  // The job was paused (a DECISION pause, or TRIAL's pause_at_step) at its report of this step;
  // `metrics` are then its last report's. Optional on the wire: absent is unset.
  std::optional<int64_t> paused_at_step;
  bool operator==(const ResultMessage&) const = default;
};

// executor -> coordinator: the job failed. Answered by ACK.
struct FailMessage {
  uint64_t lease_id = 0;
  std::string reason;            // e.g. "exited with code 3", "killed by signal 9 (SIGKILL)"
  std::optional<int> exit_code;  // set when the job was a process that exited
  std::string log_tail;          // the last lines of the job's log
  std::optional<uint64_t> gpu_memory_peak_bytes;  // as ResultMessage's
  bool operator==(const FailMessage&) const = default;
};

// coordinator -> executor: RESULT or FAIL was committed (accepted) or refused (e.g. a stale
// RESULT for a trial re-issued under another lease: accepted = false, reason says why).
struct AckMessage {
  uint64_t lease_id = 0;
  bool accepted = true;
  std::string reason;
  bool operator==(const AckMessage&) const = default;
};

// Both ways: the leases the sender holds (executor) or still honours (coordinator).
struct HeartbeatMessage {
  std::vector<uint64_t> lease_ids;
  bool operator==(const HeartbeatMessage&) const = default;
};

// Both ways: the peer sent something this side could not accept.
struct ErrorMessage {
  std::string message;
  // The sender will not work with this peer (an executor id another live executor holds): the
  // peer stops instead of saying HELLO again. Optional on the wire (absent: false).
  bool refused = false;
  // The coordinator does not know this connection (it restarted, or forgot a silent executor):
  // the executor says HELLO again, as after any reconnect. Optional on the wire (absent: false).
  bool say_hello = false;
  bool operator==(const ErrorMessage&) const = default;
};

// A lease whose trial an executor stopped because the executor itself was stopped (SIGTERM from
// Slurm's preemption or time limit, a spot instance's notice, a deliberate stop): the trial did
// not fail by its own error.
struct PreemptedLease {
  uint64_t lease_id = 0;
  // A checkpoint was at the TRIAL's checkpoint_path when the trial's job ended (the job saved
  // one in its grace, or an earlier attempt of its lineage did).
  bool checkpoint = false;
  bool operator==(const PreemptedLease&) const = default;
};

// Both ways: the sender is leaving.
struct ByeMessage {
  // From an executor that was stopped: the leases whose trials it stopped to leave, each at most
  // once. The coordinator runs those trials again at once without counting the stopped attempt
  // (docs/protocol.md, "Preemption"). Optional on the wire: absent (as from older executors, and
  // always from a coordinator) is empty, and the sender's leases are lost as when it vanishes.
  std::vector<PreemptedLease> preempted;
  bool operator==(const ByeMessage&) const = default;
};

// The rendezvous store of a multi-node trial (TrialMessage::nodes > 1): a key/value store per
// attempt, held by the coordinator, where the nodes' ranks publish what the others need (Gloo
// addresses, the NCCL id). Keys are written once; values are bytes (hex on the wire).
inline constexpr size_t kMaxStoreKeyBytes = 256;
inline constexpr size_t kMaxStoreValueBytes = size_t{64} << 10;  // 64 KiB

// executor -> coordinator: set `key` in the store of the trial of lease `lease_id` (a lease of
// this executor). Not answered; every other node of the trial gets STORE_KEYS. Sending the same
// key and value again is harmless; another value for a key already set is refused (ERROR).
struct StoreSetMessage {
  uint64_t lease_id = 0;
  std::string key;    // 1..kMaxStoreKeyBytes bytes
  std::string value;  // at most kMaxStoreValueBytes bytes, any bytes
  bool operator==(const StoreSetMessage&) const = default;
};

// coordinator -> executor: keys of the store of the trial of lease `lease_id` (this executor's
// lease) that other nodes set; after a reconnect, the whole store again.
struct StoreKeysMessage {
  uint64_t lease_id = 0;
  std::map<std::string, std::string> entries;  // key -> value, as in StoreSetMessage
  bool operator==(const StoreKeysMessage&) const = default;
};

// A trial's files (docs/protocol.md, "Trial files"): an executor that does not share a file
// system with the coordinator sends a finished trial's log and the files of its artifacts folder
// before the trial's RESULT or FAIL, one file after another, each in chunks of at most
// kMaxFileChunkBytes (base64 on the wire), every chunk answered by FILE_ACK.
inline constexpr size_t kMaxFileChunkBytes = size_t{1} << 20;  // 1 MiB
inline constexpr size_t kMaxFilePathBytes = 1024;

enum class TrialFileKind {
  kLog,       // the attempt's log: the coordinator names it (trial-<N>-lease-<L>.log)
  kArtifact,  // a file of the trial's artifacts folder (<artifacts_dir>/trial-<N>/)
};

std::string_view to_string(TrialFileKind kind);  // "log", "artifact"

// Why `path` cannot name a file inside a trial's folder; empty when it can: a relative path of
// 1..kMaxFilePathBytes bytes, '/'-separated components that are neither empty, "." nor "..", no
// NUL byte.
std::string trial_file_path_problem(std::string_view path);

// executor -> coordinator: bytes [offset, offset + data.size()) of one of the trial's files, of
// `size` bytes in all. A file's chunks come in order from offset 0; the one that ends at `size`
// completes it (a file of 0 bytes is one empty chunk). A chunk at offset 0 starts the file over.
// Answered by FILE_ACK.
struct FileChunkMessage {
  uint64_t lease_id = 0;
  TrialFileKind kind = TrialFileKind::kLog;
  // kArtifact: its path in the trial's folder (trial_file_path_problem); kLog: empty.
  std::string path;
  uint64_t size = 0;  // the whole file's bytes
  uint64_t offset = 0;
  std::string data;  // at most kMaxFileChunkBytes bytes, any bytes; offset + data.size() <= size
  // A kArtifact of the folder of the lease's own checkpoint (TRIAL's checkpoint_path, its
  // lineage's first trial's folder) instead of the trial's folder: `path` is a file name there
  // (checkpoint_file_problem). Sent by a stopped executor for its preempted trials. Optional on
  // the wire (absent: false; a coordinator that does not know it keeps the file in the trial's
  // folder).
  bool checkpoint = false;
  bool operator==(const FileChunkMessage&) const = default;
};

// coordinator -> executor: the answer to a FILE chunk (the same lease, kind, path and offset).
struct FileAckMessage {
  uint64_t lease_id = 0;
  TrialFileKind kind = TrialFileKind::kLog;
  std::string path;
  uint64_t offset = 0;
  // False: the coordinator takes nothing more of this file (`reason` says why: it cannot write
  // it, the chunk came out of order); the executor goes on with the next file.
  bool accepted = true;
  // The lease is not current (it expired, its trial was re-run): nothing more of any file of it.
  // Optional on the wire (absent: false).
  bool lease_ended = false;
  std::string reason;
  bool operator==(const FileAckMessage&) const = default;
};

// A file that stays on the executor's host.
struct LeftFile {
  std::string path;  // absolute, on the executor's host
  uint64_t size = 0;
  bool operator==(const LeftFile&) const = default;
};

// executor -> coordinator, before the trial's first FILE: the trial's files that are not sent
// because they would take its files past the executor's limit. Not answered.
struct FilesLeftMessage {
  uint64_t lease_id = 0;
  std::string hostname;      // where they stay
  uint64_t limit_bytes = 0;  // the executor's limit per trial
  std::vector<LeftFile> files;
  bool operator==(const FilesLeftMessage&) const = default;
};

// Checkpoints that travel (docs/protocol.md, "Checkpoints that travel"): an executor that does not
// see a checkpoint its trial starts from on its own host fetches the coordinator's copy (the one
// the trial's files brought there), one chunk of at most kMaxFileChunkBytes per request.
enum class CheckpointOf {
  kStart,  // TRIAL's start_checkpoint_path: a PBT segment's parent's checkpoint
  kOwn,    // TRIAL's checkpoint_path: where a re-run resumes from
};

std::string_view to_string(CheckpointOf of);  // "start", "own"

// Why `file` cannot name a file in a checkpoint's folder; empty when it can: a file name of 1 to
// 255 bytes, neither "." nor "..", without '/' or a NUL byte (the checkpoint's own name, an
// engine checkpoint's "resume.ckpt.history.json" beside it, its best epoch's "model.ckpt").
std::string checkpoint_file_problem(std::string_view file);

// executor -> coordinator: bytes from `offset` of `file` in the folder of a checkpoint of the
// lease. Answered by CHECKPOINT_DATA.
struct CheckpointGetMessage {
  uint64_t lease_id = 0;
  CheckpointOf of = CheckpointOf::kStart;
  std::string file;  // checkpoint_file_problem
  uint64_t offset = 0;
  // Only the file's size and written_by_lease, no bytes (optional on the wire, "stat"; a peer that
  // does not know it answers with bytes).
  bool stat = false;
  bool operator==(const CheckpointGetMessage&) const = default;
};

// coordinator -> executor: bytes [offset, offset + data.size()) of the file asked for, of `size`
// bytes in all (at most kMaxFileChunkBytes at once; fewer only at the file's end). found = false:
// the coordinator has no such file for the lease, `reason` says why (no data then).
struct CheckpointDataMessage {
  uint64_t lease_id = 0;
  CheckpointOf of = CheckpointOf::kStart;
  std::string file;
  uint64_t offset = 0;
  uint64_t size = 0;
  std::string data;
  bool found = true;
  std::string reason;
  // The lease whose executor sent the coordinator's copy of the file (a preempted trial's
  // checkpoint); 0: not known (a file its own host wrote, or sent by an older peer). Optional on
  // the wire, omitted when 0.
  uint64_t written_by_lease = 0;
  bool operator==(const CheckpointDataMessage&) const = default;
};

using Message =
    std::variant<HelloMessage, ReadyMessage, TrialMessage, ReportMessage, DecisionMessage,
                 ResultMessage, FailMessage, AckMessage, HeartbeatMessage, ErrorMessage, ByeMessage,
                 StoreSetMessage, StoreKeysMessage, FileChunkMessage, FileAckMessage,
                 FilesLeftMessage, CheckpointGetMessage, CheckpointDataMessage>;

MessageType message_type(const Message& message);

// The two frames of `message`. Strings must be UTF-8 (invalid bytes are sent as U+FFFD).
// Throws ProtocolError when a parameter is not finite, a store entry or file chunk breaks its
// bounds, or the encoded message exceeds kMaxMessageBytes (a sender truncates its log tail
// first).
std::vector<std::string> encode(const Message& message);

// The message in `frames` (the frames after any routing envelope).
// Throws ProtocolError, naming the problem, for: a frame count other than 2, more than
// kMaxMessageBytes in all, a header of the wrong size or magic, another protocol version, an
// unknown type, a body that is not a JSON object, a missing or mistyped field, e.g.
// "REPORT.metrics.loss: expected a number", a store key or value out of its bounds or a value
// that is not hex, a file chunk's data that is not base64 or breaks its bounds, a file path that
// could leave the trial's folder, a BYE that lists a preempted lease twice.
Message decode(std::span<const std::string> frames);

}  // namespace tuner

#endif  // TUNER_WIRE_PROTOCOL_H_
