#include "training/data/batch_loader.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace tuner::training {

BatchLoader::BatchLoader(const Dataset& data, BatchLoaderOptions options)
    : data_(data), options_(options), rng_(options.seed) {
  if (data.empty()) throw std::invalid_argument("batch loader: empty dataset");
  if (options.batch_size < 1) throw std::invalid_argument("batch loader: batch_size must be >= 1");
  order_.resize(data.size());
  position_ = data.size();  // no epoch started
  x_ = Tensor(data.sample_shape().with_batch(options.batch_size));
  if (data.is_regression()) {
    targets_.resize(static_cast<size_t>(options.batch_size * data.num_targets()));
  } else {
    labels_.resize(options.batch_size);
  }
}

void BatchLoader::start_epoch() {
  std::iota(order_.begin(), order_.end(), 0);
  if (options_.shuffle) {
    for (size_t i = order_.size(); i > 1; --i)
      std::swap(order_[i - 1], order_[rng_.next_u64() % i]);
  }
  position_ = 0;
}

const Batch* BatchLoader::next() {
  const int64_t n = data_.size();
  const int64_t b = std::min(options_.batch_size, n - position_);
  if (b <= 0 || (options_.drop_last && b < options_.batch_size)) return nullptr;
  const int64_t numel = data_.sample_numel();
  const int64_t t = data_.num_targets();
  float* out = x_.data();
  for (int64_t k = 0; k < b; ++k) {
    const int64_t i = order_[position_ + k];
    const std::span<const float> s = data_.sample(i);
    std::copy(s.begin(), s.end(), out + k * numel);
    if (t > 0) {
      const std::span<const float> y = data_.target(i);
      std::copy(y.begin(), y.end(), targets_.begin() + k * t);
    } else {
      labels_[k] = data_.labels()[i];
    }
  }
  position_ += b;
  batch_.x = x_.slice(0, b);
  batch_.labels = std::span<const int32_t>(labels_).first(t > 0 ? 0 : b);
  batch_.targets = std::span<const float>(targets_).first(static_cast<size_t>(b * t));
  return &batch_;
}

int64_t BatchLoader::batches_per_epoch() const {
  const int64_t n = data_.size(), bs = options_.batch_size;
  return options_.drop_last ? n / bs : (n + bs - 1) / bs;
}

}  // namespace tuner::training
