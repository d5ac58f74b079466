// Training augmentation (random crop, flip) pixel by pixel, and the batch loader that applies it:
// deterministic for a seed, the same batches with or without the background thread, the
// producer's errors at the caller, and the trainer applying it to the training batches only.
#include "training/data/augment.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <set>
#include <stdexcept>
#include <vector>

#include "training/backends/cpu/cpu_backend.h"
#include "training/data/batch_loader.h"
#include "training/model_spec.h"
#include "training/optim/adam.h"
#include "training/optim/lr_schedule.h"
#include "training/test_datasets.h"
#include "training/trainer.h"

namespace tuner::training {
namespace {

std::vector<float> augmented(const Augmentation& a, std::vector<float> x, uint64_t key) {
  std::vector<float> scratch(x.size());
  a.apply(x, scratch, key);
  return x;
}

TEST(Augmentation, CropShiftsByAnOffsetWithinThePaddingAndPadsWithTheFill) {
  // A 2 x 2 image [[1, 2], [3, 4]] padded by 1: the 9 crops, one per offset.
  const std::set<std::vector<float>> crops = {{0, 0, 0, 1}, {0, 0, 1, 2}, {0, 0, 2, 0},
                                              {0, 1, 0, 3}, {1, 2, 3, 4}, {2, 0, 4, 0},
                                              {0, 3, 0, 0}, {3, 4, 0, 0}, {4, 0, 0, 0}};
  const Augmentation a(Shape{1, 2, 2}, {.crop_padding = 1});
  std::set<std::vector<float>> seen;
  for (uint64_t key = 0; key < 200; ++key) {
    const std::vector<float> out = augmented(a, {1, 2, 3, 4}, key);
    EXPECT_TRUE(crops.contains(out)) << "key " << key;
    seen.insert(out);
  }
  EXPECT_EQ(seen, crops);
}

TEST(Augmentation, APaddingWiderThanTheImageCanCropToTheFillAlone) {
  const Augmentation a(Shape{1, 2, 2}, {.crop_padding = 3});
  bool empty = false, kept = false;
  for (uint64_t key = 0; key < 400; ++key) {
    const std::vector<float> out = augmented(a, {1, 2, 3, 4}, key);
    for (float v : out) ASSERT_TRUE(v == 0 || v == 1 || v == 2 || v == 3 || v == 4);
    empty |= out == std::vector<float>{0, 0, 0, 0};
    kept |= out == std::vector<float>{1, 2, 3, 4};
  }
  EXPECT_TRUE(empty);
  EXPECT_TRUE(kept);
}

TEST(Augmentation, CropPadsEachChannelWithItsFill) {
  // One pixel per channel padded by 1: it stays only when the offset is 0 (1 in 9).
  const Augmentation a(Shape{2, 1, 1}, {.crop_padding = 1, .fill = {-1.0f, -2.0f}});
  int kept = 0;
  for (uint64_t key = 0; key < 90; ++key) {
    const std::vector<float> out = augmented(a, {5, 6}, key);
    if (out == std::vector<float>{5, 6}) {
      ++kept;
    } else {
      EXPECT_EQ(out, (std::vector<float>{-1, -2})) << "key " << key;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, 30);
}

TEST(Augmentation, FlipMirrorsEveryRowOfEveryChannel) {
  const Augmentation always(Shape{2, 2, 3}, {.flip = 1.0});
  EXPECT_EQ(augmented(always, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 7),
            (std::vector<float>{3, 2, 1, 6, 5, 4, 9, 8, 7, 12, 11, 10}));
  const Augmentation half(Shape{1, 1, 2}, {.flip = 0.5});
  int flipped = 0;
  for (uint64_t key = 0; key < 400; ++key) {
    const std::vector<float> out = augmented(half, {1, 2}, key);
    ASSERT_TRUE(out == (std::vector<float>{1, 2}) || out == (std::vector<float>{2, 1}));
    flipped += out[0] == 2;
  }
  EXPECT_GT(flipped, 140);
  EXPECT_LT(flipped, 260);
  const Augmentation never(Shape{1, 1, 2}, {.crop_padding = 0, .flip = 0.0});
  for (uint64_t key = 0; key < 50; ++key) {
    EXPECT_EQ(augmented(never, {1, 2}, key), (std::vector<float>{1, 2}));
  }
}

TEST(Augmentation, TheSameKeyGivesTheSameImage) {
  const Augmentation a(Shape{3, 4, 4}, {.crop_padding = 2, .flip = 0.5});
  std::vector<float> x(48);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  EXPECT_EQ(augmented(a, x, 11), augmented(a, x, 11));
  bool differs = false;
  for (uint64_t key = 0; key < 10; ++key) differs |= augmented(a, x, key) != augmented(a, x, 11);
  EXPECT_TRUE(differs);
}

TEST(Augmentation, RefusesSamplesThatAreNotImagesAndBadOptions) {
  EXPECT_THROW(Augmentation(Shape{4}, {.flip = 0.5}), std::invalid_argument);
  EXPECT_THROW(Augmentation(Shape{1, 2, 2}, {.flip = 1.5}), std::invalid_argument);
  EXPECT_THROW(Augmentation(Shape{3, 2, 2}, {.crop_padding = 1, .fill = {0, 0}}),
               std::invalid_argument);
}

// N samples [1, 2, 2] whose values are 4 i .. 4 i + 3, label i % 3.
Dataset counting(int64_t n) {
  std::vector<float> x(static_cast<size_t>(n * 4));
  std::vector<int32_t> y(static_cast<size_t>(n));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  for (int64_t i = 0; i < n; ++i) y[static_cast<size_t>(i)] = static_cast<int32_t>(i % 3);
  return Dataset(Shape{1, 2, 2}, std::move(x), std::move(y), 3);
}

// Every batch of `epochs` epochs: the values, then the labels, of each.
std::vector<std::vector<float>> epochs_of(BatchLoader& loader, int epochs) {
  std::vector<std::vector<float>> out;
  for (int e = 0; e < epochs; ++e) {
    loader.start_epoch();
    while (const Batch* b = loader.next()) {
      out.emplace_back(b->x.data(), b->x.data() + b->x.numel());
      for (int32_t l : b->labels) out.back().push_back(static_cast<float>(l));
    }
  }
  return out;
}

std::shared_ptr<const SampleTransform> crop_and_flip() {
  return std::make_shared<Augmentation>(
      Shape{1, 2, 2}, AugmentOptions{.crop_padding = 1, .fill = {-1}, .flip = 0.5});
}

TEST(BatchLoader, AugmentsTheSameBatchesForTheSameSeed) {
  const Dataset d = counting(10);
  const Dataset copy = d;
  BatchLoader a(d, {.batch_size = 4, .seed = 5, .transform = crop_and_flip()});
  BatchLoader b(d, {.batch_size = 4, .seed = 5, .transform = crop_and_flip()});
  BatchLoader other(d, {.batch_size = 4, .seed = 6, .transform = crop_and_flip()});
  BatchLoader plain(d, {.batch_size = 4, .seed = 5});
  const auto batches = epochs_of(a, 3);
  EXPECT_EQ(batches, epochs_of(b, 3));
  EXPECT_NE(batches, epochs_of(other, 3));
  EXPECT_NE(batches, epochs_of(plain, 3));
  EXPECT_NE(batches[0], batches[3]);  // epochs differ
  // The data set is left as it was.
  EXPECT_TRUE(std::equal(d.features().begin(), d.features().end(), copy.features().begin()));
}

TEST(BatchLoader, PrefetchGivesTheSameBatchesBitForBit) {
  const Dataset d = counting(23);
  for (int prefetch : {1, 2, 5}) {
    BatchLoader sync(d, {.batch_size = 4, .seed = 9, .transform = crop_and_flip()});
    BatchLoader ahead(
        d, {.batch_size = 4, .seed = 9, .transform = crop_and_flip(), .prefetch = prefetch});
    EXPECT_EQ(epochs_of(sync, 4), epochs_of(ahead, 4)) << "prefetch " << prefetch;
    // An epoch abandoned half way, then a checkpoint's state restored: still the same.
    const auto state = sync.rng_state();
    sync.start_epoch();
    ahead.start_epoch();
    ASSERT_NE(ahead.next(), nullptr);
    sync.set_rng_state(state);
    ahead.set_rng_state(state);
    EXPECT_EQ(epochs_of(sync, 2), epochs_of(ahead, 2)) << "prefetch " << prefetch;
  }
}

// Throws when it meets a sample starting with `poison`.
class Poisoned final : public SampleTransform {
 public:
  explicit Poisoned(float poison) : poison_(poison) {}
  void apply(std::span<float> sample, std::span<float>, uint64_t) const override {
    if (sample[0] == poison_) throw DataError("sample starting " + std::to_string(poison_));
  }

 private:
  const float poison_;
};

TEST(BatchLoader, AnErrorGatheringABatchIsThrownWhereThatBatchIsAsked) {
  const Dataset d = counting(20);  // sample 13 starts with 52: batch 3 of 4 unshuffled
  for (int prefetch : {0, 2}) {
    BatchLoader loader(d, {.batch_size = 4,
                           .shuffle = false,
                           .transform = std::make_shared<Poisoned>(52.0f),
                           .prefetch = prefetch});
    for (int attempt = 0; attempt < 2; ++attempt) {
      loader.start_epoch();
      for (int i = 0; i < 3; ++i) ASSERT_NE(loader.next(), nullptr) << "batch " << i;
      try {
        loader.next();
        ADD_FAILURE() << "no error, prefetch " << prefetch;
      } catch (const DataError& e) {
        EXPECT_STREQ(e.what(), "sample starting 52.000000");
      }
      EXPECT_EQ(loader.next(), nullptr);  // the epoch ended with the error
    }
  }
}

// Counts the samples it sees.
class Counting final : public SampleTransform {
 public:
  void apply(std::span<float>, std::span<float>, uint64_t) const override { ++count; }
  mutable std::atomic<int64_t> count{0};
};

constexpr const char* kCnn = R"({"input": [1, 8, 8], "layers": [
    {"type": "conv2d", "out": 4, "kernel": 3, "padding": 1}, {"type": "relu"},
    {"type": "flatten"}, {"type": "linear", "out": 4}]})";

struct TrainRun {
  TrainRun(const Dataset& train, const Dataset& val, TrainerOptions options)
      : backend(1),
        model(build_model(parse_model_spec(kCnn), 16, backend, 1)),
        adam(backend, static_cast<int64_t>(model->parameters().values().size()), AdamOptions{}),
        schedule(1e-2, 0, 100),
        trainer(*model, adam, schedule, train, val, std::move(options)) {}
  std::vector<float> weights() const {
    return {model->parameters().values().begin(), model->parameters().values().end()};
  }
  CpuBackend backend;
  std::unique_ptr<Sequential> model;
  Adam adam;
  CosineLr schedule;
  Trainer trainer;
};

TEST(Trainer, AugmentsTheTrainingBatchesOnly) {
  const Dataset train = quadrant_images(24, 1), val = quadrant_images(16, 2);
  auto counter = std::make_shared<Counting>();
  TrainRun run(train, val, {.epochs = 2, .batch_size = 8, .seed = 3, .augment = counter});
  run.trainer.run();
  EXPECT_EQ(counter->count, 2 * 24);  // not one validation sample
  run.trainer.evaluate(val);
  EXPECT_EQ(counter->count, 2 * 24);
}

TEST(Trainer, TrainsTheSameWeightsWithOrWithoutPrefetch) {
  const Dataset train = quadrant_images(40, 1), val = quadrant_images(16, 2);
  const auto augment = std::make_shared<Augmentation>(
      Shape{1, 8, 8}, AugmentOptions{.crop_padding = 2, .flip = 0.5});
  TrainRun sync(train, val, {.epochs = 3, .batch_size = 8, .seed = 3, .augment = augment});
  TrainRun ahead(train, val,
                 {.epochs = 3, .batch_size = 8, .seed = 3, .augment = augment, .prefetch = 2});
  TrainRun plain(train, val, {.epochs = 3, .batch_size = 8, .seed = 3});
  const TrainResult a = sync.trainer.run(), b = ahead.trainer.run();
  plain.trainer.run();
  EXPECT_EQ(sync.weights(), ahead.weights());
  EXPECT_NE(sync.weights(), plain.weights());
  ASSERT_EQ(a.history.size(), b.history.size());
  for (size_t e = 0; e < a.history.size(); ++e) {
    EXPECT_EQ(a.history[e].train_loss, b.history[e].train_loss);
    EXPECT_EQ(a.history[e].val_loss, b.history[e].val_loss);
  }
}

}  // namespace
}  // namespace tuner::training
