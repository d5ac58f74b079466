// UniqueFd: sole owner of a POSIX file descriptor; closes it on destruction.
//
// Thread safety: as an int; one owner at a time.
#ifndef TUNER_EXECUTOR_UNIQUE_FD_H_
#define TUNER_EXECUTOR_UNIQUE_FD_H_

#include <unistd.h>

#include <utility>

namespace tuner {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Closes the descriptor held (if any) and holds `fd` instead.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

}  // namespace tuner

#endif  // TUNER_EXECUTOR_UNIQUE_FD_H_
