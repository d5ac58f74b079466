// MlflowClient: the calls of MLflow's REST API (/api/2.0/mlflow/..., and the artifact proxy's
// /api/2.0/mlflow-artifacts/artifacts/...) that tracking and the model registry need, typed.
// docs/tracking.md lists each call with its MLflow counterpart.
//
// Errors: an answer with an MLflow error becomes tuner::Error with the code it maps to
// (RESOURCE_DOES_NOT_EXIST: kNotFound, RESOURCE_ALREADY_EXISTS: kAlreadyExists,
// INVALID_PARAMETER_VALUE and other 4xx: kInvalidArgument, INVALID_STATE: kFailedPrecondition,
// 401/403: kFailedPrecondition (credentials), 429 and 5xx: kUnavailable) and a message naming the
// server, the call and MLflow's own message. No answer at all is kUnavailable (the transport's).
//
// Retries: calls that are safe to repeat (reads, log-batch, whose repeated metrics MLflow drops
// as duplicates when their timestamps are the same, status updates, alias moves, uploads, which
// overwrite) are retried on kUnavailable, RetryPolicy::attempts times in all with doubling
// waits. Calls that create (a run, an experiment, a model version) are sent once: the caller
// finds what a lost answer may have created (runs by their tags, the experiment by name).
//
// Thread safety: as the transport's send() (the real one serializes exchanges).
#ifndef TUNER_TRACKING_MLFLOW_CLIENT_H_
#define TUNER_TRACKING_MLFLOW_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tracking/http_transport.h"

namespace tuner::tracking {

// MLflow's limits on one runs/log-batch call (mlflow/utils/validation.py).
inline constexpr size_t kMaxMetricsPerBatch = 1000;
inline constexpr size_t kMaxParamsPerBatch = 100;
inline constexpr size_t kMaxTagsPerBatch = 100;
inline constexpr size_t kMaxEntitiesPerBatch = 1000;
// The longest param value and tag value MLflow stores (longer params are refused, so they are
// cut to this with a marker), and the longest key.
inline constexpr size_t kMaxParamValueLength = 6000;
inline constexpr size_t kMaxTagValueLength = 8000;
inline constexpr size_t kMaxKeyLength = 250;

struct MlflowMetric {
  std::string key;
  double value = 0;  // NaN and the infinities are sent as MLflow's JSON takes them
  int64_t timestamp_ms = 0;
  int64_t step = 0;
  bool operator==(const MlflowMetric&) const = default;
};

struct MlflowTag {  // a param too
  std::string key;
  std::string value;
  bool operator==(const MlflowTag&) const = default;
};

// MLflow's run statuses (RunStatus in service.proto).
enum class RunStatus { kRunning, kScheduled, kFinished, kFailed, kKilled };
std::string_view to_string(RunStatus status);

struct MlflowRun {
  std::string run_id;
  std::string experiment_id;
  std::string run_name;
  std::string status;           // "RUNNING", "FINISHED", ...
  std::string artifact_uri;     // "mlflow-artifacts:/1/<run_id>/artifacts" with served artifacts
  std::string lifecycle_stage;  // "active" or "deleted"
  int64_t start_time_ms = 0;
  std::optional<int64_t> end_time_ms;
  std::map<std::string, std::string> tags;
  std::map<std::string, std::string> params;
  std::map<std::string, double> metrics;  // the latest value of each
};

struct MlflowExperiment {
  std::string experiment_id;
  std::string name;
  std::string artifact_location;
  std::string lifecycle_stage;  // "active" or "deleted"
};

struct MlflowModelVersion {
  std::string name;
  std::string version;  // MLflow's numbers are strings in its JSON: "3"
  std::string source;
  std::string run_id;
  std::string status;  // "READY", "PENDING_REGISTRATION", "FAILED_REGISTRATION"
  std::string description;
  std::map<std::string, std::string> tags;
  std::vector<std::string> aliases;
};

struct MlflowRegisteredModel {
  std::string name;
  std::string description;
  std::map<std::string, std::string> tags;
  std::map<std::string, std::string> aliases;  // alias -> version
};

struct RetryPolicy {
  // Tries of a call that may be repeated, the first included. Default 3.
  int attempts = 3;
  // The wait before the second try; doubled before each further one. Default 500 ms.
  std::chrono::milliseconds first_wait{500};
  // How the client waits; tests pass one that records. Default: this_thread::sleep_for.
  std::function<void(std::chrono::milliseconds)> sleep;
};

class MlflowClient {
 public:
  explicit MlflowClient(std::unique_ptr<HttpTransport> transport, RetryPolicy retry = {});

  // The server, for messages.
  const std::string& url() const { return transport_->url(); }

  // experiments/get-by-name; nullopt when there is none.
  std::optional<MlflowExperiment> find_experiment(const std::string& name);
  // experiments/create; returns the new experiment's id.
  std::string create_experiment(const std::string& name, const std::vector<MlflowTag>& tags);
  // The id of the active experiment `name`, created when missing (an experiment created
  // meanwhile by another client is found). Throws Error(kFailedPrecondition) when MLflow holds it
  // deleted, saying how to restore it.
  std::string get_or_create_experiment(const std::string& name,
                                       const std::vector<MlflowTag>& tags = {});

  // runs/create.
  MlflowRun create_run(const std::string& experiment_id, const std::string& run_name,
                       int64_t start_time_ms, const std::vector<MlflowTag>& tags);
  // runs/get; Error(kNotFound) when there is no such run.
  MlflowRun get_run(const std::string& run_id);
  // runs/update: the status, and the end time when given.
  void update_run(const std::string& run_id, RunStatus status, std::optional<int64_t> end_time_ms);
  // runs/log-batch. REQUIRES: within the kMax*PerBatch limits (log_batches.h splits).
  void log_batch(const std::string& run_id, const std::vector<MlflowMetric>& metrics,
                 const std::vector<MlflowTag>& params, const std::vector<MlflowTag>& tags);
  // runs/search over every page: the active runs of the experiments that match `filter`
  // (MLflow's search syntax, e.g. "tags.`tuner.study` = 'mlp'").
  std::vector<MlflowRun> search_runs(const std::vector<std::string>& experiment_ids,
                                     const std::string& filter);

  // PUT /api/2.0/mlflow-artifacts/artifacts/<path>: `bytes` as the file `path` below the
  // server's artifact root. `artifact_uri` is a run's (MlflowRun::artifact_uri), `relative` the
  // file's path below it ("model/MLmodel"). Throws Error(kFailedPrecondition) when the run's
  // artifacts are not served by this server (an artifact_uri that is not mlflow-artifacts:/...),
  // saying to start the server with --serve-artifacts.
  void upload_artifact(const std::string& artifact_uri, const std::string& relative,
                       const std::string& bytes);

  // registered-models/get; nullopt when there is none.
  std::optional<MlflowRegisteredModel> find_registered_model(const std::string& name);
  // registered-models/create, or nothing when it exists already.
  void ensure_registered_model(const std::string& name, const std::string& description,
                               const std::vector<MlflowTag>& tags);
  // model-versions/create.
  MlflowModelVersion create_model_version(const std::string& name, const std::string& source,
                                          const std::string& run_id, const std::string& description,
                                          const std::vector<MlflowTag>& tags);
  // model-versions/search with `filter` ("name = 'mlp'"), every page.
  std::vector<MlflowModelVersion> search_model_versions(const std::string& filter);
  // registered-models/alias (POST: moves the alias to `version`; DELETE).
  void set_alias(const std::string& name, const std::string& alias, const std::string& version);
  void delete_alias(const std::string& name, const std::string& alias);

 private:
  // One call: JSON `body` (for GET, the query is in `target`), the answer's JSON text on 200.
  std::string call(const std::string& method, const std::string& target, const std::string& body,
                   bool repeatable);
  std::string call_once(const HttpRequest& request);

  // Constant after construction.
  const std::unique_ptr<HttpTransport> transport_;
  const RetryPolicy retry_;
};

// Credentials for a tracking server, as MLflow's own clients take them from the environment:
// MLFLOW_TRACKING_TOKEN (a bearer token) or MLFLOW_TRACKING_USERNAME and
// MLFLOW_TRACKING_PASSWORD (basic). None when unset.
std::vector<std::pair<std::string, std::string>> auth_headers_from_environment();

// A client of the server at `tracking_uri` (http://HOST:PORT[/PATH]) over Beast, with the
// environment's credentials. Throws Error(kInvalidArgument) for a URI that is not http://.
std::unique_ptr<MlflowClient> connect_mlflow(const std::string& tracking_uri, HttpOptions http = {},
                                             RetryPolicy retry = {});

}  // namespace tuner::tracking

#endif  // TUNER_TRACKING_MLFLOW_CLIENT_H_
