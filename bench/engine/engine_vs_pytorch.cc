// The engine's side of bench/engine/run_engine_vs_pytorch: training throughput (samples per
// second of forward + backward + optimizer step) and test accuracy on Fashion-MNIST for the MLP
// 784-512-256-10 and the small CNN, plus the peak of a large GEMM on the same threads
// and, on the CPU, the machine's theoretical FMA peak (machine_peak.h): the "peak_fraction" of a
// model is of the larger.
// Prints one JSON line per measurement (its PyTorch peer, engine_vs_pytorch.py, prints the same).
// With --backend cuda the same measurements run on GPU 0 (bench/gpu/check.sh); with cuda-bf16 in
// bf16 mixed precision (CudaBackendOptions::matmul = kBfloat16: bf16 GEMM inputs, fp32 all else),
// where the GEMM peak is that of the bf16 products too.
//
//   engine_vs_pytorch [--backend cpu|cpu-bf16|cuda|cuda-bf16|cuda-cudnn] [--threads 2] [--steps
//   200]
//                     [--epochs-mlp 5] [--epochs-cnn 3] [--models mlp,cnn] [--data DIR] [--quick]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/engine/engine_bench_common.h"
#include "bench/engine/machine_peak.h"
#include "training/backends/cpu/cpu_backend.h"
#include "training/backends/cpu/cpu_kernels.h"
#include "training/backends/cuda/cuda_backend.h"
#include "training/data/fashion_mnist.h"
#include "training/data/idx.h"
#include "training/model_spec.h"
#include "training/optim/adam.h"
#include "training/optim/lr_schedule.h"
#include "training/trainer.h"

namespace tuner::training {
namespace {

constexpr const char* kMlp = R"({"name": "mlp", "input": [1, 28, 28], "layers": [
    {"type": "flatten"}, {"type": "linear", "out": 512}, {"type": "relu"},
    {"type": "linear", "out": 256}, {"type": "relu"}, {"type": "linear", "out": 10}]})";
constexpr const char* kCnn = R"({"name": "cnn", "input": [1, 28, 28], "layers": [
    {"type": "conv2d", "out": 32, "kernel": 3, "padding": 1}, {"type": "relu"},
    {"type": "max_pool2d", "kernel": 2},
    {"type": "conv2d", "out": 64, "kernel": 3, "padding": 1}, {"type": "relu"},
    {"type": "max_pool2d", "kernel": 2}, {"type": "flatten"},
    {"type": "linear", "out": 128}, {"type": "relu"}, {"type": "linear", "out": 10}]})";
constexpr int64_t kBatch = 128;

using bench::gemm_peak_gflops;
using bench::process_cpu_seconds;
using bench::training_flops;
double now() { return bench::now_seconds(); }

std::unique_ptr<Backend> make_backend(const std::string& kind, int threads) {
  if (kind == "cuda") return make_cuda_backend(0);
  if (kind == "cuda-bf16") return make_cuda_backend(0, {.matmul = Precision::kBfloat16});
  // The convolutions through cuDNN instead of im2col + cuBLAS (CudaBackendOptions::convolution).
  if (kind == "cuda-cudnn") return make_cuda_backend(0, {.convolution = Convolution::kCudnn});
  if (kind == "cpu-bf16") return make_cpu_backend(threads, Precision::kBfloat16);
  if (kind != "cpu") {
    throw std::invalid_argument(
        "--backend must be cpu, cpu-bf16, cuda, cuda-bf16 or cuda-cudnn, not " + kind);
  }
  return make_cpu_backend(threads);
}

struct Args {
  std::string backend = "cpu";
  int threads = 2;
  int64_t steps = 200;
  int64_t epochs_mlp = 5, epochs_cnn = 3;
  std::string models = "mlp,cnn";
  std::string data = fashion_mnist_dir();
  bool quick = false;
};

void bench_model(const Args& args, const std::string& name, const char* json, Dataset& train,
                 Dataset& test, double peak) {
  const ModelSpec spec = parse_model_spec(json);
  std::unique_ptr<Backend> owned = make_backend(args.backend, args.threads);
  Backend& backend = *owned;
  auto model = build_model(spec, kBatch, backend, 1);
  Adam adam(backend, static_cast<int64_t>(model->parameters().values().size()), AdamOptions{});
  ConstantLr lr(1e-3);
  // Throughput: steps over shuffled batches (copying the batch in is part of the step).
  BatchLoader loader(train, {kBatch, true, true, 7});
  auto step = [&] {
    const Batch* b = loader.next();
    if (b == nullptr) {
      loader.start_epoch();
      b = loader.next();
    }
    const Tensor& logits = model->forward(b->x, Mode::kTrain);
    SoftmaxCrossEntropy ce;
    ce.compute(backend, logits, b->labels, &model->output_grad());
    model->backward();
    adam.step(model->parameters().values(), model->parameters().grads(), 1e-3f);
  };
  loader.start_epoch();
  for (int i = 0; i < 10; ++i) step();
  const double t0 = now(), cpu0 = process_cpu_seconds();
  for (int64_t i = 0; i < args.steps; ++i) step();
  backend.synchronize();
  const double sps = static_cast<double>(args.steps * kBatch) / (now() - t0);
  const double cpu_ms_per_step =
      1e3 * (process_cpu_seconds() - cpu0) / static_cast<double>(args.steps);
  const double flops = training_flops(spec.layers);
  std::printf(
      "{\"impl\": \"engine\", \"backend\": \"%s\", \"model\": \"%s\", \"threads\": %d, "
      "\"batch\": %lld, \"samples_per_s\": %.1f, \"gflops\": %.2f, \"peak_fraction\": %.4f, "
      "\"cpu_ms_per_step\": %.3f}\n",
      args.backend.c_str(), name.c_str(), args.threads, static_cast<long long>(kBatch), sps,
      sps * flops / 1e9, sps * flops / 1e9 / peak, cpu_ms_per_step);
  std::fflush(stdout);

  // Accuracy: the recipe from a fresh model.
  const int64_t epochs = name == "mlp" ? args.epochs_mlp : args.epochs_cnn;
  if (epochs <= 0) return;
  auto fresh = build_model(spec, kBatch, backend, 1);
  Adam adam2(backend, static_cast<int64_t>(fresh->parameters().values().size()), AdamOptions{});
  Trainer trainer(*fresh, adam2, lr, train, Dataset(),
                  {.epochs = epochs, .batch_size = kBatch, .seed = 1});
  const double t1 = now();
  trainer.run();
  const double train_s = now() - t1;
  const EvalResult eval = trainer.evaluate(test);
  std::printf(
      "{\"impl\": \"engine\", \"backend\": \"%s\", \"model\": \"%s\", \"epochs\": %lld, "
      "\"test_accuracy\": %.4f, \"test_loss\": %.4f, \"train_seconds\": %.1f}\n",
      args.backend.c_str(), name.c_str(), static_cast<long long>(epochs), eval.accuracy, eval.loss,
      train_s);
  std::fflush(stdout);
}

int run(const Args& args) {
  const int64_t limit = args.quick ? 2048 : -1;
  Dataset train = read_idx(args.data + "train-images-idx3-ubyte.gz",
                           args.data + "train-labels-idx1-ubyte.gz", limit);
  Dataset test = read_idx(args.data + "t10k-images-idx3-ubyte.gz",
                          args.data + "t10k-labels-idx1-ubyte.gz", args.quick ? 1024 : -1);
  const Normalizer norm = Normalizer::fit(train, NormalizeBy::kAll);
  norm.apply(train);
  norm.apply(test);
  std::unique_ptr<Backend> backend = make_backend(args.backend, args.threads);
  const int64_t gemm_n = args.quick ? 512 : (args.backend.starts_with("cuda") ? 8192 : 2048);
  const double gemm_peak = gemm_peak_gflops(*backend, gemm_n);
  // A model's share is of the machine's peak: the best of the engine's large GEMM and, on the
  // CPU, the theoretical FMA peak (run_engine_vs_pytorch adds PyTorch's GEMM to the best).
  double peak = gemm_peak;
  if (backend->host_accessible()) {
    const bench::MachinePeak machine = bench::measure_machine_peak(args.threads);
    std::printf(
        "{\"impl\": \"machine\", \"isa\": \"%s\", \"threads\": %d, \"clock_ghz\": %.2f, "
        "\"fma_units\": %d, \"fma_measured_gflops\": %.1f, \"fma_peak_gflops\": %.1f}\n",
        machine.isa.c_str(), machine.threads, machine.clock_ghz, machine.fma_units,
        machine.measured_gflops, machine.theoretical_gflops);
    peak = std::max(peak, machine.theoretical_gflops);
  }
  const std::string kernels = bench::json_escape(describe_cpu_kernels());
  std::printf(
      "{\"impl\": \"engine\", \"backend\": \"%s\", \"gemm_peak_gflops\": %.1f, "
      "\"threads\": %d, \"cpu_kernels\": \"%s\"}\n",
      args.backend.c_str(), gemm_peak, args.threads, kernels.c_str());
  if (args.models.find("mlp") != std::string::npos)
    bench_model(args, "mlp", kMlp, train, test, peak);
  if (args.models.find("cnn") != std::string::npos)
    bench_model(args, "cnn", kCnn, train, test, peak);
  return 0;
}

}  // namespace
}  // namespace tuner::training

int main(int argc, char** argv) {
  tuner::training::Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "engine_vs_pytorch: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--backend")
      args.backend = value();
    else if (a == "--threads")
      args.threads = std::stoi(value());
    else if (a == "--steps")
      args.steps = std::stoll(value());
    else if (a == "--epochs-mlp")
      args.epochs_mlp = std::stoll(value());
    else if (a == "--epochs-cnn")
      args.epochs_cnn = std::stoll(value());
    else if (a == "--models")
      args.models = value();
    else if (a == "--data")
      args.data = value();
    else if (a == "--quick")
      args.quick = true, args.steps = 20, args.epochs_mlp = 1, args.epochs_cnn = 1;
    else {
      std::fprintf(stderr,
                   "usage: engine_vs_pytorch [--backend cpu|cpu-bf16|cuda|cuda-bf16|cuda-cudnn] "
                   "[--threads N] [--steps N] [--epochs-mlp N] "
                   "[--epochs-cnn N] [--models mlp,cnn] [--data DIR] [--quick]\n");
      return 2;
    }
  }
  try {
    return tuner::training::run(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "engine_vs_pytorch: %s\n", e.what());
    return 1;
  }
}
