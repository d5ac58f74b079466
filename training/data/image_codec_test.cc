// PNG and JPEG decoding (each color form, each bad file refused naming it) and the bilinear
// resize, on files the tests write with libpng and TurboJPEG.
#include "training/data/image_codec.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "training/data/dataset.h"
#include "training/data/image_resize.h"
#include "training/data/image_test_files.h"

namespace tuner::training {
namespace {

using testing::encode_jpeg;
using testing::encode_png;
using testing::TestPixels;

// The message of the DataError decoding `bytes` as `name` throws ("no error" when none).
std::string decode_error(const std::vector<uint8_t>& bytes, const std::string& name) {
  try {
    decode_image(bytes, ImageColor::kRgb, name);
  } catch (const DataError& e) {
    return e.what();
  }
  return "no error";
}

float at(const Image& image, int64_t c, int64_t y, int64_t x) {
  return image.pixels[static_cast<size_t>((c * image.height + y) * image.width + x)];
}

TEST(ImageCodecTest, DecodesAnRgbPngIntoChannelPlanes) {
  TestPixels p = TestPixels::solid(5, 3, 3, 255, 128, 0);
  p.at(2, 4)[2] = 51;  // one blue pixel at the bottom right
  const Image image = decode_image(encode_png(p), ImageColor::kRgb, "a.png");
  ASSERT_EQ(image.channels, 3);
  EXPECT_EQ(image.height, 3);
  EXPECT_EQ(image.width, 5);
  EXPECT_FLOAT_EQ(at(image, 0, 0, 0), 1.0f);
  EXPECT_FLOAT_EQ(at(image, 1, 1, 2), 128.0f / 255.0f);
  EXPECT_FLOAT_EQ(at(image, 2, 0, 0), 0.0f);
  EXPECT_FLOAT_EQ(at(image, 2, 2, 4), 51.0f / 255.0f);
}

TEST(ImageCodecTest, GrayscaleIsTheLumaOfColorAndRgbRepeatsGray) {
  const std::vector<uint8_t> color = encode_png(TestPixels::solid(4, 4, 3, 200, 100, 50));
  const Image gray = decode_image(color, ImageColor::kGrayscale, "c.png");
  ASSERT_EQ(gray.channels, 1);
  EXPECT_NEAR(at(gray, 0, 3, 3), (0.299 * 200 + 0.587 * 100 + 0.114 * 50) / 255.0, 1e-6);

  const std::vector<uint8_t> gray_file = encode_png(TestPixels::solid(4, 4, 1, 77));
  const Image rgb = decode_image(gray_file, ImageColor::kRgb, "g.png");
  ASSERT_EQ(rgb.channels, 3);
  for (int c = 0; c < 3; ++c) EXPECT_FLOAT_EQ(at(rgb, c, 1, 1), 77.0f / 255.0f);
}

TEST(ImageCodecTest, AlphaIsDropped) {
  const Image image = decode_image(encode_png(TestPixels::solid(2, 2, 4, 10, 20, 30, 0)),
                                   ImageColor::kRgb, "t.png");
  ASSERT_EQ(image.channels, 3);
  EXPECT_FLOAT_EQ(at(image, 0, 0, 0), 10.0f / 255.0f);
  EXPECT_FLOAT_EQ(at(image, 2, 1, 1), 30.0f / 255.0f);
}

TEST(ImageCodecTest, DecodesJpegWithinItsLoss) {
  const Image image =
      decode_image(encode_jpeg(TestPixels::solid(8, 8, 3, 220, 30, 90)), ImageColor::kRgb, "a.jpg");
  ASSERT_EQ(image.channels, 3);
  EXPECT_EQ(image.height, 8);
  EXPECT_EQ(image.width, 8);
  EXPECT_NEAR(at(image, 0, 4, 4), 220.0 / 255.0, 3.0 / 255.0);
  EXPECT_NEAR(at(image, 1, 4, 4), 30.0 / 255.0, 3.0 / 255.0);
  EXPECT_NEAR(at(image, 2, 4, 4), 90.0 / 255.0, 3.0 / 255.0);

  const Image gray =
      decode_image(encode_jpeg(TestPixels::solid(8, 8, 1, 140)), ImageColor::kGrayscale, "g.jpg");
  ASSERT_EQ(gray.channels, 1);
  EXPECT_NEAR(at(gray, 0, 0, 0), 140.0 / 255.0, 2.0 / 255.0);
}

TEST(ImageCodecTest, RefusesATruncatedPngNamingTheFile) {
  std::vector<uint8_t> png = encode_png(TestPixels::solid(8, 8, 3, 1, 2, 3));
  png.resize(png.size() - 20);  // into the IDAT chunk, losing IEND
  const std::string e = decode_error(png, "dir/cat/a.png");
  EXPECT_EQ(e.rfind("dir/cat/a.png: truncated PNG (chunk IDAT at byte ", 0), 0u) << e;

  std::vector<uint8_t> headless = encode_png(TestPixels::solid(8, 8, 3, 1, 2, 3));
  headless.resize(10);
  EXPECT_EQ(decode_error(headless, "b.png"),
            "b.png: truncated PNG (the file ends at byte 10 before the IEND chunk)");
}

TEST(ImageCodecTest, RefusesACorruptPngNamingTheFile) {
  std::vector<uint8_t> png = encode_png(TestPixels::solid(8, 8, 3, 1, 2, 3));
  png[20] ^= 0xFF;  // the IHDR's data: its CRC no longer matches
  const std::string e = decode_error(png, "c.png");
  EXPECT_EQ(e.rfind("c.png: corrupt PNG (", 0), 0u) << e;
}

TEST(ImageCodecTest, RefusesATruncatedJpegNamingTheFile) {
  TestPixels p = TestPixels::solid(16, 16, 3, 0, 0, 0);
  for (int y = 0; y < 16; ++y) {
    for (int x = 0; x < 16; ++x) p.at(y, x)[0] = static_cast<uint8_t>(x * 16 + y);
  }
  std::vector<uint8_t> jpeg = encode_jpeg(p);
  jpeg.resize(jpeg.size() * 2 / 3);
  const std::string e = decode_error(jpeg, "dir/dog/b.jpg");
  EXPECT_EQ(e.rfind("dir/dog/b.jpg: truncated JPEG (", 0), 0u) << e;

  std::vector<uint8_t> header_only = encode_jpeg(p);
  header_only.resize(40);
  const std::string h = decode_error(header_only, "c.jpg");
  EXPECT_EQ(h.rfind("c.jpg: truncated JPEG (", 0), 0u) << h;
}

TEST(ImageCodecTest, RefusesAnImageTooLargeToDecode) {
  // A 1x1 PNG whose header says 100000 x 100000 (its CRC made to match).
  std::vector<uint8_t> png = encode_png(TestPixels::solid(1, 1, 1, 0));
  for (size_t at : {size_t{16}, size_t{20}}) {  // IHDR's width and height, big-endian
    png[at] = 0;
    png[at + 1] = 0x01;
    png[at + 2] = 0x86;
    png[at + 3] = 0xA0;
  }
  const uLong crc = crc32(0, png.data() + 12, 17);  // the chunk's type and data
  for (int i = 0; i < 4; ++i) png[29 + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
  EXPECT_EQ(decode_error(png, "big.png"),
            "big.png: PNG of 100000 x 100000 pixels: too large to decode (at most 268435456 "
            "pixels)");
}

// A 1 x 1 PNG whose IHDR (its CRC made to match) says width x height.
std::vector<uint8_t> png_claiming(uint32_t width, uint32_t height) {
  std::vector<uint8_t> png = encode_png(TestPixels::solid(1, 1, 3, 0));
  for (int i = 0; i < 4; ++i) {  // IHDR's width and height, big-endian
    png[16 + i] = static_cast<uint8_t>(width >> (24 - 8 * i));
    png[20 + i] = static_cast<uint8_t>(height >> (24 - 8 * i));
  }
  const uLong crc = crc32(0, png.data() + 12, 17);  // the chunk's type and data
  for (int i = 0; i < 4; ++i) png[29 + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
  return png;
}

// A small file whose header claims a large image (within the pixel limit) would have the decoder
// allocate and fill the whole image before it finds the data missing: refused from the sizes.
TEST(ImageCodecTest, ASmallFileClaimingAHugeImageIsRefusedBeforeDecoding) {
  const std::string png = decode_error(png_claiming(16384, 16384), "huge.png");
  EXPECT_EQ(png.rfind("huge.png: corrupt PNG (its image data, ", 0), 0u) << png;
  EXPECT_NE(png.find("cannot hold 16384 x 16384 pixels)"), std::string::npos) << png;

  std::vector<uint8_t> jpeg = encode_jpeg(TestPixels::solid(16, 16, 3, 9, 99, 199));
  size_t sof = 2;
  while (!(jpeg[sof] == 0xFF && jpeg[sof + 1] == 0xC0)) ++sof;  // SOF0: FF C0, length, P, Y, X
  for (size_t at : {sof + 5, sof + 7}) {
    jpeg[at] = 0x40;  // 16384
    jpeg[at + 1] = 0;
  }
  const std::string j = decode_error(jpeg, "huge.jpg");
  EXPECT_EQ(j, "huge.jpg: truncated JPEG (" + std::to_string(jpeg.size()) +
                   " bytes cannot hold 16384 x 16384 pixels)");

  // Large images of one color, the most compressed there are, still decode.
  EXPECT_EQ(decode_error(encode_png(TestPixels::solid(1024, 1024, 1, 7)), "big.png"), "no error");
  EXPECT_EQ(decode_error(encode_jpeg(TestPixels::solid(1024, 1024, 1, 7)), "big.jpg"), "no error");
}

TEST(ImageCodecTest, RefusesAFileThatIsNeither) {
  EXPECT_EQ(decode_error({'G', 'I', 'F', '8', '9', 'a'}, "x.png"),
            "x.png: neither a PNG nor a JPEG file (it starts with 47 49 46 38)");
  EXPECT_EQ(decode_error({}, "e.jpg"), "e.jpg: neither a PNG nor a JPEG file (it is empty)");
}

TEST(ImageResizeTest, UpscalesWithHalfPixelCenters) {
  // One row 0, 1: the output's samples fall at -0.25 (clamped), 0.25, 0.75 and 1.25 (clamped).
  const Image in{.channels = 1, .height = 1, .width = 2, .pixels = {0.0f, 1.0f}};
  const Image out = resize_bilinear(in, 2, 4);
  ASSERT_EQ(out.pixels.size(), 8u);
  const std::vector<float> row = {0.0f, 0.25f, 0.75f, 1.0f};
  for (int64_t y = 0; y < 2; ++y) {
    for (int64_t x = 0; x < 4; ++x) EXPECT_FLOAT_EQ(at(out, 0, y, x), row[x]) << y << "," << x;
  }
}

TEST(ImageResizeTest, DownscalingByTwoAveragesPairs) {
  Image in{.channels = 2, .height = 2, .width = 4};
  for (int c = 0; c < 2; ++c) {
    for (int i = 0; i < 8; ++i) in.pixels.push_back(static_cast<float>(c * 100 + i));
  }
  const Image out = resize_bilinear(in, 1, 2);
  ASSERT_EQ(out.channels, 2);
  // Output (0, 0) samples (0.5, 0.5): the mean of input pixels 0, 1, 4, 5.
  EXPECT_FLOAT_EQ(at(out, 0, 0, 0), (0 + 1 + 4 + 5) / 4.0f);
  EXPECT_FLOAT_EQ(at(out, 0, 0, 1), (2 + 3 + 6 + 7) / 4.0f);
  EXPECT_FLOAT_EQ(at(out, 1, 0, 1), 100 + (2 + 3 + 6 + 7) / 4.0f);
}

TEST(ImageResizeTest, AKnownPngAfterResize) {
  // 8x8: left half black, right half white; to 4x4 each output pixel averages a 2x2 block, all
  // black or all white; to 3x3 the middle column straddles the edge.
  TestPixels p = TestPixels::solid(8, 8, 1, 0);
  for (int y = 0; y < 8; ++y) {
    for (int x = 4; x < 8; ++x) p.at(y, x)[0] = 255;
  }
  const Image image = decode_image(encode_png(p), ImageColor::kGrayscale, "half.png");
  const Image four = resize_bilinear(image, 4, 4);
  EXPECT_FLOAT_EQ(at(four, 0, 2, 1), 0.0f);
  EXPECT_FLOAT_EQ(at(four, 0, 2, 2), 1.0f);
  const Image three = resize_bilinear(image, 3, 3);
  // x = 1 samples 1.5 * 8/3 - 0.5 = 3.5: halfway between pixel 3 (black) and 4 (white).
  EXPECT_NEAR(at(three, 0, 1, 1), 0.5f, 1e-6);
  EXPECT_FLOAT_EQ(at(three, 0, 1, 0), 0.0f);
  EXPECT_FLOAT_EQ(at(three, 0, 1, 2), 1.0f);
}

}  // namespace
}  // namespace tuner::training
