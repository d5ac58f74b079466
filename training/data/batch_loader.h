// Mini-batches of a Dataset copied into pre-allocated tensors, in a seeded order per epoch,
// optionally transformed (training augmentation) and prepared ahead on a background thread.
#ifndef TUNER_TRAINING_DATA_BATCH_LOADER_H_
#define TUNER_TRAINING_DATA_BATCH_LOADER_H_

#include <array>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "training/data/augment.h"
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
  // Applied to every sample of a batch as it is gathered (the data set is never changed); null:
  // none. Its key for the sample at position i of epoch e is mix64(k_e + i), k_e drawn from the
  // loader's Rng when the epoch starts, so the batches depend on the seed and the Rng state alone.
  std::shared_ptr<const SampleTransform> transform;
  // Batches gathered (and transformed) ahead of the caller on a background thread: 0 gathers each
  // in next(). The batches are the same, bit for bit; the memory is (prefetch + 1) batch buffers.
  int prefetch = 0;  // REQUIRES: 0 <= prefetch <= 16
};

// Typical epoch (nothing is allocated in it, but for the background thread with prefetch):
//   loader.start_epoch();
//   while (const Batch* b = loader.next()) { model.forward(b->x, ...); ... }
// The order of epoch e depends only on the Rng state when start_epoch() is called, which
// rng_state() / set_rng_state() save and restore (checkpoints).
// An exception thrown while gathering a batch (by the transform) is thrown by the next() that
// would have returned it, also when it was gathered on the background thread.
// Thread safety: one thread at a time; `data` must outlive the loader and stay unchanged.
class BatchLoader {
 public:
  // REQUIRES: !data.empty(), options.batch_size >= 1, prefetch in [0, 16] (else
  // std::invalid_argument).
  BatchLoader(const Dataset& data, BatchLoaderOptions options);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // Starts an epoch: a fresh order (a permutation drawn from the Rng when shuffling, else
  // 0..N-1); an epoch under way is abandoned.
  void start_epoch();
  // The next batch of the epoch, or nullptr after the last one.
  const Batch* next();

  int64_t batches_per_epoch() const;
  int64_t batch_size() const { return options_.batch_size; }
  const Dataset& data() const { return data_; }

  std::array<uint64_t, 4> rng_state() const { return rng_.state(); }
  void set_rng_state(const std::array<uint64_t, 4>& state) { rng_.set_state(state); }

 private:
  struct Slot {
    Tensor x;                     // [batch_size, sample...]
    std::vector<int32_t> labels;  // [batch_size]
    std::vector<float> targets;   // [batch_size, T]
    std::vector<float> scratch;   // [sample numel], the transform's
    Batch batch;
  };
  // Gathers batch `index` of the epoch into `slot`.
  void gather(int64_t index, Slot& slot) const;
  // The background thread's loop over the epoch's `batches`.
  void produce(std::stop_token stop, int64_t batches);
  void stop_producer();

  const Dataset& data_;
  const BatchLoaderOptions options_;
  Rng rng_;
  std::vector<int64_t> order_;  // [N]; written by start_epoch() with no producer running
  uint64_t epoch_key_ = 0;      // the transform's keys of this epoch
  int64_t batches_ = 0;         // of this epoch (0: none started)
  int64_t next_ = 0;            // the batch next() returns next
  std::vector<Slot> slots_;     // prefetch + 1; batch i in slot i % size
  // With prefetch: batches [0, ready_) are gathered, [0, released_) handed back (the caller is
  // done with them); the producer gathers batch i once i < released_ + slots_.size().
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t ready_ = 0, released_ = 0;
  std::exception_ptr error_;  // the producer's, for batch ready_
  int64_t error_batch_ = -1;
  std::jthread producer_;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DATA_BATCH_LOADER_H_
