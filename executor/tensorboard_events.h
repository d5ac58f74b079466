// TensorBoard event files: a trial's scalars (one value per metric and step) as TensorBoard reads
// them (`tensorboard --logdir`, tensorboard's EventAccumulator), written without TensorFlow.
//
// The format: a file `events.out.tfevents.<seconds>.<host>` of TFRecords (a little-endian u64
// length, its masked CRC-32C, the data, the data's masked CRC-32C), each record a serialized
// tensorflow.Event: the first names the file version ("brain.Event:2"), each later one a wall time,
// a step and a Summary of simple_value scalars, one per metric. The protobuf messages are written
// by hand here (six fields), so the engine needs no TensorFlow or generated code.
//
// Thread safety: a writer is used by one thread at a time.
#ifndef TUNER_EXECUTOR_TENSORBOARD_EVENTS_H_
#define TUNER_EXECUTOR_TENSORBOARD_EVENTS_H_

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include "wire/protocol.h"

namespace tuner {

// CRC-32C (Castagnoli) of `data`, as TFRecord checksums use it before masking.
uint32_t crc32c(std::string_view data);

class TensorBoardWriter {
 public:
  // Creates `dir` when missing and a new event file in it, and writes its version record.
  // Throws Error(kUnavailable) naming the file when it cannot be created or written.
  explicit TensorBoardWriter(const std::filesystem::path& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // One event at `step`: every finite value of `scalars` under its name as the tag (NaN and the
  // infinities are left out; TensorBoard cannot plot them), flushed to the file. Throws
  // Error(kUnavailable) naming the file when it cannot be written.
  void add_scalars(int64_t step, const Metrics& scalars, double wall_time_seconds);

  const std::filesystem::path& path() const { return path_; }

 private:
  void write_record(const std::string& data);

  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

}  // namespace tuner

#endif  // TUNER_EXECUTOR_TENSORBOARD_EVENTS_H_
