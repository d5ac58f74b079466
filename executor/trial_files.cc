#include "executor/trial_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "util/strings.h"

namespace tuner {

namespace fs = std::filesystem;

namespace {

// The files FILES_LEFT names at most, and the names its text lists.
constexpr size_t kMaxLeftFilesSent = 1000;
constexpr size_t kMaxLeftFilesNamed = 10;

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t min = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      n = 1, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3, min = 0x10000;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;
    uint32_t code = c & (0x3f >> n);
    for (size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      code = code << 6 | (d & 0x3f);
    }
    if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

std::string absolute_text(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

std::string describe(const TrialFile& file) {
  if (file.checkpoint) return "its checkpoint's '" + file.path + "'";
  return file.kind == TrialFileKind::kLog ? "the log " + file.source : "'" + file.path + "'";
}

}  // namespace

TrialFilesPlan plan_trial_files(const std::string& log_path, const std::string& folder,
                                uint64_t limit_bytes, std::vector<std::string>* problems) {
  TrialFilesPlan plan{.limit_bytes = limit_bytes};
  auto problem = [&](std::string what) {
    if (problems) problems->push_back(std::move(what));
  };
  uint64_t chosen = 0;
  auto consider = [&](TrialFile file) {
    if (file.size <= limit_bytes - chosen) {
      chosen += file.size;
      plan.send.push_back(std::move(file));
    } else {
      plan.left.push_back(LeftFile{.path = absolute_text(file.source), .size = file.size});
    }
  };
  std::error_code ec;
  if (!log_path.empty() && fs::is_regular_file(fs::symlink_status(log_path, ec))) {
    const uint64_t size = fs::file_size(log_path, ec);
    if (!ec) consider(TrialFile{.kind = TrialFileKind::kLog, .source = log_path, .size = size});
  }
  if (folder.empty() || !fs::is_directory(fs::symlink_status(folder, ec))) return plan;

  std::vector<TrialFile> artifacts;
  fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec);
  if (ec) problem("cannot list the trial's folder " + folder + ": " + ec.message());
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code entry_ec;
    if (it->symlink_status(entry_ec).type() != fs::file_type::regular) continue;
    const std::string source = it->path().string();
    const uint64_t size = it->file_size(entry_ec);
    if (entry_ec) {
      problem("cannot read the size of " + source + ": " + entry_ec.message());
      continue;
    }
    std::string path = it->path().lexically_relative(folder).generic_string();
    if (std::string bad = trial_file_path_problem(path); !bad.empty() || !valid_utf8(path)) {
      problem("not sent: " + source + ": its name cannot travel (" +
              (bad.empty() ? "not UTF-8" : bad) + ")");
      plan.left.push_back(LeftFile{.path = absolute_text(source), .size = size});
      continue;
    }
    artifacts.push_back(TrialFile{
        .kind = TrialFileKind::kArtifact, .path = std::move(path), .source = source, .size = size});
  }
  if (ec) problem("listing the trial's folder " + folder + " stopped: " + ec.message());
  std::sort(artifacts.begin(), artifacts.end(),
            [](const TrialFile& a, const TrialFile& b) { return a.path < b.path; });
  for (TrialFile& file : artifacts) consider(std::move(file));
  if (plan.left.size() > kMaxLeftFilesSent) plan.left.resize(kMaxLeftFilesSent);
  return plan;
}

std::vector<std::string> checkpoint_file_names(const fs::path& checkpoint) {
  const std::string name = checkpoint.filename().string();
  return {"model.ckpt", name + ".history.json", name + ".paused.json", name};
}

CheckpointStamps stamp_checkpoint(const fs::path& checkpoint) {
  CheckpointStamps stamps;
  for (const std::string& name : checkpoint_file_names(checkpoint)) {
    std::error_code ec;
    const fs::path file = checkpoint.parent_path() / name;
    if (!fs::is_regular_file(fs::symlink_status(file, ec))) continue;
    const uint64_t size = fs::file_size(file, ec);
    if (ec) continue;
    const fs::file_time_type time = fs::last_write_time(file, ec);
    if (ec) continue;
    stamps[name] = {size, static_cast<int64_t>(time.time_since_epoch().count())};
  }
  return stamps;
}

TrialFilesPlan plan_checkpoint_files(const fs::path& checkpoint, const CheckpointStamps& before,
                                     uint64_t limit_bytes, std::vector<std::string>* problems) {
  TrialFilesPlan plan{.limit_bytes = limit_bytes};
  if (std::string bad = checkpoint_file_problem(checkpoint.filename().string()); !bad.empty()) {
    if (problems) problems->push_back("not sent: " + checkpoint.string() + ": " + bad);
    return plan;
  }
  uint64_t chosen = 0;
  const CheckpointStamps now = stamp_checkpoint(checkpoint);
  for (const std::string& name : checkpoint_file_names(checkpoint)) {
    auto at = now.find(name);
    if (at == now.end()) continue;
    if (auto was = before.find(name); was != before.end() && was->second == at->second) continue;
    const fs::path source = checkpoint.parent_path() / name;
    const uint64_t size = at->second.first;
    if (size > limit_bytes - chosen) {
      plan.left.push_back(LeftFile{.path = absolute_text(source.string()), .size = size});
      continue;
    }
    chosen += size;
    plan.send.push_back(TrialFile{.kind = TrialFileKind::kArtifact,
                                  .path = name,
                                  .source = source.string(),
                                  .size = size,
                                  .checkpoint = true});
  }
  return plan;
}

std::string files_left_text(const std::vector<LeftFile>& left, uint64_t limit_bytes,
                            const std::string& host) {
  uint64_t total = 0;
  for (const LeftFile& f : left) total += f.size;
  std::string text = std::to_string(left.size()) + " file(s) of " + byte_size_text(total) +
                     " in all stay on host " + (host.empty() ? "(unknown)" : host) +
                     ", past the limit of " + byte_size_text(limit_bytes) +
                     " per trial (tuner executor --max-files-mb): ";
  for (size_t i = 0; i < left.size() && i < kMaxLeftFilesNamed; ++i) {
    if (i > 0) text += ", ";
    text += left[i].path + " (" + byte_size_text(left[i].size) + ")";
  }
  if (left.size() > kMaxLeftFilesNamed) {
    text += " and " + std::to_string(left.size() - kMaxLeftFilesNamed) + " more";
  }
  return text;
}

// --- FileSender ---------------------------------------------------------------------------------

FileSender::FileSender(uint64_t lease_id, std::vector<TrialFile> files)
    : lease_id_(lease_id),
      files_(std::move(files)),
      given_up_(files_.size(), false),
      restarts_(files_.size(), 0) {}

void FileSender::advance(std::vector<std::string>& problems) {
  while (current_ < files_.size()) {
    if (given_up_[current_] || read_all_) {
      ++current_;
      fd_.reset();
      next_offset_ = 0;
      read_all_ = false;
      continue;
    }
    if (!fd_.valid()) {
      const int fd = ::open(files_[current_].source.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
      if (fd < 0) {
        problems.push_back("not sent: " + files_[current_].source + ": " + std::strerror(errno));
        given_up_[current_] = true;
        continue;
      }
      fd_.reset(fd);
    }
    return;
  }
}

std::optional<FileChunkMessage> FileSender::next_chunk(std::vector<std::string>& problems) {
  while (in_flight_.size() < kFileWindow) {
    advance(problems);
    if (current_ >= files_.size()) return std::nullopt;
    const TrialFile& file = files_[current_];
    const uint64_t n = std::min<uint64_t>(kMaxFileChunkBytes, file.size - next_offset_);
    std::string data(n, '\0');
    size_t got = 0;
    int error = 0;
    while (got < n) {
      const ssize_t r =
          ::pread(fd_.get(), data.data() + got, n - got, static_cast<off_t>(next_offset_ + got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) error = errno;
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    if (got < n) {
      problems.push_back(
          "not sent: " + file.source + ": " +
          (error != 0 ? std::string(std::strerror(error)) : "it shrank while being sent"));
      give_up_file(current_);
      continue;
    }
    FileChunkMessage chunk{.lease_id = lease_id_,
                           .kind = file.kind,
                           .path = file.path,
                           .size = file.size,
                           .offset = next_offset_,
                           .data = std::move(data),
                           .checkpoint = file.checkpoint};
    next_offset_ += n;
    read_all_ = next_offset_ == file.size;
    in_flight_.push_back(
        InFlight{.file = current_, .offset = chunk.offset, .bytes = n, .last = read_all_});
    return chunk;
  }
  return std::nullopt;
}

void FileSender::unsend(const FileChunkMessage& chunk) {
  if (in_flight_.empty() || in_flight_.back().offset != chunk.offset) return;
  in_flight_.pop_back();
  next_offset_ = chunk.offset;
  read_all_ = false;
}

std::string FileSender::on_ack(const FileAckMessage& ack) {
  auto it = std::find_if(in_flight_.begin(), in_flight_.end(), [&](const InFlight& f) {
    return f.offset == ack.offset && files_[f.file].kind == ack.kind &&
           files_[f.file].path == ack.path;
  });
  if (it == in_flight_.end()) return "";
  answered_ = true;
  const InFlight chunk = *it;
  in_flight_.erase(it);
  if (ack.lease_ended) {
    give_up();
    return "the coordinator takes no more files of lease " + std::to_string(lease_id_) + ": " +
           ack.reason;
  }
  if (!ack.accepted) {
    give_up_file(chunk.file);
    return "the coordinator refused " + describe(files_[chunk.file]) + " of lease " +
           std::to_string(lease_id_) + ": " + ack.reason;
  }
  if (chunk.last) {
    ++files_delivered_;
    bytes_delivered_ += files_[chunk.file].size;
  }
  return "";
}

void FileSender::give_up_file(size_t index) {
  given_up_[index] = true;
  std::erase_if(in_flight_, [&](const InFlight& f) { return f.file == index; });
  if (index == current_) fd_.reset();
}

void FileSender::rewind_to(size_t index) {
  current_ = index;
  fd_.reset();
  next_offset_ = 0;
  read_all_ = false;
}

std::string FileSender::restart() {
  if (in_flight_.empty()) return "";
  const size_t first = in_flight_.front().file;
  in_flight_.clear();
  rewind_to(first);
  if (++restarts_[first] <= kMaxFileRestarts) return "";
  given_up_[first] = true;
  return "not sent: " + describe(files_[first]) + " of lease " + std::to_string(lease_id_) +
         ": started over " + std::to_string(kMaxFileRestarts) +
         " times without the coordinator answering";
}

std::string FileSender::check_progress() {
  const bool stalled = !in_flight_.empty() && !answered_;
  answered_ = false;
  return stalled ? restart() : "";
}

void FileSender::give_up() {
  std::fill(given_up_.begin(), given_up_.end(), true);
  in_flight_.clear();
  fd_.reset();
}

bool FileSender::done() const {
  if (!in_flight_.empty()) return false;
  for (size_t i = current_; i < files_.size(); ++i) {
    if (given_up_[i] || (i == current_ && read_all_)) continue;
    return false;
  }
  return true;
}

}  // namespace tuner
