// All parameters of a model in one contiguous allocation, their gradients in another, and the
// non-trainable buffers in a third (llm.c's layout; the data-parallel all-reduce works on the
// flat gradient array in buckets).
#ifndef TUNER_TRAINING_PARAMETER_ARENA_H_
#define TUNER_TRAINING_PARAMETER_ARENA_H_

#include <cstdint>
#include <span>
#include <vector>

#include "training/layer.h"
#include "training/tensor.h"

namespace tuner::training {

// Each parameter starts at a multiple of kArenaAlignment floats (64 bytes); the padding between
// parameters is zero in both values and gradients, so flat optimizer steps leave it zero.
// The arrays live in the backend's memory; the *_to_host and set_* methods copy them in and out.
// Thread safety: none; one owner.
class ParameterArena {
 public:
  static constexpr int64_t kArenaAlignment = 16;

  // `backend` allocates the arrays and must outlive the arena.
  ParameterArena(std::vector<ParamSpec> params, std::vector<BufferSpec> buffers, Backend& backend);
  ParameterArena(const ParameterArena&) = delete;
  ParameterArena& operator=(const ParameterArena&) = delete;

  const std::vector<ParamSpec>& param_specs() const { return param_specs_; }
  const std::vector<BufferSpec>& buffer_specs() const { return buffer_specs_; }

  // Views, in spec order.
  std::span<ParamView> params() { return views_; }
  std::span<Tensor> buffers() { return buffer_views_; }
  std::span<const ParamView> params() const { return views_; }
  std::span<const Tensor> buffers() const { return buffer_views_; }

  // The flat arrays (including the alignment padding).
  std::span<float> values() { return values_.span(); }
  std::span<const float> values() const { return values_.span(); }
  std::span<float> grads() { return grads_.span(); }
  std::span<const float> grads() const { return grads_.span(); }
  std::span<float> buffer_values() { return buffer_values_.span(); }
  std::span<const float> buffer_values() const { return buffer_values_.span(); }

  // Offset in floats of parameter i in values() and grads().
  int64_t offset(size_t i) const { return offsets_[i]; }
  // Trainable scalars (without padding).
  int64_t num_parameters() const;

  // Initializes every parameter by its spec's Init from one Rng(seed), in spec order, and resets
  // the buffers to their initial values. Same seed, same values.
  void initialize(uint64_t seed);
  void zero_grads();

  // Host copies of the flat arrays, and their replacement (REQUIRES: the same sizes, else
  // std::invalid_argument): checkpoints, exports and the tests read and write through these.
  std::vector<float> values_to_host() const;
  std::vector<float> buffer_values_to_host() const;
  void set_values(std::span<const float> host);
  void set_buffer_values(std::span<const float> host);

 private:
  void reset_buffers();

  Backend& backend_;
  std::vector<ParamSpec> param_specs_;
  std::vector<BufferSpec> buffer_specs_;
  std::vector<int64_t> offsets_;
  Tensor values_, grads_, buffer_values_;
  std::vector<ParamView> views_;
  std::vector<Tensor> buffer_views_;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_PARAMETER_ARENA_H_
