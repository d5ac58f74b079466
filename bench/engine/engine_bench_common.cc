#include "bench/engine/engine_bench_common.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "training/rng.h"
#include "training/tensor.h"

namespace tuner::bench {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double training_flops(const std::vector<training::LayerSpec>& layers) {
  double f = 0;
  for (const training::LayerSpec& l : layers) {
    if (l.type == "linear") f += 6.0 * static_cast<double>(l.input[0] * l.out);
    if (l.type == "conv2d") {
      f += 6.0 * static_cast<double>(l.input[0] * l.kernel * l.kernel * l.out * l.output[1] *
                                     l.output[2]);
    }
    f += training_flops(l.body) + training_flops(l.shortcut);
  }
  return f;
}

double gemm_peak_gflops(training::Backend& backend, int64_t n) {
  using training::Shape;
  using training::Tensor;
  using training::Transpose;
  Tensor a = backend.allocate(Shape{n, n}), b = backend.allocate(Shape{n, n});
  Tensor c = backend.allocate(Shape{n, n});
  training::Rng rng(1);
  std::vector<float> host(static_cast<size_t>(n * n));
  for (float& v : host) v = rng.uniform(-1, 1);
  backend.upload(host, a.span());
  backend.upload(host, b.span());
  backend.gemm(Transpose::kNo, Transpose::kNo, 1.0f, a, b, 0.0f, c);
  backend.synchronize();
  // A GPU needs several products per timing to rise above the launch and clock noise.
  const int per_rep = backend.host_accessible() ? 1 : 20;
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const double t = now_seconds();
    for (int i = 0; i < per_rep; ++i) {
      backend.gemm(Transpose::kNo, Transpose::kNo, 1.0f, a, b, 0.0f, c);
    }
    backend.synchronize();
    best =
        std::max(best, per_rep * 2.0 * static_cast<double>(n * n * n) / (now_seconds() - t) / 1e9);
  }
  return best;
}

std::string json_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace tuner::bench
