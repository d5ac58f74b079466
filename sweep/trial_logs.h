// What a trial leaves to explain itself: a FAIL's reason and log tail (trial system attributes
// "fail_reason" and "log_tail") and the trial's log files, one per attempt, that an executor
// writes to its log dir as trial-<number>-lease-<lease id>.log (executor/job_log.h,
// trial_log_name). A sweep's local executor writes them to "<storage path>.logs"
// (SweepRunOptions::log_dir), where its coordinator also writes those that executors on other
// hosts send (docs/protocol.md, "Trial files").
//
// Thread safety: pure functions, except that the file functions read the file system.
#ifndef TUNER_SWEEP_TRIAL_LOGS_H_
#define TUNER_SWEEP_TRIAL_LOGS_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "trials/frozen_trial.h"

namespace tuner {

// The system attribute that holds a FAIL's last log lines (a JSON string), beside Optuna's
// "fail_reason" (coordinator/study_run.cc).
inline constexpr char kLogTailAttr[] = "log_tail";

// A trial's reason as text (Optuna's "fail_reason"); empty when it has none.
std::string fail_reason(const FrozenTrial& trial);
// A FAIL trial's log tail as text; empty when it has none.
std::string log_tail(const FrozenTrial& trial);

// A FAIL trial's reason and the last line its program wrote, as one line for people
// ("exited with code 1: ValueError: bad learning rate"); the reason alone when the log tail has
// no such line; empty when the trial has no reason.
std::string failure_summary(const FrozenTrial& trial);

// The last `n` lines of a log tail that the program wrote: tuner's own notes ("[tuner] ...")
// and empty lines left out. Each without its newline.
std::vector<std::string> program_lines(std::string_view log_tail, size_t n);

// `text` cut to at most `width` characters (bytes), ending in "..." when cut; its first line only.
std::string shorten(std::string_view text, size_t width);

// Where a sweep's local executor writes its trials' logs: "<storage path>.logs".
std::string default_log_dir(const std::string& storage_path);

// One attempt's log of a trial.
struct TrialLogFile {
  uint64_t lease_id = 0;
  std::filesystem::path path;
};

// Trial `number`'s log files in `dir` (trial-<number>-lease-<id>.log), in lease order (the
// order the attempts ran); empty when there are none or `dir` does not exist.
std::vector<TrialLogFile> trial_log_files(const std::filesystem::path& dir, int number);

}  // namespace tuner

#endif  // TUNER_SWEEP_TRIAL_LOGS_H_
