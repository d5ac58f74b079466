// Per-image summaries: a handful of numbers per image that move when the images shift (brighter,
// inverted, noisier, off-centre, zoomed), compared across images instead of hundreds of pixel
// features (docs/drift.md lists them). Pure functions; thread-safe.
#ifndef TUNER_DRIFT_IMAGE_SUMMARIES_H_
#define TUNER_DRIFT_IMAGE_SUMMARIES_H_

#include <span>
#include <string>
#include <vector>

#include "training/tensor.h"

namespace tuner::drift {

// The summaries' names, in the order image_summaries writes them.
const std::vector<std::string>& image_summary_names();

// The summaries of one image of `shape` ([C, H, W] or [H, W]; the channels pooled) in raw units:
// out.size() == image_summary_names().size(). REQUIRES: pixels.size() == shape.numel() > 0, rank
// 2 or 3 (else std::invalid_argument).
void image_summaries(std::span<const float> pixels, const training::Shape& shape,
                     std::span<double> out);

}  // namespace tuner::drift

#endif  // TUNER_DRIFT_IMAGE_SUMMARIES_H_
