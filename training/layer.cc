#include "training/layer.h"

#include "training/shape_error.h"

namespace tuner::training {

void Layer::bind(std::span<ParamView> params, std::span<Tensor> buffers) {
  check_bind(kind(), params.size(), 0, buffers.size(), 0);
}

void check_batched(std::string_view op, std::string_view arg, const Tensor& t, const Shape& sample,
                   int64_t max_batch) {
  const bool fits = t.rank() == sample.rank() + 1 && t.dim(0) >= 1 && t.dim(0) <= max_batch &&
                    t.shape().without_batch() == sample;
  if (!fits) {
    throw_shape_error(op, std::string(arg) + " has shape " + t.shape().to_string() +
                              ", expected [B" + (sample.rank() ? ", " : "") +
                              sample.to_string().substr(1) +
                              " with 1 <= B <= " + std::to_string(max_batch));
  }
  if (!t.is_contiguous()) throw_shape_error(op, std::string(arg) + " is not contiguous");
}

void check_shape(std::string_view op, std::string_view arg, const Tensor& t, const Shape& shape) {
  if (!(t.shape() == shape)) {
    throw_shape_error(op, std::string(arg) + " has shape " + t.shape().to_string() + ", expected " +
                              shape.to_string());
  }
  if (!t.is_contiguous()) throw_shape_error(op, std::string(arg) + " is not contiguous");
}

void check_bind(std::string_view op, size_t params, size_t expected_params, size_t buffers,
                size_t expected_buffers) {
  if (params != expected_params || buffers != expected_buffers) {
    throw_shape_error(op, "bind got " + std::to_string(params) + " parameters and " +
                              std::to_string(buffers) + " buffers, expected " +
                              std::to_string(expected_params) + " and " +
                              std::to_string(expected_buffers));
  }
}

}  // namespace tuner::training
