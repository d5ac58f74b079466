#include "executor/job_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "trials/error.h"

namespace tuner {

std::string trial_log_name(int64_t number, uint64_t lease_id) {
  return "trial-" + std::to_string(number) + "-lease-" + std::to_string(lease_id) + ".log";
}

JobLog::JobLog(const std::string& path, size_t tail_lines, size_t tail_bytes)
    : tail_lines_(tail_lines), tail_bytes_(tail_bytes) {
  if (path.empty()) return;
  std::error_code ec;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Error(ErrorCode::kUnavailable,
                "cannot open the job log '" + path + "': " + std::strerror(errno));
  }
  file_.reset(fd);
}

void JobLog::write_file(std::string_view text) {
  while (file_.valid() && !text.empty()) {
    ssize_t n = ::write(file_.get(), text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string note = std::string("[tuner] writing the log file failed: ") +
                         std::strerror(errno) + "; the rest is not in the file";
      file_.reset();
      add_line(note);
      return;
    }
    text.remove_prefix(static_cast<size_t>(n));
  }
}

void JobLog::add_line(std::string_view line) {
  std::string text(line);
  text += '\n';
  write_file(text);
  if (text.size() > tail_bytes_) text.erase(0, text.size() - tail_bytes_);
  tail_size_ += text.size();
  tail_.push_back(std::move(text));
  while (tail_.size() > tail_lines_ || tail_size_ > tail_bytes_) {
    tail_size_ -= tail_.front().size();
    tail_.pop_front();
  }
}

std::string JobLog::tail() const {
  std::string out;
  out.reserve(tail_size_);
  for (const auto& line : tail_) out += line;
  return out;
}

}  // namespace tuner
