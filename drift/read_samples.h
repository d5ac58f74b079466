// One side of a drift check read from a path of any kind the check takes: idx images, a CSV, or
// the model server's request log (a directory of them or one file). Thread safety: a pure
// function over files.
#ifndef TUNER_DRIFT_READ_SAMPLES_H_
#define TUNER_DRIFT_READ_SAMPLES_H_

#include <cstdint>
#include <filesystem>

#include "drift/idx_samples.h"
#include "drift/samples.h"

namespace tuner::drift {

enum class SourceKind { kIdx, kCsv, kRequestLog };

// A directory, *.jsonl or *.json: a request log; *.csv: a CSV; anything else: idx images.
SourceKind source_kind(const std::filesystem::path& path);

struct ReadOptions {
  // idx: the labels file; empty: the one beside the images (idx_labels_beside).
  std::filesystem::path labels;
  IdxUnits units = IdxUnits::kBytes;  // idx only
  int64_t limit = -1;                 // the first N samples; -1: all
  int64_t skip_bad = 0;               // request logs: RequestLogOptions::skip_bad
};

// Reads `path` as source_kind says. Throws what the reader throws, and Error(kInvalidArgument)
// for idx images whose labels file is neither given nor beside them.
Samples read_samples(const std::filesystem::path& path, const ReadOptions& options = {});

}  // namespace tuner::drift

#endif  // TUNER_DRIFT_READ_SAMPLES_H_
