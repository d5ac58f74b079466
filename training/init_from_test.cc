// Starting from another model's weights: the round trip, the refusals naming the first layer that
// differs, the new head, and the per-layer learning rates (frozen layers, lr factors).
#include "training/init_from.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "training/backends/cpu/cpu_backend.h"
#include "training/backends/cuda/cuda_backend.h"
#include "training/optim/lr_schedule.h"
#include "training/optim/param_groups.h"
#include "training/test_datasets.h"
#include "training/trainer.h"

namespace tuner::training {
namespace {

// A CNN on [1, 8, 8] with batch norm, a fused ReLU, dropout and a head of `classes` outputs.
std::string cnn(int classes, int width = 8, bool dropout = true) {
  return R"({"input": [1, 8, 8], "layers": [
      {"type": "conv2d", "out": 4, "kernel": 3, "padding": 1},
      {"type": "batch_norm"}, {"type": "relu"}, {"type": "max_pool2d", "kernel": 2},
      {"type": "flatten"},
      {"type": "linear", "out": )" +
         std::to_string(width) + R"(}, {"type": "relu"}, )" +
         (dropout ? R"({"type": "dropout", "p": 0.25}, )" : "") + R"({"type": "linear", "out": )" +
         std::to_string(classes) + "}]}";
}

// A trained-looking source: the model of `json` with weights from `seed` and batch-norm
// statistics that are not the initial ones.
Checkpoint source_checkpoint(const std::string& json, uint64_t seed) {
  CpuBackend backend(1);
  const ModelSpec spec = parse_model_spec(json);
  auto model = build_model(spec, 1, backend, seed);
  std::vector<float> buffers = model->parameters().buffer_values_to_host();
  for (size_t i = 0; i < buffers.size(); ++i) buffers[i] += 0.25f * static_cast<float>(i + 1);
  model->parameters().set_buffer_values(buffers);
  return Checkpoint{.model_spec = spec.json,
                    .parameters = model->parameters().values_to_host(),
                    .buffers = model->parameters().buffer_values_to_host()};
}

std::string error_of(const Checkpoint& source, const std::string& json,
                     const InitFromOptions& options = {}) {
  try {
    check_weights_fit(source, parse_model_spec(json), options);
  } catch (const InitFromError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(InitFrom, WeightsLoadedEqualTheSavedOnes) {
  const Checkpoint source = source_checkpoint(cnn(4), 7);
  CpuBackend backend(1);
  const ModelSpec spec = parse_model_spec(cnn(4));
  auto model = build_model(spec, 2, backend, 99);
  ASSERT_NE(model->parameters().values_to_host(), source.parameters);
  const InitFromResult r = load_weights(source, spec, model->parameters());
  EXPECT_EQ(r.layers_loaded, 4u);  // conv2d, batch_norm, linear, linear
  EXPECT_FALSE(r.head_replaced);
  EXPECT_EQ(model->parameters().values_to_host(), source.parameters);
  EXPECT_EQ(model->parameters().buffer_values_to_host(), source.buffers);
}

TEST(InitFrom, LayersWithoutWeightsMayDiffer) {
  // The source has a dropout layer the model lacks: the layers with weights still line up.
  const Checkpoint source = source_checkpoint(cnn(4, 8, /*dropout=*/true), 3);
  CpuBackend backend(1);
  const ModelSpec spec = parse_model_spec(cnn(4, 8, /*dropout=*/false));
  auto model = build_model(spec, 1, backend, 5);
  load_weights(source, spec, model->parameters());
  EXPECT_EQ(model->parameters().values_to_host(), source.parameters);
}

TEST(InitFrom, AMismatchNamesTheFirstLayerThatDiffersAndBothShapes) {
  const Checkpoint source = source_checkpoint(cnn(4, 8), 1);
  EXPECT_EQ(error_of(source, cnn(4, 16)),
            "layer with weights 2 does not match: the model's layers[5] (linear) has weight "
            "[16, 64], the source's layers[5] has weight [8, 64]");
  // Another kind at the same position.
  const std::string mlp =
      R"({"input": [1, 8, 8], "layers": [{"type": "flatten"}, {"type": "linear", "out": 4}]})";
  EXPECT_EQ(error_of(source, mlp),
            "layer with weights 0 does not match: the model's layers[1] is linear, the source's "
            "layers[0] is conv2d");
  // More layers with weights in the source than in the model.
  const std::string shorter = R"({"input": [1, 8, 8], "layers": [
      {"type": "conv2d", "out": 4, "kernel": 3, "padding": 1}, {"type": "batch_norm"},
      {"type": "relu"}, {"type": "max_pool2d", "kernel": 2}, {"type": "flatten"},
      {"type": "linear", "out": 8}]})";
  EXPECT_EQ(error_of(source, shorter),
            "the model has 3 layers with weights, the source 4: layer with weights 3 does not "
            "match: the source's linear at layers[8] (weight [4, 8], bias [4]) has none in the "
            "model");
}

TEST(InitFrom, TheHeadIsReplacedOnlyWhenAskedFor) {
  const Checkpoint source = source_checkpoint(cnn(10), 4);
  const ModelSpec spec = parse_model_spec(cnn(3));
  try {
    check_weights_fit(source, spec);
    FAIL() << "a head of 3 outputs took a source's of 10";
  } catch (const InitFromError& e) {
    EXPECT_TRUE(e.only_head_differs());
    EXPECT_EQ(std::string(e.what()),
              "layer with weights 3 does not match: the model's layers[8] (linear) has weight "
              "[3, 8], the source's layers[8] has weight [10, 8]");
  }
  CpuBackend backend(1);
  auto model = build_model(spec, 1, backend, 11);
  const std::vector<float> fresh = model->parameters().values_to_host();
  const InitFromResult r = load_weights(source, spec, model->parameters(), {.replace_head = true});
  EXPECT_TRUE(r.head_replaced);
  EXPECT_EQ(r.layers_loaded, 3u);
  const std::vector<WeightedLayer> layers = weighted_layers(spec);
  const std::vector<float> loaded = model->parameters().values_to_host();
  const WeightedLayer& head = layers.back();
  for (int64_t i = 0; i < head.begin; ++i) ASSERT_EQ(loaded[i], source.parameters[i]) << i;
  for (int64_t i = head.begin; i < head.end; ++i) ASSERT_EQ(loaded[i], fresh[i]) << i;
  EXPECT_EQ(model->parameters().buffer_values_to_host(), source.buffers);
}

TEST(InitFrom, ASourceWhoseWeightsDoNotFitItsSpecIsRefused) {
  Checkpoint source = source_checkpoint(cnn(4), 1);
  source.parameters.pop_back();
  EXPECT_NE(error_of(source, cnn(4)).find("its weights do not fit its own model spec"),
            std::string::npos);
  source.model_spec = "{";
  EXPECT_NE(error_of(source, cnn(4)).find("its model spec does not parse"), std::string::npos);
}

TEST(InitFrom, TopLevelLayerIndex) {
  EXPECT_EQ(top_level_layer_index("layers[0]"), 0);
  EXPECT_EQ(top_level_layer_index("layers[12].activation"), 12);
  EXPECT_EQ(top_level_layer_index("layers[1]x"), -1);
  EXPECT_EQ(top_level_layer_index("body[1]"), -1);
}

// One epoch of training of the cnn from seed 2 with `factors` per entry of "layers".
std::vector<float> after_one_epoch(const std::vector<float>& factors, const std::string& optimizer,
                                   std::vector<float>* before = nullptr) {
  CpuBackend backend(1);
  const ModelSpec spec = parse_model_spec(cnn(4));
  auto model = build_model(spec, 16, backend, 2);
  if (before) *before = model->parameters().values_to_host();
  const auto size = static_cast<int64_t>(model->parameters().values().size());
  const std::vector<ParamGroup> groups = layer_param_groups(spec, factors);
  std::unique_ptr<Optimizer> opt;
  if (optimizer == "adamw") {
    opt = std::make_unique<ParamGroupOptimizer>(backend, size, adamw_options(0.1f), groups);
  } else {
    opt = std::make_unique<ParamGroupOptimizer>(backend, size, SgdOptions{.weight_decay = 0.01f},
                                                groups);
  }
  const ConstantLr lr(0.05);
  const Dataset train = quadrant_images(32, 1);
  Trainer trainer(*model, *opt, lr, train, Dataset(), {.epochs = 1, .batch_size = 16});
  trainer.train_epoch();
  return model->parameters().values_to_host();
}

TEST(InitFrom, FrozenLayersAreUnchangedAfterTraining) {
  // layers[0] (the conv2d) and layers[5] (the first linear) frozen; AdamW's decay would move them.
  std::vector<float> before;
  const std::vector<float> after = after_one_epoch({0, 1, 1, 1, 1, 0}, "adamw", &before);
  const std::vector<WeightedLayer> layers = weighted_layers(parse_model_spec(cnn(4)));
  ASSERT_EQ(layers.size(), 4u);
  for (const WeightedLayer& l : layers) {
    const bool frozen = l.path == "layers[0]" || l.path == "layers[5]";
    bool changed = false;
    for (int64_t i = l.begin; i < l.end; ++i) changed = changed || after[i] != before[i];
    EXPECT_EQ(changed, !frozen) << l.describe();
  }
}

TEST(InitFrom, AnLrFactorScalesTheLayersUpdates) {
  // Plain SGD (no momentum): a factor f moves a layer by f times the base rate's step, on the
  // first step, where the gradients are the same.
  CpuBackend backend(1);
  const int64_t n = 64;
  std::vector<float> grads(n), base(n, 0.0f), scaled(n, 0.0f);
  for (int64_t i = 0; i < n; ++i) grads[i] = 0.01f * static_cast<float>(i - 20);
  ParamGroupOptimizer plain(backend, n, SgdOptions{}, {});
  ParamGroupOptimizer grouped(backend, n, SgdOptions{},
                              {{.begin = 16, .size = 16, .lr_factor = 0.25f},
                               {.begin = 48, .size = 16, .lr_factor = 0.0f}});
  plain.step(base, grads, 0.5f);
  grouped.step(scaled, grads, 0.5f);
  for (int64_t i = 0; i < n; ++i) {
    const float factor = i >= 48 ? 0.0f : (i >= 16 && i < 32 ? 0.25f : 1.0f);
    EXPECT_FLOAT_EQ(scaled[i], factor * base[i]) << i;  // exact: 0.25 is a power of 2
  }
  // Adam's first step moves each value by lr times the sign of its gradient: by lr * factor.
  std::vector<float> p(n, 0.0f);
  ParamGroupOptimizer adam(backend, n, AdamOptions{},
                           {{.begin = 0, .size = 32, .lr_factor = 0.1f}});
  EXPECT_EQ(adam.state().size(), static_cast<size_t>(2 * n));  // Adam's layout: m then v
  adam.step(p, grads, 0.01f);
  EXPECT_NEAR(p[0], 0.001f, 1e-7);    // gradient < 0, factor 0.1
  EXPECT_NEAR(p[40], -0.01f, 1e-7);   // gradient > 0, factor 1
  EXPECT_NEAR(p[31], -0.001f, 1e-7);  // gradient > 0, factor 0.1
}

TEST(InitFrom, LayerFactorsBecomeGroupsOfTheLayersWithParameters) {
  const ModelSpec spec = parse_model_spec(cnn(4));
  // layers[1] (batch_norm) at 0.5; layers[2] (a relu folded away) has no parameters.
  const std::vector<float> factors = {1, 0.5f, 0.0f};
  const std::vector<ParamGroup> groups = layer_param_groups(spec, factors);
  ASSERT_EQ(groups.size(), 1u);
  const WeightedLayer bn = weighted_layers(spec)[1];
  EXPECT_EQ(bn.kind, "batch_norm");
  EXPECT_EQ(groups[0].begin, bn.begin);
  EXPECT_EQ(groups[0].size, bn.end - bn.begin);
  EXPECT_EQ(groups[0].lr_factor, 0.5f);
}

TEST(ParamGroupOptimizer, RefusesOverlappingGroups) {
  CpuBackend backend(1);
  EXPECT_THROW(ParamGroupOptimizer(backend, 32, SgdOptions{},
                                   {{.begin = 0, .size = 16, .lr_factor = 0.5f},
                                    {.begin = 8, .size = 16, .lr_factor = 0.5f}}),
               std::invalid_argument);
  EXPECT_THROW(ParamGroupOptimizer(backend, 32, SgdOptions{}, {{.begin = 24, .size = 16}}),
               std::invalid_argument);
}

// The groups' steps on subspans of the arrays, in the CUDA backend's memory as in the CPU's.
TEST(ParamGroupOptimizer, StepsOnTheCudaBackendAsOnTheCpu) {
  if (const std::string why = cuda_backend_unavailable(0); !why.empty()) {
    GTEST_SKIP() << "no GPU: " << why;
  }
  const int64_t n = 80;
  const std::vector<ParamGroup> groups = {{.begin = 16, .size = 32, .lr_factor = 0.1f},
                                          {.begin = 64, .size = 16, .lr_factor = 0.0f}};
  std::vector<float> p0(n), g(n);
  for (int64_t i = 0; i < n; ++i) {
    p0[i] = std::cos(0.3f * static_cast<float>(i));
    g[i] = std::sin(0.7f * static_cast<float>(i));
  }
  auto run = [&](Backend& backend) {
    Tensor p = backend.allocate(Shape{n}), grads = backend.allocate(Shape{n});
    backend.upload(p0, p.span());
    backend.upload(g, grads.span());
    ParamGroupOptimizer opt(backend, n, adamw_options(0.1f), groups);
    for (int step = 0; step < 3; ++step) opt.step(p.span(), grads.span(), 0.01f);
    std::vector<float> out(n);
    backend.download(p.span(), out);
    return out;
  };
  CpuBackend cpu(1);
  auto cuda = make_cuda_backend(0);
  const std::vector<float> want = run(cpu), got = run(*cuda);
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
  for (int64_t i = 64; i < n; ++i) EXPECT_EQ(got[i], p0[i]) << i;  // frozen
}

}  // namespace
}  // namespace tuner::training
