#include "training/distributed/gradient_buckets.h"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

namespace tuner::training {
namespace {

// Cuts [0, n) into buckets along the parameter boundaries, from the end, so that the first
// bucket holds the gradients the backward pass finishes first.
std::vector<GradientBuckets::Bucket> make_buckets(int64_t n, std::span<const int64_t> offsets,
                                                  int64_t bucket_elements) {
  std::vector<GradientBuckets::Bucket> buckets;
  int64_t end = n;  // end of the bucket being filled
  int64_t param_end = n;
  for (size_t i = offsets.size(); i-- > 0;) {
    const int64_t param_begin = offsets[i];
    // The bucket would grow past the limit with this parameter: close it without it.
    if (param_end < end && end - param_begin > bucket_elements) {
      buckets.push_back({param_end, end});
      end = param_end;
    }
    param_end = param_begin;
  }
  if (end > 0) buckets.push_back({0, end});
  return buckets;
}

}  // namespace

GradientBuckets::GradientBuckets(std::span<float> grads, std::span<const int64_t> param_offsets,
                                 Communicator& comm, ScaleFn scale_fn, int64_t bucket_bytes)
    : grads_(grads), comm_(comm), scale_fn_(std::move(scale_fn)) {
  const auto n = static_cast<int64_t>(grads.size());
  if (param_offsets.empty() || param_offsets.front() != 0) {
    throw std::invalid_argument("GradientBuckets: param_offsets must start with 0");
  }
  for (size_t i = 0; i < param_offsets.size(); ++i) {
    if ((i > 0 && param_offsets[i] < param_offsets[i - 1]) || param_offsets[i] > n) {
      throw std::invalid_argument("GradientBuckets: param_offsets[" + std::to_string(i) +
                                  "] = " + std::to_string(param_offsets[i]) +
                                  " is not in order or past the gradient array of " +
                                  std::to_string(n) + " floats");
    }
  }
  if (bucket_bytes <= 0) {
    throw std::invalid_argument("GradientBuckets: bucket_bytes must be > 0, got " +
                                std::to_string(bucket_bytes));
  }
  if (!scale_fn_) throw std::invalid_argument("GradientBuckets: scale_fn is empty");
  const int64_t bucket_elements =
      std::max<int64_t>(1, bucket_bytes / static_cast<int64_t>(sizeof(float)));
  buckets_ = make_buckets(n, param_offsets, bucket_elements);
}

GradientBuckets::~GradientBuckets() = default;  // each pending collective waits as it dies

void GradientBuckets::begin_step() {
  if (in_step_) {
    throw std::logic_error("GradientBuckets::begin_step: the previous step did not finish");
  }
  in_step_ = true;
  next_ = 0;
  pending_.clear();
}

void GradientBuckets::ready_from(int64_t offset) {
  if (!in_step_) throw std::logic_error("GradientBuckets::ready_from outside a step");
  while (next_ < static_cast<int>(buckets_.size()) && buckets_[next_].begin >= offset) {
    const Bucket& b = buckets_[next_];
    pending_.push_back(comm_.all_reduce_sum_async(
        grads_.subspan(static_cast<size_t>(b.begin), static_cast<size_t>(b.end - b.begin))));
    ++next_;
  }
}

void GradientBuckets::finish(float scale) {
  if (!in_step_) throw std::logic_error("GradientBuckets::finish outside a step");
  std::exception_ptr first_error;
  try {
    ready_from(0);
  } catch (...) {
    first_error = std::current_exception();
  }
  for (std::unique_ptr<PendingCollective>& p : pending_) {
    try {
      p->wait();
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  pending_.clear();
  in_step_ = false;
  if (first_error) std::rethrow_exception(first_error);
  if (scale != 1.0f && !grads_.empty()) scale_fn_(grads_, scale);
}

}  // namespace tuner::training
