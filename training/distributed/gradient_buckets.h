// GradientBuckets: DDP-style overlap of the gradient all-reduce with the backward pass.
//
// The flat gradient array (all parameters' gradients in one allocation, in layer order) is cut
// into buckets of about `bucket_bytes` along parameter boundaries. The backward pass finishes
// gradients from the end of the array towards the start; each time it reports that everything
// from some offset on is final (ready_from), every bucket lying wholly in that tail starts its
// all_reduce_sum_async at once, so communication runs while earlier layers still compute.
// finish() starts what is left, waits for all, and scales the summed gradients (e.g. by
// 1 / world for equal shards).
//
//   GradientBuckets buckets(grads, param_offsets, comm, [&](std::span<float> g, float s) {
//     backend.scale(g, s);
//   });
//   buckets.begin_step();
//   ... backward; after each layer: buckets.ready_from(offset of the layer's first parameter);
//   buckets.finish(1.0f / comm.size());
//
// Every rank must build the same buckets (same offsets, same bucket size) so that they issue the
// same collectives in the same order.
#ifndef TUNER_TRAINING_DISTRIBUTED_GRADIENT_BUCKETS_H_
#define TUNER_TRAINING_DISTRIBUTED_GRADIENT_BUCKETS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "training/distributed/communicator.h"

namespace tuner::training {

// Thread safety: one thread (the one that runs the backward pass) calls it.
class GradientBuckets {
 public:
  // Multiplies x (in the backend's memory) by factor: the backend's scale().
  using ScaleFn = std::function<void(std::span<float> x, float factor)>;

  static constexpr int64_t kDefaultBucketBytes = 25 << 20;  // 25 MiB, as PyTorch's DDP

  // A range [begin, end) of the gradient array, in elements.
  struct Bucket {
    int64_t begin = 0;
    int64_t end = 0;
  };

  // grads[N]: the flat gradient array, in the memory of the communicator's backend; borrowed, it
  // must outlive this object. param_offsets[P]: where each parameter starts in grads, in layer
  // order; parameter i spans [param_offsets[i], param_offsets[i + 1]) and the last one ends at N.
  // REQUIRES: param_offsets[0] == 0, non-decreasing, all <= N (throws std::invalid_argument).
  // bucket_bytes > 0: a bucket holds parameters up to this size; a bigger parameter gets a
  // bucket of its own. `comm` is borrowed.
  GradientBuckets(std::span<float> grads, std::span<const int64_t> param_offsets,
                  Communicator& comm, ScaleFn scale_fn, int64_t bucket_bytes = kDefaultBucketBytes);
  // Waits for collectives still in flight (a step abandoned by an exception).
  ~GradientBuckets();

  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // The buckets in the order they start: the first covers the end of the array. Together they
  // cover [0, N) without overlap (no buckets when N == 0).
  std::span<const Bucket> buckets() const { return buckets_; }
  // How many buckets of this step have started their all-reduce.
  int started() const { return next_; }

  // Starts a step. REQUIRES: the previous step finished (throws std::logic_error).
  void begin_step();
  // All gradients at positions >= offset are final: starts the all-reduce of every bucket that
  // lies in [offset, N) and has not started. Offsets that do not move towards the start are
  // harmless. REQUIRES: inside a step (between begin_step and finish).
  void ready_from(int64_t offset);
  // Starts the remaining buckets, waits for all, then grads *= scale (skipped when scale is 1).
  // Throws the first bucket's CommunicatorError after waiting for all of them; the step is over
  // either way.
  void finish(float scale);

 private:
  // Constant after construction.
  std::span<float> grads_;
  Communicator& comm_;
  ScaleFn scale_fn_;
  std::vector<Bucket> buckets_;

  // State of the current step.
  bool in_step_ = false;
  int next_ = 0;  // buckets_[0, next_) have started
  std::vector<std::unique_ptr<PendingCollective>> pending_;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DISTRIBUTED_GRADIENT_BUCKETS_H_
