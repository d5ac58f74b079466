// JobLog: the per-trial log of a job, written to a file and its tail kept in memory.
//
// The tail (the last `tail_lines` lines, at most `tail_bytes` bytes in all) is what a FAIL
// message carries; the file holds everything. Write errors of the file (a full disk) are not
// fatal to the job: after the first one the file is left alone and the tail notes it.
//
// Thread safety: not thread-safe; one job's reader owns it.
#ifndef TUNER_EXECUTOR_JOB_LOG_H_
#define TUNER_EXECUTOR_JOB_LOG_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "executor/unique_fd.h"

namespace tuner {

// The name of an attempt's log file in a log directory: "trial-<number>-lease-<lease id>.log"
// (sweep/trial_logs.h finds them by it).
std::string trial_log_name(int64_t number, uint64_t lease_id);

class JobLog {
 public:
  // Appends to `path` (created with its parent directories, mode 0644); an empty path keeps the
  // tail only. Throws Error(kUnavailable) naming the path when it cannot be opened.
  // REQUIRES: tail_lines >= 1, tail_bytes >= 1.
  JobLog(const std::string& path, size_t tail_lines, size_t tail_bytes);

  // One line, without its newline.
  void add_line(std::string_view line);

  // The tail as text, one '\n' after each line. A line longer than tail_bytes keeps its end.
  std::string tail() const;

 private:
  void write_file(std::string_view text);

  // Constant after construction.
  const size_t tail_lines_;
  const size_t tail_bytes_;

  UniqueFd file_;
  std::deque<std::string> tail_;
  size_t tail_size_ = 0;  // bytes in tail_, newlines included
};

}  // namespace tuner

#endif  // TUNER_EXECUTOR_JOB_LOG_H_
