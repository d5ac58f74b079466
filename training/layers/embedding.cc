#include "training/layers/embedding.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "training/shape_error.h"

namespace tuner::training {

namespace {

int64_t out_width(int64_t in_features, const std::vector<EmbeddedColumn>& columns) {
  int64_t out = in_features;
  for (const EmbeddedColumn& c : columns) out += c.dim - 1;
  return out;
}

}  // namespace

ColumnEmbedding::ColumnEmbedding(int64_t in_features, std::vector<EmbeddedColumn> columns)
    : in_features_(in_features),
      columns_(std::move(columns)),
      out_features_(out_width(in_features, columns_)) {
  if (in_features < 1 || columns_.empty()) {
    throw std::invalid_argument("embedding: in_features >= 1 and at least one column");
  }
  int64_t prev = -1;
  for (const EmbeddedColumn& c : columns_) {
    if (c.at <= prev || c.at >= in_features || c.categories < 1 || c.dim < 1) {
      throw std::invalid_argument(
          "embedding: columns need increasing positions in [0, in_features), categories >= 1 "
          "and dim >= 1");
    }
    prev = c.at;
  }
}

std::string ColumnEmbedding::describe() const {
  std::string s =
      "embedding(" + std::to_string(in_features_) + " -> " + std::to_string(out_features_) + ":";
  for (const EmbeddedColumn& c : columns_) {
    s += " [" + std::to_string(c.at) + "] " + std::to_string(c.categories) + "x" +
         std::to_string(c.dim);
  }
  return s + ")";
}

Shape ColumnEmbedding::output_shape(const Shape& sample_in) const {
  if (sample_in.rank() != 1 || sample_in[0] != in_features_) {
    throw_shape_error("embedding", "input sample shape " + sample_in.to_string() + ", expected [" +
                                       std::to_string(in_features_) + "]");
  }
  return Shape{out_features_};
}

int64_t ColumnEmbedding::forward_flops(const Shape& sample_in) const {
  (void)output_shape(sample_in);
  return 0;  // copies only
}

std::vector<ParamSpec> ColumnEmbedding::parameter_specs() const {
  std::vector<ParamSpec> specs;
  for (size_t k = 0; k < columns_.size(); ++k) {
    // He normal with fan_in 2 draws N(0, 1).
    specs.push_back({"table" + std::to_string(k), Shape{columns_[k].categories, columns_[k].dim},
                     Init::kHeNormal, 2, 2});
  }
  return specs;
}

void ColumnEmbedding::bind(std::span<ParamView> params, std::span<Tensor> buffers) {
  check_bind("embedding.bind", params.size(), columns_.size(), buffers.size(), 0);
  tables_.clear();
  for (ParamView& p : params) tables_.push_back({p.value.view(), p.grad.view()});
}

void ColumnEmbedding::setup(const Shape& sample_in, int64_t max_batch, Backend& backend) {
  (void)output_shape(sample_in);
  max_batch_ = max_batch;
  host_ = backend.host_accessible();
  if (!host_) {
    hx_.resize(static_cast<size_t>(max_batch * in_features_));
    hdx_.resize(hx_.size());
    hy_.resize(static_cast<size_t>(max_batch * out_features_));
    hdy_.resize(hy_.size());
    htables_.clear();
    for (const EmbeddedColumn& c : columns_) {
      htables_.emplace_back(static_cast<size_t>(c.categories * c.dim));
    }
  }
}

int64_t ColumnEmbedding::row_of(size_t k, float v) const {
  if (!(v >= 0.0f) || v >= static_cast<float>(columns_[k].categories) || std::floor(v) != v) {
    return -1;
  }
  return static_cast<int64_t>(v);
}

void ColumnEmbedding::forward(Pass& pass, const Tensor& x, Tensor& y) {
  check_batched("embedding.forward", "x", x, Shape{in_features_}, max_batch_);
  check_shape("embedding.forward", "y", y, Shape{x.dim(0), out_features_});
  const int64_t b = x.dim(0);
  const float* xs = x.data();
  float* ys = y.data();
  std::vector<const float*> tables;
  if (host_) {
    for (const ParamView& t : tables_) tables.push_back(t.value.data());
  } else {
    pass.backend.download(x.span(), std::span<float>(hx_).first(static_cast<size_t>(x.numel())));
    for (size_t k = 0; k < tables_.size(); ++k) {
      pass.backend.download(tables_[k].value.span(), htables_[k]);
      tables.push_back(htables_[k].data());
    }
    xs = hx_.data();
    ys = hy_.data();
  }
  for (int64_t s = 0; s < b; ++s) {
    const float* in = xs + s * in_features_;
    float* out = ys + s * out_features_;
    int64_t j = 0;
    for (size_t k = 0; k < columns_.size(); ++k) {
      const EmbeddedColumn& c = columns_[k];
      out = std::copy(in + j, in + c.at, out);
      const int64_t row = row_of(k, in[c.at]);
      if (row < 0) {
        out = std::fill_n(out, c.dim, 0.0f);
      } else {
        out = std::copy_n(tables[k] + row * c.dim, c.dim, out);
      }
      j = c.at + 1;
    }
    std::copy(in + j, in + in_features_, out);
  }
  if (!host_) {
    pass.backend.upload(std::span<const float>(hy_).first(static_cast<size_t>(y.numel())),
                        y.span());
  }
}

void ColumnEmbedding::backward(Pass& pass, const Tensor& x, const Tensor& /*y*/, const Tensor& dy,
                               Tensor* dx) {
  check_batched("embedding.backward", "x", x, Shape{in_features_}, max_batch_);
  check_shape("embedding.backward", "dy", dy, Shape{x.dim(0), out_features_});
  if (dx != nullptr) check_shape("embedding.backward", "dx", *dx, x.shape());
  const int64_t b = x.dim(0);
  const float* xs = x.data();
  const float* dys = dy.data();
  float* dxs = dx != nullptr ? dx->data() : nullptr;
  std::vector<float*> grads;
  if (host_) {
    for (ParamView& t : tables_) grads.push_back(t.grad.data());
  } else {
    pass.backend.download(x.span(), std::span<float>(hx_).first(static_cast<size_t>(x.numel())));
    pass.backend.download(dy.span(), std::span<float>(hdy_).first(static_cast<size_t>(dy.numel())));
    for (std::vector<float>& h : htables_) grads.push_back(h.data());
    xs = hx_.data();
    dys = hdy_.data();
    if (dxs != nullptr) dxs = hdx_.data();
  }
  for (size_t k = 0; k < columns_.size(); ++k) {
    std::fill_n(grads[k], columns_[k].categories * columns_[k].dim, 0.0f);
  }
  // Samples in batch order: the sums are the same on every run.
  for (int64_t s = 0; s < b; ++s) {
    const float* in = xs + s * in_features_;
    const float* d = dys + s * out_features_;
    float* din = dxs != nullptr ? dxs + s * in_features_ : nullptr;
    int64_t j = 0;
    for (size_t k = 0; k < columns_.size(); ++k) {
      const EmbeddedColumn& c = columns_[k];
      if (din != nullptr) std::copy(d, d + (c.at - j), din + j);
      d += c.at - j;
      if (din != nullptr) din[c.at] = 0.0f;
      const int64_t row = row_of(k, in[c.at]);
      if (row >= 0) {
        float* g = grads[k] + row * c.dim;
        for (int64_t e = 0; e < c.dim; ++e) g[e] += d[e];
      }
      d += c.dim;
      j = c.at + 1;
    }
    if (din != nullptr) std::copy(d, d + (in_features_ - j), din + j);
  }
  if (!host_) {
    for (size_t k = 0; k < tables_.size(); ++k) {
      pass.backend.upload(htables_[k], tables_[k].grad.span());
    }
    if (dx != nullptr) {
      pass.backend.upload(std::span<const float>(hdx_).first(static_cast<size_t>(dx->numel())),
                          dx->span());
    }
  }
}

}  // namespace tuner::training
