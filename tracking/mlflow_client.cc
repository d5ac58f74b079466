#include "tracking/mlflow_client.h"

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "trials/error.h"

namespace tuner::tracking {

using Json = nlohmann::json;

namespace {

constexpr char kApi[] = "/api/2.0/mlflow/";
constexpr char kArtifactsApi[] = "/api/2.0/mlflow-artifacts/artifacts/";
// The scheme of artifacts the tracking server proxies (mlflow server --serve-artifacts).
constexpr std::string_view kProxiedScheme = "mlflow-artifacts:";

ErrorCode code_for(int status, const std::string& mlflow_code) {
  if (mlflow_code == "RESOURCE_DOES_NOT_EXIST" || mlflow_code == "NOT_FOUND") {
    return ErrorCode::kNotFound;
  }
  if (mlflow_code == "RESOURCE_ALREADY_EXISTS" || mlflow_code == "ALREADY_EXISTS") {
    return ErrorCode::kAlreadyExists;
  }
  if (mlflow_code == "INVALID_STATE") return ErrorCode::kFailedPrecondition;
  if (mlflow_code == "TEMPORARILY_UNAVAILABLE" || mlflow_code == "REQUEST_LIMIT_EXCEEDED") {
    return ErrorCode::kUnavailable;
  }
  if (status == 401 || status == 403) return ErrorCode::kFailedPrecondition;
  if (status == 404) return ErrorCode::kNotFound;
  if (status == 408 || status == 429 || status >= 500) return ErrorCode::kUnavailable;
  return ErrorCode::kInvalidArgument;
}

// MLflow's JSON writes int64 as numbers or (proto3's JSON) strings.
int64_t int64_of(const Json& j) {
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number()) {  // a double: 0 when it is not a number in the int64 range
    const double d = j.get<double>();
    return d >= -0x1p63 && d < 0x1p63 ? static_cast<int64_t>(d) : 0;
  }
  if (j.is_string()) return std::strtoll(j.get<std::string>().c_str(), nullptr, 10);
  return 0;
}

double double_of(const Json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "NaN") return std::nan("");
    if (s == "Infinity") return INFINITY;
    if (s == "-Infinity") return -INFINITY;
    return std::strtod(s.c_str(), nullptr);
  }
  return std::nan("");
}

// The member `key` of `j`, or `fallback` when `j` is not an object or has no such member.
Json member(const Json& j, const char* key, Json fallback = Json::object()) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it == j.end() ? fallback : *it;
}

std::string string_of(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

// Proto3's JSON for a double: NaN and the infinities as strings.
Json metric_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

Json key_values(const std::vector<MlflowTag>& items) {
  Json out = Json::array();
  for (const MlflowTag& t : items) out.push_back({{"key", t.key}, {"value", t.value}});
  return out;
}

std::map<std::string, std::string> map_of(const Json& j, const char* key) {
  std::map<std::string, std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const Json& kv : *it) out[string_of(kv, "key")] = string_of(kv, "value");
  return out;
}

MlflowRun run_of(const Json& j) {
  MlflowRun run;
  const Json info = member(j, "info");
  run.run_id = string_of(info, "run_id");
  if (run.run_id.empty()) run.run_id = string_of(info, "run_uuid");
  run.experiment_id = string_of(info, "experiment_id");
  run.run_name = string_of(info, "run_name");
  run.status = string_of(info, "status");
  run.artifact_uri = string_of(info, "artifact_uri");
  run.lifecycle_stage = string_of(info, "lifecycle_stage");
  if (info.contains("start_time")) run.start_time_ms = int64_of(info["start_time"]);
  if (info.contains("end_time") && !info["end_time"].is_null()) {
    run.end_time_ms = int64_of(info["end_time"]);
  }
  const Json data = member(j, "data");
  run.tags = map_of(data, "tags");
  run.params = map_of(data, "params");
  if (auto it = data.find("metrics"); it != data.end() && it->is_array()) {
    for (const Json& m : *it)
      run.metrics[string_of(m, "key")] = double_of(member(m, "value", Json()));
  }
  return run;
}

MlflowModelVersion version_of(const Json& j) {
  MlflowModelVersion v;
  v.name = string_of(j, "name");
  v.version = string_of(j, "version");
  v.source = string_of(j, "source");
  v.run_id = string_of(j, "run_id");
  v.status = string_of(j, "status");
  v.description = string_of(j, "description");
  v.tags = map_of(j, "tags");
  if (auto it = j.find("aliases"); it != j.end() && it->is_array()) {
    for (const Json& a : *it) v.aliases.push_back(a.is_string() ? a.get<std::string>() : a.dump());
  }
  return v;
}

// Request JSON as text; bytes that are not UTF-8 (a param's value) become U+FFFD rather than fail.
std::string text_of(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json parse_answer(const std::string& body, const std::string& where) {
  if (body.empty()) return Json::object();
  Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    throw Error(ErrorCode::kUnavailable,
                where +
                    ": the answer is not a JSON object (is the URL an MLflow tracking server?): " +
                    body.substr(0, 200));
  }
  return j;
}

// Refuses a next_page_token given before in the same search: its pages would never end.
void check_new_token(std::set<std::string>& seen, const std::string& token,
                     const std::string& where) {
  if (!token.empty() && !seen.insert(token).second) {
    throw Error(ErrorCode::kUnavailable, where + ": the server gave the page token '" +
                                             token.substr(0, 100) +
                                             "' a second time: its pages do not end");
  }
}

}  // namespace

std::string_view to_string(RunStatus status) {
  switch (status) {
    case RunStatus::kRunning:
      return "RUNNING";
    case RunStatus::kScheduled:
      return "SCHEDULED";
    case RunStatus::kFinished:
      return "FINISHED";
    case RunStatus::kFailed:
      return "FAILED";
    case RunStatus::kKilled:
      return "KILLED";
  }
  return "?";
}

MlflowClient::MlflowClient(std::unique_ptr<HttpTransport> transport, RetryPolicy retry)
    : transport_(std::move(transport)), retry_([&] {
        if (!retry.sleep)
          retry.sleep = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
        if (retry.attempts < 1) retry.attempts = 1;
        return retry;
      }()) {}

std::string MlflowClient::call_once(const HttpRequest& request) {
  const HttpResponse response = transport_->send(request);
  const std::string where = transport_->url() + ": " + request.method + " " +
                            request.target.substr(0, request.target.find('?'));
  if (response.status == 200) return response.body;
  const Json j = Json::parse(response.body, nullptr, false);
  std::string code, message;
  if (!j.is_discarded() && j.is_object()) {
    code = string_of(j, "error_code");
    message = string_of(j, "message");
  }
  if (message.empty()) message = response.body.substr(0, 300);
  std::string hint;
  if (response.status == 401 || response.status == 403) {
    hint = " (set MLFLOW_TRACKING_TOKEN, or MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD)";
  }
  throw Error(code_for(response.status, code), where + ": HTTP " + std::to_string(response.status) +
                                                   (code.empty() ? "" : " " + code) + ": " +
                                                   message + hint);
}

std::string MlflowClient::call(const std::string& method, const std::string& target,
                               const std::string& body, bool repeatable) {
  const HttpRequest request{
      .method = method, .target = target, .body = body, .repeatable = repeatable};
  std::chrono::milliseconds wait = retry_.first_wait;
  for (int attempt = 1;; ++attempt) {
    try {
      return call_once(request);
    } catch (const Error& e) {
      if (!repeatable || e.code() != ErrorCode::kUnavailable || attempt >= retry_.attempts) throw;
    }
    retry_.sleep(wait);
    wait *= 2;
  }
}

std::optional<MlflowExperiment> MlflowClient::find_experiment(const std::string& name) {
  std::string body;
  try {
    body = call("GET",
                std::string(kApi) + "experiments/get-by-name?experiment_name=" + url_escape(name),
                "", true);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kNotFound) return std::nullopt;
    throw;
  }
  const Json e = member(parse_answer(body, url()), "experiment");
  return MlflowExperiment{.experiment_id = string_of(e, "experiment_id"),
                          .name = string_of(e, "name"),
                          .artifact_location = string_of(e, "artifact_location"),
                          .lifecycle_stage = string_of(e, "lifecycle_stage")};
}

std::string MlflowClient::create_experiment(const std::string& name,
                                            const std::vector<MlflowTag>& tags) {
  const Json request = {{"name", name}, {"tags", key_values(tags)}};
  const std::string body =
      call("POST", std::string(kApi) + "experiments/create", text_of(request), false);
  return string_of(parse_answer(body, url()), "experiment_id");
}

std::string MlflowClient::get_or_create_experiment(const std::string& name,
                                                   const std::vector<MlflowTag>& tags) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (std::optional<MlflowExperiment> e = find_experiment(name)) {
      if (e->lifecycle_stage == "deleted") {
        throw Error(ErrorCode::kFailedPrecondition,
                    url() + ": experiment '" + name + "' (id " + e->experiment_id +
                        ") is deleted; restore it (mlflow experiments restore --experiment-id " +
                        e->experiment_id +
                        "), delete it for good (mlflow gc), or log to "
                        "another experiment");
      }
      return e->experiment_id;
    }
    try {
      return create_experiment(name, tags);
    } catch (const Error& e) {
      // Another client created it between the two calls, or a lost answer did.
      if (e.code() != ErrorCode::kAlreadyExists) throw;
    }
  }
  throw Error(ErrorCode::kUnavailable,
              url() + ": experiment '" + name + "' exists and is not found by name");
}

MlflowRun MlflowClient::create_run(const std::string& experiment_id, const std::string& run_name,
                                   int64_t start_time_ms, const std::vector<MlflowTag>& tags) {
  const Json request = {{"experiment_id", experiment_id},
                        {"run_name", run_name},
                        {"start_time", start_time_ms},
                        {"tags", key_values(tags)}};
  const std::string body = call("POST", std::string(kApi) + "runs/create", text_of(request), false);
  return run_of(member(parse_answer(body, url()), "run"));
}

MlflowRun MlflowClient::get_run(const std::string& run_id) {
  const std::string body =
      call("GET", std::string(kApi) + "runs/get?run_id=" + url_escape(run_id), "", true);
  return run_of(member(parse_answer(body, url()), "run"));
}

void MlflowClient::update_run(const std::string& run_id, RunStatus status,
                              std::optional<int64_t> end_time_ms) {
  Json request = {{"run_id", run_id}, {"status", std::string(to_string(status))}};
  if (end_time_ms) request["end_time"] = *end_time_ms;
  call("POST", std::string(kApi) + "runs/update", text_of(request), true);
}

void MlflowClient::log_batch(const std::string& run_id, const std::vector<MlflowMetric>& metrics,
                             const std::vector<MlflowTag>& params,
                             const std::vector<MlflowTag>& tags) {
  if (metrics.size() > kMaxMetricsPerBatch || params.size() > kMaxParamsPerBatch ||
      tags.size() > kMaxTagsPerBatch ||
      metrics.size() + params.size() + tags.size() > kMaxEntitiesPerBatch) {
    throw Error(ErrorCode::kInternal, "log_batch: a batch past MLflow's limits (" +
                                          std::to_string(metrics.size()) + " metrics, " +
                                          std::to_string(params.size()) + " params, " +
                                          std::to_string(tags.size()) + " tags)");
  }
  Json m = Json::array();
  for (const MlflowMetric& x : metrics) {
    m.push_back({{"key", x.key},
                 {"value", metric_value(x.value)},
                 {"timestamp", x.timestamp_ms},
                 {"step", x.step}});
  }
  const Json request = {{"run_id", run_id},
                        {"metrics", m},
                        {"params", key_values(params)},
                        {"tags", key_values(tags)}};
  call("POST", std::string(kApi) + "runs/log-batch", text_of(request), true);
}

std::vector<MlflowRun> MlflowClient::search_runs(const std::vector<std::string>& experiment_ids,
                                                 const std::string& filter) {
  std::vector<MlflowRun> runs;
  std::string token;
  std::set<std::string> tokens;
  do {
    Json request = {{"experiment_ids", experiment_ids},
                    {"filter", filter},
                    {"run_view_type", "ACTIVE_ONLY"},
                    {"max_results", 1000}};
    if (!token.empty()) request["page_token"] = token;
    const Json answer = parse_answer(
        call("POST", std::string(kApi) + "runs/search", text_of(request), true), url());
    if (auto it = answer.find("runs"); it != answer.end() && it->is_array()) {
      for (const Json& r : *it) runs.push_back(run_of(r));
    }
    token = string_of(answer, "next_page_token");
    check_new_token(tokens, token, url() + ": POST " + kApi + "runs/search");
  } while (!token.empty());
  return runs;
}

void MlflowClient::upload_artifact(const std::string& artifact_uri, const std::string& relative,
                                   const std::string& bytes) {
  if (artifact_uri.rfind(kProxiedScheme, 0) != 0) {
    throw Error(ErrorCode::kFailedPrecondition,
                url() + ": the run's artifacts are at '" + artifact_uri +
                    "', which this client cannot write: start the tracking server with "
                    "--serve-artifacts (its artifacts then live under mlflow-artifacts:/)");
  }
  // "mlflow-artifacts:/1/abc/artifacts" or "mlflow-artifacts://host:port/1/abc/artifacts": the
  // path below the server's artifact root.
  std::string path = artifact_uri.substr(kProxiedScheme.size());
  if (path.rfind("//", 0) == 0) {
    const size_t slash = path.find('/', 2);
    path = slash == std::string::npos ? "" : path.substr(slash);
  }
  while (!path.empty() && path.front() == '/') path.erase(0, 1);
  std::string target = kArtifactsApi;
  auto append = [&](const std::string& p) {
    size_t start = 0;
    while (start <= p.size()) {
      const size_t end = p.find('/', start);
      const std::string part = p.substr(start, end == std::string::npos ? end : end - start);
      if (!part.empty()) {
        if (target.back() != '/') target += '/';
        target += url_escape(part);
      }
      if (end == std::string::npos) break;
      start = end + 1;
    }
  };
  append(path);
  append(relative);
  const HttpRequest request{
      .method = "PUT", .target = target, .body = bytes, .content_type = "application/octet-stream"};
  std::chrono::milliseconds wait = retry_.first_wait;
  for (int attempt = 1;; ++attempt) {
    try {
      call_once(request);
      return;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kUnavailable || attempt >= retry_.attempts) throw;
    }
    retry_.sleep(wait);
    wait *= 2;
  }
}

std::optional<MlflowRegisteredModel> MlflowClient::find_registered_model(const std::string& name) {
  std::string body;
  try {
    body =
        call("GET", std::string(kApi) + "registered-models/get?name=" + url_escape(name), "", true);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kNotFound) return std::nullopt;
    throw;
  }
  const Json m = member(parse_answer(body, url()), "registered_model");
  MlflowRegisteredModel out{.name = string_of(m, "name"),
                            .description = string_of(m, "description"),
                            .tags = map_of(m, "tags")};
  if (auto it = m.find("aliases"); it != m.end() && it->is_array()) {
    for (const Json& a : *it) out.aliases[string_of(a, "alias")] = string_of(a, "version");
  }
  return out;
}

void MlflowClient::ensure_registered_model(const std::string& name, const std::string& description,
                                           const std::vector<MlflowTag>& tags) {
  if (find_registered_model(name)) return;
  const Json request = {{"name", name}, {"description", description}, {"tags", key_values(tags)}};
  try {
    call("POST", std::string(kApi) + "registered-models/create", text_of(request), false);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kAlreadyExists) throw;
  }
}

MlflowModelVersion MlflowClient::create_model_version(const std::string& name,
                                                      const std::string& source,
                                                      const std::string& run_id,
                                                      const std::string& description,
                                                      const std::vector<MlflowTag>& tags) {
  Json request = {
      {"name", name}, {"source", source}, {"description", description}, {"tags", key_values(tags)}};
  if (!run_id.empty()) request["run_id"] = run_id;
  const std::string body =
      call("POST", std::string(kApi) + "model-versions/create", text_of(request), false);
  return version_of(member(parse_answer(body, url()), "model_version"));
}

std::vector<MlflowModelVersion> MlflowClient::search_model_versions(const std::string& filter) {
  std::vector<MlflowModelVersion> out;
  std::string token;
  std::set<std::string> tokens;
  do {
    std::string target = std::string(kApi) + "model-versions/search?filter=" + url_escape(filter) +
                         "&max_results=10000";
    if (!token.empty()) target += "&page_token=" + url_escape(token);
    const Json answer = parse_answer(call("GET", target, "", true), url());
    if (auto it = answer.find("model_versions"); it != answer.end() && it->is_array()) {
      for (const Json& v : *it) out.push_back(version_of(v));
    }
    token = string_of(answer, "next_page_token");
    check_new_token(tokens, token, url() + ": GET " + kApi + "model-versions/search");
  } while (!token.empty());
  return out;
}

void MlflowClient::set_alias(const std::string& name, const std::string& alias,
                             const std::string& version) {
  const Json request = {{"name", name}, {"alias", alias}, {"version", version}};
  call("POST", std::string(kApi) + "registered-models/alias", text_of(request), true);
}

void MlflowClient::delete_alias(const std::string& name, const std::string& alias) {
  const Json request = {{"name", name}, {"alias", alias}};
  try {
    call("DELETE", std::string(kApi) + "registered-models/alias", text_of(request), true);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotFound) throw;
  }
}

std::vector<std::pair<std::string, std::string>> auth_headers_from_environment() {
  std::vector<std::pair<std::string, std::string>> headers;
  const char* token = std::getenv("MLFLOW_TRACKING_TOKEN");
  const char* user = std::getenv("MLFLOW_TRACKING_USERNAME");
  const char* password = std::getenv("MLFLOW_TRACKING_PASSWORD");
  if (token != nullptr && *token != '\0') {
    headers.emplace_back("Authorization", std::string("Bearer ") + token);
  } else if (user != nullptr && *user != '\0') {
    headers.emplace_back("Authorization",
                         "Basic " + base64(std::string(user) + ":" + (password ? password : "")));
  }
  return headers;
}

std::unique_ptr<MlflowClient> connect_mlflow(const std::string& tracking_uri, HttpOptions http,
                                             RetryPolicy retry) {
  for (auto& header : auth_headers_from_environment()) http.headers.push_back(std::move(header));
  return std::make_unique<MlflowClient>(make_http_transport(tracking_uri, std::move(http)),
                                        std::move(retry));
}

}  // namespace tuner::tracking
