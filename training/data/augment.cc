#include "training/data/augment.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "training/rng.h"

namespace tuner::training {

Augmentation::Augmentation(const Shape& sample, AugmentOptions options)
    : channels_(sample.rank() == 3 ? sample[0] : 0),
      height_(sample.rank() == 3 ? sample[1] : 0),
      width_(sample.rank() == 3 ? sample[2] : 0),
      options_(std::move(options)) {
  if (sample.rank() != 3) {
    throw std::invalid_argument("augmentation: needs image samples [C, H, W], got " +
                                sample.to_string());
  }
  if (!(options_.flip >= 0.0 && options_.flip <= 1.0)) {
    throw std::invalid_argument("augmentation: flip must be a probability in [0, 1], got " +
                                std::to_string(options_.flip));
  }
  const auto c = static_cast<size_t>(channels_);
  if (options_.fill.empty()) {
    fill_.assign(c, 0.0f);
  } else if (options_.fill.size() == 1) {
    fill_.assign(c, options_.fill[0]);
  } else if (options_.fill.size() == c) {
    fill_ = options_.fill;
  } else {
    throw std::invalid_argument("augmentation: " + std::to_string(options_.fill.size()) +
                                " fill values for " + std::to_string(c) + " channels");
  }
}

void Augmentation::shift(std::span<float> sample, std::span<float> scratch, int64_t dy,
                         int64_t dx) const {
  const int64_t h = height_, w = width_, plane = h * w;
  std::copy(sample.begin(), sample.end(), scratch.begin());
  const int64_t x0 = std::clamp<int64_t>(-dx, 0, w), x1 = std::clamp<int64_t>(w - dx, 0, w);
  for (int64_t c = 0; c < channels_; ++c) {
    const float* in = scratch.data() + c * plane;
    float* out = sample.data() + c * plane;
    const float fill = fill_[static_cast<size_t>(c)];
    for (int64_t y = 0; y < h; ++y) {
      float* row = out + y * w;
      const int64_t sy = y + dy;
      if (sy < 0 || sy >= h) {
        std::fill(row, row + w, fill);
        continue;
      }
      std::fill(row, row + x0, fill);
      if (x1 > x0) std::copy(in + sy * w + x0 + dx, in + sy * w + x1 + dx, row + x0);
      std::fill(row + std::max(x0, x1), row + w, fill);
    }
  }
}

void Augmentation::apply(std::span<float> sample, std::span<float> scratch, uint64_t key) const {
  Rng rng(key);
  const int64_t p = options_.crop_padding;
  if (p >= 0) {  // the crop's offset into the padded image, less the padding
    const auto range = static_cast<uint64_t>(2 * p + 1);
    const int64_t dy = static_cast<int64_t>(rng.next_u64() % range) - p;
    const int64_t dx = static_cast<int64_t>(rng.next_u64() % range) - p;
    if (dy != 0 || dx != 0) shift(sample, scratch, dy, dx);
  }
  if (options_.flip > 0.0 && static_cast<double>(rng.uniform()) < options_.flip) {
    for (int64_t r = 0; r < channels_ * height_; ++r) {
      float* row = sample.data() + r * width_;
      std::reverse(row, row + width_);
    }
  }
}

}  // namespace tuner::training
