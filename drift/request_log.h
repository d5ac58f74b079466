// The request log of `tuner serve-model` (docs/drift.md, "The request log"), read back as
// Samples: a directory of files requests-<UTC yyyymmddTHHMMSS>-<seq>.jsonl, each line one logged
// request:
//   {"time": "2026-12-02T11:00:00.123Z", "model": "fmnist", "version": 3,
//    "inputs": [[raw input values of sample 0, flattened], ...],
//    "outputs": [[logits of sample 0], ...], "predicted": [class of sample 0, ...]}
// Thread safety: a pure function over files.
#ifndef TUNER_DRIFT_REQUEST_LOG_H_
#define TUNER_DRIFT_REQUEST_LOG_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "drift/samples.h"

namespace tuner::drift {

struct RequestLogOptions {
  // How many malformed lines are skipped (counted in SampleSource::skipped_lines) before one is
  // an error. Default 0: the first malformed line is an error.
  int64_t skip_bad = 0;
  // Read at most this many samples (the first ones, in log order); -1 (the default): all.
  int64_t limit = -1;
};

// The log files of a directory, in the order they were written: names requests-TIME-SEQ.jsonl
// sorted by TIME, then by SEQ as a number; other files are left out. Throws Error(kNotFound) when
// `dir` holds none.
std::vector<std::filesystem::path> request_log_files(const std::filesystem::path& dir);

// Reads a log directory (its request_log_files) or one log file of any name. Every request's
// samples must have the first request's input width, and its outputs (when the log has them) the
// first's output width; "outputs" and "predicted" are in every request or in none. A file's last
// line that has no newline and is not JSON is taken as being written and left out (a note says
// so). Throws Error(kInvalidArgument) naming the file and line of a malformed line, past
// options.skip_bad of them, or for a log without samples; Error(kNotFound) for a missing path.
Samples read_request_log(const std::filesystem::path& path, const RequestLogOptions& options = {});

}  // namespace tuner::drift

#endif  // TUNER_DRIFT_REQUEST_LOG_H_
