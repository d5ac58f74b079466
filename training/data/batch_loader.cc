#include "training/data/batch_loader.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace tuner::training {

BatchLoader::BatchLoader(const Dataset& data, BatchLoaderOptions options)
    : data_(data), options_(std::move(options)), rng_(options_.seed) {
  if (data.empty()) throw std::invalid_argument("batch loader: empty dataset");
  if (options_.batch_size < 1) {
    throw std::invalid_argument("batch loader: batch_size must be >= 1");
  }
  if (options_.prefetch < 0 || options_.prefetch > 16) {
    throw std::invalid_argument("batch loader: prefetch must be in [0, 16]");
  }
  order_.resize(data.size());
  slots_.resize(static_cast<size_t>(options_.prefetch) + 1);
  for (Slot& s : slots_) {
    s.x = Tensor(data.sample_shape().with_batch(options_.batch_size));
    if (data.is_regression()) {
      s.targets.resize(static_cast<size_t>(options_.batch_size * data.num_targets()));
    } else {
      s.labels.resize(options_.batch_size);
    }
    if (options_.transform) s.scratch.resize(static_cast<size_t>(data.sample_numel()));
  }
}

BatchLoader::~BatchLoader() { stop_producer(); }

void BatchLoader::stop_producer() {
  if (!producer_.joinable()) return;
  producer_.request_stop();
  {
    std::lock_guard lock(mu_);  // the producer waits on cv_ under mu_: no lost wake-up
  }
  cv_.notify_all();
  producer_.join();
}

void BatchLoader::start_epoch() {
  stop_producer();
  std::iota(order_.begin(), order_.end(), 0);
  if (options_.shuffle) {
    for (size_t i = order_.size(); i > 1; --i)
      std::swap(order_[i - 1], order_[rng_.next_u64() % i]);
  }
  if (options_.transform) epoch_key_ = rng_.next_u64();
  batches_ = batches_per_epoch();
  next_ = 0;
  if (options_.prefetch > 0) {
    ready_ = released_ = 0;
    error_ = nullptr;
    error_batch_ = -1;
    producer_ = std::jthread([this, n = batches_](std::stop_token stop) { produce(stop, n); });
  }
}

void BatchLoader::gather(int64_t index, Slot& slot) const {
  const int64_t n = data_.size();
  const int64_t first = index * options_.batch_size;
  const int64_t b = std::min(options_.batch_size, n - first);
  const int64_t numel = data_.sample_numel();
  const int64_t t = data_.num_targets();
  float* out = slot.x.data();
  for (int64_t k = 0; k < b; ++k) {
    const int64_t i = order_[first + k];
    const std::span<const float> s = data_.sample(i);
    std::copy(s.begin(), s.end(), out + k * numel);
    if (options_.transform) {
      options_.transform->apply(std::span<float>(out + k * numel, numel), slot.scratch,
                                mix64(epoch_key_ + static_cast<uint64_t>(first + k)));
    }
    if (t > 0) {
      const std::span<const float> y = data_.target(i);
      std::copy(y.begin(), y.end(), slot.targets.begin() + k * t);
    } else {
      slot.labels[k] = data_.labels()[i];
    }
  }
  slot.batch.x = slot.x.slice(0, b);
  slot.batch.labels = std::span<const int32_t>(slot.labels).first(t > 0 ? 0 : b);
  slot.batch.targets = std::span<const float>(slot.targets).first(static_cast<size_t>(b * t));
}

void BatchLoader::produce(std::stop_token stop, int64_t batches) {
  const auto depth = static_cast<int64_t>(slots_.size());
  for (int64_t i = 0; i < batches; ++i) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop.stop_requested() || i < released_ + depth; });
      if (stop.stop_requested()) return;
    }
    try {
      gather(i, slots_[static_cast<size_t>(i % depth)]);
    } catch (...) {
      std::lock_guard lock(mu_);
      error_ = std::current_exception();
      error_batch_ = i;
      cv_.notify_all();
      return;
    }
    std::lock_guard lock(mu_);
    ready_ = i + 1;
    cv_.notify_all();
  }
}

const Batch* BatchLoader::next() {
  if (next_ >= batches_) return nullptr;
  const int64_t i = next_;
  Slot& slot = slots_[static_cast<size_t>(i) % slots_.size()];
  if (options_.prefetch == 0) {
    try {
      gather(i, slot);
    } catch (...) {
      batches_ = 0;  // the epoch ends with the error
      throw;
    }
  } else {
    std::unique_lock lock(mu_);
    released_ = i;  // the caller is done with batch i - 1
    cv_.notify_all();
    cv_.wait(lock, [&] { return ready_ > i || error_batch_ == i; });
    if (ready_ <= i) {
      batches_ = 0;  // the epoch ends with the error
      std::rethrow_exception(error_);
    }
  }
  ++next_;
  return &slot.batch;
}

int64_t BatchLoader::batches_per_epoch() const {
  const int64_t n = data_.size(), bs = options_.batch_size;
  return options_.drop_last ? n / bs : (n + bs - 1) / bs;
}

}  // namespace tuner::training
