#include "serving/serving_metrics.h"

#include <charconv>
#include <cmath>

namespace tuner::serving {

namespace {

// Counts as integers ("1000000", not "1e+06"), bucket bounds in fixed notation ("0.0001"), other
// values in their shortest form.
void append_number(std::string& out, double v,
                   std::chars_format format = std::chars_format::general) {
  if (v == std::floor(v) && std::abs(v) < 1e15) {
    out += std::to_string(static_cast<long long>(v));
    return;
  }
  char buffer[400];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), v, format);
  (void)ec;
  out.append(buffer, end);
}

// A label value as the text format escapes it: backslash, double quote and newline.
std::string escaped(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void sample(std::string& out, std::string_view name, std::string_view labels, double value) {
  out.append(name);
  if (!labels.empty()) out.append("{").append(labels).append("}");
  out += ' ';
  append_number(out, value);
  out += '\n';
}

std::string_view known_path(std::string_view path) {
  for (std::string_view p : {"/invocations", "/ping", "/health", "/version", "/metrics"}) {
    if (path == p) return p;
  }
  return "other";
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::append_to(std::string& out, std::string_view name) const {
  const std::string bucket = std::string(name) + "_bucket";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    std::string le = "le=\"";
    if (i < bounds_.size()) {
      append_number(le, bounds_[i], std::chars_format::fixed);  // 0.0001, not 1e-04
    } else {
      le += "+Inf";
    }
    le += '"';
    sample(out, bucket, le, static_cast<double>(cumulative));
  }
  sample(out, std::string(name) + "_sum", "", sum_);
  sample(out, std::string(name) + "_count", "", static_cast<double>(count_));
}

ServingMetrics::ServingMetrics()
    : latency_({0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                2.5, 5, 10}),
      batch_rows_({1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}) {}

void ServingMetrics::record_request(std::string_view path, int status,
                                    std::optional<double> seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{std::string(known_path(path)), status}];
  if (seconds) latency_.observe(*seconds);
}

void ServingMetrics::record_error(std::string_view error_code) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++errors_[std::string(error_code)];
}

void ServingMetrics::record_batch(int64_t rows, int64_t requests) {
  std::lock_guard<std::mutex> lock(mutex_);
  batch_rows_.observe(static_cast<double>(rows));
  ++batches_;
  batched_requests_ += static_cast<uint64_t>(requests);
}

void ServingMetrics::set_model(std::string name, std::optional<int> version) {
  std::lock_guard<std::mutex> lock(mutex_);
  model_name_ = std::move(name);
  model_version_ = version;
}

void ServingMetrics::record_reload(bool succeeded) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++(succeeded ? reloads_ : reload_failures_);
}

void ServingMetrics::record_logged(LogOutcome outcome) {
  std::lock_guard<std::mutex> lock(mutex_);
  switch (outcome) {
    case LogOutcome::kWritten:
      ++logged_;
      break;
    case LogOutcome::kDropped:
      ++log_dropped_;
      break;
    case LogOutcome::kFailed:
      ++log_failed_;
      break;
  }
}

std::string ServingMetrics::prometheus_text() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  out.reserve(4096);
  header(out, "tuner_serving_requests_total", "counter",
         "Requests answered, by path and HTTP status.");
  for (const auto& [key, count] : requests_) {
    sample(out, "tuner_serving_requests_total",
           "path=\"" + escaped(key.first) + "\",status=\"" + std::to_string(key.second) + "\"",
           static_cast<double>(count));
  }
  header(out, "tuner_serving_errors_total", "counter",
         "Error answers, by MLflow error code (BAD_REQUEST, INTERNAL_ERROR, ...).");
  for (const auto& [code, count] : errors_) {
    sample(out, "tuner_serving_errors_total", "error_code=\"" + escaped(code) + "\"",
           static_cast<double>(count));
  }
  header(out, "tuner_serving_request_duration_seconds", "histogram",
         "Time from a /invocations request's arrival to its answer.");
  latency_.append_to(out, "tuner_serving_request_duration_seconds");
  header(out, "tuner_serving_batch_samples", "histogram",
         "Samples per forward pass of the micro-batcher.");
  batch_rows_.append_to(out, "tuner_serving_batch_samples");
  header(out, "tuner_serving_batches_total", "counter", "Forward passes run.");
  sample(out, "tuner_serving_batches_total", "", static_cast<double>(batches_));
  header(out, "tuner_serving_batched_requests_total", "counter",
         "Requests answered by forward passes (over batches_total: requests per batch).");
  sample(out, "tuner_serving_batched_requests_total", "", static_cast<double>(batched_requests_));
  header(out, "tuner_serving_model_version", "gauge",
         "The registry version of the model served (-1 for a model directory outside a registry).");
  sample(out, "tuner_serving_model_version", "model=\"" + escaped(model_name_) + "\"",
         model_version_ ? *model_version_ : -1);
  header(out, "tuner_serving_model_reloads_total", "counter",
         "Models loaded after the first (an alias moved), and loads that failed (the model served "
         "stayed).");
  sample(out, "tuner_serving_model_reloads_total", "result=\"loaded\"",
         static_cast<double>(reloads_));
  sample(out, "tuner_serving_model_reloads_total", "result=\"failed\"",
         static_cast<double>(reload_failures_));
  header(out, "tuner_serving_logged_requests_total", "counter",
         "Requests sampled into the request log: written, dropped because the writer fell "
         "behind, or failed because the log could not be written.");
  sample(out, "tuner_serving_logged_requests_total", "result=\"written\"",
         static_cast<double>(logged_));
  sample(out, "tuner_serving_logged_requests_total", "result=\"dropped\"",
         static_cast<double>(log_dropped_));
  sample(out, "tuner_serving_logged_requests_total", "result=\"failed\"",
         static_cast<double>(log_failed_));
  return out;
}

}  // namespace tuner::serving
