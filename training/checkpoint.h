// Checkpoints: everything a training run needs to continue exactly where it stopped, in one
// versioned binary file with a checksum, written atomically.
//
// File layout (little-endian), format version 1:
//   magic    8 bytes "TUNERCKP"
//   version  u32 (kCheckpointFormatVersion)
//   length   u64: bytes of the body that follows
//   body     fields in the order of struct Checkpoint; a string or array is a u64 count
//            followed by its elements (bytes, f32, u64), scalars are i64/u64/f64
//   crc32    u32 of magic, version, length and body (zlib's CRC-32)
#ifndef TUNER_TRAINING_CHECKPOINT_H_
#define TUNER_TRAINING_CHECKPOINT_H_

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tuner::training {

inline constexpr uint32_t kCheckpointFormatVersion = 1;

// A checkpoint that cannot be written or read: the message names the file and what is wrong
// (corrupt, truncated, another format version, a model that does not match).
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The state of a training run at an epoch boundary. Plain data; Trainer::checkpoint() fills it
// and Trainer::restore() applies it.
struct Checkpoint {
  std::string model_spec;              // the model spec JSON (ModelSpec::json)
  std::vector<float> parameters;       // ParameterArena::values(), padding included
  std::vector<float> buffers;          // ParameterArena::buffer_values() (running stats)
  std::vector<float> optimizer_state;  // Optimizer::state()
  int64_t optimizer_steps = 0;         // Optimizer::steps()
  int64_t lr_step = 0;                 // position in the LR schedule (optimizer steps taken)
  std::array<uint64_t, 4> data_rng{};  // the training order's Rng state
  // Per Dropout layer, in depth-first model order: its mask stream's seed and forward count.
  std::vector<uint64_t> dropout_seeds;
  std::vector<uint64_t> dropout_calls;
  int64_t epoch = 0;  // epochs completed
  // Early stopping: the best validation value so far, its epoch, epochs since it improved.
  double best_value = 0.0;
  int64_t best_epoch = 0;
  int64_t epochs_without_improvement = 0;
};

// Writes `checkpoint` to `path` atomically: a temporary file beside it, flushed and fsync'ed,
// then renamed over `path` (a reader sees the old file or the new one, never a partial one).
// Throws CheckpointError naming the file.
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);
// The size in bytes of the file save_checkpoint writes for `checkpoint`.
int64_t checkpoint_file_size(const Checkpoint& checkpoint);
// Reads a checkpoint. Throws CheckpointError naming the file when it cannot be read, is not a
// checkpoint (magic), has another format version, is truncated, or fails its checksum.
Checkpoint load_checkpoint(const std::string& path);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_CHECKPOINT_H_
