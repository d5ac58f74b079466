#include "util/files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "trials/error.h"

namespace tuner {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (!std::filesystem::exists(path)) {
      throw Error(ErrorCode::kNotFound, path.string() + ": does not exist");
    }
    throw Error(ErrorCode::kUnavailable, path.string() + ": cannot read: " + std::strerror(err));
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) {
    throw Error(ErrorCode::kUnavailable, path.string() + ": cannot read: " + std::strerror(errno));
  }
  return content.str();
}

}  // namespace tuner
