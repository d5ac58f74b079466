// A labelled dataset in memory, its train/validation split and its normalization.
// Shapes use the legend of training/tensor.h: N samples, each of the sample shape (e.g. [1, 28,
// 28] for Fashion-MNIST, [F] for F features of a CSV row).
#ifndef TUNER_TRAINING_DATA_DATASET_H_
#define TUNER_TRAINING_DATA_DATASET_H_

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "training/tensor.h"

namespace tuner::training {

// A dataset that cannot be read or used. The message names the file (and line for text formats)
// and what is wrong, e.g. "train-images.gz: truncated: ...".
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// N samples: features [N, sample...] (row-major, one sample after the other) and either, for
// classification, labels [N] in [0, num_classes), or, for regression, targets [N, T] of
// num_targets T floats each (labels() then empty, num_classes() 0).
// The values are held in vectors of its own, or, for a view, in memory another object owns (a
// read-only file mapping that the processes of a machine share, dataset_file.h): a view's copies
// share that memory, and the first write access (the mutable features()) copies the values into
// vectors of its own first.
// Copyable (explicitly large, but for views); thread-compatible.
class Dataset {
 public:
  Dataset() = default;
  // Classification. REQUIRES: features.size() == labels.size() * sample.numel(), every label in
  // [0, num_classes) (else DataError).
  Dataset(Shape sample, std::vector<float> features, std::vector<int32_t> labels,
          int32_t num_classes);
  // Regression. REQUIRES: num_targets >= 1, targets.size() == N * num_targets and
  // features.size() == N * sample.numel() (else DataError).
  static Dataset regression(Shape sample, std::vector<float> features, std::vector<float> targets,
                            int64_t num_targets);
  // A view of values that `owner` keeps alive (and never changes while it lives): classification
  // when num_targets is 0 (`targets` empty), else regression (`labels` empty, num_classes 0).
  // REQUIRES: as the constructors above (else DataError).
  static Dataset view(Shape sample, std::span<const float> features,
                      std::span<const int32_t> labels, int32_t num_classes,
                      std::span<const float> targets, int64_t num_targets,
                      std::shared_ptr<const void> owner);

  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Shape& sample_shape() const { return sample_; }
  int64_t sample_numel() const { return sample_.numel(); }
  int32_t num_classes() const { return num_classes_; }
  bool is_regression() const { return num_targets_ > 0; }
  int64_t num_targets() const { return num_targets_; }  // 0 for classification

  std::span<const float> features() const { return owner_ ? view_features_ : features_; }
  // Writable values: a view's are copied into vectors of its own first.
  std::span<float> features();
  std::span<const int32_t> labels() const { return owner_ ? view_labels_ : labels_; }
  // [N, T]; empty: classification.
  std::span<const float> targets() const { return owner_ ? view_targets_ : targets_; }
  // True while the values are another object's memory (view()).
  bool is_view() const { return owner_ != nullptr; }
  // The targets of sample i, [T]. REQUIRES: is_regression(), 0 <= i < size().
  std::span<const float> target(int64_t i) const {
    return targets().subspan(i * num_targets_, num_targets_);
  }
  // The features of sample i, [sample...]. REQUIRES: 0 <= i < size().
  std::span<const float> sample(int64_t i) const {
    return features().subspan(i * sample_numel(), sample_numel());
  }

  // The samples at `indices`, in that order (copies). REQUIRES: every index in [0, size()).
  Dataset select(std::span<const int64_t> indices) const;
  // Samples [begin, end). REQUIRES: 0 <= begin <= end <= size().
  Dataset slice(int64_t begin, int64_t end) const;

 private:
  Shape sample_;
  std::vector<float> features_;
  std::vector<int32_t> labels_;
  std::vector<float> targets_;
  // A view's values, in memory that owner_ keeps alive; unused (empty) when owner_ is null.
  std::shared_ptr<const void> owner_;
  std::span<const float> view_features_;
  std::span<const int32_t> view_labels_;
  std::span<const float> view_targets_;
  int64_t size_ = 0;
  int32_t num_classes_ = 0;
  int64_t num_targets_ = 0;
};

struct TrainValidationSplit {
  Dataset train, validation;
};
// Shuffles the indices of `data` with Rng(seed) and puts the first validation_size of them in
// the validation split, the rest (in shuffled order) in the training split. The same seed gives
// the same split. REQUIRES: 0 <= validation_size <= data.size() (else std::invalid_argument).
TrainValidationSplit split_train_validation(const Dataset& data, int64_t validation_size,
                                            uint64_t seed);

// What normalize statistics are computed over.
enum class NormalizeBy {
  kAll,      // one mean and std over every value (torchvision's Normalize on a gray image)
  kChannel,  // per channel: dim 0 of an image sample [C, H, W]; each feature of a flat sample [F]
};

// x' = (x - mean) / std with the statistics of a training split, applied alike to every split
// (so that validation data never leaks into them). A std of 0 is taken as 1.
// Immutable after fit(); thread-safe.
class Normalizer {
 public:
  // REQUIRES: !train.empty() (else std::invalid_argument).
  static Normalizer fit(const Dataset& train, NormalizeBy by);
  // REQUIRES: data.sample_shape() is the shape fit() saw (else std::invalid_argument).
  void apply(Dataset& data) const;
  // Leaves the values of `channels` as they are (mean 0, stddev 1): features that hold indices,
  // such as a categorical column's for an embedding. REQUIRES: each in [0, mean().size()) (else
  // std::invalid_argument).
  void keep_channels(std::span<const int64_t> channels);

  // [channels]: one value for kAll.
  std::span<const float> mean() const { return mean_; }
  std::span<const float> stddev() const { return std_; }

 private:
  Shape sample_;
  int64_t group_ = 1;  // contiguous values per channel within a sample
  std::vector<float> mean_, std_;
};

// A regression's targets standardized per target, z = (y - mean) / stddev, with the statistics of
// the training split: the model learns z, and its predictions are unscaled by y = z * stddev +
// mean. A std of 0 is taken as 1. Empty vectors: no scaling.
struct TargetScaling {
  std::vector<float> mean, stddev;  // [T] each

  // REQUIRES: train.is_regression() and !train.empty() (else std::invalid_argument).
  static TargetScaling fit(const Dataset& train);
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DATA_DATASET_H_
