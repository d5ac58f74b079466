#include "training/data/dataset_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>

namespace tuner::training {

namespace {

constexpr char kMagic[8] = {'T', 'U', 'N', 'E', 'R', 'D', 'S', 'F'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kByteOrder = 0x01020304;  // as this machine writes it
constexpr size_t kHeaderBytes = 64;
constexpr size_t kAlign = 64;
constexpr size_t kDims = 6;  // the dims slots of a table entry
static_assert(kMaxRank <= static_cast<int>(kDims));
constexpr uint64_t kMaxDatasets = 16;
constexpr uint64_t kMaxText = uint64_t{1} << 32;

// The fixed header at offset 0.
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t byte_order;
  uint64_t file_bytes;
  uint64_t key_bytes;
  uint64_t metadata_bytes;
  uint64_t count;            // table entries
  uint64_t body_checksum;    // of bytes [kHeaderBytes, file_bytes)
  uint64_t header_checksum;  // of the bytes before it
};
static_assert(sizeof(Header) == kHeaderBytes);

// One dataset of the table; offsets are from the file's start, 0 for an absent array.
struct Entry {
  uint64_t size;  // N
  uint64_t num_classes;
  uint64_t num_targets;
  uint64_t rank;
  uint64_t dims[kDims];
  uint64_t features_offset, labels_offset, targets_offset;
  uint64_t reserved[3];
};
static_assert(sizeof(Entry) == 128);

uint64_t align_up(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// A 64-bit checksum, four independent lanes of multiply-rotate mixing (a few GB/s): catches
// truncation, torn writes and flipped bits; not meant against deliberate forgery. Fed in pieces
// of any size: the same bytes give the same value however they are cut.
class Checksum {
 public:
  void update(const unsigned char* p, size_t n) {
    total_ += n;
    if (pending_ > 0) {
      const size_t take = std::min(n, sizeof buf_ - pending_);
      std::memcpy(buf_ + pending_, p, take);
      pending_ += take;
      p += take;
      n -= take;
      if (pending_ < sizeof buf_) return;
      block(buf_);
      pending_ = 0;
    }
    for (; n >= sizeof buf_; p += sizeof buf_, n -= sizeof buf_) block(p);
    if (n > 0) std::memcpy(buf_, p, n);
    pending_ = n;
  }
  uint64_t finish() const {
    uint64_t tail = 0;
    for (size_t k = 0; k < pending_; ++k) tail |= static_cast<uint64_t>(buf_[k]) << (8 * (k % 8));
    uint64_t out = total_ * k1;
    for (int l = 0; l < 4; ++l) out = rotl(out ^ h_[l], 27) * k2;
    out = rotl(out ^ (tail * k1), 31) * k2;
    return out ^ (out >> 29);
  }

 private:
  static constexpr uint64_t k1 = 0x9E3779B97F4A7C15ULL, k2 = 0xC2B2AE3D27D4EB4FULL;
  void block(const unsigned char* p) {
    for (int l = 0; l < 4; ++l) {
      uint64_t w;
      std::memcpy(&w, p + 8 * l, 8);
      h_[l] = rotl(h_[l] ^ (w * k1), 31) * k2;
    }
  }
  uint64_t h_[4] = {k1, k2, k1 ^ k2, k1 + k2};
  unsigned char buf_[32] = {};
  size_t pending_ = 0;
  uint64_t total_ = 0;
};

uint64_t checksum(const unsigned char* p, size_t n) {
  Checksum c;
  c.update(p, n);
  return c.finish();
}

uint64_t header_checksum(const Header& h) {
  return checksum(reinterpret_cast<const unsigned char*>(&h), offsetof(Header, header_checksum));
}

// Owns a read-only mapping of a whole file.
class Mapping {
 public:
  Mapping(void* data, size_t bytes) : data_(data), bytes_(bytes) {}
  ~Mapping() { ::munmap(data_, bytes_); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  const unsigned char* bytes() const { return static_cast<const unsigned char*>(data_); }
  size_t size() const { return bytes_; }

 private:
  void* const data_;
  const size_t bytes_;
};

// Owns a file descriptor.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  const int fd_;
};

// Maps `fd`'s `bytes` read-only; null when it cannot.
std::shared_ptr<Mapping> map_fd(int fd, size_t bytes) {
  if (bytes == 0) return nullptr;
  void* m = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return nullptr;
  return std::make_shared<Mapping>(m, bytes);
}

// The layout of a file: its table and size.
struct Layout {
  std::vector<Entry> entries;
  uint64_t table_offset = 0;
  uint64_t file_bytes = 0;
};
Layout layout(std::string_view key, std::string_view metadata,
              std::span<const Dataset* const> datasets) {
  Layout l;
  l.table_offset = align_up(kHeaderBytes + key.size() + metadata.size());
  uint64_t at = align_up(l.table_offset + datasets.size() * sizeof(Entry));
  for (const Dataset* d : datasets) {
    Entry e{};
    e.size = static_cast<uint64_t>(d->size());
    e.num_classes = static_cast<uint64_t>(d->num_classes());
    e.num_targets = static_cast<uint64_t>(d->num_targets());
    const Shape& s = d->sample_shape();
    e.rank = static_cast<uint64_t>(s.rank());
    for (int k = 0; k < s.rank(); ++k) e.dims[k] = static_cast<uint64_t>(s[k]);
    const auto place = [&](size_t bytes) {
      if (bytes == 0) return uint64_t{0};
      const uint64_t offset = at;
      at = align_up(at + bytes);
      return offset;
    };
    e.features_offset = place(d->features().size_bytes());
    e.labels_offset = place(d->labels().size_bytes());
    e.targets_offset = place(d->targets().size_bytes());
    l.entries.push_back(e);
  }
  l.file_bytes = at;
  return l;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw DataError(path + ": cannot write the dataset file: " + what);
}

// Writes all of `bytes` at the descriptor's position.
void write_all(int fd, const void* data, size_t bytes, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(path, std::strerror(errno));
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

// Writes the file of `l` into `fd` (a new, empty file named `tmp` for messages): the body at its
// offsets (padding written as zeros), then the header over the first bytes. The body's checksum
// is taken from the bytes as they are written.
void write_into(int fd, const std::string& tmp, const Layout& l, std::string_view key,
                std::string_view metadata, std::span<const Dataset* const> datasets) {
  uint64_t written = 0;
  const std::vector<char> zeros(kAlign, 0);
  Checksum sum;
  const auto put = [&](uint64_t offset, const void* data, size_t bytes) {
    while (written < offset) {
      const size_t pad = static_cast<size_t>(std::min<uint64_t>(offset - written, kAlign));
      write_all(fd, zeros.data(), pad, tmp);
      sum.update(reinterpret_cast<const unsigned char*>(zeros.data()), pad);
      written += pad;
    }
    write_all(fd, data, bytes, tmp);
    if (written >= kHeaderBytes && bytes > 0) {
      sum.update(static_cast<const unsigned char*>(data), bytes);
    }
    written += bytes;
  };
  const Header blank{};
  put(0, &blank, sizeof blank);
  put(kHeaderBytes, key.data(), key.size());
  put(kHeaderBytes + key.size(), metadata.data(), metadata.size());
  put(l.table_offset, l.entries.data(), l.entries.size() * sizeof(Entry));
  for (size_t i = 0; i < datasets.size(); ++i) {
    const Dataset& d = *datasets[i];
    const Entry& e = l.entries[i];
    if (e.features_offset) put(e.features_offset, d.features().data(), d.features().size_bytes());
    if (e.labels_offset) put(e.labels_offset, d.labels().data(), d.labels().size_bytes());
    if (e.targets_offset) put(e.targets_offset, d.targets().data(), d.targets().size_bytes());
  }
  put(l.file_bytes, nullptr, 0);
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kVersion;
  h.byte_order = kByteOrder;
  h.file_bytes = l.file_bytes;
  h.key_bytes = key.size();
  h.metadata_bytes = metadata.size();
  h.count = datasets.size();
  h.body_checksum = sum.finish();
  h.header_checksum = header_checksum(h);
  if (::pwrite(fd, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h)) {
    fail(tmp, std::strerror(errno));
  }
}

// Writes the file into a temporary one beside `path`, calls `written` with its descriptor while
// it is still open, then renames it over `path`. The temporary file is removed on any error.
void write_file(const std::string& path, std::string_view key, std::string_view metadata,
                std::span<const Dataset* const> datasets, const Layout& l,
                const std::function<void(int fd)>& written) {
  static std::atomic<uint64_t> serial{0};
  const std::string tmp =
      path + ".tmp" + std::to_string(::getpid()) + "." + std::to_string(serial++);
  try {
    const Fd fd(::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) fail(tmp, std::strerror(errno));
    write_into(fd.get(), tmp, l, key, metadata, datasets);
    if (written) written(fd.get());
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    fail(path, "rename: " + why);
  }
}

// The datasets of the whole-file mapping `m` when it is a complete dataset file of `key`; nullopt
// otherwise, the reason in *why. The body's checksum is checked when `check_body`.
std::optional<MappedDatasetFile> read_mapping(const std::shared_ptr<Mapping>& m,
                                              std::string_view key, bool check_body,
                                              std::string* why) {
  const auto no = [&](const std::string& reason) -> std::optional<MappedDatasetFile> {
    if (why != nullptr) *why = reason;
    return std::nullopt;
  };
  const auto size = static_cast<uint64_t>(m->size());
  if (size < kHeaderBytes) {
    return no("truncated: " + std::to_string(size) + " bytes, not even the header");
  }
  Header h;
  std::memcpy(&h, m->bytes(), sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.version != kVersion ||
      h.byte_order != kByteOrder) {
    return no("damaged: not a dataset file of version " + std::to_string(kVersion));
  }
  if (h.header_checksum != header_checksum(h)) return no("damaged: the header's checksum");
  if (h.file_bytes != size) {
    return no((size < h.file_bytes ? "truncated: " : "damaged: ") + std::to_string(size) +
              " bytes, the header says " + std::to_string(h.file_bytes));
  }
  if (h.key_bytes > kMaxText || h.metadata_bytes > kMaxText || h.count > kMaxDatasets) {
    return no("damaged: implausible sizes in the header");
  }
  const uint64_t table_offset = align_up(kHeaderBytes + h.key_bytes + h.metadata_bytes);
  if (table_offset + h.count * sizeof(Entry) > size) return no("damaged: the table");
  const std::string_view text(reinterpret_cast<const char*>(m->bytes()) + kHeaderBytes,
                              h.key_bytes + h.metadata_bytes);
  if (text.substr(0, h.key_bytes) != key) return no("another key");
  if (check_body && h.body_checksum != checksum(m->bytes() + kHeaderBytes, size - kHeaderBytes)) {
    return no("damaged: the checksum of its contents");
  }

  MappedDatasetFile out;
  out.metadata = std::string(text.substr(h.key_bytes));
  out.file_bytes = static_cast<int64_t>(size);
  // An array of `count` values of `width` bytes at `offset`, inside the file and aligned.
  const auto array_ok = [&](uint64_t offset, uint64_t count, uint64_t width) {
    if (count == 0) return offset == 0;
    return offset % kAlign == 0 && offset <= size && count <= (size - offset) / width;
  };
  for (uint64_t i = 0; i < h.count; ++i) {
    Entry e;
    std::memcpy(&e, m->bytes() + table_offset + i * sizeof(Entry), sizeof e);
    if (e.rank > static_cast<uint64_t>(kMaxRank) || e.num_classes > (uint64_t{1} << 31) ||
        e.num_targets > (uint64_t{1} << 31)) {
      return no("damaged: dataset " + std::to_string(i) + "'s entry");
    }
    std::vector<int64_t> dims;
    uint64_t numel = 1;
    for (uint64_t k = 0; k < e.rank; ++k) {
      if (e.dims[k] > (uint64_t{1} << 32)) return no("damaged: a sample dimension");
      dims.push_back(static_cast<int64_t>(e.dims[k]));
      numel *= e.dims[k];
      if (numel > size) return no("damaged: a sample shape larger than the file");
    }
    const uint64_t features = numel == 0 ? 0 : e.size;
    if ((numel != 0 && e.size > size / numel) ||
        !array_ok(e.features_offset, features * numel, 4) ||
        !array_ok(e.labels_offset, e.num_targets == 0 ? e.size : 0, 4) ||
        !array_ok(e.targets_offset, e.size * e.num_targets, 4)) {
      return no("damaged: dataset " + std::to_string(i) + "'s arrays");
    }
    if (e.size == 0) {
      out.datasets.emplace_back();
      continue;
    }
    const auto floats = [&](uint64_t offset, uint64_t count) {
      return std::span<const float>(reinterpret_cast<const float*>(m->bytes() + offset), count);
    };
    try {
      const std::span<const int32_t> labels(
          reinterpret_cast<const int32_t*>(m->bytes() + e.labels_offset),
          e.num_targets == 0 ? e.size : 0);
      out.datasets.push_back(
          Dataset::view(Shape::from(dims), floats(e.features_offset, e.size * numel),
                        e.labels_offset ? labels : std::span<const int32_t>(),
                        static_cast<int32_t>(e.num_classes),
                        e.targets_offset ? floats(e.targets_offset, e.size * e.num_targets)
                                         : std::span<const float>(),
                        static_cast<int64_t>(e.num_targets), m));
    } catch (const std::exception& ex) {
      return no(std::string("damaged: ") + ex.what());
    }
  }
  return out;
}

}  // namespace

int64_t dataset_file_bytes(std::string_view key, std::string_view metadata,
                           std::span<const Dataset* const> datasets) {
  return static_cast<int64_t>(layout(key, metadata, datasets).file_bytes);
}

int64_t write_dataset_file(const std::string& path, std::string_view key, std::string_view metadata,
                           std::span<const Dataset* const> datasets) {
  const Layout l = layout(key, metadata, datasets);
  write_file(path, key, metadata, datasets, l, {});
  return static_cast<int64_t>(l.file_bytes);
}

MappedDatasetFile write_and_map_dataset_file(const std::string& path, std::string_view key,
                                             std::string_view metadata,
                                             std::span<const Dataset* const> datasets) {
  const Layout l = layout(key, metadata, datasets);
  std::shared_ptr<Mapping> m;
  write_file(path, key, metadata, datasets, l, [&](int fd) {
    m = map_fd(fd, static_cast<size_t>(l.file_bytes));
    if (!m) fail(path, std::string("mmap: ") + std::strerror(errno));
  });
  std::string why;
  std::optional<MappedDatasetFile> out = read_mapping(m, key, /*check_body=*/false, &why);
  if (!out) fail(path, "the file written does not read back: " + why);
  return std::move(*out);
}

std::optional<uint64_t> file_checksum(const std::string& path) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) return std::nullopt;
  if (st.st_size == 0) return checksum(nullptr, 0);
  const std::shared_ptr<Mapping> m = map_fd(fd.get(), static_cast<size_t>(st.st_size));
  if (!m) return std::nullopt;
  return checksum(m->bytes(), m->size());
}

std::optional<MappedDatasetFile> map_dataset_file(const std::string& path, std::string_view key,
                                                  std::string* why) {
  const auto no = [&](const std::string& reason) -> std::optional<MappedDatasetFile> {
    if (why != nullptr) *why = reason;
    return std::nullopt;
  };
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return no(errno == ENOENT ? "missing" : std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return no(std::strerror(errno));
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size < kHeaderBytes) {
    return no("truncated: " + std::to_string(size) + " bytes, not even the header");
  }
  const std::shared_ptr<Mapping> m = map_fd(fd.get(), static_cast<size_t>(size));
  if (!m) return no(std::string("mmap: ") + std::strerror(errno));
  return read_mapping(m, key, /*check_body=*/true, why);
}

}  // namespace tuner::training
