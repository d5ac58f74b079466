// The inference latency of a trained model (internal to executor/): the engine's latency_ms and
// latency_ms_per_sample metrics (engine_job.h, EngineOutcome).
//
// Thread safety: uses the backend; the caller must not use the trained model or the backend from
// another thread meanwhile.
#ifndef TUNER_EXECUTOR_ENGINE_LATENCY_H_
#define TUNER_EXECUTOR_ENGINE_LATENCY_H_

#include <cstdint>
#include <stop_token>

#include "training/backend.h"
#include "training/model_spec.h"
#include "training/sequential.h"

namespace tuner::engine {

struct InferenceLatency {
  double batch1_ms = 0;      // one forward pass of one sample, ms
  double per_sample_ms = 0;  // one forward pass of a batch, divided by its size, ms
};

// The median wall times of eval-mode forward passes of `trained` (output copied to the host), on a
// copy of it built from `spec` for `batch` samples on `backend` (the training model's buffers are
// sized for its own batch): about 60 ms of calls per figure after two to warm up, at least 5
// and at most 1000. A stop requested on `stop` cuts the calls short; a figure with no call is NaN.
// REQUIRES: batch >= 1; `spec` is the model of `trained`.
InferenceLatency measure_inference_latency(const training::ModelSpec& spec,
                                           training::Sequential& trained, int64_t batch,
                                           training::Backend& backend, std::stop_token stop);

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_LATENCY_H_
