#include "drift/features.h"

#include <algorithm>
#include <cmath>

#include "drift/image_summaries.h"
#include "trials/error.h"

namespace tuner::drift {

FeatureTable input_features(const Samples& samples, const FeatureOptions& options) {
  FeatureTable t;
  const size_t n = static_cast<size_t>(samples.count);
  const size_t f = static_cast<size_t>(samples.input_width);
  if (options.image.rank() > 0) {
    if (options.image.numel() != samples.input_width) {
      throw Error(ErrorCode::kInvalidArgument,
                  samples.source.path + ": samples of " + std::to_string(samples.input_width) +
                      " values are not images of " + options.image.to_string());
    }
    t.names = image_summary_names();
    t.kinds.assign(t.names.size(), "input");
    t.columns.assign(t.names.size(), std::vector<double>(n));
    std::vector<double> row(t.names.size());
    for (size_t i = 0; i < n; ++i) {
      image_summaries(std::span<const float>(samples.inputs).subspan(i * f, f), options.image, row);
      for (size_t k = 0; k < row.size(); ++k) t.columns[k][i] = row[k];
    }
    return t;
  }
  for (size_t k = 0; k < f; ++k) {
    t.names.push_back(k < samples.input_names.size() ? samples.input_names[k]
                                                     : "x" + std::to_string(k));
  }
  t.kinds.assign(f, "input");
  t.columns.assign(f, std::vector<double>(n));
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < f; ++k) t.columns[k][i] = samples.inputs[i * f + k];
  }
  return t;
}

FeatureTable output_features(const Samples& samples) {
  FeatureTable t;
  const size_t k = static_cast<size_t>(samples.output_width);
  if (k == 0 || samples.outputs.empty()) return t;
  const size_t n = static_cast<size_t>(samples.count);
  for (size_t c = 0; c < k; ++c) t.names.push_back("logit_" + std::to_string(c));
  t.names.push_back("confidence");
  t.kinds.assign(t.names.size(), "output");
  t.columns.assign(t.names.size(), std::vector<double>(n));
  for (size_t i = 0; i < n; ++i) {
    const float* row = samples.outputs.data() + i * k;
    const double top = *std::max_element(row, row + k);
    double sum = 0;
    for (size_t c = 0; c < k; ++c) {
      t.columns[c][i] = row[c];
      sum += std::exp(row[c] - top);
    }
    t.columns[k][i] = 1.0 / sum;  // softmax of the largest logit: exp(0) / sum
  }
  return t;
}

}  // namespace tuner::drift
