// The engine's side of bench/engine/run_engine_zoo: training throughput of
// every model of the zoo (models.json here, which pytorch_zoo.py reads too) and, for the models
// with an "accuracy" recipe, the test accuracy after it on Fashion-MNIST.
//
// A step is what the engine's trainer does per batch: the batch copied in, forward, softmax
// cross-entropy, backward, the optimizer's step. Each model is timed after --warmup steps in
// --repeats timings of --steps steps (0: as many as fill --seconds), and reports the best and the
// median. Each precision is first put to the engine as an engine job would be (parse_engine_job
// with "backend": "cpu" and the model's "training" section, so the zoo's training members are the
// engine job's own); a precision the engine refuses gives an "unsupported" line with its message.
//
// Prints one JSON line per measurement; --peaks instead prints the machine's peak
// (machine_peak.h), the engine's large GEMM and the CPU line (describe_cpu_kernels()), and
// --cpu-features the CPU line and whether it has AVX512-BF16 and AMX.
//
//   engine_zoo [--zoo FILE] [--models a,b] [--precisions fp32,bf16] [--threads 2] [--steps 0]
//              [--seconds 3] [--repeats 3] [--warmup 5] [--accuracy-epochs N] [--no-accuracy]
//              [--data DIR] [--synthetic] [--peaks] [--cpu-features] [--list] [--quick]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/engine/engine_bench_common.h"
#include "bench/engine/machine_peak.h"
#include "executor/engine_job.h"
#include "training/backends/cpu/cpu_backend.h"
#include "training/backends/cpu/cpu_kernels.h"
#include "training/data/batch_loader.h"
#include "training/data/dataset.h"
#include "training/data/fashion_mnist.h"
#include "training/data/idx.h"
#include "training/losses/cross_entropy.h"
#include "training/model_spec.h"
#include "training/optim/adam.h"
#include "training/optim/lr_schedule.h"
#include "training/optim/sgd.h"
#include "training/trainer.h"

#ifndef TUNER_SOURCE_DIR
#define TUNER_SOURCE_DIR "."
#endif

namespace tuner::bench {
namespace {

using namespace tuner::training;

struct Args {
  std::string zoo = TUNER_SOURCE_DIR "/bench/engine/zoo/models.json";
  std::vector<std::string> models;  // empty: all
  std::vector<std::string> precisions{"fp32"};
  int threads = 2;
  int64_t steps = 0;  // per timing; 0: as many as fill `seconds`
  double seconds = 3.0;
  int repeats = 3;
  int64_t warmup = 5;
  int64_t accuracy_epochs = -1;  // -1: each model's own recipe; 0: none
  std::string data = fashion_mnist_dir();
  bool synthetic = false;  // Fashion-MNIST-shaped models on synthetic data too (no data files)
  bool peaks = false;
  bool list = false;
  bool cpu_features = false;
  bool quick = false;
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// One model of the zoo, as models.json gives it.
struct ZooModel {
  std::string name;
  std::string data;         // "fashion-mnist" or "synthetic-cifar"
  nlohmann::json model;     // an engine model spec
  nlohmann::json training;  // an engine job's training section
  int64_t accuracy_epochs = 0;
};

std::vector<ZooModel> read_zoo(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read the zoo file");
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": not JSON: " + e.what());
  }
  if (root.value("version", 0) != 1 || !root.contains("models") || !root["models"].is_array()) {
    throw std::runtime_error(path + ": expected {\"version\": 1, \"models\": [...]}");
  }
  std::vector<ZooModel> zoo;
  for (size_t i = 0; i < root["models"].size(); ++i) {
    const nlohmann::json& m = root["models"][i];
    const std::string where = path + ": models[" + std::to_string(i) + "]";
    for (const char* key : {"name", "data", "model", "training"}) {
      if (!m.contains(key)) throw std::runtime_error(where + "." + key + ": missing");
    }
    for (const auto& [key, value] : m.items()) {
      if (key != "name" && key != "data" && key != "model" && key != "training" &&
          key != "accuracy") {
        throw std::runtime_error(where + "." + key +
                                 ": unknown member (name, data, model, "
                                 "training, accuracy)");
      }
    }
    ZooModel z{m["name"].get<std::string>(), m["data"].get<std::string>(), m["model"],
               m["training"], 0};
    if (z.data != "fashion-mnist" && z.data != "synthetic-cifar") {
      throw std::runtime_error(where + ".data: \"" + z.data +
                               "\" is neither \"fashion-mnist\" nor \"synthetic-cifar\"");
    }
    if (m.contains("accuracy")) z.accuracy_epochs = m["accuracy"].value("epochs", 1);
    zoo.push_back(std::move(z));
  }
  return zoo;
}

// splitmix64: the synthetic data's generator, which pytorch_zoo.py computes alike.
uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// n samples of `sample` shape: value i of the whole features array is the top 24 bits of
// splitmix64(i) mapped onto [-1, 1) (exact in float32), label j is splitmix64(2^40 + j) mod 10.
Dataset synthetic_dataset(const Shape& sample, int64_t n) {
  const int64_t numel = sample.numel() * n;
  std::vector<float> x(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i) {
    x[static_cast<size_t>(i)] =
        static_cast<float>(splitmix64(static_cast<uint64_t>(i)) >> 40) * (2.0f / 16777216.0f) -
        1.0f;
  }
  std::vector<int32_t> labels(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    labels[static_cast<size_t>(j)] =
        static_cast<int32_t>(splitmix64((uint64_t{1} << 40) + static_cast<uint64_t>(j)) % 10);
  }
  return Dataset(sample, std::move(x), std::move(labels), 10);
}

// The Fashion-MNIST splits, normalized with one mean and std over the training split.
struct FashionMnist {
  Dataset train, test;
};

FashionMnist load_fashion_mnist(const Args& args) {
  FashionMnist d;
  d.train = read_idx(args.data + "train-images-idx3-ubyte.gz",
                     args.data + "train-labels-idx1-ubyte.gz", args.quick ? 2048 : -1);
  d.test = read_idx(args.data + "t10k-images-idx3-ubyte.gz",
                    args.data + "t10k-labels-idx1-ubyte.gz", args.quick ? 1024 : -1);
  const Normalizer norm = Normalizer::fit(d.train, NormalizeBy::kAll);
  norm.apply(d.train);
  norm.apply(d.test);
  return d;
}

// The model's training section checked and read by the engine job's own parser, at `precision`
// on the CPU backend with `threads` threads. Throws the engine's error (trials/error.h) when it
// refuses, e.g. a precision the CPU backend does not run.
EngineTrialConfig engine_job_config(const ZooModel& z, const std::string& precision, int threads) {
  nlohmann::json job = {
      {"kind", "engine"},
      {"model",
       {{"input", {1, 28, 28}},
        {"layers", {{{"type", "flatten"}}, {{"type", "linear"}, {"out", 10}}}}}},
      {"data", {{"dataset", "fashion-mnist"}, {"train", 60000}, {"validation", 0}}},
      {"training", z.training},
      {"threads", threads},
      {"backend", "cpu"},
      {"precision", precision},
      {"objective_metric", "train_loss"}};
  const EngineJobSpec spec = parse_engine_job(job.dump());
  return resolve_engine_job(spec, Params{});
}

// The CPU backend of `precision`, once the engine job has accepted that precision on the CPU
// (make_cpu_backend refuses bf16 where the CPU or the build cannot run it, with the reason).
std::unique_ptr<Backend> make_zoo_backend(const std::string& precision, int threads) {
  return make_cpu_backend(threads,
                          precision == "bf16" ? Precision::kBfloat16 : Precision::kFloat32);
}

std::unique_ptr<Optimizer> make_optimizer(const EngineTrialConfig& c, Backend& backend,
                                          int64_t size) {
  if (c.optimizer == "sgd") {
    return std::make_unique<Sgd>(backend, size,
                                 SgdOptions{.momentum = static_cast<float>(c.momentum),
                                            .weight_decay = static_cast<float>(c.weight_decay)});
  }
  AdamOptions adam;
  adam.weight_decay = static_cast<float>(c.weight_decay);
  adam.decoupled = c.optimizer == "adamw";
  return std::make_unique<Adam>(backend, size, adam);
}

std::string head(const ZooModel& z, const std::string& precision, const Args& args) {
  return "{\"impl\": \"engine\", \"model\": \"" + z.name + "\", \"data\": \"" +
         (args.synthetic && z.data == "fashion-mnist" ? "synthetic-fashion-mnist" : z.data) +
         "\", \"precision\": \"" + precision + "\", \"threads\": " + std::to_string(args.threads);
}

// The 1-minute load average (/proc/loadavg), which says how shared the cores were; -1 if unknown.
double load_average() {
  double load = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = -1;
    std::fclose(f);
  }
  return load;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void bench_model(const Args& args, const ZooModel& z, const std::string& precision,
                 const FashionMnist* fmnist, const Dataset& throughput_data) {
  EngineTrialConfig config;
  std::unique_ptr<Backend> owned;
  try {
    config = engine_job_config(z, precision, args.threads);
    owned = make_zoo_backend(precision, args.threads);
  } catch (const std::exception& e) {
    std::printf("%s, \"unsupported\": \"%s\"}\n", head(z, precision, args).c_str(),
                json_escape(e.what()).c_str());
    std::fflush(stdout);
    return;
  }
  Backend& backend = *owned;
  const ModelSpec spec = parse_model_spec(z.model.dump());
  const int64_t batch = config.batch_size;
  auto model = build_model(spec, batch, backend, 1);
  const int64_t size = static_cast<int64_t>(model->parameters().values().size());
  std::unique_ptr<Optimizer> optimizer = make_optimizer(config, backend, size);
  const auto lr = static_cast<float>(config.lr);
  const SoftmaxCrossEntropy ce;
  BatchLoader loader(throughput_data, {batch, true, true, 7});
  auto step = [&] {
    const Batch* b = loader.next();
    if (b == nullptr) {
      loader.start_epoch();
      b = loader.next();
    }
    const Tensor& logits = model->forward(b->x, Mode::kTrain);
    ce.compute(backend, logits, b->labels, &model->output_grad());
    model->backward();
    optimizer->step(model->parameters().values(), model->parameters().grads(), lr);
  };
  loader.start_epoch();
  for (int64_t i = 0; i < args.warmup; ++i) step();
  backend.synchronize();
  int64_t steps = args.steps;
  if (steps <= 0) {  // calibrate: as many steps as fill args.seconds
    const double t = now_seconds();
    for (int i = 0; i < 3; ++i) step();
    backend.synchronize();
    const double per_step = (now_seconds() - t) / 3.0;
    steps =
        std::clamp<int64_t>(static_cast<int64_t>(std::ceil(args.seconds / per_step)), 3, 100000);
  }
  std::vector<double> rates, cpu_ms;
  for (int r = 0; r < args.repeats; ++r) {
    const double t0 = now_seconds(), cpu0 = process_cpu_seconds();
    for (int64_t i = 0; i < steps; ++i) step();
    backend.synchronize();
    rates.push_back(static_cast<double>(steps * batch) / (now_seconds() - t0));
    cpu_ms.push_back(1e3 * (process_cpu_seconds() - cpu0) / static_cast<double>(steps));
  }
  const double best = *std::max_element(rates.begin(), rates.end());
  const double flops = training_flops(spec.layers);
  std::printf(
      "%s, \"batch\": %lld, \"optimizer\": \"%s\", \"params\": %lld, "
      "\"flops_per_sample\": %.0f, \"steps\": %lld, \"repeats\": %d, "
      "\"samples_per_s\": %.1f, \"samples_per_s_median\": %.1f, \"gflops\": %.2f, "
      "\"cpu_ms_per_step\": %.3f, \"loadavg\": %.2f}\n",
      head(z, precision, args).c_str(), static_cast<long long>(batch), config.optimizer.c_str(),
      static_cast<long long>(spec.num_parameters), flops, static_cast<long long>(steps),
      args.repeats, best, median(rates), best * flops / 1e9, median(cpu_ms), load_average());
  std::fflush(stdout);

  // Accuracy: the recipe from a fresh model on the real Fashion-MNIST.
  const int64_t epochs = args.accuracy_epochs >= 0
                             ? (z.accuracy_epochs > 0 ? args.accuracy_epochs : 0)
                             : z.accuracy_epochs;
  if (epochs <= 0 || fmnist == nullptr || z.data != "fashion-mnist") return;
  auto fresh = build_model(spec, batch, backend, 1);
  std::unique_ptr<Optimizer> opt2 = make_optimizer(config, backend, size);
  const ConstantLr schedule(config.lr);
  Trainer trainer(*fresh, *opt2, schedule, fmnist->train, Dataset(),
                  {.epochs = epochs, .batch_size = batch, .seed = 1});
  const double t1 = now_seconds();
  trainer.run();
  const double train_s = now_seconds() - t1;
  const EvalResult eval = trainer.evaluate(fmnist->test);
  std::printf(
      "%s, \"epochs\": %lld, \"train_samples\": %lld, \"test_accuracy\": %.4f, "
      "\"test_loss\": %.4f, \"train_seconds\": %.1f}\n",
      head(z, precision, args).c_str(), static_cast<long long>(epochs),
      static_cast<long long>(fmnist->train.size()), eval.accuracy, eval.loss, train_s);
  std::fflush(stdout);
}

// {"cpu_kernels": "...", "avx512_bf16": ..., "amx_bf16": ...}: the CPU line and its bf16 units.
std::string cpu_json_members() {
  const CpuFeatures cpu = detect_cpu_features();
  return "\"cpu_kernels\": \"" + json_escape(describe_cpu_kernels()) +
         "\", \"avx512_bf16\": " + (cpu.avx512_bf16 ? "true" : "false") +
         ", \"amx_bf16\": " + (cpu.amx_bf16 ? "true" : "false");
}

void print_peaks(const Args& args) {
  std::unique_ptr<Backend> backend = make_cpu_backend(args.threads);
  const double gemm = gemm_peak_gflops(*backend, args.quick ? 512 : 2048);
  const MachinePeak machine = measure_machine_peak(args.threads);
  std::printf(
      "{\"impl\": \"machine\", \"isa\": \"%s\", \"threads\": %d, \"clock_ghz\": %.2f, "
      "\"fma_units\": %d, \"fma_measured_gflops\": %.1f, \"fma_peak_gflops\": %.1f}\n",
      machine.isa.c_str(), machine.threads, machine.clock_ghz, machine.fma_units,
      machine.measured_gflops, machine.theoretical_gflops);
  // The bf16 products' GEMM (bf16 inputs, fp32 accumulation) where the CPU backend runs them.
  std::string bf16;
  if (cpu_bf16_unavailable().empty()) {
    std::unique_ptr<Backend> b16 = make_cpu_backend(args.threads, Precision::kBfloat16);
    char buf[64];
    std::snprintf(buf, sizeof buf, ", \"gemm_peak_bf16_gflops\": %.1f",
                  gemm_peak_gflops(*b16, args.quick ? 512 : 2048));
    bf16 = buf;
  }
  std::printf("{\"impl\": \"engine\", \"gemm_peak_gflops\": %.1f%s, \"threads\": %d, %s}\n", gemm,
              bf16.c_str(), args.threads, cpu_json_members().c_str());
  std::fflush(stdout);
}

int run(const Args& args) {
  const std::vector<ZooModel> zoo = read_zoo(args.zoo);
  if (args.cpu_features) {
    std::printf("{\"impl\": \"engine\", %s}\n", cpu_json_members().c_str());
    return 0;
  }
  if (args.list) {
    for (const ZooModel& z : zoo) std::printf("%s\n", z.name.c_str());
    return 0;
  }
  std::vector<const ZooModel*> chosen;
  for (const ZooModel& z : zoo) {
    if (args.models.empty() ||
        std::find(args.models.begin(), args.models.end(), z.name) != args.models.end()) {
      chosen.push_back(&z);
    }
  }
  for (const std::string& name : args.models) {
    if (std::none_of(zoo.begin(), zoo.end(), [&](const ZooModel& z) { return z.name == name; })) {
      throw std::runtime_error("--models: no model \"" + name + "\" in " + args.zoo +
                               " (engine_zoo --list names them)");
    }
  }
  if (args.peaks) {
    print_peaks(args);
    return 0;
  }
  const bool needs_fmnist =
      !args.synthetic && std::any_of(chosen.begin(), chosen.end(),
                                     [](const ZooModel* z) { return z->data == "fashion-mnist"; });
  std::unique_ptr<FashionMnist> fmnist;
  if (needs_fmnist) fmnist = std::make_unique<FashionMnist>(load_fashion_mnist(args));
  const int64_t synthetic_n = args.quick ? 1024 : 4096;
  for (const ZooModel* z : chosen) {
    const ModelSpec spec = parse_model_spec(z->model.dump());
    Dataset synthetic;
    const Dataset* data = fmnist && z->data == "fashion-mnist" ? &fmnist->train : nullptr;
    if (data == nullptr) {
      synthetic = synthetic_dataset(spec.input, synthetic_n);
      data = &synthetic;
    }
    for (const std::string& precision : args.precisions) {
      bench_model(args, *z, precision, fmnist.get(), *data);
    }
  }
  return 0;
}

}  // namespace
}  // namespace tuner::bench

int main(int argc, char** argv) {
  tuner::bench::Args args;
  const char* usage =
      "usage: engine_zoo [--zoo FILE] [--models a,b] [--precisions fp32,bf16] [--threads N] "
      "[--steps N] [--seconds S] [--repeats N] [--warmup N] [--accuracy-epochs N] "
      "[--no-accuracy] [--data DIR] [--synthetic] [--peaks] [--cpu-features] [--list] [--quick]\n";
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "--zoo") {
        args.zoo = value();
      } else if (a == "--models") {
        args.models = tuner::bench::split_commas(value());
      } else if (a == "--precisions") {
        args.precisions = tuner::bench::split_commas(value());
        for (const std::string& p : args.precisions) {
          if (p != "fp32" && p != "bf16") {
            throw std::invalid_argument("--precisions: \"" + p + "\" is neither fp32 nor bf16");
          }
        }
      } else if (a == "--threads") {
        args.threads = std::stoi(value());
      } else if (a == "--steps") {
        args.steps = std::stoll(value());
      } else if (a == "--seconds") {
        args.seconds = std::stod(value());
      } else if (a == "--repeats") {
        args.repeats = std::max(1, std::stoi(value()));
      } else if (a == "--warmup") {
        args.warmup = std::stoll(value());
      } else if (a == "--accuracy-epochs") {
        args.accuracy_epochs = std::stoll(value());
      } else if (a == "--no-accuracy") {
        args.accuracy_epochs = 0;
      } else if (a == "--data") {
        args.data = value();
        if (!args.data.empty() && args.data.back() != '/') args.data += '/';
      } else if (a == "--synthetic") {
        args.synthetic = true;
      } else if (a == "--peaks") {
        args.peaks = true;
      } else if (a == "--cpu-features") {
        args.cpu_features = true;
      } else if (a == "--list") {
        args.list = true;
      } else if (a == "--quick") {
        // A smoke run: a couple of short timings, a one-epoch recipe on 2,048 images.
        args.quick = true, args.seconds = 0.3, args.repeats = 1, args.warmup = 2;
        if (args.accuracy_epochs < 0) args.accuracy_epochs = 1;
      } else {
        std::fprintf(stderr, "engine_zoo: unknown option %s\n%s", a.c_str(), usage);
        return 2;
      }
    }
    return tuner::bench::run(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "engine_zoo: %s\n", e.what());
    return 1;
  }
}
