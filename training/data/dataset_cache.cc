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
#include <thread>

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
  // Waits at most `max_wait` for another holder; `on_wait` is called before waiting.
  FileLock(const fs::path& file, const std::function<void()>& on_wait,
           std::chrono::milliseconds max_wait)
      : fd_(::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ < 0 || ::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    // A file system without flock (ENOLCK): built without the lock, each write atomic.
    if (errno != EWOULDBLOCK && errno != EINTR) return;
    on_wait();
    // Polled (flock has no timed wait): every 10 ms at first, every 200 ms after a while.
    const auto start = std::chrono::steady_clock::now();
    auto pause = std::chrono::milliseconds(10);
    while (true) {
      if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
      if (errno != EWOULDBLOCK && errno != EINTR) return;
      // In milliseconds: max_wait may be milliseconds::max(), beyond nanoseconds' range.
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - start);
      if (waited >= max_wait) break;
      std::this_thread::sleep_for(std::min(pause, max_wait - waited));
      pause = std::min(pause * 2, std::chrono::milliseconds(200));
    }
    waited_out_ = true;
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool held() const { return fd_ >= 0 && !waited_out_; }
  // Not held: another holder kept it for longer than max_wait.
  bool waited_out() const { return waited_out_; }

 private:
  const int fd_;
  bool waited_out_ = false;
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
                           std::function<void(const std::string&)> on_wait,
                           std::chrono::milliseconds max_wait)
    : dir_(std::move(dir)),
      budget_(budget_bytes),
      on_wait_(std::move(on_wait)),
      max_wait_(max_wait) {}

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
  const FileLock lock(
      fs::path(file).replace_extension(".lock"),
      [&] {
        if (on_wait_) on_wait_(file.string());
      },
      max_wait_);
  if (lock.waited_out()) {  // a hung or very slow builder: not waited for any longer
    CachedDatasets out = uncached();
    out.waited_out = true;
    return out;
  }
  if (ec || !lock.held()) return uncached();  // a folder that cannot be written
  if (auto mapped = map_dataset_file(file.string(), key, &why)) {  // built while we waited
    return from_file(std::move(*mapped), file, false);
  }
  BuiltDatasets b = build();
  std::vector<const Dataset*> parts;
  for (const Dataset& d : b.datasets) parts.push_back(&d);
  CachedDatasets out;
  if (dataset_file_bytes(key, b.metadata, parts) <= budget_) {
    try {
      // Mapped from this call's own descriptor: what it wrote, not read back to check it.
      MappedDatasetFile mapped = write_and_map_dataset_file(file.string(), key, b.metadata, parts);
      evict(dir_, file, budget_);
      out = from_file(std::move(mapped), file, true);
    } catch (const DataError&) {
      // Not written (a full disk, a folder turned read-only): the build's own datasets below.
    }
  }
  if (out.file.empty()) {
    out.datasets = std::move(b.datasets);
    out.metadata = std::move(b.metadata);
    out.built = true;
  }
  // Else the build's own copy is freed on return: the process holds the data once, as the
  // file's pages.
  out.rebuilt_because = why == "missing" ? "" : why;
  return out;
}

}  // namespace tuner::training
