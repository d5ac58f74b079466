#include "training/layers/residual.h"

#include <stdexcept>

#include "training/shape_error.h"

namespace tuner::training {

Residual::Residual(std::vector<std::unique_ptr<Layer>> body,
                   std::vector<std::unique_ptr<Layer>> shortcut)
    : body_(std::move(body)), shortcut_(std::move(shortcut)) {
  if (body_.size() == 0) throw std::invalid_argument("residual: empty body");
}

std::string Residual::describe() const {
  std::string s = "residual(body: ";
  for (size_t i = 0; i < body_.size(); ++i) s += (i ? ", " : "") + body_.layer(i).describe();
  s += "; shortcut: ";
  if (shortcut_.size() == 0) s += "identity";
  for (size_t i = 0; i < shortcut_.size(); ++i) {
    s += (i ? ", " : "") + shortcut_.layer(i).describe();
  }
  return s + ")";
}

Shape Residual::output_shape(const Shape& sample_in) const {
  Shape body_out, shortcut_out;
  try {
    body_out = body_.output_shape(sample_in);
    shortcut_out = shortcut_.output_shape(sample_in);
  } catch (const ShapeError& e) {
    throw_shape_error("residual", e.what());
  }
  if (!(body_out == shortcut_out)) {
    throw_shape_error("residual", "body gives " + body_out.to_string() + " but shortcut gives " +
                                      shortcut_out.to_string() + " for input " +
                                      sample_in.to_string());
  }
  return body_out;
}

int64_t Residual::forward_flops(const Shape& sample_in) const {
  return body_.forward_flops(sample_in) + shortcut_.forward_flops(sample_in) +
         output_shape(sample_in).numel();
}

void Residual::for_each_sublayer(const std::function<void(Layer&)>& f) {
  for (size_t i = 0; i < body_.size(); ++i) f(body_.layer(i));
  for (size_t i = 0; i < shortcut_.size(); ++i) f(shortcut_.layer(i));
}

std::vector<ParamSpec> Residual::parameter_specs() const {
  std::vector<ParamSpec> all;
  for (ParamSpec p : body_.parameter_specs()) {
    p.name = "body." + p.name;
    all.push_back(std::move(p));
  }
  for (ParamSpec p : shortcut_.parameter_specs()) {
    p.name = "shortcut." + p.name;
    all.push_back(std::move(p));
  }
  return all;
}

std::vector<BufferSpec> Residual::buffer_specs() const {
  std::vector<BufferSpec> all;
  for (BufferSpec b : body_.buffer_specs()) {
    b.name = "body." + b.name;
    all.push_back(std::move(b));
  }
  for (BufferSpec b : shortcut_.buffer_specs()) {
    b.name = "shortcut." + b.name;
    all.push_back(std::move(b));
  }
  return all;
}

void Residual::bind(std::span<ParamView> params, std::span<Tensor> buffers) {
  const size_t bp = body_.parameter_specs().size(), bb = body_.buffer_specs().size();
  check_bind("residual.bind", params.size(), bp + shortcut_.parameter_specs().size(),
             buffers.size(), bb + shortcut_.buffer_specs().size());
  body_.bind(params.subspan(0, bp), buffers.subspan(0, bb));
  shortcut_.bind(params.subspan(bp), buffers.subspan(bb));
}

void Residual::setup(const Shape& sample_in, int64_t max_batch, Backend& backend) {
  sample_out_ = output_shape(sample_in);
  sample_in_ = sample_in;
  max_batch_ = max_batch;
  body_.setup(sample_in, max_batch, backend);
  body_out_ = backend.allocate(sample_out_.with_batch(max_batch));
  dx_body_ = backend.allocate(sample_in.with_batch(max_batch));
  if (shortcut_.size() > 0) {
    shortcut_.setup(sample_in, max_batch, backend);
    shortcut_out_ = backend.allocate(sample_out_.with_batch(max_batch));
    dx_shortcut_ = backend.allocate(sample_in.with_batch(max_batch));
  }
}

void Residual::forward(Pass& pass, const Tensor& x, Tensor& y) {
  check_batched("residual.forward", "x", x, sample_in_, max_batch_);
  const int64_t batch = x.dim(0);
  check_shape("residual.forward", "y", y, sample_out_.with_batch(batch));
  Tensor body_out = body_out_.slice(0, batch);
  body_.forward(pass, x, body_out);
  if (shortcut_.size() == 0) {
    pass.backend.add(body_out, x, y);
  } else {
    Tensor shortcut_out = shortcut_out_.slice(0, batch);
    shortcut_.forward(pass, x, shortcut_out);
    pass.backend.add(body_out, shortcut_out, y);
  }
}

void Residual::backward(Pass& pass, const Tensor& x, const Tensor& /*y*/, const Tensor& dy,
                        Tensor* dx) {
  check_batched("residual.backward", "x", x, sample_in_, max_batch_);
  const int64_t batch = x.dim(0);
  check_shape("residual.backward", "dy", dy, sample_out_.with_batch(batch));
  if (dx != nullptr) check_shape("residual.backward", "dx", *dx, x.shape());
  // d(body + shortcut)/d(each) is the identity: dy flows unchanged into both branches.
  Tensor body_out = body_out_.slice(0, batch);
  Tensor dx_body = dx_body_.slice(0, batch);
  body_.backward(pass, x, body_out, dy, dx ? &dx_body : nullptr);
  if (shortcut_.size() == 0) {
    if (dx != nullptr) pass.backend.add(dx_body, dy, *dx);
  } else {
    Tensor shortcut_out = shortcut_out_.slice(0, batch);
    Tensor dx_shortcut = dx_shortcut_.slice(0, batch);
    shortcut_.backward(pass, x, shortcut_out, dy, dx ? &dx_shortcut : nullptr);
    if (dx != nullptr) pass.backend.add(dx_body, dx_shortcut, *dx);
  }
}

}  // namespace tuner::training
