// Model specs: every layer type builds, activations fuse, bad specs name the JSON path.
#include "training/model_spec.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "training/backends/cpu/cpu_backend.h"
#include "training/layers/dropout.h"

namespace tuner::training {
namespace {

constexpr const char* kSmallCnn = R"({
  "input": [1, 28, 28],
  "layers": [
    {"type": "conv2d", "out": 32, "kernel": 3, "padding": 1}, {"type": "relu"},
    {"type": "max_pool2d", "kernel": 2},
    {"type": "conv2d", "out": 64, "kernel": 3, "padding": 1}, {"type": "relu"},
    {"type": "max_pool2d", "kernel": 2},
    {"type": "flatten"},
    {"type": "linear", "out": 128}, {"type": "relu"},
    {"type": "linear", "out": 10}
  ]})";

std::string error_of(const std::string& json) {
  try {
    parse_model_spec(json);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ModelSpec, SmallCnnFusesActivationsAndBuilds) {
  const ModelSpec spec = parse_model_spec(kSmallCnn);
  EXPECT_EQ(spec.input, (Shape{1, 28, 28}));
  EXPECT_EQ(spec.output, (Shape{10}));
  ASSERT_EQ(spec.layers.size(), 7u);  // the three relus are folded in
  EXPECT_EQ(spec.layers[0].activation, Activation::kRelu);
  EXPECT_EQ(spec.layers[0].output, (Shape{32, 28, 28}));
  EXPECT_EQ(spec.layers[2].path, "layers[3]");
  EXPECT_EQ(spec.layers[3].output, (Shape{64, 7, 7}));
  EXPECT_EQ(spec.layers[5].activation, Activation::kRelu);
  EXPECT_EQ(spec.layers[6].activation, Activation::kNone);
  EXPECT_EQ(spec.num_parameters,
            32 * 9 + 32 + 64 * 32 * 9 + 64 + 64 * 49 * 128 + 128 + 128 * 10 + 10);
  CpuBackend backend(1);
  auto model = build_model(spec, 4, backend, 1);
  EXPECT_EQ(model->size(), 7u);
  EXPECT_EQ(model->parameters().num_parameters(), spec.num_parameters);
  Tensor x(Shape{2, 1, 28, 28});
  x.fill(0.5f);
  EXPECT_EQ(model->forward(x, Mode::kEval).shape(), (Shape{2, 10}));
  EXPECT_NE(model->describe().find("conv2d(1 -> 32"), std::string::npos);
}

TEST(ModelSpec, EveryLayerTypeBuildsAndRuns) {
  const ModelSpec spec = parse_model_spec(R"({
    "name": "everything",
    "input": [3, 8, 8],
    "layers": [
      {"type": "conv2d", "out": 8, "kernel": 3, "padding": 1, "bias": false},
      {"type": "batch_norm", "momentum": 0.2},
      {"type": "gelu"},
      {"type": "residual", "body": [
        {"type": "conv2d", "out": 8, "kernel": 3, "padding": 1, "activation": "relu"},
        {"type": "conv2d", "out": 8, "kernel": 3, "padding": 1},
        {"type": "batch_norm"}]},
      {"type": "relu"},
      {"type": "residual", "projection": true, "body": [
        {"type": "conv2d", "out": 16, "kernel": 3, "stride": 2, "padding": 1},
        {"type": "tanh"}]},
      {"type": "avg_pool2d", "kernel": 2},
      {"type": "max_pool2d", "kernel": 3, "stride": 1, "padding": 1},
      {"type": "residual", "shortcut": [{"type": "avg_pool2d", "kernel": 2}],
       "body": [{"type": "max_pool2d", "kernel": 2}]},
      {"type": "global_avg_pool"},
      {"type": "layer_norm"},
      {"type": "dropout", "p": 0.25},
      {"type": "linear", "out": 12, "activation": "gelu"},
      {"type": "sigmoid"},
      {"type": "residual", "projection": true, "body": [{"type": "linear", "out": 6}]},
      {"type": "flatten"},
      {"type": "linear", "out": 3}, {"type": "tanh"}
    ]})");
  EXPECT_EQ(spec.output, (Shape{3}));
  EXPECT_EQ(spec.layers[2].type, "gelu");                           // not fused
  EXPECT_EQ(spec.layers[5].body[0].activation, Activation::kTanh);  // fused inside the body
  EXPECT_EQ(spec.layers[5].shortcut[0].type, "conv2d");
  EXPECT_EQ(spec.layers[5].shortcut[0].stride, 2);
  // linear + "activation": "gelu" becomes linear then a gelu layer, and the sigmoid after the
  // gelu stays a layer of its own.
  EXPECT_EQ(spec.layers[12].type, "linear");
  EXPECT_EQ(spec.layers[13].type, "gelu");
  EXPECT_EQ(spec.layers[14].type, "sigmoid");
  EXPECT_EQ(spec.layers.back().activation, Activation::kTanh);
  CpuBackend backend(2);
  auto model = build_model(spec, 4, backend, 3);
  Tensor x(Shape{4, 3, 8, 8});
  Rng rng(1);
  for (float& v : x.span()) v = rng.uniform(-1.0f, 1.0f);
  const Tensor& y = model->forward(x, Mode::kTrain);
  EXPECT_EQ(y.shape(), (Shape{4, 3}));
  model->output_grad().fill(0.1f);
  model->backward();
  int dropouts = 0;
  model->for_each_layer([&](Layer& l) { dropouts += dynamic_cast<Dropout*>(&l) != nullptr; });
  EXPECT_EQ(dropouts, 1);
}

TEST(ModelSpec, SameSpecSameSeedSameModel) {
  CpuBackend backend(1);
  const ModelSpec spec = parse_model_spec(
      R"({"input": [4], "layers": [{"type": "linear", "out": 8}, {"type": "dropout", "p": 0.5},
          {"type": "linear", "out": 2}]})");
  auto a = build_model(spec, 4, backend, 5);
  auto b = build_model(parse_model_spec(spec.json), 4, backend, 5);
  EXPECT_TRUE(std::equal(a->parameters().values().begin(), a->parameters().values().end(),
                         b->parameters().values().begin()));
  Tensor x(Shape{4, 4});
  x.fill(1.0f);
  Tensor ya(Shape{4, 2});
  ya.copy_from(a->forward(x, Mode::kTrain).span());
  const std::span<const float> yb = b->forward(x, Mode::kTrain).span();
  EXPECT_EQ(std::vector<float>(ya.span().begin(), ya.span().end()),
            std::vector<float>(yb.begin(), yb.end()));
}

TEST(ModelSpec, ErrorsNameThePathAndTheReason) {
  EXPECT_EQ(error_of(R"({"input": [1, 28, 28], "layers": [
      {"type": "conv2d", "out": 64, "kernel": 3, "padding": 1}, {"type": "max_pool2d", "kernel": 3},
      {"type": "max_pool2d", "kernel": 3}, {"type": "conv2d", "out": 8, "kernel": 5}]})"),
            "layers[3].kernel: 5 does not fit the input [64, 3, 3]");
  EXPECT_EQ(error_of(R"({"input": [1, 8, 8], "layers": [{"type": "relu"}, {"type": "flatten"},
      {"type": "conv", "out": 3}]})"),
            "layers[2].type: unknown layer \"conv\" (did you mean \"conv2d\"?); known: linear, "
            "conv2d, max_pool2d, avg_pool2d, global_avg_pool, batch_norm, layer_norm, dropout, "
            "relu, gelu, tanh, sigmoid, flatten, residual");
  EXPECT_EQ(error_of(R"({"input": [1, 8, 8], "layers": [{"type": "conv2d", "out": 4,
      "kernal": 3}]})"),
            "layers[0].kernal: unknown field for conv2d (did you mean \"kernel\"?); it takes out, "
            "kernel, stride, padding, bias, activation");
  EXPECT_EQ(error_of(R"({"input": [1, 8, 8], "layers": [{"type": "conv2d", "out": 4}]})"),
            "layers[0].kernel: missing (an integer >= 1)");
  EXPECT_EQ(error_of(R"({"input": [784], "layers": [{"type": "linear", "out": "10"}]})"),
            "layers[0].out: expected an integer >= 1, got \"10\"");
  EXPECT_EQ(error_of(R"({"input": [784], "layers": [{"type": "linear", "out": 0}]})"),
            "layers[0].out: 0 is out of range (an integer >= 1)");
  EXPECT_EQ(error_of(R"({"input": [1, 28, 28], "layers": [{"type": "linear", "out": 10}]})"),
            "layers[0]: linear needs a flat input [I], got [1, 28, 28]; add {\"type\": "
            "\"flatten\"} before it");
  EXPECT_EQ(error_of(R"({"input": [10], "layers": [{"type": "dropout", "p": 1}]})"),
            "layers[0].p: 1 is out of range [0.0, 1.0)");
  EXPECT_EQ(error_of(R"({"input": [10], "layers": [{"type": "relu", "p": 1}]})"),
            "layers[0].p: unknown field for relu; it takes none");
  EXPECT_EQ(error_of(R"({"input": [10], "layers": [{"type": "linear", "out": 4,
      "activation": "relux"}]})"),
            "layers[0].activation: unknown activation \"relux\" (did you mean \"relu\"?); one of "
            "none, relu, gelu, tanh, sigmoid");
  EXPECT_EQ(error_of(R"({"input": [4, 8, 8], "layers": [{"type": "residual", "body": [
      {"type": "conv2d", "out": 8, "kernel": 3, "padding": 1}]}]})"),
            "layers[0].body: turns the input [4, 8, 8] into [8, 8, 8], which an identity shortcut "
            "cannot add; set \"projection\": true");
  EXPECT_EQ(error_of(R"({"input": [4, 8, 8], "layers": [{"type": "residual", "body": [
      {"type": "relu"}, {"type": "max_pool2d", "kernel": 9}]}]})"),
            "layers[0].body[1].kernel: 9 does not fit the input [4, 8, 8]");
  EXPECT_EQ(
      error_of(R"({"input": [4], "layers": [], "lyers": 1})"),
      "lyers: unknown field (did you mean \"layers\"?); a spec has input, embeddings, layers, "
      "name");
  EXPECT_EQ(error_of(R"({"input": [4], "layers": []})"), "layers: expected at least one layer");
  EXPECT_EQ(error_of(R"({"layers": []})"),
            "input: missing (the sample shape, e.g. [1, 28, 28] or [784])");
  EXPECT_EQ(error_of(R"({"input": [0, 3], "layers": []})"),
            "input[0]: expected a positive integer, got 0");
  EXPECT_EQ(error_of(R"({"input": [4], "layers": [{"out": 3}]})"), "layers[0].type: missing");
  EXPECT_EQ(error_of("{\"input\": [4],"), error_of("{\"input\": [4],"));
  EXPECT_EQ(error_of("{\"input\": [4],").rfind("(json): not valid JSON", 0), 0u);
}

// Regression: a number past a double's range escaped as nlohmann's out_of_range exception, not a
// SpecError (found by the model_spec fuzz target).
TEST(ModelSpec, ANumberPastADoublesRangeIsASpecError) {
  try {
    parse_model_spec(R"({"input": [1e400], "layers": []})");
    FAIL() << "accepted";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "(json)");
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  }
}

TEST(ModelSpec, FileErrorsStartWithTheFileName) {
  const std::string path = "/tmp/tuner_model_spec_test_" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << R"({"input": [3], "layers": [{"type": "lineer", "out": 2}]})";
  try {
    load_model_spec(path);
    FAIL() << "no SpecError";
  } catch (const SpecError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": layers[0].type: unknown layer \"lineer\" "
                                                 "(did you mean \"linear\"?)",
                                          0),
              0u)
        << e.what();
  }
  std::remove(path.c_str());
  EXPECT_THROW(load_model_spec(path), SpecError);
}

}  // namespace
}  // namespace tuner::training
