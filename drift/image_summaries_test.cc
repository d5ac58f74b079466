#include "drift/image_summaries.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tuner::drift {
namespace {

std::vector<double> summarize(const std::vector<float>& pixels, const training::Shape& shape) {
  std::vector<double> out(image_summary_names().size());
  image_summaries(pixels, shape, out);
  return out;
}

TEST(ImageSummariesTest, OneBrightPixel) {
  // [[0, 255], [0, 0]]: worked by hand.
  const std::vector<double> s = summarize({0, 255, 0, 0}, training::Shape{1, 2, 2});
  EXPECT_DOUBLE_EQ(s[0], 63.75);                                        // image_mean
  EXPECT_NEAR(s[1], std::sqrt(255.0 * 255 / 4 - 63.75 * 63.75), 1e-9);  // image_std
  EXPECT_DOUBLE_EQ(s[2], 0.25);                                         // nonzero_fraction
  EXPECT_DOUBLE_EQ(s[3], 0.0);         // intensity_q50 of 0, 0, 0, 255
  EXPECT_NEAR(s[4], 0.7 * 255, 1e-9);  // intensity_q90: 2.7 of the way
  EXPECT_DOUBLE_EQ(s[5], 255.0);       // intensity_max
  EXPECT_DOUBLE_EQ(s[6], 0.0);         // center_row
  EXPECT_DOUBLE_EQ(s[7], 1.0);         // center_col
  EXPECT_DOUBLE_EQ(s[8], 0.0);         // spread: all mass at one pixel
  EXPECT_DOUBLE_EQ(s[9], 127.5);       // edge_strength: (255 + 255) / 4 pairs
}

TEST(ImageSummariesTest, ShiftsMoveTheirSummaries) {
  // A 4x4 gradient; inverted, brightened and moved copies.
  std::vector<float> img(16);
  for (int i = 0; i < 16; ++i) img[i] = (i % 4 == 0) ? 0.0f : static_cast<float>(16 * i);
  const training::Shape shape{4, 4};
  const std::vector<double> base = summarize(img, shape);
  std::vector<float> inverted = img, brighter = img;
  for (float& v : inverted) v = 255 - v;
  for (float& v : brighter) v = std::min(255.0f, v + 40);
  EXPECT_GT(summarize(inverted, shape)[0], base[0] + 50);
  EXPECT_EQ(summarize(brighter, shape)[2], 1.0);  // no zero left
  EXPECT_GT(base[2], 0.5);
  EXPECT_LT(base[2], 1.0);
  // The centre of mass follows a shift by one column.
  std::vector<float> left(16, 0), right(16, 0);
  left[5] = 100;
  right[6] = 100;
  EXPECT_DOUBLE_EQ(summarize(right, shape)[7] - summarize(left, shape)[7], 1.0);
}

TEST(ImageSummariesTest, AFlatImageCentresAtTheMiddle) {
  const std::vector<double> s =
      summarize(std::vector<float>(2 * 3 * 5, 7.0f), training::Shape{2, 3, 5});
  EXPECT_DOUBLE_EQ(s[0], 7.0);
  EXPECT_DOUBLE_EQ(s[1], 0.0);
  EXPECT_DOUBLE_EQ(s[6], 1.0);
  EXPECT_DOUBLE_EQ(s[7], 2.0);
  EXPECT_DOUBLE_EQ(s[9], 0.0);
}

TEST(ImageSummariesTest, PixelsMustFitTheShape) {
  std::vector<double> out(image_summary_names().size());
  const std::vector<float> px(5);
  EXPECT_THROW(image_summaries(px, training::Shape{2, 2}, out), std::invalid_argument);
  EXPECT_THROW(image_summaries(px, training::Shape{5}, out), std::invalid_argument);
}

}  // namespace
}  // namespace tuner::drift
