// For tests only: PNG and JPEG files written with libpng and TurboJPEG, from 8-bit pixels.
// Header-only; a test that includes it links libpng and libturbojpeg.
#ifndef TUNER_TRAINING_DATA_IMAGE_TEST_FILES_H_
#define TUNER_TRAINING_DATA_IMAGE_TEST_FILES_H_

#include <png.h>
#include <turbojpeg.h>

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace tuner::training::testing {

// 8-bit pixels, interleaved: [H, W, K], K = 1 (gray), 3 (RGB) or 4 (RGBA).
struct TestPixels {
  int width = 0, height = 0, components = 3;
  std::vector<uint8_t> values;

  // A `width` x `height` image of one color (the first `components` of r, g, b, a).
  static TestPixels solid(int width, int height, int components, uint8_t r, uint8_t g = 0,
                          uint8_t b = 0, uint8_t a = 255) {
    TestPixels p{.width = width, .height = height, .components = components};
    const uint8_t color[4] = {r, g, b, a};
    for (int i = 0; i < width * height; ++i) {
      for (int c = 0; c < components; ++c) p.values.push_back(color[c]);
    }
    return p;
  }
  uint8_t* at(int y, int x) { return values.data() + (y * width + x) * components; }
};

inline std::vector<uint8_t> encode_png(const TestPixels& p) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(p.width);
  image.height = static_cast<png_uint_32>(p.height);
  image.format = p.components == 1   ? PNG_FORMAT_GRAY
                 : p.components == 3 ? PNG_FORMAT_RGB
                                     : PNG_FORMAT_RGBA;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&image, nullptr, &size, 0, p.values.data(), 0, nullptr)) {
    throw std::runtime_error(std::string("encode_png: ") + image.message);
  }
  std::vector<uint8_t> out(size);
  if (!png_image_write_to_memory(&image, out.data(), &size, 0, p.values.data(), 0, nullptr)) {
    throw std::runtime_error(std::string("encode_png: ") + image.message);
  }
  out.resize(size);
  return out;
}

// Quality 100 without chroma subsampling (4:4:4), so that solid colors come back within a few
// levels. REQUIRES: p.components is 1 or 3.
inline std::vector<uint8_t> encode_jpeg(const TestPixels& p, int quality = 100) {
  tjhandle tj = tjInitCompress();
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(tj, p.values.data(), p.width, 0, p.height,
                             p.components == 1 ? TJPF_GRAY : TJPF_RGB, &buffer, &size,
                             p.components == 1 ? TJSAMP_GRAY : TJSAMP_444, quality, 0);
  std::vector<uint8_t> out;
  if (rc == 0) out.assign(buffer, buffer + size);
  tjFree(buffer);
  tjDestroy(tj);
  if (rc != 0) throw std::runtime_error("encode_jpeg failed");
  return out;
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

}  // namespace tuner::training::testing

#endif  // TUNER_TRAINING_DATA_IMAGE_TEST_FILES_H_
