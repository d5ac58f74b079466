#include "drift/image_summaries.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tuner::drift {
namespace {

// Linear interpolation between order statistics (numpy's default). REQUIRES: sorted, non-empty.
double quantile(const std::vector<float>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(at);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (at - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

const std::vector<std::string>& image_summary_names() {
  static const std::vector<std::string> kNames = {
      "image_mean",        // mean value
      "image_std",         // standard deviation of the values
      "nonzero_fraction",  // share of values != 0 (background noise raises it)
      "intensity_q50",     // median value
      "intensity_q90",     // 90th percentile
      "intensity_max",     // largest value
      "center_row",        // centre of mass (weights: value - the image's minimum), row in pixels
      "center_col",        // ... column in pixels
      "spread",            // RMS distance from the centre of mass, in pixels (zoom, crop)
      "edge_strength",     // mean |difference| of horizontally and vertically adjacent values
  };
  return kNames;
}

void image_summaries(std::span<const float> pixels, const training::Shape& shape,
                     std::span<double> out) {
  const int rank = shape.rank();
  if ((rank != 2 && rank != 3) || shape.numel() <= 0 ||
      static_cast<int64_t>(pixels.size()) != shape.numel() ||
      out.size() != image_summary_names().size()) {
    throw std::invalid_argument("image_summaries: pixels do not fit the shape " +
                                shape.to_string());
  }
  const int64_t channels = rank == 3 ? shape[0] : 1;
  const int64_t h = shape[rank - 2], w = shape[rank - 1];
  const double n = static_cast<double>(pixels.size());
  double sum = 0, nonzero = 0;
  for (float v : pixels) {
    sum += v;
    nonzero += v != 0 ? 1 : 0;
  }
  const double mean = sum / n;
  double ss = 0;
  for (float v : pixels) ss += (v - mean) * (v - mean);
  std::vector<float> sorted(pixels.begin(), pixels.end());
  std::sort(sorted.begin(), sorted.end());
  const double lowest = sorted.front();

  // Centre of mass and spread over the pixel grid, channels pooled.
  double mass = 0, mr = 0, mc = 0, edges = 0;
  int64_t pairs = 0;
  for (int64_t c = 0; c < channels; ++c) {
    const float* img = pixels.data() + c * h * w;
    for (int64_t r = 0; r < h; ++r) {
      for (int64_t col = 0; col < w; ++col) {
        const double v = img[r * w + col];
        const double m = v - lowest;
        mass += m;
        mr += m * static_cast<double>(r);
        mc += m * static_cast<double>(col);
        if (col + 1 < w) {
          edges += std::abs(img[r * w + col + 1] - v);
          ++pairs;
        }
        if (r + 1 < h) {
          edges += std::abs(img[(r + 1) * w + col] - v);
          ++pairs;
        }
      }
    }
  }
  // A flat image has no centre of mass: its geometric centre, spread 0.
  const double row = mass > 0 ? mr / mass : static_cast<double>(h - 1) / 2;
  const double col = mass > 0 ? mc / mass : static_cast<double>(w - 1) / 2;
  double spread = 0;
  if (mass > 0) {
    for (int64_t c = 0; c < channels; ++c) {
      const float* img = pixels.data() + c * h * w;
      for (int64_t r = 0; r < h; ++r) {
        for (int64_t k = 0; k < w; ++k) {
          const double dr = static_cast<double>(r) - row, dc = static_cast<double>(k) - col;
          spread += (img[r * w + k] - lowest) * (dr * dr + dc * dc);
        }
      }
    }
    spread = std::sqrt(spread / mass);
  }
  out[0] = mean;
  out[1] = std::sqrt(ss / n);
  out[2] = nonzero / n;
  out[3] = quantile(sorted, 0.5);
  out[4] = quantile(sorted, 0.9);
  out[5] = sorted.back();
  out[6] = row;
  out[7] = col;
  out[8] = spread;
  out[9] = pairs > 0 ? edges / static_cast<double>(pairs) : 0.0;
}

}  // namespace tuner::drift
