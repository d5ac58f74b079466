#include "tracking/mlflow_client.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <nlohmann/json.hpp>

#include "trials/error.h"

namespace tuner::tracking {
namespace {

using Json = nlohmann::json;

// Answers from a script and records what was sent.
class RecordedTransport final : public HttpTransport {
 public:
  struct Shared {
    std::vector<HttpRequest> sent;
    std::deque<HttpResponse> answers;  // empty: 200 {}
    int refuse = 0;                    // the next N sends get no answer
  };
  explicit RecordedTransport(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}
  HttpResponse send(const HttpRequest& request) override {
    shared_->sent.push_back(request);
    if (shared_->refuse > 0) {
      --shared_->refuse;
      throw Error(ErrorCode::kUnavailable, "connection refused");
    }
    if (shared_->answers.empty()) return {200, "{}"};
    HttpResponse r = shared_->answers.front();
    shared_->answers.pop_front();
    return r;
  }
  const std::string& url() const override { return url_; }

 private:
  std::shared_ptr<Shared> shared_;
  std::string url_ = "http://mlflow:5000";
};

class MlflowClientTest : public ::testing::Test {
 protected:
  MlflowClientTest()
      : shared_(std::make_shared<RecordedTransport::Shared>()),
        client_(std::make_unique<RecordedTransport>(shared_),
                RetryPolicy{.attempts = 3,
                            .first_wait = std::chrono::milliseconds(100),
                            .sleep = [this](std::chrono::milliseconds d) {
                              waits_.push_back(d.count());
                            }}) {}

  Json body(size_t i) const { return Json::parse(shared_->sent.at(i).body); }

  std::shared_ptr<RecordedTransport::Shared> shared_;
  std::vector<int64_t> waits_;
  MlflowClient client_;
};

TEST_F(MlflowClientTest, LogBatchSendsMlflowsJson) {
  client_.log_batch("r1",
                    {{.key = "loss", .value = 0.5, .timestamp_ms = 1700000000123, .step = 3},
                     {.key = "val", .value = std::nan(""), .timestamp_ms = 7, .step = 0},
                     {.key = "big", .value = INFINITY, .timestamp_ms = 7, .step = 0}},
                    {{"lr", "0.01"}}, {{"tuner.state", "RUNNING"}});
  ASSERT_EQ(shared_->sent.size(), 1u);
  EXPECT_EQ(shared_->sent[0].method, "POST");
  EXPECT_EQ(shared_->sent[0].target, "/api/2.0/mlflow/runs/log-batch");
  EXPECT_EQ(body(0), Json::parse(R"({"run_id": "r1",
      "metrics": [{"key": "loss", "value": 0.5, "timestamp": 1700000000123, "step": 3},
                  {"key": "val", "value": "NaN", "timestamp": 7, "step": 0},
                  {"key": "big", "value": "Infinity", "timestamp": 7, "step": 0}],
      "params": [{"key": "lr", "value": "0.01"}],
      "tags": [{"key": "tuner.state", "value": "RUNNING"}]})"));
}

TEST_F(MlflowClientTest, LogBatchRefusesABatchPastTheLimits) {
  std::vector<MlflowTag> params(101, {"p", "1"});
  EXPECT_THROW(client_.log_batch("r1", {}, params, {}), Error);
  EXPECT_TRUE(shared_->sent.empty());
}

TEST_F(MlflowClientTest, CreateRunAndReadItsAnswer) {
  shared_->answers.push_back({200, R"({"run": {"info": {"run_id": "abc", "experiment_id": "4",
      "run_name": "trial-0", "status": "RUNNING", "start_time": "1700000000000",
      "artifact_uri": "mlflow-artifacts:/4/abc/artifacts", "lifecycle_stage": "active"},
      "data": {"tags": [{"key": "tuner.study", "value": "s"}]}}})"});
  const MlflowRun run = client_.create_run("4", "trial-0", 1700000000000, {{"tuner.study", "s"}});
  EXPECT_EQ(body(0), Json::parse(R"({"experiment_id": "4", "run_name": "trial-0",
      "start_time": 1700000000000, "tags": [{"key": "tuner.study", "value": "s"}]})"));
  EXPECT_EQ(run.run_id, "abc");
  EXPECT_EQ(run.start_time_ms, 1700000000000);  // int64 as a string, as proto3's JSON writes it
  EXPECT_EQ(run.artifact_uri, "mlflow-artifacts:/4/abc/artifacts");
  EXPECT_EQ(run.tags.at("tuner.study"), "s");
}

TEST_F(MlflowClientTest, ErrorsMapToCodesAndNameTheCall) {
  shared_->answers.push_back(
      {404, R"({"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "Run 'x' not found"})"});
  try {
    client_.get_run("x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_EQ(std::string(e.what()),
              "http://mlflow:5000: GET /api/2.0/mlflow/runs/get: HTTP 404 RESOURCE_DOES_NOT_EXIST: "
              "Run 'x' not found");
  }
  shared_->answers.push_back(
      {400, R"({"error_code": "INVALID_PARAMETER_VALUE", "message": "Changing param values"})"});
  try {
    client_.log_batch("r", {}, {{"a", "1"}}, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
  shared_->answers.push_back({401, "Unauthorized"});
  try {
    client_.get_run("x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(std::string(e.what()).find("MLFLOW_TRACKING_TOKEN"), std::string::npos);
  }
}

TEST_F(MlflowClientTest, RepeatableCallsAreRetriedWithDoublingWaits) {
  shared_->refuse = 1;
  shared_->answers.push_back({503, "busy"});
  client_.update_run("r", RunStatus::kFinished, 42);
  EXPECT_EQ(shared_->sent.size(), 3u);
  EXPECT_EQ(waits_, (std::vector<int64_t>{100, 200}));
  EXPECT_EQ(body(2), Json::parse(R"({"run_id": "r", "status": "FINISHED", "end_time": 42})"));
  // Past the attempts, the last error passes through.
  shared_->refuse = 3;
  EXPECT_THROW(client_.log_batch("r", {}, {}, {{"a", "b"}}), Error);
  EXPECT_EQ(shared_->sent.size(), 6u);
}

TEST_F(MlflowClientTest, CreationsAreSentOnce) {
  // A lost answer may have created the run: the caller looks it up rather than make a second.
  shared_->refuse = 1;
  EXPECT_THROW(client_.create_run("1", "trial-0", 0, {}), Error);
  EXPECT_EQ(shared_->sent.size(), 1u);
  EXPECT_TRUE(waits_.empty());
}

TEST_F(MlflowClientTest, GetOrCreateExperimentCreatesWhenMissing) {
  shared_->answers.push_back(
      {404, R"({"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "no"})"});
  shared_->answers.push_back({200, R"({"experiment_id": "7"})"});
  EXPECT_EQ(client_.get_or_create_experiment("my study"), "7");
  EXPECT_EQ(shared_->sent[0].target,
            "/api/2.0/mlflow/experiments/get-by-name?experiment_name=my%20study");
  EXPECT_EQ(body(1)["name"], "my study");
  // A deleted experiment is refused with what to do.
  shared_->answers.push_back({200, R"({"experiment": {"experiment_id": "3", "name": "old",
      "lifecycle_stage": "deleted"}})"});
  try {
    client_.get_or_create_experiment("old");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(std::string(e.what()).find("mlflow experiments restore --experiment-id 3"),
              std::string::npos);
  }
}

TEST_F(MlflowClientTest, SearchRunsFollowsPages) {
  shared_->answers.push_back(
      {200, R"({"runs": [{"info": {"run_id": "a"}}], "next_page_token": "t2"})"});
  shared_->answers.push_back({200, R"({"runs": [{"info": {"run_id": "b"}}]})"});
  const std::vector<MlflowRun> runs = client_.search_runs({"1"}, "tags.`tuner.study` = 's'");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].run_id, "b");
  EXPECT_EQ(body(0), Json::parse(R"({"experiment_ids": ["1"], "filter": "tags.`tuner.study` = 's'",
      "run_view_type": "ACTIVE_ONLY", "max_results": 1000})"));
  EXPECT_EQ(body(1)["page_token"], "t2");
}

// A server that hands back a page token it gave before would be asked for pages forever.
TEST_F(MlflowClientTest, ARepeatedPageTokenEndsTheSearchWithAnError) {
  for (int i = 0; i < 3; ++i) {
    shared_->answers.push_back({200, R"({"runs": [], "next_page_token": "same"})"});
  }
  try {
    client_.search_runs({"1"}, "");
    FAIL() << "the search ended";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_NE(std::string(e.what()).find("page token 'same' a second time"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(shared_->sent.size(), 2u);
  shared_->answers.clear();
  shared_->answers.push_back({200, R"({"next_page_token": "a"})"});
  shared_->answers.push_back({200, R"({"next_page_token": "b"})"});
  shared_->answers.push_back({200, R"({"next_page_token": "a"})"});
  EXPECT_THROW(client_.search_model_versions("name = 'm'"), Error);
}

// JSON of another shape than MLflow's (an array, a number where an object belongs) is an Error,
// or fields left empty, never a JSON library exception.
TEST_F(MlflowClientTest, AnswersOfTheWrongJsonShapeAreNotMlflows) {
  shared_->answers.push_back({200, "[1, 2]"});
  try {
    client_.find_experiment("e");
    FAIL() << "an array was read as an experiment";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_NE(std::string(e.what()).find("the answer is not a JSON object"), std::string::npos)
        << e.what();
  }
  shared_->answers.push_back({200, "404"});
  EXPECT_THROW(client_.get_run("r"), Error);
  shared_->answers.push_back({200, R"({"run": {"info": 5, "data": {"metrics": [1, {"key": "m",
      "value": 0.5}]}}})"});
  const MlflowRun run = client_.get_run("r");
  EXPECT_EQ(run.run_id, "");
  EXPECT_EQ(run.metrics.at("m"), 0.5);
  // A start time past the int64 range is no time rather than undefined behaviour.
  shared_->answers.push_back({200, R"({"run": {"info": {"run_id": "r", "start_time": 1e300}}})"});
  EXPECT_EQ(client_.get_run("r").start_time_ms, 0);
}

TEST_F(MlflowClientTest, UploadPutsTheFileUnderTheRunsArtifacts) {
  client_.upload_artifact("mlflow-artifacts:/1/abc/artifacts", "model/engine/model spec.json",
                          "{}");
  EXPECT_EQ(shared_->sent[0].method, "PUT");
  EXPECT_EQ(shared_->sent[0].target,
            "/api/2.0/mlflow-artifacts/artifacts/1/abc/artifacts/model/engine/model%20spec.json");
  EXPECT_EQ(shared_->sent[0].content_type, "application/octet-stream");
  client_.upload_artifact("mlflow-artifacts://host:5000/2/d/artifacts", "model/MLmodel", "x");
  EXPECT_EQ(shared_->sent[1].target,
            "/api/2.0/mlflow-artifacts/artifacts/2/d/artifacts/model/MLmodel");
  // Artifacts the server does not proxy cannot be written through it.
  EXPECT_THROW(client_.upload_artifact("/mlruns/1/abc/artifacts", "model/MLmodel", "x"), Error);
}

TEST_F(MlflowClientTest, RegistryCalls) {
  shared_->answers.push_back(
      {404, R"({"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "no"})"});
  client_.ensure_registered_model("m", "the model", {{"tuner.study", "s"}});
  EXPECT_EQ(shared_->sent[1].target, "/api/2.0/mlflow/registered-models/create");
  EXPECT_EQ(body(1), Json::parse(R"({"name": "m", "description": "the model",
      "tags": [{"key": "tuner.study", "value": "s"}]})"));
  shared_->answers.push_back({200, R"({"model_version": {"name": "m", "version": "1",
      "source": "mlflow-artifacts:/1/r/artifacts/model", "run_id": "r", "status": "READY"}})"});
  const MlflowModelVersion v =
      client_.create_model_version("m", "mlflow-artifacts:/1/r/artifacts/model", "r", "d", {});
  EXPECT_EQ(v.version, "1");
  EXPECT_EQ(body(2)["run_id"], "r");
  client_.set_alias("m", "champion", "1");
  EXPECT_EQ(body(3), Json::parse(R"({"name": "m", "alias": "champion", "version": "1"})"));
  client_.delete_alias("m", "champion");
  EXPECT_EQ(shared_->sent[4].method, "DELETE");
  client_.search_model_versions("name = 'm'");
  EXPECT_EQ(shared_->sent[5].target,
            "/api/2.0/mlflow/model-versions/search?filter=name%20%3D%20%27m%27&max_results=10000");
}

TEST(HttpUrlTest, ParsesAndRefuses) {
  const HttpUrl a = parse_http_url("http://127.0.0.1:5000/");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, "5000");
  EXPECT_EQ(a.base, "");
  EXPECT_EQ(a.text, "http://127.0.0.1:5000");
  const HttpUrl b = parse_http_url("http://[::1]:80/mlflow/");
  EXPECT_EQ(b.host, "::1");
  EXPECT_EQ(b.authority(), "[::1]:80");
  EXPECT_EQ(b.base, "/mlflow");
  EXPECT_EQ(parse_http_url("http://tracking").port, "80");
  for (const char* bad : {"https://x", "file:///tmp/mlruns", "http://:5000", "http://h:0",
                          "http://h:99999", "http://u:p@h:5000"}) {
    EXPECT_THROW(parse_http_url(bad), Error) << bad;
  }
  try {
    parse_http_url("https://mlflow.example.com");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("https is not supported"), std::string::npos);
  }
}

TEST(HttpUrlTest, EscapesAndEncodes) {
  EXPECT_EQ(url_escape("a b/c'd~"), "a%20b%2Fc%27d~");
  EXPECT_EQ(base64("user:pass"), "dXNlcjpwYXNz");
  EXPECT_EQ(base64("ab"), "YWI=");
  EXPECT_EQ(base64("a"), "YQ==");
  EXPECT_EQ(base64(""), "");
}

}  // namespace
}  // namespace tuner::tracking
