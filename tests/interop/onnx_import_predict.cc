// The engine's half of the PyTorch import test (pytorch_onnx_import_test.sh runs the other half).
//   interop_onnx_import_predict MODEL.onnx INPUT.f32 OUTPUT.f32
// Reads MODEL.onnx with training/export/onnx_import.h, builds the model spec it reads, loads the
// weights into it as training.init_from does (training/init_from.h's load_weights), and writes
// the eval-mode outputs for the inputs. INPUT.f32 is float32 little-endian, row-major
// [B, input...] with `input` the graph's sample shape; OUTPUT.f32 is [B, output...]. Prints the
// imported model spec's JSON on stdout. Exit status 1 with the reason on stderr on any failure.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "training/backends/cpu/cpu_backend.h"
#include "training/export/onnx_import.h"
#include "training/init_from.h"
#include "training/model_spec.h"

namespace tuner::training {
namespace {

std::vector<float> read_floats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  const auto bytes = std::filesystem::file_size(path);
  if (bytes % sizeof(float) != 0) throw std::runtime_error(path + ": not float32 values");
  std::vector<float> values(bytes / sizeof(float));
  in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(bytes));
  if (!in) throw std::runtime_error(path + ": cannot be read");
  return values;
}

int run(const std::string& onnx, const std::string& input, const std::string& output) {
  const Checkpoint imported = import_onnx_file(onnx);
  const ModelSpec spec = parse_model_spec(imported.model_spec);
  std::cout << imported.model_spec << "\n";
  const std::vector<float> x_values = read_floats(input);
  const int64_t sample = spec.input.numel();
  if (x_values.empty() || x_values.size() % static_cast<size_t>(sample) != 0) {
    throw std::runtime_error(input + ": " + std::to_string(x_values.size()) +
                             " values are not a batch of samples " + spec.input.to_string());
  }
  const auto batch = static_cast<int64_t>(x_values.size()) / sample;
  CpuBackend backend(1);
  auto model = build_model(spec, batch, backend, /*seed=*/1);
  load_weights(imported, spec, model->parameters());
  Tensor x(spec.input.with_batch(batch));
  x.copy_from(x_values);
  const Tensor& y = model->forward(x, Mode::kEval);
  std::ofstream out(output, std::ios::binary);
  out.write(reinterpret_cast<const char*>(y.data()),
            static_cast<std::streamsize>(y.numel() * sizeof(float)));
  if (!out) throw std::runtime_error(output + ": cannot write");
  return 0;
}

}  // namespace
}  // namespace tuner::training

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: interop_onnx_import_predict MODEL.onnx INPUT.f32 OUTPUT.f32\n";
    return 2;
  }
  try {
    return tuner::training::run(argv[1], argv[2], argv[3]);
  } catch (const std::exception& e) {
    std::cerr << "interop_onnx_import_predict: " << e.what() << "\n";
    return 1;
  }
}
