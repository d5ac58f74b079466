// libFuzzer target for the image decoders (training/data/image_codec.h: PNG through libpng, JPEG
// through TurboJPEG), which read the files of image_folder data sets, and the resize the
// image-folder loader applies to what they decode (training/data/image_resize.h).
//
// The input is the file as is; its size's parity picks the color it is decoded to (odd: gray,
// even: RGB). Properties checked on every input:
//   1. decoding returns or throws DataError, nothing else (ASan/UBSan catch memory errors);
//   2. a decoded image has the color's channels, at least one row and column, and C x H x W
//      pixels, each in [0, 1]; resized to 5 x 7 it has C x 5 x 7 pixels, each in [0, 1].
// Build and run: scripts/fuzz (docs/testing.md).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "training/data/dataset.h"
#include "training/data/image.h"
#include "training/data/image_codec.h"
#include "training/data/image_resize.h"

namespace {

using tuner::training::Image;

void check(const Image& image, int64_t channels, const char* what) {
  bool ok = image.channels == channels && image.height >= 1 && image.width >= 1 &&
            image.pixels.size() == static_cast<size_t>(channels * image.height * image.width);
  for (size_t i = 0; ok && i < image.pixels.size(); ++i) {
    ok = image.pixels[i] >= 0.0f && image.pixels[i] <= 1.0f;
  }
  if (!ok) {
    std::fprintf(stderr,
                 "%s: an image of %lld x %lld x %lld with %zu pixels (or one outside [0, 1])\n",
                 what, static_cast<long long>(image.channels), static_cast<long long>(image.height),
                 static_cast<long long>(image.width), image.pixels.size());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tuner::training::ImageColor;
  const ImageColor color = size % 2 == 1 ? ImageColor::kGrayscale : ImageColor::kRgb;
  const int64_t channels = tuner::training::image_channels(color);
  Image image;
  try {
    image = tuner::training::decode_image(std::span<const uint8_t>(data, size), color, "input");
  } catch (const tuner::training::DataError&) {
    return 0;
  }
  check(image, channels, "decode_image");
  const Image resized = tuner::training::resize_bilinear(image, 5, 7);
  check(resized, channels, "resize_bilinear");
  if (resized.height != 5 || resized.width != 7) {
    std::fprintf(stderr, "resize_bilinear: %lld x %lld, not 5 x 7\n",
                 static_cast<long long>(resized.height), static_cast<long long>(resized.width));
    std::abort();
  }
  return 0;
}
