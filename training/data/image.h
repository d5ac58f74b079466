// A decoded image in memory, as the engine's image data sets hold their samples: C channel planes
// of H rows of W floats, values in [0, 1] (0 black, 1 the full 8-bit intensity).
//
// Thread safety: a plain value; thread-compatible.
#ifndef TUNER_TRAINING_DATA_IMAGE_H_
#define TUNER_TRAINING_DATA_IMAGE_H_

#include <cstdint>
#include <vector>

namespace tuner::training {

// The channels a decoded image is given.
enum class ImageColor {
  kGrayscale,  // 1 channel: BT.601 luma of a color file, 0.299 R + 0.587 G + 0.114 B
  kRgb,        // 3 channels R, G, B: a gray file's value repeated
};

// 1 for kGrayscale, 3 for kRgb.
inline int64_t image_channels(ImageColor color) { return color == ImageColor::kRgb ? 3 : 1; }

// [C, H, W], row-major: pixels[(c * height + y) * width + x].
struct Image {
  int64_t channels = 0, height = 0, width = 0;
  std::vector<float> pixels;  // [C, H, W], each in [0, 1]
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DATA_IMAGE_H_
