#include "executor/engine/latency.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <vector>

namespace tuner::engine {

namespace {

// The median wall time of eval-mode forward passes of `batch` samples (zeros: the products do not
// depend on the values), output on the host, in ms: two calls to warm up, then calls until
// kLatencyBudget has passed (at least kMinCalls, at most kMaxCalls).
double median_forward_ms(training::Sequential& model, int64_t batch, std::stop_token stop) {
  constexpr auto kLatencyBudget = std::chrono::milliseconds(60);
  constexpr size_t kMinCalls = 5, kMaxCalls = 1000;
  training::Tensor x(model.input_shape().with_batch(batch));
  std::vector<float> host(static_cast<size_t>(batch * model.output_shape().numel()));
  training::Backend& backend = model.backend();
  auto call = [&] {
    const training::Tensor& y = model.forward(x, training::Mode::kEval);
    backend.download(y.span(), host);
    backend.synchronize();
  };
  call();
  call();
  std::vector<double> times;
  const auto start = std::chrono::steady_clock::now();
  while (times.size() < kMaxCalls && !stop.stop_requested() &&
         (times.size() < kMinCalls || std::chrono::steady_clock::now() - start < kLatencyBudget)) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  if (times.empty()) return std::nan("");
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

}  // namespace

InferenceLatency measure_inference_latency(const training::ModelSpec& spec,
                                           training::Sequential& trained, int64_t batch,
                                           training::Backend& backend, std::stop_token stop) {
  std::unique_ptr<training::Sequential> model =
      training::build_model(spec, batch, backend, /*seed=*/0);
  model->parameters().set_values(trained.parameters().values_to_host());
  model->parameters().set_buffer_values(trained.parameters().buffer_values_to_host());
  InferenceLatency latency;
  latency.batch1_ms = median_forward_ms(*model, 1, stop);
  latency.per_sample_ms = median_forward_ms(*model, batch, stop) / static_cast<double>(batch);
  return latency;
}

}  // namespace tuner::engine
