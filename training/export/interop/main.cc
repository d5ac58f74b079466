// The engine's half of the onnxruntime comparison (run_onnx_interop.sh runs the other half).
//   onnx_export_driver OUT_DIR
// For each test model, writes to OUT_DIR:
//   NAME.onnx           the exported model
//   NAME.input.f32      a batch of inputs, float32 little-endian, row-major [B, input...]
//                       (NAME.input.u8, uint8, for a model exported with a uint8 input transform)
//   NAME.expected.f32   the engine's eval-mode outputs for it, [B, output...]
// and manifest.json: [{"name", "input_dtype", "input_shape": [B, ...], "output_shape": [B, ...]},
// ...]. The model with an input transform (training/export/onnx_export.h) is given raw uint8
// pixels; its expected outputs are the engine's forward on the pixels scaled and normalized as
// the engine's data pipeline does (training/data/idx.h, training::Normalizer). The model with a
// per-channel input transform is given RGB images in [0, 1]; its expected outputs are the
// engine's forward on them normalized per channel, as the image-folder loader's samples are.
// The models' parameters are perturbed and their batch norms trained for a few steps, so that
// gammas, betas and running statistics are not their initial values.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "training/backends/cpu/cpu_backend.h"
#include "training/data/dataset.h"
#include "training/export/onnx_export.h"
#include "training/model_spec.h"
#include "training/rng.h"

namespace tuner::training {
namespace {

constexpr int64_t kBatch = 7;

struct TestModel {
  const char* name;
  const char* spec;
  bool pixels = false;    // exported with a uint8 input transform, given raw pixels
  bool channels = false;  // exported with a per-channel input transform, given images in [0, 1]
  // A table [F] with embedded features: exported with a per-feature input transform (the index
  // features' mean 0 and stddev 1), given raw rows whose indices include -1 (unknown category).
  bool table = false;
};

// The MLP and the small CNN of docs/model_spec.md, and a model with every other layer kind.
const TestModel kModels[] = {
    {"mlp", R"({"input": [1, 28, 28], "layers": [
        {"type": "flatten"},
        {"type": "linear", "out": 512}, {"type": "relu"},
        {"type": "dropout", "p": 0.1},
        {"type": "linear", "out": 256}, {"type": "relu"},
        {"type": "linear", "out": 10}]})"},
    {"small_cnn", R"({"input": [1, 28, 28], "layers": [
        {"type": "conv2d", "out": 32, "kernel": 3, "padding": 1}, {"type": "relu"},
        {"type": "max_pool2d", "kernel": 2},
        {"type": "conv2d", "out": 64, "kernel": 3, "padding": 1}, {"type": "relu"},
        {"type": "max_pool2d", "kernel": 2},
        {"type": "flatten"},
        {"type": "linear", "out": 128}, {"type": "relu"},
        {"type": "linear", "out": 10}]})"},
    {"norm_residual_gelu", R"({"input": [3, 12, 12], "layers": [
        {"type": "conv2d", "out": 8, "kernel": 3, "padding": 1, "bias": false},
        {"type": "batch_norm"}, {"type": "relu"},
        {"type": "residual", "body": [
            {"type": "conv2d", "out": 8, "kernel": 3, "padding": 1, "bias": false},
            {"type": "batch_norm", "eps": 0.001}, {"type": "gelu"},
            {"type": "conv2d", "out": 8, "kernel": 3, "padding": 1, "bias": false},
            {"type": "batch_norm"}]},
        {"type": "relu"},
        {"type": "residual", "projection": true, "body": [
            {"type": "conv2d", "out": 16, "kernel": 3, "stride": 2, "padding": 1,
             "activation": "tanh"},
            {"type": "conv2d", "out": 16, "kernel": 3, "padding": 1}]},
        {"type": "max_pool2d", "kernel": 3, "stride": 1, "padding": 1},
        {"type": "avg_pool2d", "kernel": 3, "stride": 2, "padding": 1},
        {"type": "layer_norm"},
        {"type": "dropout", "p": 0.3},
        {"type": "global_avg_pool"},
        {"type": "layer_norm", "eps": 0.0001},
        {"type": "residual", "projection": true, "body": [
            {"type": "linear", "out": 24, "activation": "gelu"},
            {"type": "dropout", "p": 0.5},
            {"type": "linear", "out": 12, "activation": "sigmoid"}]},
        {"type": "residual", "shortcut": [{"type": "linear", "out": 12, "bias": false},
                                          {"type": "batch_norm"}],
         "body": [{"type": "layer_norm"}, {"type": "linear", "out": 12}, {"type": "gelu"}]},
        {"type": "batch_norm"},
        {"type": "linear", "out": 5}]})"},
    // The small CNN taking Fashion-MNIST's own pixels: the normalization is in the graph.
    {"small_cnn_pixels", R"({"input": [1, 28, 28], "layers": [
        {"type": "conv2d", "out": 8, "kernel": 3, "padding": 1}, {"type": "relu"},
        {"type": "max_pool2d", "kernel": 2},
        {"type": "flatten"},
        {"type": "linear", "out": 10}]})",
     true},
    // A CNN of RGB images in [0, 1], normalized per channel in the graph ([3, 1, 1] constants).
    {"rgb_cnn_channels", R"({"input": [3, 10, 10], "layers": [
        {"type": "conv2d", "out": 4, "kernel": 3, "padding": 1}, {"type": "relu"},
        {"type": "flatten"},
        {"type": "linear", "out": 3}]})",
     false, true},
    {"table_embeddings", R"({"input": [6], "embeddings": [
        {"at": 0, "categories": 5, "dim": 3}, {"at": 3, "categories": 2, "dim": 2}],
        "layers": [{"type": "linear", "out": 8}, {"type": "relu"},
        {"type": "linear", "out": 3}]})",
     false, false, true},
};

void fill_normal(Rng& rng, std::span<float> values, float scale) {
  for (float& v : values) v = scale * rng.normal();
}

void write_floats(const std::filesystem::path& path, const Tensor& t) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(t.data()),
            static_cast<std::streamsize>(t.numel() * sizeof(float)));
  if (!out) throw std::runtime_error(path.string() + ": cannot write");
}

nlohmann::json dims(const Shape& shape) {
  nlohmann::json j = nlohmann::json::array();
  for (int64_t d : shape.dims()) j.push_back(d);
  return j;
}

nlohmann::json export_one(const TestModel& m, const std::filesystem::path& dir, Backend& backend) {
  const ModelSpec spec = parse_model_spec(m.spec);
  auto model = build_model(spec, kBatch, backend, 11);
  Rng rng(12);
  // Norm parameters away from ones and zeros.
  ParameterArena& arena = model->parameters();
  for (size_t i = 0; i < arena.param_specs().size(); ++i) {
    const std::string& name = arena.param_specs()[i].name;
    if (name.ends_with(".gamma")) {
      for (float& v : arena.params()[i].value.span()) v = 1.0f + 0.3f * rng.normal();
    } else if (name.ends_with(".beta") || name.ends_with(".bias")) {
      fill_normal(rng, arena.params()[i].value.span(), 0.1f);
    }
  }
  Tensor x(spec.input.with_batch(kBatch));
  // Running statistics from a few train-mode batches.
  for (int step = 0; step < 3; ++step) {
    fill_normal(rng, x.span(), 1.0f);
    (void)model->forward(x, Mode::kTrain);
  }
  fill_normal(rng, x.span(), 1.0f);
  OnnxExportOptions options;
  options.graph_name = m.name;
  std::vector<uint8_t> pixels;
  if (m.pixels) {
    // Raw pixels; the engine's inputs are pixels / 255, normalized with their statistics.
    pixels.resize(static_cast<size_t>(x.numel()));
    for (uint8_t& p : pixels) p = static_cast<uint8_t>(rng.next_u64() % 256);
    std::vector<float> scaled(pixels.size());
    for (size_t i = 0; i < pixels.size(); ++i) scaled[i] = static_cast<float>(pixels[i]) / 255.0f;
    std::vector<int32_t> labels(static_cast<size_t>(kBatch), 0);
    Dataset data(spec.input, scaled, labels, 10);
    const Normalizer norm = Normalizer::fit(data, NormalizeBy::kAll);
    norm.apply(data);
    x.copy_from(data.features());
    options.input_transform = OnnxInputTransform{
        .uint8 = true, .divisor = 255.0f, .mean = norm.mean()[0], .stddev = norm.stddev()[0]};
  }
  std::vector<float> images;
  if (m.channels) {
    // Images in [0, 1], each channel of its own level; the engine's inputs are them normalized
    // per channel with their statistics.
    images.resize(static_cast<size_t>(x.numel()));
    const size_t plane = static_cast<size_t>(spec.input.numel() / spec.input.dims()[0]);
    for (size_t i = 0; i < images.size(); ++i) {
      const float level = 0.2f + 0.3f * static_cast<float>((i / plane) % 3);
      images[i] = level + 0.1f * static_cast<float>(rng.next_u64() % 1000) / 1000.0f;
    }
    std::vector<int32_t> labels(static_cast<size_t>(kBatch), 0);
    Dataset data(spec.input, images, labels, 3);
    const Normalizer norm = Normalizer::fit(data, NormalizeBy::kChannel);
    norm.apply(data);
    x.copy_from(data.features());
    OnnxInputTransform t;
    t.feature_mean.assign(norm.mean().begin(), norm.mean().end());
    t.feature_stddev.assign(norm.stddev().begin(), norm.stddev().end());
    options.input_transform = t;
  }
  std::vector<float> rows;
  if (m.table) {
    // Raw rows: numeric features around 10, every index of each table and -1; the engine's
    // inputs are them normalized per feature, as the csv loader's Normalizer does.
    OnnxInputTransform t;
    std::vector<bool> index(static_cast<size_t>(spec.input[0]), false);
    for (const EmbeddedColumn& c : spec.layers[0].embedded) index[static_cast<size_t>(c.at)] = true;
    for (size_t f = 0; f < index.size(); ++f) {
      t.feature_mean.push_back(index[f] ? 0.0f : 10.0f + static_cast<float>(f));
      t.feature_stddev.push_back(index[f] ? 1.0f : 2.0f);
    }
    rows.resize(static_cast<size_t>(x.numel()));
    for (int64_t s = 0; s < kBatch; ++s) {
      for (size_t f = 0; f < index.size(); ++f) {
        float& v = rows[static_cast<size_t>(s) * index.size() + f];
        v = index[f] ? static_cast<float>(s % (f == 0 ? 6 : 3)) - 1.0f
                     : t.feature_mean[f] + 2.0f * rng.normal();
        x.data()[static_cast<size_t>(s) * index.size() + f] =
            (v - t.feature_mean[f]) * (1.0f / t.feature_stddev[f]);
      }
    }
    options.input_transform = t;
  }
  const Tensor& y = model->forward(x, Mode::kEval);

  export_onnx(spec, *model, dir / (std::string(m.name) + ".onnx"), options);
  if (m.pixels) {
    std::ofstream out(dir / (std::string(m.name) + ".input.u8"), std::ios::binary);
    out.write(reinterpret_cast<const char*>(pixels.data()),
              static_cast<std::streamsize>(pixels.size()));
    if (!out) throw std::runtime_error(std::string(m.name) + ".input.u8: cannot write");
  } else if (m.channels || m.table) {
    Tensor raw(x.shape());
    raw.copy_from(m.table ? rows : images);
    write_floats(dir / (std::string(m.name) + ".input.f32"), raw);
  } else {
    write_floats(dir / (std::string(m.name) + ".input.f32"), x);
  }
  write_floats(dir / (std::string(m.name) + ".expected.f32"), y);
  return {{"name", m.name},
          {"input_dtype", m.pixels ? "uint8" : "float32"},
          {"input_shape", dims(x.shape())},
          {"output_shape", dims(y.shape())},
          {"parameters", arena.num_parameters()}};
}

}  // namespace
}  // namespace tuner::training

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: onnx_export_driver OUT_DIR\n";
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    tuner::training::CpuBackend backend(1);
    nlohmann::json manifest = nlohmann::json::array();
    for (const auto& m : tuner::training::kModels) {
      manifest.push_back(tuner::training::export_one(m, dir, backend));
      std::cout << "exported " << m.name << "\n";
    }
    std::ofstream(dir / "manifest.json") << manifest.dump(2) << "\n";
  } catch (const std::exception& e) {
    std::cerr << "onnx_export_driver: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
