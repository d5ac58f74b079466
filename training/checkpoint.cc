#include "training/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <span>

namespace tuner::training {
namespace {

static_assert(std::endian::native == std::endian::little, "checkpoints are little-endian");

constexpr char kMagic[8] = {'T', 'U', 'N', 'E', 'R', 'C', 'K', 'P'};
constexpr size_t kHeaderBytes = 8 + 4 + 8;  // magic, version, body length

class Writer {
 public:
  void raw(const void* p, size_t n) {
    const char* c = static_cast<const char*>(p);
    bytes_.insert(bytes_.end(), c, c + n);
  }
  template <typename T>
  void scalar(T v) {
    raw(&v, sizeof v);
  }
  template <typename T>
  void array(std::span<const T> v) {
    scalar<uint64_t>(v.size());
    raw(v.data(), v.size() * sizeof(T));
  }
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
};

class Reader {
 public:
  Reader(std::span<const char> body, const std::string& path) : body_(body), path_(path) {}
  void raw(void* p, size_t n, const char* what) {
    if (n > body_.size() - at_) {
      throw CheckpointError(path_ + ": corrupt: the " + std::string(what) +
                            " runs past the end of the body");
    }
    if (n == 0) return;  // an empty array's data is null: memcpy may not be given it
    std::memcpy(p, body_.data() + at_, n);
    at_ += n;
  }
  template <typename T>
  T scalar(const char* what) {
    T v;
    raw(&v, sizeof v, what);
    return v;
  }
  template <typename T>
  void array(std::vector<T>& out, const char* what) {
    const uint64_t n = scalar<uint64_t>(what);
    if (n > (body_.size() - at_) / sizeof(T)) {
      throw CheckpointError(path_ + ": corrupt: the " + std::string(what) + " claims " +
                            std::to_string(n) + " elements, more than the file holds");
    }
    out.resize(n);
    raw(out.data(), n * sizeof(T), what);
  }
  bool done() const { return at_ == body_.size(); }

 private:
  std::span<const char> body_;
  size_t at_ = 0;
  const std::string& path_;
};

uint32_t crc(std::span<const char> bytes) {
  uLong c = crc32(0L, Z_NULL, 0);
  size_t at = 0;
  while (at < bytes.size()) {
    const uInt n = static_cast<uInt>(std::min<size_t>(bytes.size() - at, 1u << 30));
    c = crc32(c, reinterpret_cast<const Bytef*>(bytes.data() + at), n);
    at += n;
  }
  return static_cast<uint32_t>(c);
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

namespace {

// The file's bytes: magic, version, body length, body, checksum.
std::string encode_checkpoint(const Checkpoint& c) {
  Writer body;
  body.array(std::span<const char>(c.model_spec));
  body.array(std::span<const float>(c.parameters));
  body.array(std::span<const float>(c.buffers));
  body.array(std::span<const float>(c.optimizer_state));
  body.scalar<int64_t>(c.optimizer_steps);
  body.scalar<int64_t>(c.lr_step);
  for (uint64_t w : c.data_rng) body.scalar<uint64_t>(w);
  body.array(std::span<const uint64_t>(c.dropout_seeds));
  body.array(std::span<const uint64_t>(c.dropout_calls));
  body.scalar<int64_t>(c.epoch);
  body.scalar<double>(c.best_value);
  body.scalar<int64_t>(c.best_epoch);
  body.scalar<int64_t>(c.epochs_without_improvement);

  Writer file;
  file.raw(kMagic, sizeof kMagic);
  file.scalar<uint32_t>(kCheckpointFormatVersion);
  file.scalar<uint64_t>(body.bytes().size());
  file.raw(body.bytes().data(), body.bytes().size());
  file.scalar<uint32_t>(crc(file.bytes()));
  return file.bytes();
}

}  // namespace

int64_t checkpoint_file_size(const Checkpoint& checkpoint) {
  return static_cast<int64_t>(encode_checkpoint(checkpoint).size());
}

void save_checkpoint(const std::string& path, const Checkpoint& c) {
  const std::string bytes = encode_checkpoint(c);

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw CheckpointError(tmp + ": cannot create: " + errno_text());
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = errno_text();
      ::close(fd);
      ::unlink(tmp.c_str());
      throw CheckpointError(tmp + ": write failed: " + why);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw CheckpointError(tmp + ": cannot flush: " + why);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw CheckpointError(path + ": cannot rename the temporary file over it: " + why);
  }
  // Make the rename itself durable.
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

Checkpoint load_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(path + ": cannot open the checkpoint");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    throw CheckpointError(path + ": not a tuner checkpoint (bad magic)");
  }
  if (bytes.size() < kHeaderBytes) throw CheckpointError(path + ": truncated inside the header");
  uint32_t version;
  uint64_t length;
  std::memcpy(&version, bytes.data() + 8, 4);
  std::memcpy(&length, bytes.data() + 12, 8);
  if (version != kCheckpointFormatVersion) {
    throw CheckpointError(path + ": checkpoint format version " + std::to_string(version) +
                          ", this build reads version " + std::to_string(kCheckpointFormatVersion));
  }
  if (length > bytes.size() || bytes.size() - kHeaderBytes - 4 != length) {
    throw CheckpointError(
        path + ": truncated or padded: the header promises a body of " + std::to_string(length) +
        " bytes, the file holds " +
        std::to_string(bytes.size() < kHeaderBytes + 4 ? 0 : bytes.size() - kHeaderBytes - 4));
  }
  uint32_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 4, 4);
  const uint32_t actual = crc(std::span<const char>(bytes.data(), bytes.size() - 4));
  if (stored != actual) {
    throw CheckpointError(path + ": corrupt: checksum mismatch");
  }
  Reader r(std::span<const char>(bytes.data() + kHeaderBytes, length), path);
  Checkpoint c;
  std::vector<char> spec;
  r.array(spec, "model spec");
  c.model_spec.assign(spec.begin(), spec.end());
  r.array(c.parameters, "parameters");
  r.array(c.buffers, "buffers");
  r.array(c.optimizer_state, "optimizer state");
  c.optimizer_steps = r.scalar<int64_t>("optimizer steps");
  c.lr_step = r.scalar<int64_t>("LR step");
  for (uint64_t& w : c.data_rng) w = r.scalar<uint64_t>("data RNG state");
  r.array(c.dropout_seeds, "dropout seeds");
  r.array(c.dropout_calls, "dropout counters");
  c.epoch = r.scalar<int64_t>("epoch");
  c.best_value = r.scalar<double>("best value");
  c.best_epoch = r.scalar<int64_t>("best epoch");
  c.epochs_without_improvement = r.scalar<int64_t>("epochs without improvement");
  if (!r.done()) throw CheckpointError(path + ": corrupt: bytes left after the last field");
  return c;
}

}  // namespace tuner::training
