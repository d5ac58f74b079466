#include "training/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdio>
#include <memory>
#include <vector>

namespace tuner::training {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // unsigned bytes, 3 dims
constexpr uint32_t kLabelsMagic = 0x00000801;  // unsigned bytes, 1 dim

struct GzClose {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<std::remove_pointer_t<gzFile>, GzClose>;

// Sequential reads from a gzip (or plain) file, with errors that name it.
class GzReader {
 public:
  explicit GzReader(std::string path) : path_(std::move(path)) {
    file_.reset(gzopen(path_.c_str(), "rb"));
    if (!file_) throw DataError(path_ + ": cannot open");
    gzbuffer(file_.get(), 1 << 17);
  }

  // Reads up to out.size() bytes; returns how many (fewer only at the end of the data).
  size_t read(std::span<uint8_t> out) {
    size_t done = 0;
    while (done < out.size()) {
      const unsigned chunk =
          static_cast<unsigned>(std::min<size_t>(out.size() - done, INT_MAX / 2));
      const int n = gzread(file_.get(), out.data() + done, chunk);
      if (n < 0) {
        int code = 0;
        const char* msg = gzerror(file_.get(), &code);
        std::string why = msg ? msg : "?";
        if (why.starts_with(path_ + ": ")) why = why.substr(path_.size() + 2);
        throw DataError(path_ + ": corrupt gzip data (" + why + ")");
      }
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    return done;
  }

  uint32_t read_u32(const char* what) {
    std::array<uint8_t, 4> b{};
    if (read(b) != 4)
      throw DataError(path_ + ": truncated: the file ends inside the " + std::string(what) +
                      " of the header");
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
  }

  void read_exact(std::span<uint8_t> out, const std::string& what) {
    const size_t n = read(out);
    if (n != out.size()) {
      throw DataError(path_ + ": truncated: expected " + std::to_string(out.size()) + " bytes of " +
                      what + ", the file ends after " + std::to_string(n));
    }
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  GzFile file_;
};

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

void check_magic(GzReader& r, uint32_t expected, const char* kind) {
  const uint32_t magic = r.read_u32("magic number");
  if (magic != expected) {
    throw DataError(r.path() + ": bad magic number " + hex(magic) + " (an IDX " + kind +
                    " file starts with " + hex(expected) + "); is this the right file?");
  }
}

}  // namespace

Dataset read_idx(const std::string& images_path, const std::string& labels_path, int64_t limit) {
  GzReader images(images_path);
  check_magic(images, kImagesMagic, "image");
  const uint32_t n_images = images.read_u32("image count");
  const uint32_t h = images.read_u32("height"), w = images.read_u32("width");
  if (h == 0 || w == 0 || h > 65536 || w > 65536) {
    throw DataError(images_path + ": implausible image size " + std::to_string(h) + "x" +
                    std::to_string(w));
  }

  GzReader labels(labels_path);
  check_magic(labels, kLabelsMagic, "label");
  const uint32_t n_labels = labels.read_u32("label count");
  if (n_images != n_labels) {
    throw DataError(images_path + " has " + std::to_string(n_images) + " images but " +
                    labels_path + " has " + std::to_string(n_labels) + " labels");
  }

  const int64_t n = limit >= 0 ? std::min<int64_t>(limit, n_images) : n_images;
  // The pixels are read into memory as they arrive, a chunk at a time, not allocated as the
  // header promises: a short file with a large header is refused as truncated without taking
  // the memory it claims.
  const uint64_t total = static_cast<uint64_t>(n) * h * w;
  constexpr uint64_t kChunk = uint64_t{64} << 20;
  std::vector<uint8_t> raw;
  while (raw.size() < total) {
    const size_t before = raw.size();
    raw.resize(static_cast<size_t>(std::min(total, before + kChunk)));
    const size_t got = images.read(std::span<uint8_t>(raw).subspan(before));
    if (got != raw.size() - before) {
      throw DataError(images.path() + ": truncated: expected " + std::to_string(total) +
                      " bytes of " + std::to_string(n) + " images of " + std::to_string(h) + "x" +
                      std::to_string(w) + " (the header promises " + std::to_string(n_images) +
                      "), the file ends after " + std::to_string(before + got));
    }
  }
  std::vector<float> features(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) features[i] = static_cast<float>(raw[i]) / 255.0f;

  std::vector<uint8_t> raw_labels(static_cast<size_t>(n));
  labels.read_exact(raw_labels, std::to_string(n) + " labels (the header promises " +
                                    std::to_string(n_labels) + ")");
  std::vector<int32_t> label_values(raw_labels.begin(), raw_labels.end());
  int32_t classes = 0;
  for (int32_t l : label_values) classes = std::max(classes, l + 1);
  return Dataset(Shape{1, h, w}, std::move(features), std::move(label_values), classes);
}

}  // namespace tuner::training
