// Decoding PNG and JPEG files into Images (training/data/image.h): libpng (its simplified API)
// and libjpeg-turbo's TurboJPEG API. The format is told by the file's first bytes, not its name.
//
// Both decode 8 bits a channel: a 16-bit PNG is reduced to 8 bits, a palette expanded, the alpha
// channel dropped (the color values kept as they are, as PIL's convert("RGB") does); a JPEG is
// decoded to RGB, or gray when it is a grayscale JPEG. The result then takes the channels of
// ImageColor.
//
// Thread safety: pure functions; safe from any thread.
#ifndef TUNER_TRAINING_DATA_IMAGE_CODEC_H_
#define TUNER_TRAINING_DATA_IMAGE_CODEC_H_

#include <cstdint>
#include <span>
#include <string>

#include "training/data/image.h"

namespace tuner::training {

enum class ImageFileFormat {
  kUnknown,
  kPng,   // starts with the 8-byte PNG signature 89 50 4E 47 0D 0A 1A 0A
  kJpeg,  // starts with FF D8 FF (SOI and a marker)
};

// The format `bytes` start with.
ImageFileFormat image_file_format(std::span<const uint8_t> bytes);

// Decodes the PNG or JPEG `bytes` into [C, H, W] floats in [0, 1], C of `color`. `name` (the
// file's path) starts every message. Throws DataError:
//   "a.png: truncated PNG (chunk IDAT at byte 41 needs 812 bytes, the file ends at byte 300)",
//   "a.jpg: truncated JPEG (Premature end of JPEG file)",
//   "a.png: corrupt PNG (IDAT: CRC error)", "a.jpg: corrupt JPEG (...)",
//   "a.png: neither a PNG nor a JPEG file (it starts with 47 49 46 38)",
//   "a.png: PNG of 100000 x 100000 pixels: too large to decode (at most 268435456 pixels)",
//   "a.png: corrupt PNG (its image data, 57 bytes, cannot hold 16384 x 16384 pixels)",
//   "a.jpg: truncated JPEG (633 bytes cannot hold 16384 x 16384 pixels)": a file too short for
//   the image its header gives is refused before the image is decoded.
Image decode_image(std::span<const uint8_t> bytes, ImageColor color, const std::string& name);

// The file at `path` read and decoded as decode_image does; DataError also when it cannot be
// read ("a.png: cannot be read").
Image read_image_file(const std::string& path, ImageColor color);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DATA_IMAGE_CODEC_H_
