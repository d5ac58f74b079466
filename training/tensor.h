// Tensors of float32: a shape, strides and memory that is either owned or borrowed.
//
// Shape legend used by every op of the engine (declared once here):
//   B  batch (samples in the mini-batch; dim 0 of every activation)
//   C  channels, H height, W width (images are NCHW: [B, C, H, W])
//   I  input features, O output features (or output channels of a convolution)
//   K  classes, D normalized features, S spatial positions (H*W)
//   OH, OW output height and width
#ifndef TUNER_TRAINING_TENSOR_H_
#define TUNER_TRAINING_TENSOR_H_

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>

namespace tuner::training {

inline constexpr int kMaxRank = 6;

// The extents of a tensor, at most kMaxRank dimensions, stored inline (copying a Shape never
// allocates, so views can be made inside a training step). A rank-0 shape holds one element.
class Shape {
 public:
  Shape() = default;
  // REQUIRES: dims.size() <= kMaxRank and every dim >= 0 (else std::invalid_argument).
  Shape(std::initializer_list<int64_t> dims);
  static Shape from(std::span<const int64_t> dims);

  int rank() const { return rank_; }
  int64_t operator[](int i) const { return dims_[i]; }
  std::span<const int64_t> dims() const { return {dims_.data(), static_cast<size_t>(rank_)}; }
  int64_t numel() const;

  // [n, dims...]; REQUIRES: rank() < kMaxRank.
  Shape with_batch(int64_t n) const;
  // The dims after the first; REQUIRES: rank() >= 1.
  Shape without_batch() const;
  // The same shape with dim 0 set to n; REQUIRES: rank() >= 1.
  Shape with_dim0(int64_t n) const;

  bool operator==(const Shape& other) const;
  std::string to_string() const;  // "[128, 784]"

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// How an owned tensor frees its memory (declared outside Tensor so that unique_ptr sees a
// complete, default-constructible deleter).
using TensorRelease = void (*)(float*);
struct TensorFree {
  TensorRelease release = nullptr;
  void operator()(float* p) const { release(p); }
};

// A float32 tensor. Owned tensors hold 64-byte aligned, zero-initialized host memory, or memory
// a backend allocated and adopted (device memory on a GPU backend: only that backend's kernels
// and its upload/download touch it; `at`, `fill`, `copy_from` and `span` reads are host-only).
// Borrowed tensors (views) point into memory that someone else owns and must outlive them.
// Copying is explicit (`view()` for a borrowed alias); moving is cheap. Views never allocate.
// Thread safety: none of its own; concurrent reads are fine, writes need external exclusion.
class Tensor {
 public:
  Tensor() = default;
  // An owned, zero-filled, contiguous tensor.
  explicit Tensor(const Shape& shape);
  // A contiguous view of `data`; REQUIRES: data holds shape.numel() floats and outlives the view.
  static Tensor borrow(float* data, const Shape& shape);
  // A read-only contiguous view (for reinterpreting an input's shape); callers keep it const.
  static const Tensor borrow_const(const float* data, const Shape& shape);
  // A strided view; strides are in elements.
  static Tensor borrow(float* data, const Shape& shape, std::span<const int64_t> strides);
  // Takes ownership of `data` (contiguous, shape.numel() floats), which `release` frees. How
  // backends hand out their own memory (see Backend::allocate).
  using Release = TensorRelease;
  static Tensor adopt(float* data, const Shape& shape, Release release);

  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_[i]; }
  int64_t numel() const { return shape_.numel(); }
  std::span<const int64_t> strides() const {
    return {strides_.data(), static_cast<size_t>(shape_.rank())};
  }
  bool owns_memory() const { return owned_ != nullptr; }
  bool is_contiguous() const;
  bool empty() const { return data_ == nullptr; }

  float* data() { return data_; }
  const float* data() const { return data_; }
  // REQUIRES: is_contiguous().
  std::span<float> span() { return {data_, static_cast<size_t>(numel())}; }
  std::span<const float> span() const { return {data_, static_cast<size_t>(numel())}; }

  // A borrowed alias of the whole tensor.
  Tensor view();
  // A contiguous view with another shape of the same numel; REQUIRES: is_contiguous().
  Tensor reshape(const Shape& shape);
  // Rows [begin, end) of dim 0, borrowed; REQUIRES: 0 <= begin <= end <= dim(0).
  Tensor slice(int64_t begin, int64_t end);

  // Element access by full index (tests and small code, not hot loops).
  float at(std::initializer_list<int64_t> index) const;
  float& at(std::initializer_list<int64_t> index);

  void fill(float value);  // REQUIRES: is_contiguous()
  // REQUIRES: values.size() == numel() and is_contiguous().
  void copy_from(std::span<const float> values);

 private:
  int64_t offset_of(std::initializer_list<int64_t> index) const;

  Shape shape_;
  std::array<int64_t, kMaxRank> strides_{};
  float* data_ = nullptr;
  std::unique_ptr<float, TensorFree> owned_;
};

// The contiguous strides of a shape, in elements.
std::array<int64_t, kMaxRank> contiguous_strides(const Shape& shape);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_TENSOR_H_
