// ModelServer: `tuner serve-model`'s server (docs/serving.md). MLflow's scoring protocol on
//   POST /invocations   serving/scoring_protocol.h's payloads, answered in MLflow's shape, with
//                       the answering model in the headers X-Tuner-Model, X-Tuner-Model-Version
//   GET /ping, /health  200 once the model is loaded (it is before the port opens)
//   GET /version        the tuner version, as text
//   GET /metrics        serving/serving_metrics.h, Prometheus's text format
// Requests of concurrent clients run together (serving/micro_batcher.h); a model reference that
// can move (an alias) is resolved again every reload_interval and a new version is swapped in
// without dropping a request (serving/model_holder.h); sampled requests and their predictions
// go to the request log (serving/request_log.h).
//
// Thread safety: stop() from one thread; the accessors from any.
#ifndef TUNER_SERVING_MODEL_SERVER_H_
#define TUNER_SERVING_MODEL_SERVER_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "serving/bounded_json.h"
#include "serving/http_server.h"
#include "serving/micro_batcher.h"
#include "serving/model_holder.h"
#include "serving/request_log.h"
#include "serving/serving_metrics.h"

namespace tuner::serving {

struct ModelServerOptions {
  HttpServerOptions http;
  MicroBatcherOptions batching;
  // The limits on a request body's JSON and CSV (nesting, keys per object, values).
  JsonLimits limits;
  std::optional<RequestLogOptions> log;  // none: requests are not logged
  // How often a reference that can move is resolved again. Default 2 s; > 0.
  std::chrono::milliseconds reload_interval{2000};
  // Status lines: the model now served after an alias moved, a reload that failed (once per
  // distinct failure). Default none.
  std::function<void(const std::string&)> say;
};

class ModelServer {
 public:
  // Serves `holder`'s model; returns once the port is open. Throws what HttpServer and RequestLog
  // throw.
  ModelServer(std::unique_ptr<ModelHolder> holder, ModelServerOptions options);
  // stop() with no grace.
  ~ModelServer();
  ModelServer(const ModelServer&) = delete;
  ModelServer& operator=(const ModelServer&) = delete;

  uint16_t port() const { return http_->port(); }
  std::shared_ptr<LoadedModel> model() const { return holder_->current(); }
  const ServingMetrics& metrics() const { return metrics_; }
  // Requests read and not yet answered.
  int64_t in_flight() const { return http_->in_flight(); }

  // Stops accepting, answers the requests in flight (waiting up to `grace`), then stops the
  // reloads, the batcher and the request log (writing what it holds). Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(0));

 private:
  void handle(HttpRequestIn request, Respond respond);
  void invocations(HttpRequestIn request, Respond respond);
  void watch();

  const ModelServerOptions options_;
  std::unique_ptr<ModelHolder> holder_;
  ServingMetrics metrics_;
  std::unique_ptr<RequestLog> log_;
  std::unique_ptr<MicroBatcher> batcher_;

  std::mutex watch_mutex_;
  std::condition_variable watch_wake_;
  bool stopping_ = false;  // protected by watch_mutex_
  std::thread watcher_;

  std::unique_ptr<HttpServer> http_;  // last: serves once everything above exists
};

}  // namespace tuner::serving

#endif  // TUNER_SERVING_MODEL_SERVER_H_
