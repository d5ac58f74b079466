#include "training/layer_chain.h"

#include <algorithm>
#include <stdexcept>

#include "training/layers/activation.h"
#include "training/layers/batch_norm.h"
#include "training/layers/conv2d.h"
#include "training/layers/max_pool2d.h"
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

int64_t LayerChain::forward_flops(const Shape& sample_in) const {
  Shape s = sample_in;
  int64_t flops = 0;
  for (const auto& layer : layers_) {
    flops += layer->forward_flops(s);
    s = layer->output_shape(s);
  }
  return flops;
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
  const size_t n = layers_.size();
  shapes_.assign(1, sample_in);
  for (auto& l : layers_) shapes_.push_back(l->output_shape(shapes_.back()));
  fused_.assign(n, 0);
  for (size_t i = 0; i + 1 < n; ++i) {
    auto* conv = dynamic_cast<Conv2d*>(layers_[i].get());
    const auto* pool = dynamic_cast<const MaxPool2d*>(layers_[i + 1].get());
    if (conv != nullptr && pool != nullptr && Conv2d::can_fuse(*pool)) {
      conv->fuse_max_pool();
      fused_[i] = 1;
    }
    auto* bn = dynamic_cast<BatchNorm*>(layers_[i].get());
    const auto* act = dynamic_cast<const ActivationLayer*>(layers_[i + 1].get());
    if (bn != nullptr && act != nullptr && act->activation() == Activation::kRelu) {
      bn->fuse_relu();
      fused_[i] = 1;
      const auto* after =
          i + 2 < n ? dynamic_cast<const MaxPool2d*>(layers_[i + 2].get()) : nullptr;
      if (after != nullptr && BatchNorm::can_fuse(*after, shapes_[i])) {
        bn->fuse_max_pool();
        fused_[i] = 2;
      }
    }
    i += static_cast<size_t>(fused_[i]);  // a layer is in one group at most
  }
  // first_[i]: the first layer of the group that runs layer i.
  first_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    first_[i] = i;
    for (int k = 1; k <= fused_[i] && i + static_cast<size_t>(k) < n; ++k) first_[i + k] = i;
    i += static_cast<size_t>(fused_[i]);
  }
  acts_.clear();
  int64_t largest = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool run_by_previous = first_[i] != i;
    if (!run_by_previous) layers_[i]->setup(shapes_[i], max_batch, backend);
    // The group's first layer writes its last layer's output; no gradient flows through the
    // group's middle.
    if (!run_by_previous) largest = std::max(largest, shapes_[i].numel() * max_batch);
    // The last layer writes into the caller's y; its activation is not stored here.
    if (i + 1 < n) {
      const bool inside_group = first_[i + 1] != i + 1;
      acts_.push_back(inside_group ? Tensor()
                                   : backend.allocate(shapes_[i + 1].with_batch(max_batch)));
    }
  }
  grad_a_ = backend.allocate(Shape{std::max<int64_t>(largest, 1)});
  grad_b_ = backend.allocate(Shape{std::max<int64_t>(largest, 1)});
}

void LayerChain::forward(Pass& pass, const Tensor& x, Tensor& y) {
  const int64_t batch = x.dim(0);
  const size_t n = layers_.size();
  if (n == 0) throw_shape_error("chain.forward", "no layers");
  for (size_t i = 0; i < n; ++i) {
    // A fused group (conv2d, max_pool2d; batch_norm, relu[, max_pool2d]) writes its last layer's
    // output.
    const size_t last = i + static_cast<size_t>(fused_[i]);
    Tensor in_view = i == 0 ? Tensor() : acts_[i - 1].slice(0, batch);
    const Tensor& in = i == 0 ? x : in_view;
    Tensor out_view = last + 1 == n ? Tensor() : acts_[last].slice(0, batch);
    Tensor& out = last + 1 == n ? y : out_view;
    if (fused_[i] > 0 && layers_[i]->kind() == "conv2d") {
      static_cast<Conv2d&>(*layers_[i]).forward_pooled(pass, in, out);
    } else if (fused_[i] == 2) {  // a batch norm with its ReLU and max pooling
      static_cast<BatchNorm&>(*layers_[i]).forward_pooled(pass, in, out);
    } else {  // a layer alone, or a batch norm with its ReLU
      layers_[i]->forward(pass, in, out);
    }
    i = last;
  }
}

void LayerChain::backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy,
                          Tensor* dx, const std::function<void(size_t)>& after_layer) {
  const int64_t batch = x.dim(0);
  const size_t n = layers_.size();
  if (n == 0) throw_shape_error("chain.backward", "no layers");
  // Gradient buffers alternate: layer i writes its dx into one, layer i-1 reads it as dy.
  Tensor* bufs[2] = {&grad_a_, &grad_b_};
  int next_buf = 0;
  Tensor g_out;  // the gradient of the current layer's output (a view)
  for (size_t k = 0; k < n; ++k) {
    const size_t last = n - 1 - k;
    // A fused group (conv2d i, max_pool2d i + 1; batch_norm i, relu i + 1[, max_pool2d i + 2])
    // runs as one backward.
    const size_t i = first_[last];
    Tensor in_view = i == 0 ? Tensor() : acts_[i - 1].slice(0, batch);
    const Tensor& layer_in = i == 0 ? x : in_view;
    Tensor out_view = last + 1 == n ? Tensor() : acts_[last].slice(0, batch);
    const Tensor& layer_out = last + 1 == n ? y : out_view;
    const Tensor& layer_dy = k == 0 ? dy : g_out;
    Tensor g_in;
    if (i > 0) {
      g_in = Tensor::borrow(bufs[next_buf]->data(), shapes_[i].with_batch(batch));
      next_buf ^= 1;
    }
    Tensor* layer_dx = i == 0 ? dx : &g_in;
    if (i != last && layers_[i]->kind() == "conv2d") {
      static_cast<Conv2d&>(*layers_[i])
          .backward_pooled(pass, layer_in, layer_out, layer_dy, layer_dx);
    } else if (fused_[i] == 2) {
      static_cast<BatchNorm&>(*layers_[i])
          .backward_pooled(pass, layer_in, layer_out, layer_dy, layer_dx);
    } else {
      layers_[i]->backward(pass, layer_in, layer_out, layer_dy, layer_dx);
    }
    g_out = std::move(g_in);
    if (after_layer) {
      for (size_t j = last; j > i; --j) after_layer(j);
      after_layer(i);
    }
    k += last - i;
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
