// Resizing an image to a declared size by bilinear interpolation.
//
// Thread safety: pure function; safe from any thread.
#ifndef TUNER_TRAINING_DATA_IMAGE_RESIZE_H_
#define TUNER_TRAINING_DATA_IMAGE_RESIZE_H_

#include <cstdint>

#include "training/data/image.h"

namespace tuner::training {

// `image` [C, H, W] resized to [C, height, width], each channel alike, by bilinear interpolation
// with half-pixel centers and no antialiasing, as PyTorch's
// interpolate(mode="bilinear", align_corners=False, antialias=False) and OpenCV's INTER_LINEAR:
// output pixel (y, x) samples the input at ((y + 0.5) * H / height - 0.5, (x + 0.5) * W / width -
// 0.5), clamped to the image's edge, and mixes its 4 nearest pixels by their distances. The same
// size returns a copy. REQUIRES: image non-empty, height >= 1, width >= 1
// (else std::invalid_argument).
Image resize_bilinear(const Image& image, int64_t height, int64_t width);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DATA_IMAGE_RESIZE_H_
