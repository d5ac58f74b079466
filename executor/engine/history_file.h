// The epochs' metrics of an engine trial and the files that keep them (internal to executor/):
// the history beside a checkpoint (CHECKPOINT.history.json, read back on a resume) and the
// "epochs" of the trial's metrics.json (trial_artifacts.h). Both are versioned by
// kHistoryVersion:
//   {"version": 1, "epochs": [{"epoch": 1, "time": 1767225600.25, "train_loss": ...}, ...]}
// A non-finite metric is written as null and read back as NaN.
//
// Thread safety: pure functions, except the file functions, which need distinct paths when run
// concurrently.
#ifndef TUNER_EXECUTOR_ENGINE_HISTORY_FILE_H_
#define TUNER_EXECUTOR_ENGINE_HISTORY_FILE_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "wire/protocol.h"

namespace tuner::engine {

// The version of the history and metrics.json documents.
constexpr int kHistoryVersion = 1;

// One completed epoch.
struct EpochRecord {
  int64_t epoch = 0;  // 1-based
  Metrics metrics;
  double time = 0;  // when it ended, seconds since the Unix epoch; 0: not recorded
};

// The metrics as a JSON object, NaN and the infinities as null.
nlohmann::json metrics_json(const Metrics& metrics);

// [{"epoch": 1, "time": 1767225600.25, "train_loss": ...}, ...]: the trial's metrics.json and a
// checkpoint's history; MLflow tracking reads the times (tracking/mlflow_sync.h).
nlohmann::json history_json(const std::vector<EpochRecord>& history);

// The position of the best epoch of a non-empty history by `objective`: NaN never wins unless all
// are NaN; ties go to the earlier epoch.
size_t best_epoch(const std::vector<EpochRecord>& history, const std::string& objective,
                  bool maximize);

// The epochs' metrics saved beside the checkpoint at `checkpoint_path`, up to epoch `last` (the
// checkpoint's). A missing or unreadable file, or one of another version, gives fewer epochs,
// which only narrows the best-epoch choice.
std::vector<EpochRecord> read_checkpoint_history(const std::string& checkpoint_path, int64_t last);

// Saves `history` beside the checkpoint at `checkpoint_path`, atomically. Throws
// Error(kUnavailable) naming the file when it cannot be written.
void write_checkpoint_history(const std::string& checkpoint_path,
                              const std::vector<EpochRecord>& history);

// Writes `text` to `path` atomically (a temporary file beside it, then a rename), creating the
// folder. Throws Error(kUnavailable) naming the file when it cannot be written.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_HISTORY_FILE_H_
