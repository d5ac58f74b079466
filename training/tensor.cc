#include "training/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "training/shape_error.h"

namespace tuner::training {

void throw_shape_error(std::string_view op, std::string_view message) {
  std::string text(op);
  text += ": ";
  text += message;
  throw ShapeError(text);
}

Shape::Shape(std::initializer_list<int64_t> dims)
    : Shape(from(std::span<const int64_t>(dims.begin(), dims.size()))) {}

Shape Shape::from(std::span<const int64_t> dims) {
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    throw std::invalid_argument("Shape: rank " + std::to_string(dims.size()) + " exceeds " +
                                std::to_string(kMaxRank));
  }
  Shape s;
  for (int64_t d : dims) {
    if (d < 0) throw std::invalid_argument("Shape: negative dimension " + std::to_string(d));
    s.dims_[s.rank_++] = d;
  }
  return s;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

Shape Shape::with_batch(int64_t n) const {
  if (rank_ >= kMaxRank) throw std::invalid_argument("Shape::with_batch: rank too large");
  Shape s;
  s.rank_ = rank_ + 1;
  s.dims_[0] = n;
  for (int i = 0; i < rank_; ++i) s.dims_[i + 1] = dims_[i];
  return s;
}

Shape Shape::without_batch() const {
  if (rank_ < 1) throw std::invalid_argument("Shape::without_batch: rank 0");
  Shape s;
  s.rank_ = rank_ - 1;
  for (int i = 1; i < rank_; ++i) s.dims_[i - 1] = dims_[i];
  return s;
}

Shape Shape::with_dim0(int64_t n) const {
  if (rank_ < 1) throw std::invalid_argument("Shape::with_dim0: rank 0");
  Shape s = *this;
  s.dims_[0] = n;
  return s;
}

bool Shape::operator==(const Shape& other) const {
  return rank_ == other.rank_ &&
         std::equal(dims_.begin(), dims_.begin() + rank_, other.dims_.begin());
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

std::array<int64_t, kMaxRank> contiguous_strides(const Shape& shape) {
  std::array<int64_t, kMaxRank> st{};
  int64_t s = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    st[i] = s;
    s *= shape[i];
  }
  return st;
}

namespace {
void free_host(float* p) { std::free(p); }
}  // namespace

Tensor::Tensor(const Shape& shape) : shape_(shape), strides_(contiguous_strides(shape)) {
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(shape.numel(), 1)) * sizeof(float);
  const size_t rounded = (bytes + 63) / 64 * 64;
  auto* p = static_cast<float*>(std::aligned_alloc(64, rounded));
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  owned_ = std::unique_ptr<float, TensorFree>(p, TensorFree{&free_host});
  data_ = p;
}

Tensor Tensor::adopt(float* data, const Shape& shape, Release release) {
  Tensor t = borrow(data, shape);
  t.owned_ = std::unique_ptr<float, TensorFree>(data, TensorFree{release});
  return t;
}

Tensor Tensor::borrow(float* data, const Shape& shape) {
  Tensor t;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.data_ = data;
  return t;
}

const Tensor Tensor::borrow_const(const float* data, const Shape& shape) {
  return borrow(const_cast<float*>(data), shape);
}

Tensor Tensor::borrow(float* data, const Shape& shape, std::span<const int64_t> strides) {
  if (strides.size() != static_cast<size_t>(shape.rank())) {
    throw std::invalid_argument("Tensor::borrow: " + std::to_string(strides.size()) +
                                " strides for shape " + shape.to_string());
  }
  Tensor t;
  t.shape_ = shape;
  std::copy(strides.begin(), strides.end(), t.strides_.begin());
  t.data_ = data;
  return t;
}

bool Tensor::is_contiguous() const {
  int64_t s = 1;
  for (int i = shape_.rank() - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[i] != s) return false;
    s *= shape_[i];
  }
  return true;
}

Tensor Tensor::view() { return borrow(data_, shape_, strides()); }

Tensor Tensor::reshape(const Shape& shape) {
  if (!is_contiguous()) throw_shape_error("reshape", "tensor is not contiguous");
  if (shape.numel() != numel()) {
    throw_shape_error("reshape", "cannot view " + shape_.to_string() + " as " + shape.to_string());
  }
  return borrow(data_, shape);
}

Tensor Tensor::slice(int64_t begin, int64_t end) {
  if (rank() < 1 || begin < 0 || begin > end || end > dim(0)) {
    throw_shape_error("slice", "rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                                   ") of " + shape_.to_string());
  }
  return borrow(data_ + begin * strides_[0], shape_.with_dim0(end - begin), strides());
}

int64_t Tensor::offset_of(std::initializer_list<int64_t> index) const {
  if (index.size() != static_cast<size_t>(rank())) {
    throw std::out_of_range("Tensor::at: " + std::to_string(index.size()) + " indices for shape " +
                            shape_.to_string());
  }
  int64_t off = 0;
  int i = 0;
  for (int64_t v : index) {
    if (v < 0 || v >= shape_[i]) {
      throw std::out_of_range("Tensor::at: index " + std::to_string(v) + " out of range in dim " +
                              std::to_string(i) + " of " + shape_.to_string());
    }
    off += v * strides_[i++];
  }
  return off;
}

float Tensor::at(std::initializer_list<int64_t> index) const { return data_[offset_of(index)]; }
float& Tensor::at(std::initializer_list<int64_t> index) { return data_[offset_of(index)]; }

void Tensor::fill(float value) {
  if (!is_contiguous()) throw_shape_error("fill", "tensor is not contiguous");
  std::fill(data_, data_ + numel(), value);
}

void Tensor::copy_from(std::span<const float> values) {
  if (!is_contiguous()) throw_shape_error("copy_from", "tensor is not contiguous");
  if (static_cast<int64_t>(values.size()) != numel()) {
    throw_shape_error("copy_from",
                      std::to_string(values.size()) + " values for shape " + shape_.to_string());
  }
  std::copy(values.begin(), values.end(), data_);
}

}  // namespace tuner::training
