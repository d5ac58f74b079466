// Batch norm on the CPU backend, op by op, at the feature-map shapes of the zoo's CNNs and
// ResNets: training forward, its backward (dx, dgamma, dbeta), and the eval forward. Each is
// timed in CPU time of the whole process (user + sys of every thread, so that a machine shared
// with other jobs inflates it less than wall time), best of --repeats rounds of --iters calls,
// and printed as one JSON line per shape and op: ns per element and the wall time beside it.
// The relu_* ops time batch norm with the ReLU after it, as the base class's pair of ops and as
// the backend's fused one (Backend::batch_norm_relu_*).
//
//   batch_norm_bench [--threads 2] [--iters 50] [--repeats 5] [--shapes B,C,H,W;...]
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "training/backend.h"
#include "training/backends/cpu/cpu_backend.h"
#include "training/rng.h"

namespace tuner::bench {
namespace {

using training::Backend;
using training::Shape;
using training::Tensor;

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Tensor random(Backend& backend, const Shape& shape, uint64_t seed, float lo, float hi) {
  training::Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (float& x : v) x = rng.uniform(lo, hi);
  Tensor t = backend.allocate(shape);
  backend.upload(v, t.span());
  return t;
}

struct Timing {
  double cpu_s = 1e30, wall_s = 1e30;  // per call, best round
};

template <class F>
Timing time_op(int iters, int repeats, F op) {
  op();  // warm the caches and the pool
  Timing best;
  for (int r = 0; r < repeats; ++r) {
    const double c0 = cpu_seconds(), w0 = wall_seconds();
    for (int i = 0; i < iters; ++i) op();
    best.cpu_s = std::min(best.cpu_s, (cpu_seconds() - c0) / iters);
    best.wall_s = std::min(best.wall_s, (wall_seconds() - w0) / iters);
  }
  return best;
}

std::vector<Shape> parse_shapes(const std::string& text) {
  std::vector<Shape> shapes;
  std::stringstream all(text);
  std::string one;
  while (std::getline(all, one, ';')) {
    std::vector<int64_t> dims;
    std::stringstream ds(one);
    std::string d;
    while (std::getline(ds, d, ',')) dims.push_back(std::stoll(d));
    if (dims.size() != 2 && dims.size() != 4) {
      throw std::invalid_argument("--shapes: \"" + one + "\" is neither B,C nor B,C,H,W");
    }
    shapes.push_back(Shape::from(dims));
  }
  return shapes;
}

int run(int argc, char** argv) {
  int threads = 2, iters = 50, repeats = 5;
  // The zoo's batch-norm inputs: resnet_fmnist_sgd (batch 64), resnet_cifar_adamw (batch 128),
  // cnn_bn_sgd_b32, and two odd ones (channels not a multiple of 16, odd planes, batch 1).
  std::string shapes_text =
      "64,16,28,28;64,32,14,14;128,16,32,32;128,32,16,16;128,64,8,8;32,32,14,14;"
      "32,24,7,7;1,19,13,11";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + ": missing value");
      return argv[++i];
    };
    if (a == "--threads") {
      threads = std::stoi(value());
    } else if (a == "--iters") {
      iters = std::stoi(value());
    } else if (a == "--repeats") {
      repeats = std::stoi(value());
    } else if (a == "--shapes") {
      shapes_text = value();
    } else {
      std::fprintf(stderr,
                   "usage: batch_norm_bench [--threads N] [--iters N] [--repeats N] "
                   "[--shapes B,C,H,W;...]\n");
      return 2;
    }
  }
  auto backend = training::make_cpu_backend(threads);
  for (const Shape& s : parse_shapes(shapes_text)) {
    const int64_t c = s[1];
    Tensor x = random(*backend, s, 1, -2.0f, 3.0f);
    Tensor dy = random(*backend, s, 2, -1.0f, 1.0f);
    Tensor gamma = random(*backend, Shape{c}, 3, 0.5f, 1.5f);
    Tensor beta = random(*backend, Shape{c}, 4, -1.0f, 1.0f);
    Tensor rm = backend->allocate(Shape{c}), rv = random(*backend, Shape{c}, 5, 0.5f, 2.0f);
    Tensor mean = backend->allocate(Shape{c}), rstd = backend->allocate(Shape{c});
    Tensor y = backend->allocate(s), dx = backend->allocate(s);
    Tensor dgamma = backend->allocate(Shape{c}), dbeta = backend->allocate(Shape{c});
    const Timing train = time_op(iters, repeats, [&] {
      backend->batch_norm_forward_train(x, gamma, beta, 1e-5f, 0.1f, rm, rv, mean, rstd, y);
    });
    const Timing back = time_op(iters, repeats, [&] {
      backend->batch_norm_backward(x, gamma, mean, rstd, dy, &dx, dgamma, dbeta);
    });
    const Timing eval = time_op(iters, repeats, [&] {
      backend->batch_norm_forward_eval(x, gamma, beta, 1e-5f, rm, rv, y);
    });
    // With the ReLU after it: the two ops in turn (the base class's pair) and the backend's own.
    Tensor dz = backend->allocate(s);
    const Timing pair_train = time_op(iters, repeats, [&] {
      backend->Backend::batch_norm_relu_forward_train(x, gamma, beta, 1e-5f, 0.1f, rm, rv, mean,
                                                      rstd, y);
    });
    const Timing fused_train = time_op(iters, repeats, [&] {
      backend->batch_norm_relu_forward_train(x, gamma, beta, 1e-5f, 0.1f, rm, rv, mean, rstd, y);
    });
    const Timing pair_back = time_op(iters, repeats, [&] {
      backend->Backend::batch_norm_relu_backward(x, y, gamma, mean, rstd, dy, &dx, dgamma, dbeta,
                                                 dz.span());
    });
    const Timing fused_back = time_op(iters, repeats, [&] {
      backend->batch_norm_relu_backward(x, y, gamma, mean, rstd, dy, &dx, dgamma, dbeta, dz.span());
    });
    const double n = static_cast<double>(s.numel());
    for (const auto& [op, t] :
         {std::pair{"train_forward", train}, std::pair{"backward", back},
          std::pair{"eval_forward", eval}, std::pair{"relu_train_forward_pair", pair_train},
          std::pair{"relu_train_forward_fused", fused_train},
          std::pair{"relu_backward_pair", pair_back},
          std::pair{"relu_backward_fused", fused_back}}) {
      std::printf(
          "{\"shape\": \"%s\", \"op\": \"%s\", \"threads\": %d, \"cpu_ns_per_element\": %.4f, "
          "\"wall_us\": %.2f}\n",
          s.to_string().c_str(), op, threads, 1e9 * t.cpu_s / n, 1e6 * t.wall_s);
    }
  }
  return 0;
}

}  // namespace
}  // namespace tuner::bench

int main(int argc, char** argv) {
  try {
    return tuner::bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "batch_norm_bench: %s\n", e.what());
    return 1;
  }
}
