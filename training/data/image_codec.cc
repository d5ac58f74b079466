#include "training/data/image_codec.h"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string_view>
#include <vector>

#include "training/data/dataset.h"

namespace tuner::training {

namespace {

constexpr uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};

// The most pixels an image may have: its decoded copy is held in memory while it is resized.
constexpr int64_t kMaxPixels = int64_t{1} << 28;

// Decoded 8-bit pixels, interleaved: [H, W, K], K = 1 (gray) or 3 (RGB).
struct Pixels {
  int64_t height = 0, width = 0, components = 0;
  std::vector<uint8_t> values;
};

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw DataError(name + ": " + what);
}

// Refuses an image too large to decode.
void check_pixels(int64_t height, int64_t width, const char* format, const std::string& name) {
  if (height * width > kMaxPixels) {
    fail(name, std::string(format) + " of " + std::to_string(width) + " x " +
                   std::to_string(height) + " pixels: too large to decode (at most " +
                   std::to_string(kMaxPixels) + " pixels)");
  }
}

uint32_t big_endian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// The most bytes deflate's data inflates to, per byte of it (its longest match, 258 bytes, in
// two bits).
constexpr double kMaxInflateRatio = 1032;

// The bits of one pixel of a PNG of `color_type` and `bit_depth` (IHDR's), 0 when they are not
// a PNG's.
int png_pixel_bits(uint8_t color_type, uint8_t bit_depth) {
  const int samples = color_type == 0   ? 1
                      : color_type == 2 ? 3
                      : color_type == 3 ? 1
                      : color_type == 4 ? 2
                      : color_type == 6 ? 4
                                        : 0;
  return bit_depth > 16 ? 0 : samples * bit_depth;
}

// Walks the chunks after the signature up to IEND: a file that ends inside a chunk, or before
// IEND, is truncated (libpng's own message for it would not say so). Image data (IDAT) too short
// to inflate to the pixels IHDR gives is corrupt: refused before the image is allocated.
void check_png_chunks(std::span<const uint8_t> bytes, const std::string& name) {
  size_t at = sizeof(kPngSignature);
  double width = 0, height = 0, image_data = 0;
  int pixel_bits = 0;
  while (true) {
    if (at + 8 > bytes.size()) {
      fail(name, "truncated PNG (the file ends at byte " + std::to_string(bytes.size()) +
                     " before the IEND chunk)");
    }
    const uint32_t length = big_endian32(bytes.data() + at);
    const std::string type(reinterpret_cast<const char*>(bytes.data() + at + 4), 4);
    const uint64_t needs = uint64_t{length} + 12;  // length, type, data, CRC
    if (at + needs > bytes.size()) {
      fail(name, "truncated PNG (chunk " + type + " at byte " + std::to_string(at) + " needs " +
                     std::to_string(needs) + " bytes, the file ends at byte " +
                     std::to_string(bytes.size()) + ")");
    }
    const uint8_t* data = bytes.data() + at + 8;
    if (type == "IHDR" && length == 13) {
      width = big_endian32(data);
      height = big_endian32(data + 4);
      pixel_bits = png_pixel_bits(data[9], data[8]);
    } else if (type == "IDAT") {
      image_data += length;
    } else if (type == "IEND") {
      // An image past kMaxPixels is refused as too large once libpng has read its header.
      const double needs_bytes = width * height * pixel_bits / 8;
      if (width * height <= kMaxPixels && needs_bytes > image_data * kMaxInflateRatio + 1024) {
        fail(name, "corrupt PNG (its image data, " +
                       std::to_string(static_cast<int64_t>(image_data)) + " bytes, cannot hold " +
                       std::to_string(static_cast<int64_t>(width)) + " x " +
                       std::to_string(static_cast<int64_t>(height)) + " pixels)");
      }
      return;
    }
    at += needs;
  }
}

// Owns a png_image's decoder state.
struct PngImage {
  png_image image{};
  PngImage() { image.version = PNG_IMAGE_VERSION; }
  ~PngImage() { png_image_free(&image); }
  PngImage(const PngImage&) = delete;
  PngImage& operator=(const PngImage&) = delete;
};

Pixels decode_png(std::span<const uint8_t> bytes, const std::string& name) {
  check_png_chunks(bytes, name);
  PngImage png;
  if (!png_image_begin_read_from_memory(&png.image, bytes.data(), bytes.size())) {
    fail(name, std::string("corrupt PNG (") + png.image.message + ")");
  }
  const bool color = (png.image.format & PNG_FORMAT_FLAG_COLOR) != 0;
  const bool alpha = (png.image.format & PNG_FORMAT_FLAG_ALPHA) != 0;
  png.image.format = (color ? PNG_FORMAT_FLAG_COLOR : 0) | (alpha ? PNG_FORMAT_FLAG_ALPHA : 0);
  const int64_t height = png.image.height, width = png.image.width;
  check_pixels(height, width, "PNG", name);
  const int64_t read_components = PNG_IMAGE_SAMPLE_CHANNELS(png.image.format);
  std::vector<uint8_t> read(static_cast<size_t>(height * width * read_components));
  if (!png_image_finish_read(&png.image, /*background=*/nullptr, read.data(), /*row_stride=*/0,
                             /*colormap=*/nullptr)) {
    fail(name, std::string("corrupt PNG (") + png.image.message + ")");
  }
  Pixels p{.height = height, .width = width, .components = color ? 3 : 1};
  if (!alpha) {
    p.values = std::move(read);
    return p;
  }
  p.values.resize(static_cast<size_t>(height * width * p.components));
  for (int64_t i = 0; i < height * width; ++i) {
    std::copy_n(read.data() + i * read_components, p.components,
                p.values.data() + i * p.components);
  }
  return p;
}

// Owns a TurboJPEG decompressor.
struct TjHandle {
  tjhandle handle = tjInitDecompress();
  ~TjHandle() {
    if (handle) tjDestroy(handle);
  }
  TjHandle() = default;
  TjHandle(const TjHandle&) = delete;
  TjHandle& operator=(const TjHandle&) = delete;
};

// A failed JPEG decode: truncated when the decoder says the data ended early or the file has no
// EOI marker at its end, else corrupt.
[[noreturn]] void jpeg_failed(std::span<const uint8_t> bytes, const std::string& why,
                              const std::string& name) {
  const bool has_eoi =
      bytes.size() >= 2 && bytes[bytes.size() - 2] == 0xFF && bytes[bytes.size() - 1] == 0xD9;
  const bool premature = why.find("Premature end") != std::string::npos;
  fail(name, std::string(premature || !has_eoi ? "truncated" : "corrupt") + " JPEG (" + why + ")");
}

// Whether the frame of the JPEG `bytes` is Huffman-coded: its first SOF marker (walking the
// marker segments from SOI) is not one of arithmetic coding's (SOF9 to SOF15). False when no SOF
// comes before the first SOS or the segments end early (the decoder then says what is wrong).
bool huffman_coded(std::span<const uint8_t> bytes) {
  size_t at = 2;
  while (at + 4 <= bytes.size()) {
    if (bytes[at] != 0xFF) return false;
    const uint8_t marker = bytes[at + 1];
    if (marker == 0xFF) {  // a fill byte
      ++at;
      continue;
    }
    if (marker == 0xDA || marker == 0xD9) return false;  // SOS, EOI
    const bool sof =
        marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (sof) return marker < 0xC8;
    at += 2 + ((size_t{bytes[at + 2]} << 8) | bytes[at + 3]);
  }
  return false;
}

Pixels decode_jpeg(std::span<const uint8_t> bytes, const std::string& name) {
  TjHandle tj;
  if (!tj.handle)
    fail(name, std::string("cannot start the JPEG decoder (") + tjGetErrorStr() + ")");
  auto* data = const_cast<unsigned char*>(bytes.data());  // TurboJPEG 2 takes no const
  const auto size = static_cast<unsigned long>(bytes.size());
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(tj.handle, data, size, &width, &height, &subsampling, &colorspace) != 0) {
    jpeg_failed(bytes, tjGetErrorStr2(tj.handle), name);
  }
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) {
    fail(name, "unsupported JPEG (CMYK color; save it as RGB or grayscale)");
  }
  check_pixels(height, width, "JPEG", name);
  // Huffman coding spends a bit at least on each 8 x 8 block of the image (its DC coefficient):
  // a file too short for its blocks is cut short, refused before the decoder makes up the rest.
  if (huffman_coded(bytes) &&
      int64_t{height} * width > static_cast<int64_t>(bytes.size()) * 8 * 64) {
    fail(name, "truncated JPEG (" + std::to_string(bytes.size()) + " bytes cannot hold " +
                   std::to_string(width) + " x " + std::to_string(height) + " pixels)");
  }
  const bool gray = colorspace == TJCS_GRAY;
  Pixels p{.height = height, .width = width, .components = gray ? 1 : 3};
  p.values.resize(static_cast<size_t>(p.height * p.width * p.components));
  if (tjDecompress2(tj.handle, data, size, p.values.data(), width, /*pitch=*/0, height,
                    gray ? TJPF_GRAY : TJPF_RGB, 0) != 0) {
    const std::string why = tjGetErrorStr2(tj.handle);
    // A warning leaves a usable image unless the data ended early.
    if (tjGetErrorCode(tj.handle) == TJERR_FATAL ||
        why.find("Premature end") != std::string::npos) {
      jpeg_failed(bytes, why, name);
    }
  }
  return p;
}

std::string hex_start(std::span<const uint8_t> bytes) {
  std::string s;
  for (size_t i = 0; i < std::min<size_t>(bytes.size(), 4); ++i) {
    char b[4];
    std::snprintf(b, sizeof(b), "%02X", bytes[i]);
    s += (i ? " " : "") + std::string(b);
  }
  return s;
}

// `p` as [C, H, W] floats of `color`.
Image to_image(const Pixels& p, ImageColor color) {
  const int64_t channels = image_channels(color);
  const int64_t plane = p.height * p.width;
  Image out{.channels = channels, .height = p.height, .width = p.width};
  out.pixels.resize(static_cast<size_t>(channels * plane));
  constexpr float kScale = 1.0f / 255.0f;
  const uint8_t* v = p.values.data();
  if (p.components == channels) {
    for (int64_t i = 0; i < plane; ++i) {
      for (int64_t c = 0; c < channels; ++c) {
        out.pixels[static_cast<size_t>(c * plane + i)] = v[i * channels + c] * kScale;
      }
    }
  } else if (channels == 3) {  // gray to RGB
    for (int64_t i = 0; i < plane; ++i) {
      const float g = v[i] * kScale;
      for (int64_t c = 0; c < 3; ++c) out.pixels[static_cast<size_t>(c * plane + i)] = g;
    }
  } else {  // RGB to gray: BT.601 luma
    for (int64_t i = 0; i < plane; ++i) {
      const uint8_t* rgb = v + i * 3;
      out.pixels[static_cast<size_t>(i)] =
          (0.299f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2]) * kScale;
    }
  }
  return out;
}

}  // namespace

ImageFileFormat image_file_format(std::span<const uint8_t> bytes) {
  if (bytes.size() >= sizeof(kPngSignature) &&
      std::memcmp(bytes.data(), kPngSignature, sizeof(kPngSignature)) == 0) {
    return ImageFileFormat::kPng;
  }
  if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) {
    return ImageFileFormat::kJpeg;
  }
  return ImageFileFormat::kUnknown;
}

Image decode_image(std::span<const uint8_t> bytes, ImageColor color, const std::string& name) {
  switch (image_file_format(bytes)) {
    case ImageFileFormat::kPng:
      return to_image(decode_png(bytes, name), color);
    case ImageFileFormat::kJpeg:
      return to_image(decode_jpeg(bytes, name), color);
    case ImageFileFormat::kUnknown:
      break;
  }
  fail(name, bytes.empty()
                 ? "neither a PNG nor a JPEG file (it is empty)"
                 : "neither a PNG nor a JPEG file (it starts with " + hex_start(bytes) + ")");
}

Image read_image_file(const std::string& path, ImageColor color) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot be read");
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  if (in.bad()) fail(path, "read failed");
  return decode_image(bytes, color, path);
}

}  // namespace tuner::training
