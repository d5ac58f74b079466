#include "training/data/dataset.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "training/rng.h"

namespace tuner::training {

Dataset::Dataset(Shape sample, std::vector<float> features, std::vector<int32_t> labels,
                 int32_t num_classes)
    : sample_(sample),
      features_(std::move(features)),
      labels_(std::move(labels)),
      size_(static_cast<int64_t>(labels_.size())),
      num_classes_(num_classes) {
  if (static_cast<int64_t>(features_.size()) != size() * sample_.numel()) {
    throw DataError("dataset: " + std::to_string(features_.size()) + " feature values for " +
                    std::to_string(size()) + " samples of " + sample_.to_string());
  }
  for (size_t i = 0; i < labels_.size(); ++i) {
    if (labels_[i] < 0 || labels_[i] >= num_classes_) {
      throw DataError("dataset: label " + std::to_string(labels_[i]) + " of sample " +
                      std::to_string(i) + " is outside [0, " + std::to_string(num_classes_) + ")");
    }
  }
}

Dataset Dataset::regression(Shape sample, std::vector<float> features, std::vector<float> targets,
                            int64_t num_targets) {
  if (num_targets < 1) {
    throw DataError("dataset: " + std::to_string(num_targets) + " targets per sample (>= 1)");
  }
  if (static_cast<int64_t>(targets.size()) % num_targets != 0) {
    throw DataError("dataset: " + std::to_string(targets.size()) + " target values are not " +
                    std::to_string(num_targets) + " per sample");
  }
  Dataset d;
  d.sample_ = sample;
  d.size_ = static_cast<int64_t>(targets.size()) / num_targets;
  d.num_targets_ = num_targets;
  if (static_cast<int64_t>(features.size()) != d.size_ * sample.numel()) {
    throw DataError("dataset: " + std::to_string(features.size()) + " feature values for " +
                    std::to_string(d.size_) + " samples of " + sample.to_string());
  }
  d.features_ = std::move(features);
  d.targets_ = std::move(targets);
  return d;
}

Dataset Dataset::view(Shape sample, std::span<const float> features,
                      std::span<const int32_t> labels, int32_t num_classes,
                      std::span<const float> targets, int64_t num_targets,
                      std::shared_ptr<const void> owner) {
  if (num_targets < 0 || (num_targets == 0) != targets.empty() ||
      (num_targets > 0 && (!labels.empty() || num_classes != 0))) {
    throw DataError("dataset view: " + std::to_string(num_targets) + " targets per sample with " +
                    std::to_string(targets.size()) + " target values and " +
                    std::to_string(labels.size()) + " labels");
  }
  Dataset d;
  d.sample_ = sample;
  d.num_classes_ = num_classes;
  d.num_targets_ = num_targets;
  if (num_targets > 0) {
    if (targets.size() % static_cast<size_t>(num_targets) != 0) {
      throw DataError("dataset view: " + std::to_string(targets.size()) +
                      " target values are not " + std::to_string(num_targets) + " per sample");
    }
    d.size_ = static_cast<int64_t>(targets.size()) / num_targets;
  } else {
    d.size_ = static_cast<int64_t>(labels.size());
  }
  if (static_cast<int64_t>(features.size()) != d.size_ * sample.numel()) {
    throw DataError("dataset view: " + std::to_string(features.size()) + " feature values for " +
                    std::to_string(d.size_) + " samples of " + sample.to_string());
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= num_classes) {
      throw DataError("dataset view: label " + std::to_string(labels[i]) + " of sample " +
                      std::to_string(i) + " is outside [0, " + std::to_string(num_classes) + ")");
    }
  }
  d.owner_ = owner ? std::move(owner) : std::make_shared<int>(0);
  d.view_features_ = features;
  d.view_labels_ = labels;
  d.view_targets_ = targets;
  return d;
}

std::span<float> Dataset::features() {
  if (owner_) {  // copy on write
    features_.assign(view_features_.begin(), view_features_.end());
    labels_.assign(view_labels_.begin(), view_labels_.end());
    targets_.assign(view_targets_.begin(), view_targets_.end());
    owner_.reset();
    view_features_ = {};
    view_labels_ = {};
    view_targets_ = {};
  }
  return features_;
}

Dataset Dataset::select(std::span<const int64_t> indices) const {
  const int64_t n = sample_numel();
  const std::span<const float> x = features(), t = targets();
  const std::span<const int32_t> y = labels();
  std::vector<float> features(indices.size() * n);
  std::vector<int32_t> labels(is_regression() ? 0 : indices.size());
  std::vector<float> targets(indices.size() * static_cast<size_t>(num_targets_));
  for (size_t k = 0; k < indices.size(); ++k) {
    const int64_t i = indices[k];
    if (i < 0 || i >= size()) throw std::out_of_range("dataset.select: index out of range");
    std::copy_n(x.begin() + i * n, n, features.begin() + static_cast<int64_t>(k) * n);
    if (is_regression()) {
      std::copy_n(t.begin() + i * num_targets_, num_targets_,
                  targets.begin() + static_cast<int64_t>(k) * num_targets_);
    } else {
      labels[k] = y[i];
    }
  }
  if (is_regression()) {
    return regression(sample_, std::move(features), std::move(targets), num_targets_);
  }
  return Dataset(sample_, std::move(features), std::move(labels), num_classes_);
}

Dataset Dataset::slice(int64_t begin, int64_t end) const {
  if (begin < 0 || begin > end || end > size()) {
    throw std::out_of_range("dataset.slice: [" + std::to_string(begin) + ", " +
                            std::to_string(end) + ") of " + std::to_string(size()));
  }
  std::vector<int64_t> idx(end - begin);
  std::iota(idx.begin(), idx.end(), begin);
  return select(idx);
}

TrainValidationSplit split_train_validation(const Dataset& data, int64_t validation_size,
                                            uint64_t seed) {
  if (validation_size < 0 || validation_size > data.size()) {
    throw std::invalid_argument("split: validation size " + std::to_string(validation_size) +
                                " outside [0, " + std::to_string(data.size()) + "]");
  }
  std::vector<int64_t> idx(data.size());
  std::iota(idx.begin(), idx.end(), 0);
  Rng rng(seed);
  for (size_t i = idx.size(); i > 1; --i) std::swap(idx[i - 1], idx[rng.next_u64() % i]);
  const std::span<const int64_t> all(idx);
  return {data.select(all.subspan(validation_size)), data.select(all.first(validation_size))};
}

Normalizer Normalizer::fit(const Dataset& train, NormalizeBy by) {
  if (train.empty()) throw std::invalid_argument("normalizer: empty training split");
  Normalizer n;
  n.sample_ = train.sample_shape();
  const int64_t numel = train.sample_numel();
  int64_t channels = 1;
  if (by == NormalizeBy::kChannel) channels = n.sample_.rank() >= 1 ? n.sample_[0] : 1;
  n.group_ = numel / std::max<int64_t>(channels, 1);
  std::vector<double> sum(channels, 0.0), sum_sq(channels, 0.0);
  const std::span<const float> x = train.features();
  for (int64_t s = 0; s < train.size(); ++s) {
    for (int64_t c = 0; c < channels; ++c) {
      const float* p = x.data() + s * numel + c * n.group_;
      double a = 0, b = 0;
      for (int64_t k = 0; k < n.group_; ++k) a += p[k], b += static_cast<double>(p[k]) * p[k];
      sum[c] += a;
      sum_sq[c] += b;
    }
  }
  const double count = static_cast<double>(train.size()) * static_cast<double>(n.group_);
  for (int64_t c = 0; c < channels; ++c) {
    const double mean = sum[c] / count;
    const double var = std::max(0.0, sum_sq[c] / count - mean * mean);
    const double sd = std::sqrt(var);
    n.mean_.push_back(static_cast<float>(mean));
    n.std_.push_back(sd > 1e-12 ? static_cast<float>(sd) : 1.0f);
  }
  return n;
}

void Normalizer::keep_channels(std::span<const int64_t> channels) {
  for (int64_t c : channels) {
    if (c < 0 || c >= static_cast<int64_t>(mean_.size())) {
      throw std::invalid_argument("normalizer: channel " + std::to_string(c) + " of " +
                                  std::to_string(mean_.size()));
    }
    mean_[static_cast<size_t>(c)] = 0.0f;
    std_[static_cast<size_t>(c)] = 1.0f;
  }
}

TargetScaling TargetScaling::fit(const Dataset& train) {
  if (!train.is_regression() || train.empty()) {
    throw std::invalid_argument("target scaling: needs a regression's non-empty training split");
  }
  const int64_t t = train.num_targets();
  std::vector<double> sum(static_cast<size_t>(t), 0.0), sum_sq(static_cast<size_t>(t), 0.0);
  for (int64_t i = 0; i < train.size(); ++i) {
    for (int64_t k = 0; k < t; ++k) {
      const double v = train.target(i)[k];
      sum[k] += v;
      sum_sq[k] += v * v;
    }
  }
  TargetScaling s;
  const double n = static_cast<double>(train.size());
  for (int64_t k = 0; k < t; ++k) {
    const double mean = sum[k] / n;
    const double sd = std::sqrt(std::max(0.0, sum_sq[k] / n - mean * mean));
    s.mean.push_back(static_cast<float>(mean));
    s.stddev.push_back(sd > 1e-12 ? static_cast<float>(sd) : 1.0f);
  }
  return s;
}

void Normalizer::apply(Dataset& data) const {
  if (!(data.sample_shape() == sample_)) {
    throw std::invalid_argument("normalizer: fit on samples of " + sample_.to_string() +
                                ", applied to " + data.sample_shape().to_string());
  }
  const int64_t numel = sample_.numel();
  const int64_t channels = static_cast<int64_t>(mean_.size());
  std::span<float> x = data.features();
  for (int64_t s = 0; s < data.size(); ++s) {
    for (int64_t c = 0; c < channels; ++c) {
      float* p = x.data() + s * numel + c * group_;
      const float m = mean_[c], inv = 1.0f / std_[c];
      for (int64_t k = 0; k < group_; ++k) p[k] = (p[k] - m) * inv;
    }
  }
}

}  // namespace tuner::training
