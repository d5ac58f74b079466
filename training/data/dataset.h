// A labelled dataset in memory, its train/validation split and its normalization.
// Shapes use the legend of training/tensor.h: N samples, each of the sample shape (e.g. [1, 28,
// 28] for Fashion-MNIST, [F] for F features of a CSV row).
#ifndef TUNER_TRAINING_DATA_DATASET_H_
#define TUNER_TRAINING_DATA_DATASET_H_

#include <cstdint>
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

// N samples for classification: features [N, sample...] (row-major, one sample after the other)
// and labels [N] in [0, num_classes). Copyable (explicitly large); thread-compatible.
class Dataset {
 public:
  Dataset() = default;
  // REQUIRES: features.size() == labels.size() * sample.numel(), every label in
  // [0, num_classes) (else DataError).
  Dataset(Shape sample, std::vector<float> features, std::vector<int32_t> labels,
          int32_t num_classes);

  int64_t size() const { return static_cast<int64_t>(labels_.size()); }
  bool empty() const { return labels_.empty(); }
  const Shape& sample_shape() const { return sample_; }
  int64_t sample_numel() const { return sample_.numel(); }
  int32_t num_classes() const { return num_classes_; }

  std::span<const float> features() const { return features_; }
  std::span<float> features() { return features_; }
  std::span<const int32_t> labels() const { return labels_; }
  // The features of sample i, [sample...]. REQUIRES: 0 <= i < size().
  std::span<const float> sample(int64_t i) const {
    return std::span<const float>(features_).subspan(i * sample_numel(), sample_numel());
  }

  // The samples at `indices`, in that order (copies). REQUIRES: every index in [0, size()).
  Dataset select(std::span<const int64_t> indices) const;
  // Samples [begin, end). REQUIRES: 0 <= begin <= end <= size().
  Dataset slice(int64_t begin, int64_t end) const;

 private:
  Shape sample_;
  std::vector<float> features_;
  std::vector<int32_t> labels_;
  int32_t num_classes_ = 0;
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

  // [channels]: one value for kAll.
  std::span<const float> mean() const { return mean_; }
  std::span<const float> stddev() const { return std_; }

 private:
  Shape sample_;
  int64_t group_ = 1;  // contiguous values per channel within a sample
  std::vector<float> mean_, std_;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DATA_DATASET_H_
