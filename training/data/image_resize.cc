#include "training/data/image_resize.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace tuner::training {

namespace {

// For each output coordinate along one axis: the two input coordinates it mixes and the weight
// of the second.
struct Taps {
  std::vector<int64_t> lo, hi;
  std::vector<float> frac;
};

Taps taps(int64_t in, int64_t out) {
  Taps t;
  t.lo.resize(static_cast<size_t>(out));
  t.hi.resize(static_cast<size_t>(out));
  t.frac.resize(static_cast<size_t>(out));
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  for (int64_t i = 0; i < out; ++i) {
    const double src = std::max(0.0, (static_cast<double>(i) + 0.5) * scale - 0.5);
    const auto lo = std::min(static_cast<int64_t>(src), in - 1);
    const auto k = static_cast<size_t>(i);
    t.lo[k] = lo;
    t.hi[k] = std::min(lo + 1, in - 1);
    t.frac[k] = static_cast<float>(src - static_cast<double>(lo));
  }
  return t;
}

}  // namespace

Image resize_bilinear(const Image& image, int64_t height, int64_t width) {
  if (image.channels < 1 || image.height < 1 || image.width < 1 || height < 1 || width < 1 ||
      static_cast<int64_t>(image.pixels.size()) != image.channels * image.height * image.width) {
    throw std::invalid_argument("resize_bilinear: an empty image or size");
  }
  if (height == image.height && width == image.width) return image;
  const Taps ty = taps(image.height, height);
  const Taps tx = taps(image.width, width);
  Image out{.channels = image.channels, .height = height, .width = width};
  out.pixels.resize(static_cast<size_t>(image.channels * height * width));
  for (int64_t c = 0; c < image.channels; ++c) {
    const float* plane = image.pixels.data() + c * image.height * image.width;
    float* dst = out.pixels.data() + c * height * width;
    for (int64_t y = 0; y < height; ++y) {
      const auto ky = static_cast<size_t>(y);
      const float* row0 = plane + ty.lo[ky] * image.width;
      const float* row1 = plane + ty.hi[ky] * image.width;
      const float fy = ty.frac[ky];
      for (int64_t x = 0; x < width; ++x) {
        const auto kx = static_cast<size_t>(x);
        const float fx = tx.frac[kx];
        const float top = row0[tx.lo[kx]] + fx * (row0[tx.hi[kx]] - row0[tx.lo[kx]]);
        const float bottom = row1[tx.lo[kx]] + fx * (row1[tx.hi[kx]] - row1[tx.lo[kx]]);
        dst[y * width + x] = top + fy * (bottom - top);
      }
    }
  }
  return out;
}

}  // namespace tuner::training
