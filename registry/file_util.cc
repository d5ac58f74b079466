#include "registry/file_util.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "trials/error.h"

namespace tuner::registry {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void io_error(const fs::path& path, const std::string& what, int err) {
  throw Error(ErrorCode::kUnavailable,
              path.string() + ": " + what + ": " + std::strerror(err) +
                  " (check the directory exists, is writable and the disk is not full)");
}

}  // namespace

TempDir TempDir::beside(const fs::path& target) {
  const fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::string pattern = (parent / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr)
    io_error(parent, "cannot create a temporary directory", errno);
  return TempDir(fs::path(buffer.data()));
}

TempDir::TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

void TempDir::publish(const fs::path& target) {
  // rename(2) would replace an empty directory: refuse an existing target explicitly.
  if (fs::exists(target)) {
    throw Error(ErrorCode::kAlreadyExists, target.string() + ": exists already");
  }
  if (std::rename(path_.c_str(), target.c_str()) != 0) {
    io_error(target, "cannot rename " + path_.string() + " to it", errno);
  }
  path_.clear();
}

void write_file(const fs::path& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) io_error(path, "cannot create", errno);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.flush();
  if (!out) io_error(path, "cannot write", errno);
}

void write_file_atomically(const fs::path& path, std::string_view content) {
  const fs::path parent = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::string pattern = (parent / ("." + path.filename().string() + ".tmp-XXXXXX")).string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  const int fd = mkstemp(buffer.data());
  if (fd < 0) io_error(path, "cannot create a temporary file beside it", errno);
  const fs::path tmp(buffer.data());
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      io_error(path, "cannot write", err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    io_error(path, "cannot flush", err);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    io_error(path, "cannot rename the temporary file over it", err);
  }
}

void make_directory(const fs::path& path) {
  std::error_code ec;
  if (!fs::create_directory(path, ec) && !fs::is_directory(path)) {
    throw Error(ErrorCode::kUnavailable,
                path.string() + ": cannot create the directory: " + ec.message());
  }
}

int int_member(const nlohmann::json& object, const char* key, int fallback,
               const std::string& where) {
  if (!object.is_object() || !object.contains(key)) return fallback;
  const nlohmann::json& v = object[key];
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  constexpr int64_t kMin = std::numeric_limits<int>::min();
  if (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(kMax)) {
    return static_cast<int>(v.get<uint64_t>());
  }
  if (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() >= kMin &&
      v.get<int64_t>() <= kMax) {
    return static_cast<int>(v.get<int64_t>());
  }
  throw Error(ErrorCode::kDataLoss, where + ": \"" + key + "\" must be a whole number of at most " +
                                        std::to_string(kMax) + " (it is " + v.dump() + ")");
}

}  // namespace tuner::registry
