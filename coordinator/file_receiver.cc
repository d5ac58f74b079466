#include "coordinator/file_receiver.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>
#include <vector>

#include "executor/checkpoint_writer.h"

namespace tuner {

namespace fs = std::filesystem;

namespace {

// Makes `folder` (with its parents) and, below it, each folder of `relative` but its last
// component: each must be a folder where it exists, not a symbolic link. Empty, or the problem.
std::string make_folders(const fs::path& folder, const fs::path& relative) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) return "cannot create the folder " + folder.string() + ": " + ec.message();
  fs::path at = folder;
  for (auto part = relative.begin(); part != relative.end(); ++part) {
    if (std::next(part) == relative.end()) break;
    at /= *part;
    const fs::file_status status = fs::symlink_status(at, ec);
    if (status.type() == fs::file_type::not_found) {
      fs::create_directory(at, ec);
      if (ec) return "cannot create the folder " + at.string() + ": " + ec.message();
    } else if (status.type() != fs::file_type::directory) {
      return at.string() + " is not a folder (a symbolic link or a file): nothing is written " +
             "through it";
    }
  }
  return "";
}

std::string write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::strerror(n < 0 ? errno : EIO);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return "";
}

std::string what(const FileChunkMessage& chunk) {
  if (chunk.checkpoint) return "its checkpoint's '" + chunk.path + "'";
  return chunk.kind == TrialFileKind::kLog ? "its log" : "'" + chunk.path + "'";
}

}  // namespace

FileReceiver::~FileReceiver() {
  std::vector<uint64_t> leases;
  for (const auto& [id, file] : partial_) leases.push_back(id);
  for (uint64_t id : leases) drop(id);
}

void FileReceiver::drop(uint64_t lease_id) {
  auto it = partial_.find(lease_id);
  if (it == partial_.end()) return;
  it->second.fd.reset();
  std::error_code ignored;
  fs::remove(it->second.temp, ignored);
  partial_.erase(it);
}

void FileReceiver::drop_ended(const std::function<bool(uint64_t)>& current) {
  std::vector<uint64_t> ended;
  for (const auto& [id, file] : partial_) {
    if (!current(id)) ended.push_back(id);
  }
  for (uint64_t id : ended) drop(id);
}

std::string FileReceiver::start(const FileChunkMessage& chunk, const FileDestination& where,
                                Partial& file) {
  file.kind = chunk.kind;
  file.checkpoint = chunk.checkpoint;
  file.path = chunk.path;
  file.size = chunk.size;
  if (chunk.checkpoint) {
    if (where.checkpoint_folder.empty()) return where.checkpoint_refusal;
    if (std::string problem = checkpoint_file_problem(chunk.path); !problem.empty()) {
      return "path " + problem;
    }
    file.target = fs::path(where.checkpoint_folder) / chunk.path;
    auto known = checkpoint_writers_.find(file.target);
    // A copy received before a restart of the coordinator is known by its sidecar.
    const uint64_t writer =
        known != checkpoint_writers_.end() ? known->second : read_checkpoint_writer(file.target);
    if (writer > chunk.lease_id) {
      return "the copy of " + file.target.string() + " here is newer (lease " +
             std::to_string(writer) + " sent it)";
    }
    if (std::string problem = make_folders(where.checkpoint_folder, {}); !problem.empty()) {
      return problem;
    }
  } else if (chunk.kind == TrialFileKind::kLog) {
    if (where.log_path.empty()) return where.log_refusal;
    file.target = where.log_path;
    if (std::string problem = make_folders(file.target.parent_path(), {}); !problem.empty()) {
      return problem;
    }
  } else {
    if (where.artifacts_folder.empty()) return where.artifacts_refusal;
    if (std::string problem = trial_file_path_problem(chunk.path); !problem.empty()) {
      return "path " + problem;
    }
    const fs::path relative(chunk.path);
    file.target = fs::path(where.artifacts_folder) / relative;
    if (std::string problem = make_folders(where.artifacts_folder, relative); !problem.empty()) {
      return problem;
    }
  }
  std::error_code ec;
  if (fs::is_directory(fs::symlink_status(file.target, ec))) {
    return file.target.string() + " is a folder";
  }
  file.temp = file.target.parent_path() / (".tuner-incoming-" + std::to_string(chunk.lease_id) +
                                           "-" + std::to_string(++temp_names_));
  const int fd =
      ::open(file.temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return "cannot create " + file.temp.string() + ": " + std::strerror(errno);
  file.fd.reset(fd);
  return "";
}

FileAckMessage FileReceiver::receive(const FileChunkMessage& chunk, const FileDestination& where,
                                     const std::string& lease) {
  FileAckMessage ack{
      .lease_id = chunk.lease_id, .kind = chunk.kind, .path = chunk.path, .offset = chunk.offset};
  auto refuse = [&](const std::string& reason, bool logged) {
    drop(chunk.lease_id);
    if (logged) log_(lease + ": " + what(chunk) + " is not kept: " + reason);
    ack.accepted = false;
    ack.reason = reason;
    return ack;
  };
  auto it = partial_.find(chunk.lease_id);
  const bool same_file = it != partial_.end() && it->second.kind == chunk.kind &&
                         it->second.checkpoint == chunk.checkpoint &&
                         it->second.path == chunk.path && it->second.size == chunk.size;
  if (chunk.offset == 0 || !same_file) {
    if (chunk.offset != 0) {
      return refuse(
          "its chunk at byte " + std::to_string(chunk.offset) + " came before its start (byte 0)",
          true);
    }
    drop(chunk.lease_id);
    Partial file;
    if (std::string problem = start(chunk, where, file); !problem.empty()) {
      // A coordinator without a place for the kind refuses quietly: the executor keeps the file.
      const bool nowhere = chunk.checkpoint                    ? where.checkpoint_folder.empty()
                           : chunk.kind == TrialFileKind::kLog ? where.log_path.empty()
                                                               : where.artifacts_folder.empty();
      if (file.fd.valid()) {
        file.fd.reset();
        std::error_code ignored;
        fs::remove(file.temp, ignored);
      }
      return refuse(problem, !nowhere);
    }
    it = partial_.emplace(chunk.lease_id, std::move(file)).first;
  } else if (chunk.offset != it->second.next_offset) {
    return refuse("its chunk at byte " + std::to_string(chunk.offset) + " came out of order (" +
                      std::to_string(it->second.next_offset) + " expected)",
                  true);
  }
  Partial& file = it->second;
  if (std::string error = write_all(file.fd.get(), chunk.data); !error.empty()) {
    return refuse("cannot write " + file.target.string() + ": " + error, true);
  }
  file.next_offset += chunk.data.size();
  if (file.next_offset < file.size) return ack;
  if (::close(file.fd.release()) != 0) {
    return refuse("cannot write " + file.target.string() + ": " + std::strerror(errno), true);
  }
  std::error_code ec;
  fs::rename(file.temp, file.target, ec);
  if (ec) return refuse("cannot write " + file.target.string() + ": " + ec.message(), true);
  if (file.checkpoint) {
    checkpoint_writers_[file.target] = chunk.lease_id;
    // Written after the file: a sidecar never names a lease newer than the copy beside it.
    if (std::string problem = write_checkpoint_writer(file.target, chunk.lease_id);
        !problem.empty()) {
      log_(lease + ": " + what(chunk) + " is kept, but which lease sent it is not: " + problem);
    }
  }
  partial_.erase(it);
  return ack;
}

}  // namespace tuner
