// Mini-batches of a Dataset copied into pre-allocated tensors, in a seeded order per epoch.
#ifndef TUNER_TRAINING_DATA_BATCH_LOADER_H_
#define TUNER_TRAINING_DATA_BATCH_LOADER_H_

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "training/data/dataset.h"
#include "training/rng.h"
#include "training/tensor.h"

namespace tuner::training {

// One mini-batch: x[B, sample...] and labels[B] (classification) or targets[B, T] (regression),
// views into the loader's buffers, valid until the loader's next call.
struct Batch {
  Tensor x;
  std::span<const int32_t> labels;  // empty for a regression dataset
  std::span<const float> targets;   // [B, T]; empty for a classification dataset
};

struct BatchLoaderOptions {
  int64_t batch_size = 128;  // REQUIRES: >= 1
  bool shuffle = true;       // a new order per epoch from the loader's Rng
  bool drop_last = false;    // drop a last batch smaller than batch_size
  uint64_t seed = 0;         // seeds the order's Rng
};

// Typical epoch (nothing is allocated in it):
//   loader.start_epoch();
//   while (const Batch* b = loader.next()) { model.forward(b->x, ...); ... }
// The order of epoch e depends only on the Rng state when start_epoch() is called, which
// rng_state() / set_rng_state() save and restore (checkpoints).
// Thread safety: one thread at a time; `data` must outlive the loader and stay unchanged.
class BatchLoader {
 public:
  // REQUIRES: !data.empty(), options.batch_size >= 1 (else std::invalid_argument).
  BatchLoader(const Dataset& data, BatchLoaderOptions options);

  // Starts an epoch: a fresh order (a permutation drawn from the Rng when shuffling, else
  // 0..N-1).
  void start_epoch();
  // The next batch of the epoch, or nullptr after the last one.
  const Batch* next();

  int64_t batches_per_epoch() const;
  int64_t batch_size() const { return options_.batch_size; }
  const Dataset& data() const { return data_; }

  std::array<uint64_t, 4> rng_state() const { return rng_.state(); }
  void set_rng_state(const std::array<uint64_t, 4>& state) { rng_.set_state(state); }

 private:
  const Dataset& data_;
  const BatchLoaderOptions options_;
  Rng rng_;
  std::vector<int64_t> order_;   // [N]
  int64_t position_ = 0;         // next index into order_
  Tensor x_;                     // [batch_size, sample...]
  std::vector<int32_t> labels_;  // [batch_size]
  std::vector<float> targets_;   // [batch_size, T]
  Batch batch_;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DATA_BATCH_LOADER_H_
