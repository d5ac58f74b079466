// Which lease wrote a copy of a checkpoint file (docs/protocol.md, "Checkpoints that travel"): a
// sidecar file beside it, FILE + ".lease", holding the lease id in decimal. The coordinator keeps
// one beside each checkpoint file a preempted executor sent; an executor keeps one beside the
// checkpoint of each trial it runs. Lease ids grow with time, so a copy with the larger id is the
// newer; a re-run fetches the coordinator's copy when its lease is newer than the local one's.
//
// Thread safety: free functions without state; a sidecar is replaced whole (written under a
// temporary name and renamed), so that a reader sees the old id or the new one.
#ifndef TUNER_EXECUTOR_CHECKPOINT_WRITER_H_
#define TUNER_EXECUTOR_CHECKPOINT_WRITER_H_

#include <cstdint>
#include <filesystem>
#include <string>

namespace tuner {

// The sidecar of `file`: file + ".lease".
std::filesystem::path checkpoint_writer_path(const std::filesystem::path& file);

// The lease recorded beside `file`; 0 when there is no sidecar or it does not hold a lease id.
uint64_t read_checkpoint_writer(const std::filesystem::path& file);

// Records `lease` beside `file`. Returns "" when done, else why not (naming the sidecar).
std::string write_checkpoint_writer(const std::filesystem::path& file, uint64_t lease);

}  // namespace tuner

#endif  // TUNER_EXECUTOR_CHECKPOINT_WRITER_H_
