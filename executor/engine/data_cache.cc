#include "executor/engine/data_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <vector>

#include "executor/engine/image_folder_loader.h"

namespace tuner::engine {

namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'T', 'U', 'N', 'E', 'R', 'D', 'C', '1'};
constexpr int64_t kDefaultBudget = int64_t{4} << 30;

std::string resolve(const EngineJobSpec& spec, const std::string& folder) {
  if (spec.data_dir.empty() || fs::path(folder).is_absolute()) return folder;
  return (fs::path(spec.data_dir) / folder).string();
}

// The folders' listings (training, validation, test; absent ones empty) and the key's text: the
// options, then every image file of each folder with its size and mtime.
struct Keyed {
  std::optional<ImageFolderListing> listings[3];
  std::string key;
};
Keyed cache_key(const EngineJobSpec& spec, const std::string& path) {
  Keyed out;
  const EngineDataFiles& f = spec.files;
  std::ostringstream k;
  k << "image_folder v1\nsize " << f.image_height << " " << f.image_width << "\ncolor "
    << (f.grayscale ? "grayscale" : "rgb") << "\nvalidation_fraction "
    << (f.validation.empty() ? f.validation_fraction : 0.0) << "\ntest_fraction "
    << (f.test.empty() ? f.test_fraction : 0.0) << "\nsplit_seed " << f.split_seed << "\n";
  const std::string folders[] = {f.path.empty() ? f.train : f.path, f.validation, f.test};
  const char* roles[] = {"train", "validation", "test"};
  for (int r = 0; r < 3; ++r) {
    if (folders[r].empty()) continue;
    out.listings[r] = list_image_folder(resolve(spec, folders[r]), path);
    const ImageFolderListing& l = *out.listings[r];
    std::error_code ec;
    k << roles[r] << " " << fs::absolute(l.root, ec).lexically_normal().string() << "\n";
    for (const std::string& c : l.classes) k << "class " << c << "\n";
    for (const std::string& file : l.files) {
      const auto size = fs::file_size(file, ec);
      const auto mtime = fs::last_write_time(file, ec).time_since_epoch().count();
      k << file << " " << size << " " << mtime << "\n";
    }
  }
  out.key = k.str();
  return out;
}

// FNV-1a, 64 bits: the file name of a key (the file itself holds the key).
std::string key_hash(const std::string& key) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ULL;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

// --- The file: kMagic, the key, then the splits
// ----------------------------------------------------

void put_u64(std::ostream& out, uint64_t v) { out.write(reinterpret_cast<const char*>(&v), 8); }
void put_string(std::ostream& out, const std::string& s) {
  put_u64(out, s.size());
  out.write(s.data(), static_cast<std::streamsize>(s.size()));
}
void put_dataset(std::ostream& out, const training::Dataset& d) {
  const training::Shape& shape = d.sample_shape();
  put_u64(out, static_cast<uint64_t>(d.size()));
  put_u64(out, static_cast<uint64_t>(d.num_classes()));
  put_u64(out, static_cast<uint64_t>(shape.rank()));
  for (const int64_t dim : shape.dims()) put_u64(out, static_cast<uint64_t>(dim));
  out.write(reinterpret_cast<const char*>(d.features().data()),
            static_cast<std::streamsize>(d.features().size_bytes()));
  out.write(reinterpret_cast<const char*>(d.labels().data()),
            static_cast<std::streamsize>(d.labels().size_bytes()));
}

// Reads what put_* wrote; false at the first short read or implausible size.
class Reader {
 public:
  explicit Reader(std::istream& in) : in_(in) {}
  bool u64(uint64_t& v) { return bytes(&v, 8); }
  bool bytes(void* p, uint64_t n) {
    return static_cast<bool>(in_.read(static_cast<char*>(p), static_cast<std::streamsize>(n)));
  }
  bool string(std::string& s) {
    uint64_t n = 0;
    if (!u64(n) || n > (uint64_t{1} << 34)) return false;
    s.resize(n);
    return bytes(s.data(), n);
  }
  bool dataset(training::Dataset& d) {
    uint64_t n = 0, classes = 0, rank = 0;
    if (!u64(n) || !u64(classes) || !u64(rank) || rank > training::kMaxRank) return false;
    std::vector<int64_t> dims(rank);
    for (int64_t& x : dims) {
      uint64_t v = 0;
      if (!u64(v) || v > (uint64_t{1} << 32)) return false;
      x = static_cast<int64_t>(v);
    }
    if (n == 0) return true;  // an absent split
    const training::Shape sample = training::Shape::from(dims);
    if (n > (uint64_t{1} << 40) / static_cast<uint64_t>(std::max<int64_t>(sample.numel(), 1))) {
      return false;
    }
    std::vector<float> x(n * static_cast<uint64_t>(sample.numel()));
    std::vector<int32_t> y(n);
    if (!bytes(x.data(), x.size() * sizeof(float)) || !bytes(y.data(), y.size() * 4)) {
      return false;
    }
    d = training::Dataset(sample, std::move(x), std::move(y), static_cast<int32_t>(classes));
    return true;
  }

 private:
  std::istream& in_;
};

// The splits of `file` when it holds `key`; nullopt otherwise (missing, another key, damaged).
std::optional<Splits> read_cache(const fs::path& file, const std::string& key) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  char magic[8];
  Reader r(in);
  std::string stored;
  if (!r.bytes(magic, 8) || std::memcmp(magic, kMagic, 8) != 0 || !r.string(stored) ||
      stored != key) {
    return std::nullopt;
  }
  Splits s;
  uint64_t classes = 0;
  if (!r.string(s.name) || !r.u64(classes) || classes > (1u << 24)) return std::nullopt;
  s.class_names.resize(classes);
  for (std::string& c : s.class_names) {
    if (!r.string(c)) return std::nullopt;
  }
  try {
    if (!r.dataset(s.train) || !r.dataset(s.validation) || !r.dataset(s.test)) return std::nullopt;
  } catch (const training::DataError&) {
    return std::nullopt;
  }
  if (s.train.empty()) return std::nullopt;
  return s;
}

// Writes `s` under `key` to `file` atomically (a temporary file renamed over it); false when it
// cannot.
bool write_cache(const fs::path& file, const std::string& key, const Splits& s) {
  const fs::path tmp = file.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out.write(kMagic, 8);
    put_string(out, key);
    put_string(out, s.name);
    put_u64(out, s.class_names.size());
    for (const std::string& c : s.class_names) put_string(out, c);
    put_dataset(out, s.train);
    put_dataset(out, s.validation);
    put_dataset(out, s.test);
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return false;
    }
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec) fs::remove(tmp, ec);
  return !ec;
}

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
    // A trial still waiting on the removed lock may decode at the same time as one taking a new
    // lock file: both write the same file, each atomically.
    fs::remove(fs::path(e.file).replace_extension(".lock"), ec);
  }
}

int64_t splits_bytes(const Splits& s) {
  int64_t bytes = 0;
  for (const training::Dataset* d : {&s.train, &s.validation, &s.test}) {
    bytes += static_cast<int64_t>(d->features().size_bytes() + d->labels().size_bytes());
  }
  return bytes;
}

// Holds an exclusive flock on a lock file while alive.
class FileLock {
 public:
  explicit FileLock(const fs::path& file)
      : fd_(::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ >= 0) {
      while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
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

}  // namespace

int64_t data_cache_budget() {
  const char* v = std::getenv("TUNER_DATA_CACHE_BYTES");
  if (v == nullptr || *v == '\0') return kDefaultBudget;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  return end != v && *end == '\0' && n >= 0 ? n : kDefaultBudget;
}

std::string data_cache_dir() {
  const auto set = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? v : nullptr;
  };
  if (const char* dir = set("TUNER_DATA_CACHE_DIR")) return dir;
  if (const char* xdg = set("XDG_CACHE_HOME")) return (fs::path(xdg) / "tuner" / "images").string();
  if (const char* home = set("HOME"))
    return (fs::path(home) / ".cache" / "tuner" / "images").string();
  return "";
}

Splits load_image_folder_cached(const EngineJobSpec& spec, const SplitSizes& sizes,
                                const std::string& path) {
  const int64_t budget = data_cache_budget();
  const fs::path dir = data_cache_dir();
  if (budget == 0 || dir.empty()) return load_image_folder(spec, sizes, path);
  const Keyed keyed = cache_key(spec, path);  // lists the folders: their errors first
  const std::string& key = keyed.key;
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::string name = key_hash(key);
  const FileLock lock(dir / (name + ".lock"));
  if (ec || !lock.held()) return load_image_folder(spec, sizes, path);  // not writable
  const fs::path file = dir / (name + ".data");
  if (std::optional<Splits> cached = read_cache(file, key)) {
    fs::last_write_time(file, fs::file_time_type::clock::now(), ec);  // recently used
    const auto& l = keyed.listings;
    note_skipped_files({l[0] ? &*l[0] : nullptr, l[1] ? &*l[1] : nullptr, l[2] ? &*l[2] : nullptr},
                       path);  // as decoding says it
    std::cerr << path << ": decoded images read from " << file.string() << std::endl;
    return std::move(*cached);
  }
  Splits s = load_image_folder(spec, sizes, path);
  if (splits_bytes(s) <= budget && write_cache(file, key, s)) evict(dir, file, budget);
  return s;
}

}  // namespace tuner::engine
