#include "launch/pipe_read.h"

#include <unistd.h>

#include <cerrno>

namespace tuner {

void read_available(UniqueFd& fd, std::string& to) {
  char buffer[4096];
  while (fd.valid()) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n > 0) {
      to.append(buffer, static_cast<size_t>(n));
    } else if (n == 0) {
      fd.reset();
    } else if (errno != EINTR) {
      if (errno != EAGAIN && errno != EWOULDBLOCK) fd.reset();
      return;
    }
  }
}

}  // namespace tuner
