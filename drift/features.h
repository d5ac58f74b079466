// The features a drift check compares, one column of numbers per feature and sample: from the
// inputs (each column of a table, or per-image summaries of images) and from the outputs (each
// logit, and the model's confidence). Pure functions; thread-safe.
#ifndef TUNER_DRIFT_FEATURES_H_
#define TUNER_DRIFT_FEATURES_H_

#include <string>
#include <vector>

#include "drift/samples.h"
#include "training/tensor.h"

namespace tuner::drift {

// How a sample's inputs become features.
struct FeatureOptions {
  // Empty (rank 0): every input value is a feature of its own (a table's columns). [C, H, W] or
  // [H, W]: the inputs are images of that shape, summarized per image (image_summaries.h).
  training::Shape image;
};

struct FeatureTable {
  std::vector<std::string> names;            // one per feature
  std::vector<std::string> kinds;            // "input" or "output", one per feature
  std::vector<std::vector<double>> columns;  // [feature][sample]
};

// The input features of `samples`: with options.image set, image_summary_names() (REQUIRES:
// samples.input_width == image.numel(), else Error(kInvalidArgument)); else one per input value,
// named by samples.input_names or "x0", "x1", ...
FeatureTable input_features(const Samples& samples, const FeatureOptions& options);

// The output features: "logit_0" ... "logit_{K-1}" and "confidence" (the largest softmax
// probability). Empty when the samples have no outputs.
FeatureTable output_features(const Samples& samples);

}  // namespace tuner::drift

#endif  // TUNER_DRIFT_FEATURES_H_
