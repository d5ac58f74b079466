// Training-time augmentation of image samples [C, H, W], as torchvision's RandomCrop(padding) and
// RandomHorizontalFlip: a per-sample transform that the batch loader applies to the training
// batches it gathers (BatchLoaderOptions::transform), never to the data set itself.
#ifndef TUNER_TRAINING_DATA_AUGMENT_H_
#define TUNER_TRAINING_DATA_AUGMENT_H_

#include <cstdint>
#include <span>
#include <vector>

#include "training/tensor.h"

namespace tuner::training {

// One sample transformed in place. `key` determines every random draw (the same key, the same
// result); `scratch` holds at least sample.size() floats the transform may overwrite.
// Implementations are immutable: apply() is safe from any thread.
class SampleTransform {
 public:
  virtual ~SampleTransform() = default;
  virtual void apply(std::span<float> sample, std::span<float> scratch, uint64_t key) const = 0;
};

struct AugmentOptions {
  // Random crop: the image padded by this many pixels on each side and cropped back to [H, W] at
  // an offset drawn uniformly from [0, 2 * padding] in each direction. < 0: no crop (0 is a
  // crop that changes nothing).
  int64_t crop_padding = -1;
  // The value of a padded pixel, per channel ([C], or one value for all); empty: 0. A data set
  // normalized before augmenting pads with each channel's normalized 0, (0 - mean) / std, which
  // gives torchvision's pad-with-zeros-then-Normalize.
  std::vector<float> fill;
  // Probability in [0, 1] of mirroring the image left to right (after the crop).
  double flip = 0.0;

  bool any() const { return crop_padding >= 0 || flip > 0.0; }
};

// RandomCrop then RandomHorizontalFlip on samples of shape [C, H, W].
class Augmentation final : public SampleTransform {
 public:
  // REQUIRES: sample.rank() == 3, fill of 0, 1 or C values, flip in [0, 1] (else
  // std::invalid_argument).
  Augmentation(const Shape& sample, AugmentOptions options);

  void apply(std::span<float> sample, std::span<float> scratch, uint64_t key) const override;

  const AugmentOptions& options() const { return options_; }

 private:
  // Output pixel (y, x) of every channel becomes input pixel (y + dy, x + dx), or the channel's
  // fill outside the image.
  void shift(std::span<float> sample, std::span<float> scratch, int64_t dy, int64_t dx) const;

  const int64_t channels_, height_, width_;
  const AugmentOptions options_;
  std::vector<float> fill_;  // [C]
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DATA_AUGMENT_H_
