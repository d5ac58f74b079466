#include "training/layer_chain.h"

#include <algorithm>
#include <stdexcept>

#include "training/shape_error.h"

namespace tuner::training {

LayerChain::LayerChain(std::vector<std::unique_ptr<Layer>> layers) : layers_(std::move(layers)) {
  for (const auto& l : layers_) {
    if (!l) throw std::invalid_argument("LayerChain: null layer");
  }
}

Shape LayerChain::output_shape(const Shape& sample_in) const {
  Shape s = sample_in;
  for (size_t i = 0; i < layers_.size(); ++i) {
    try {
      s = layers_[i]->output_shape(s);
    } catch (const ShapeError& e) {
      throw ShapeError("layer " + std::to_string(i) + " (" + std::string(layers_[i]->kind()) +
                       "): " + e.what());
    }
  }
  return s;
}

std::vector<ParamSpec> LayerChain::parameter_specs() const {
  std::vector<ParamSpec> all;
  for (size_t i = 0; i < layers_.size(); ++i) {
    for (ParamSpec p : layers_[i]->parameter_specs()) {
      p.name = std::to_string(i) + "." + std::string(layers_[i]->kind()) + "." + p.name;
      all.push_back(std::move(p));
    }
  }
  return all;
}

std::vector<BufferSpec> LayerChain::buffer_specs() const {
  std::vector<BufferSpec> all;
  for (size_t i = 0; i < layers_.size(); ++i) {
    for (BufferSpec b : layers_[i]->buffer_specs()) {
      b.name = std::to_string(i) + "." + std::string(layers_[i]->kind()) + "." + b.name;
      all.push_back(std::move(b));
    }
  }
  return all;
}

void LayerChain::bind(std::span<ParamView> params, std::span<Tensor> buffers) {
  size_t p = 0, b = 0;
  for (auto& l : layers_) {
    const size_t np = l->parameter_specs().size(), nb = l->buffer_specs().size();
    if (p + np > params.size() || b + nb > buffers.size()) {
      throw_shape_error("chain.bind", "too few parameter or buffer views");
    }
    l->bind(params.subspan(p, np), buffers.subspan(b, nb));
    p += np;
    b += nb;
  }
  check_bind("chain.bind", params.size(), p, buffers.size(), b);
}

void LayerChain::setup(const Shape& sample_in, int64_t max_batch, Backend& backend) {
  shapes_.assign(1, sample_in);
  for (auto& l : layers_) shapes_.push_back(l->output_shape(shapes_.back()));
  acts_.clear();
  int64_t largest = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->setup(shapes_[i], max_batch, backend);
    largest = std::max(largest, shapes_[i].numel() * max_batch);
    // The last layer writes into the caller's y; its activation is not stored here.
    if (i + 1 < layers_.size()) acts_.push_back(backend.allocate(shapes_[i + 1].with_batch(max_batch)));
  }
  grad_a_ = backend.allocate(Shape{std::max<int64_t>(largest, 1)});
  grad_b_ = backend.allocate(Shape{std::max<int64_t>(largest, 1)});
}

void LayerChain::forward(Pass& pass, const Tensor& x, Tensor& y) {
  const int64_t batch = x.dim(0);
  const size_t n = layers_.size();
  if (n == 0) throw_shape_error("chain.forward", "no layers");
  if (n == 1) {
    layers_[0]->forward(pass, x, y);
    return;
  }
  Tensor first = acts_[0].slice(0, batch);
  layers_[0]->forward(pass, x, first);
  for (size_t i = 1; i + 1 < n; ++i) {
    Tensor in = acts_[i - 1].slice(0, batch);
    Tensor out = acts_[i].slice(0, batch);
    layers_[i]->forward(pass, in, out);
  }
  Tensor last_in = acts_[n - 2].slice(0, batch);
  layers_[n - 1]->forward(pass, last_in, y);
}

void LayerChain::backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy,
                          Tensor* dx, const std::function<void(size_t)>& after_layer) {
  const int64_t batch = x.dim(0);
  const size_t n = layers_.size();
  if (n == 0) throw_shape_error("chain.backward", "no layers");
  // Gradient buffers alternate: layer i writes its dx into one, layer i-1 reads it as dy.
  Tensor* bufs[2] = {&grad_a_, &grad_b_};
  Tensor g_out;  // the gradient of the current layer's output (a view)
  for (size_t k = 0; k < n; ++k) {
    const size_t i = n - 1 - k;
    Tensor in_view = i == 0 ? Tensor() : acts_[i - 1].slice(0, batch);
    const Tensor& layer_in = i == 0 ? x : in_view;
    Tensor out_view = i + 1 == n ? Tensor() : acts_[i].slice(0, batch);
    const Tensor& layer_out = i + 1 == n ? y : out_view;
    const Tensor& layer_dy = k == 0 ? dy : g_out;
    if (i == 0) {
      layers_[i]->backward(pass, layer_in, layer_out, layer_dy, dx);
    } else {
      Tensor g_in = Tensor::borrow(bufs[k % 2]->data(), shapes_[i].with_batch(batch));
      layers_[i]->backward(pass, layer_in, layer_out, layer_dy, &g_in);
      g_out = std::move(g_in);
    }
    if (after_layer) after_layer(i);
  }
}

std::string LayerChain::describe(const std::string& indent) const {
  std::string s;
  for (size_t i = 0; i < layers_.size(); ++i) {
    s += indent + std::to_string(i) + ": " + layers_[i]->describe() + "  -> " +
         shapes_.at(i + 1).to_string() + "\n";
  }
  return s;
}

}  // namespace tuner::training
