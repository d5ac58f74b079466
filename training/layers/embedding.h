// Learned embeddings of categorical input features: each embedded column of a flat sample holds a
// category index, looked up in a table of its own, the vectors concatenated with the other
// features in place (as torch.nn.Embedding per column, then torch.cat).
#ifndef TUNER_TRAINING_LAYERS_EMBEDDING_H_
#define TUNER_TRAINING_LAYERS_EMBEDDING_H_

#include <cstdint>
#include <vector>

#include "training/layer.h"

namespace tuner::training {

// One embedded input feature: the feature at `at` of the sample holds a category index in
// [0, categories), looked up in a table [categories, dim].
struct EmbeddedColumn {
  int64_t at = 0;
  int64_t categories = 1;
  int64_t dim = 1;
};

// x[B, I] -> y[B, O], O = I - n + sum of the dims (n embedded columns): the features in input
// order, each embedded one replaced by its table's row for the index it holds. An index that is
// not an integer in [0, categories) (-1: a category the training data lacked) gives a row of
// zeros, as an unknown category sets no one-hot slot. Parameters "table<k>" [categories_k, dim_k]
// for the k-th column, initialized N(0, 1) (torch.nn.Embedding's default). The gradient of a
// table row is the sum of dy over the samples that looked it up; dx is dy for the other features
// and 0 for the index features. Same in train and eval mode. On a backend whose memory the host
// cannot read, the lookups run on the host between download() and upload().
class ColumnEmbedding final : public Layer {
 public:
  // REQUIRES: in_features >= 1; columns non-empty, their `at` strictly increasing and in
  // [0, in_features), categories >= 1, dim >= 1 (else std::invalid_argument).
  ColumnEmbedding(int64_t in_features, std::vector<EmbeddedColumn> columns);

  std::string_view kind() const override { return "embedding"; }
  std::string describe() const override;
  Shape output_shape(const Shape& sample_in) const override;  // [I] -> [O]
  int64_t forward_flops(const Shape& sample_in) const override;
  std::vector<ParamSpec> parameter_specs() const override;
  void bind(std::span<ParamView> params, std::span<Tensor> buffers) override;
  void setup(const Shape& sample_in, int64_t max_batch, Backend& backend) override;
  void forward(Pass& pass, const Tensor& x, Tensor& y) override;
  void backward(Pass& pass, const Tensor& x, const Tensor& y, const Tensor& dy,
                Tensor* dx) override;

  const std::vector<EmbeddedColumn>& columns() const { return columns_; }
  int64_t out_features() const { return out_features_; }

 private:
  // The row of column k that index value v selects; -1 for none.
  int64_t row_of(size_t k, float v) const;

  // Constant after construction.
  const int64_t in_features_;
  const std::vector<EmbeddedColumn> columns_;
  const int64_t out_features_;

  std::vector<ParamView> tables_;  // [categories_k, dim_k] each
  int64_t max_batch_ = 0;
  bool host_ = true;  // the backend's memory is host memory
  // Host copies for a backend whose memory the host cannot read (unused otherwise).
  std::vector<float> hx_, hy_, hdy_, hdx_;
  std::vector<std::vector<float>> htables_;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_LAYERS_EMBEDDING_H_
