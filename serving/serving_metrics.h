// What the model server counts, and GET /metrics's answer in Prometheus's text format (version
// 0.0.4): requests by path and status, errors by MLflow error code, a latency histogram of
// /invocations, the batch sizes the micro-batcher ran, the model served and its reloads, and the
// request log's lines written, dropped and failed. Names start with tuner_serving_
// (docs/serving.md, "Metrics").
//
// Thread safety: every member may be called from any thread.
#ifndef TUNER_SERVING_SERVING_METRICS_H_
#define TUNER_SERVING_SERVING_METRICS_H_

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "serving/request_log.h"

namespace tuner::serving {

// A cumulative histogram over fixed upper bounds (Prometheus's "le" buckets).
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // Appends NAME_bucket{le=...}, NAME_sum and NAME_count lines.
  void append_to(std::string& out, std::string_view name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bound, not cumulative; the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServingMetrics {
 public:
  ServingMetrics();

  // A request answered: its path ("/invocations", "/ping", ... ; anything else counts as
  // "other"), HTTP status, and for /invocations the seconds from its arrival to its answer.
  void record_request(std::string_view path, int status, std::optional<double> seconds = {});
  // An error answer's MLflow error code (BAD_REQUEST, INTERNAL_ERROR, ...).
  void record_error(std::string_view error_code);
  // One forward pass of the micro-batcher: its samples and requests.
  void record_batch(int64_t rows, int64_t requests);
  // The model now served.
  void set_model(std::string name, std::optional<int> version);
  void record_reload(bool succeeded);
  // The request log: a request written, dropped (the writer fell behind), or failed (the log
  // could not be written: a full disk).
  void record_logged(LogOutcome outcome);

  // The text GET /metrics answers.
  std::string prometheus_text() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;  // (path, status) -> count
  std::map<std::string, uint64_t> errors_;                    // error code -> count
  Histogram latency_;                                         // seconds, /invocations
  Histogram batch_rows_;                                      // samples per forward pass
  uint64_t batches_ = 0;
  uint64_t batched_requests_ = 0;
  std::string model_name_;
  std::optional<int> model_version_;
  uint64_t reloads_ = 0, reload_failures_ = 0;
  uint64_t logged_ = 0, log_dropped_ = 0, log_failed_ = 0;
};

}  // namespace tuner::serving

#endif  // TUNER_SERVING_SERVING_METRICS_H_
