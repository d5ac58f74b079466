// The engine's half of the MLflow comparison (run_mlflow_interop.sh runs the other half).
//   mlflow_export_driver OUT_DIR
// Builds a small CNN with batch norm from a spec (fixed seed; parameters perturbed and running
// statistics trained in a few train-mode passes, so nothing is at its initial value), registers
// it twice in OUT_DIR/registry as model "interop" (the promotion rule on, the second version
// worse), and writes:
//   OUT_DIR/input.u8       a batch of raw inputs, uint8 pixels 0..255, row-major [B, 1, 12, 12]
//                          (the versions take pixels and normalize them in model.onnx)
//   OUT_DIR/expected.f32   the engine's eval-mode outputs of the served version on them, scaled
//                          and normalized as the engine's data pipeline does, [B, 5]
//   OUT_DIR/manifest.json  {"model_dir", "input_dtype", "input_shape", "output_shape", "params",
//                           "metrics"}
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "registry/mlflow_model.h"
#include "registry/registry.h"
#include "training/backends/cpu/cpu_backend.h"
#include "training/model_spec.h"
#include "training/rng.h"

namespace tuner::registry {
namespace {

constexpr int64_t kBatch = 9;

constexpr char kSpec[] = R"({"input": [1, 12, 12], "layers": [
    {"type": "conv2d", "out": 6, "kernel": 3, "padding": 1, "bias": false},
    {"type": "batch_norm"}, {"type": "relu"},
    {"type": "max_pool2d", "kernel": 2},
    {"type": "residual", "body": [
        {"type": "conv2d", "out": 6, "kernel": 3, "padding": 1}, {"type": "gelu"}]},
    {"type": "flatten"},
    {"type": "dropout", "p": 0.2},
    {"type": "linear", "out": 16, "activation": "tanh"},
    {"type": "layer_norm"},
    {"type": "linear", "out": 5}]})";

void write_floats(const std::filesystem::path& path, std::span<const float> values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(float)));
  if (!out) throw std::runtime_error(path.string() + ": cannot write");
}

int run(const std::filesystem::path& out) {
  std::filesystem::create_directories(out);
  const training::ModelSpec spec = training::parse_model_spec(kSpec);
  auto backend = training::make_cpu_backend(1);
  auto model = training::build_model(spec, kBatch, *backend, 5);
  training::Rng rng(6);
  training::ParameterArena& arena = model->parameters();
  for (size_t i = 0; i < arena.param_specs().size(); ++i) {
    for (float& v : arena.params()[i].value.span()) v += 0.05f * rng.normal();
  }
  training::Tensor x(spec.input.with_batch(kBatch));
  for (int step = 0; step < 3; ++step) {
    for (float& v : x.span()) v = rng.normal();
    (void)model->forward(x, training::Mode::kTrain);
  }
  training::Checkpoint checkpoint;
  checkpoint.model_spec = spec.json;
  checkpoint.parameters = arena.values_to_host();
  checkpoint.buffers = arena.buffer_values_to_host();

  Registry registry = Registry::open(out / "registry", /*create=*/true);
  Lineage lineage;
  lineage.study = "interop-study";
  lineage.trial = 3;
  lineage.params = {{"lr", "0.003"}, {"act", "\"relu\""}, {"width", "16"}};
  lineage.metrics = {{"val_accuracy", 0.875}, {"val_loss", 0.25}};
  lineage.objective_metric = "val_accuracy";
  RegisterOptions options;
  options.metric = "val_accuracy";
  options.maximize = true;
  options.promote_if_better = true;
  options.preprocessing = {.input = RawInput::kUint8,
                           .divisor = 255.0f,
                           .mean = 0.3f,
                           .stddev = 0.25f,
                           .dataset = "synthetic"};
  const ModelVersion first = registry.register_version("interop", checkpoint, lineage, options);
  lineage.trial = 4;
  lineage.metrics["val_accuracy"] = 0.5;
  const ModelVersion second = registry.register_version("interop", checkpoint, lineage, options);
  if (!first.promotion->promoted || second.promotion->promoted) {
    throw std::runtime_error("the promotion rule did not promote version 1 only");
  }
  const ResolvedVersion champion = registry.resolve("interop@champion");

  ServedModel served = ServedModel::load(champion.dir);
  std::vector<uint8_t> pixels(static_cast<size_t>(x.numel()));
  for (uint8_t& p : pixels) p = static_cast<uint8_t>(rng.next_u64() % 256);
  std::vector<float> inputs(pixels.begin(), pixels.end());
  served.preprocess(inputs);  // what model.onnx computes at its input
  const std::vector<float> y = served.forward(inputs);
  {
    std::ofstream raw(out / "input.u8", std::ios::binary);
    raw.write(reinterpret_cast<const char*>(pixels.data()),
              static_cast<std::streamsize>(pixels.size()));
    if (!raw) throw std::runtime_error("input.u8: cannot write");
  }
  write_floats(out / "expected.f32", y);
  nlohmann::json manifest = {{"model_dir", std::filesystem::absolute(champion.dir).string()},
                             {"input_dtype", "uint8"},
                             {"input_shape", {kBatch, 1, 12, 12}},
                             {"output_shape", {kBatch, 5}},
                             {"study", lineage.study},
                             {"trial", first.lineage.trial},
                             {"metrics", {{"val_accuracy", 0.875}, {"val_loss", 0.25}}}};
  std::ofstream(out / "manifest.json") << manifest.dump(2) << "\n";
  std::cout << "registered interop/1 (champion) and interop/2 at " << (out / "registry") << "\n";
  return 0;
}

}  // namespace
}  // namespace tuner::registry

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: mlflow_export_driver OUT_DIR\n";
    return 2;
  }
  try {
    return tuner::registry::run(argv[1]);
  } catch (const std::exception& e) {
    std::cerr << "mlflow_export_driver: " << e.what() << "\n";
    return 1;
  }
}
