// A file of datasets that processes map read-only instead of reading: the datasets' values are
// used where they lie in the file, so every process of a machine that maps the same file shares
// one copy of them (the kernel's page cache) rather than holding its own.
//
// Layout (version 1, native byte order; a file written on another kind of machine is refused as
// damaged): a 64-byte header, the key's text, a metadata text, a table of the datasets (sample
// shape, counts and where each array lies), then the arrays, each 64-byte aligned: features
// [N, sample...] float32, labels [N] int32 (classification) or targets [N, T] float32
// (regression). The header holds the file's size and a checksum of everything after it, and its
// own checksum: a truncated or damaged file, or one of another key, is never mapped.
//
// Thread safety: the functions share no state; a MappedDatasetFile is immutable.
#ifndef TUNER_TRAINING_DATA_DATASET_FILE_H_
#define TUNER_TRAINING_DATA_DATASET_FILE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "training/data/dataset.h"

namespace tuner::training {

// What map_dataset_file found: the datasets (views of the mapping, which they keep alive) and
// the metadata text stored with them.
struct MappedDatasetFile {
  std::vector<Dataset> datasets;  // in the order they were written; empty ones included
  std::string metadata;
  int64_t file_bytes = 0;
};

// Writes `datasets` (each may be empty) and `metadata` under `key` to `path`, atomically: into a
// temporary file beside it (`path`.tmp<pid>), renamed over `path` once complete, so that a reader
// sees the whole file or none. Returns the file's size. Throws DataError naming `path` when it
// cannot be written (the temporary file removed).
int64_t write_dataset_file(const std::string& path, std::string_view key, std::string_view metadata,
                           std::span<const Dataset* const> datasets);

// Writes the file as write_dataset_file does and maps the file this call wrote (its own
// descriptor, not the path, which another process may have replaced or removed since). The
// body's checksum is not read back: it was taken from the bytes as they were written, and no one
// else writes a file before it is renamed into place; map_dataset_file checks it for every other
// reader. Throws DataError naming `path` when it cannot be written or mapped.
MappedDatasetFile write_and_map_dataset_file(const std::string& path, std::string_view key,
                                             std::string_view metadata,
                                             std::span<const Dataset* const> datasets);

// The bytes write_dataset_file writes for `datasets` under `key` with `metadata`.
int64_t dataset_file_bytes(std::string_view key, std::string_view metadata,
                           std::span<const Dataset* const> datasets);

// Maps `path` when it is a complete, undamaged dataset file of `key`; nullopt otherwise, with
// the reason in *why when it is given ("missing", "another key", "truncated: ...", "damaged:
// checksum ..."). Reading the checksum touches every page once.
std::optional<MappedDatasetFile> map_dataset_file(const std::string& path, std::string_view key,
                                                  std::string* why = nullptr);

// The checksum dataset files use, of the whole of the file `path` (read through a mapping); nullopt
// when it cannot be read. For keys that name a file's contents.
std::optional<uint64_t> file_checksum(const std::string& path);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DATA_DATASET_FILE_H_
