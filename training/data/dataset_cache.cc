#include "training/data/dataset_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "training/data/dataset_file.h"

namespace tuner::training {

namespace {

namespace fs = std::filesystem;

// FNV-1a, 64 bits: the file name of a key (the file itself holds the key).
std::string key_hash(std::string_view key) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ULL;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

// Holds an exclusive flock on a lock file while alive (the kernel drops it if the process dies).
class FileLock {
 public:
  // `on_wait` is called before waiting for another holder.
  FileLock(const fs::path& file, const std::function<void()>& on_wait)
      : fd_(::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ < 0 || ::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    if (errno == EWOULDBLOCK) on_wait();
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  const int fd_;
};

// Removes the folder's cache files, least recently used first, while they hold more than
// `budget` bytes (never `keep`), with their lock files; and temporary files that a writer left
// (it died) over an hour ago.
void evict(const fs::path& dir, const fs::path& keep, int64_t budget) {
  struct Entry {
    fs::path file;
    fs::file_time_type used;
    int64_t bytes;
  };
  std::vector<Entry> entries;
  int64_t total = 0;
  std::error_code ec;
  const auto stale = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().find(".data.tmp") != std::string::npos &&
        e.last_write_time(ec) < stale) {
      fs::remove(e.path(), ec);
      continue;
    }
    if (e.path().extension() != ".data") continue;
    const auto bytes = static_cast<int64_t>(e.file_size(ec));
    if (ec) continue;
    entries.push_back({e.path(), e.last_write_time(ec), bytes});
    total += bytes;
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (total <= budget) break;
    if (e.file == keep) continue;
    if (fs::remove(e.file, ec)) total -= e.bytes;
    // A process still waiting on the removed lock may build at the same time as one taking a new
    // lock file: both write the same file, each atomically.
    fs::remove(fs::path(e.file).replace_extension(".lock"), ec);
  }
}

CachedDatasets from_file(MappedDatasetFile mapped, const fs::path& file, bool built) {
  std::error_code ec;
  fs::last_write_time(file, fs::file_time_type::clock::now(), ec);  // recently used
  CachedDatasets out;
  out.datasets = std::move(mapped.datasets);
  out.metadata = std::move(mapped.metadata);
  out.file = file.string();
  out.built = built;
  return out;
}

}  // namespace

DatasetCache::DatasetCache(std::string dir, int64_t budget_bytes,
                           std::function<void(const std::string&)> on_wait)
    : dir_(std::move(dir)), budget_(budget_bytes), on_wait_(std::move(on_wait)) {}

std::string DatasetCache::file_of(std::string_view key) const {
  return (fs::path(dir_) / (key_hash(key) + ".data")).string();
}

CachedDatasets DatasetCache::get(std::string_view key,
                                 const std::function<BuiltDatasets()>& build) const {
  const auto uncached = [&] {
    BuiltDatasets b = build();
    CachedDatasets out;
    out.datasets = std::move(b.datasets);
    out.metadata = std::move(b.metadata);
    out.built = true;
    return out;
  };
  if (budget_ <= 0 || dir_.empty()) return uncached();
  const fs::path file = file_of(key);
  std::string why;
  if (auto mapped = map_dataset_file(file.string(), key, &why)) {
    return from_file(std::move(*mapped), file, false);
  }
  std::error_code ec;
  fs::create_directories(dir_, ec);
  const FileLock lock(fs::path(file).replace_extension(".lock"), [&] {
    if (on_wait_) on_wait_(file.string());
  });
  if (ec || !lock.held()) return uncached();  // a folder that cannot be written
  if (auto mapped = map_dataset_file(file.string(), key, &why)) {  // built while we waited
    return from_file(std::move(*mapped), file, false);
  }
  BuiltDatasets b = build();
  std::vector<const Dataset*> parts;
  for (const Dataset& d : b.datasets) parts.push_back(&d);
  const std::string rebuilt_because = why == "missing" ? "" : why;
  bool freed = false;
  if (dataset_file_bytes(key, b.metadata, parts) <= budget_) {
    try {
      write_dataset_file(file.string(), key, b.metadata, parts);
      evict(dir_, file, budget_);
      // The build's own copy freed first: the process holds the data once, as the file's pages.
      b.datasets.clear();
      b.datasets.shrink_to_fit();
      freed = true;
      if (auto mapped = map_dataset_file(file.string(), key, &why)) {
        CachedDatasets out = from_file(std::move(*mapped), file, true);
        out.rebuilt_because = rebuilt_because;
        return out;
      }
    } catch (const DataError&) {
      // Not written (a full disk, a folder turned read-only): the build's own datasets below.
    }
  }
  if (freed) b = build();  // the file went at once (another process's eviction): built again
  CachedDatasets out;
  out.datasets = std::move(b.datasets);
  out.metadata = std::move(b.metadata);
  out.built = true;
  out.rebuilt_because = rebuilt_because;
  return out;
}

}  // namespace tuner::training
