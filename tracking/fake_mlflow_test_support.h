// FakeMlflow: an in-memory MLflow tracking server and model registry behind the HttpTransport
// interface, for the unit tests of the client and the syncer. It answers the REST calls the client
// makes as MLflow 3 does (JSON shapes, error codes, duplicate metrics dropped, params that may not
// change, run ids), records every request, and fails on demand (down: no answer at all).
// Only the search filters the client writes are understood.
#ifndef TUNER_TRACKING_FAKE_MLFLOW_TEST_SUPPORT_H_
#define TUNER_TRACKING_FAKE_MLFLOW_TEST_SUPPORT_H_

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tracking/http_transport.h"
#include "trials/error.h"

namespace tuner::tracking::testing {

using Json = nlohmann::json;

struct FakeRun {
  std::string run_id, experiment_id, name, status = "RUNNING", lifecycle = "active";
  int64_t start_time = 0;
  std::optional<int64_t> end_time;
  std::map<std::string, std::string> tags, params;
  // (key, step, timestamp, value) as MLflow's metrics table keys them.
  std::set<std::tuple<std::string, int64_t, int64_t, double>> metrics;
};

struct FakeVersion {
  std::string version, source, run_id, description;
  std::map<std::string, std::string> tags;
};

struct FakeModel {
  std::string description;
  std::map<std::string, std::string> tags, aliases;
  std::vector<FakeVersion> versions;
};

class FakeMlflow {
 public:
  // State: read and changed by tests (under the transport's calls' lock).
  std::map<std::string, std::string> experiments;  // name -> id
  std::set<std::string> deleted_experiments;
  std::map<std::string, FakeRun> runs;           // by id
  std::map<std::string, std::string> artifacts;  // path below the root -> bytes
  std::map<std::string, FakeModel> models;
  std::vector<HttpRequest> requests;
  std::atomic<bool> down = false;  // every call fails without an answer (kUnavailable)
  int fail_next = 0;               // the next N calls answer 503
  int lose_next = 0;               // the next N calls are carried out, and their answers lost
  bool serve_artifacts = true;     // false: runs' artifact URIs are local paths, as without
                                   // `mlflow server --serve-artifacts`
  std::mutex mutex;

  HttpResponse handle(const HttpRequest& r) {
    std::lock_guard lock(mutex);
    requests.push_back(r);
    if (lose_next > 0) {
      --lose_next;
      answer(r);
      throw Error(ErrorCode::kUnavailable, "fake: connection reset");
    }
    return answer(r);
  }

 private:
  HttpResponse answer(const HttpRequest& r) {
    if (down) throw Error(ErrorCode::kUnavailable, "fake: connection refused");
    if (fail_next > 0) {
      --fail_next;
      return error(503, "TEMPORARILY_UNAVAILABLE", "busy");
    }
    const std::string path = r.target.substr(0, r.target.find('?'));
    const std::map<std::string, std::string> q = query(r.target);
    const Json body = r.body.empty() || r.method == "PUT" ? Json::object() : Json::parse(r.body);
    const std::string api = "/api/2.0/mlflow/";
    const std::string artifacts_api = "/api/2.0/mlflow-artifacts/artifacts/";
    if (path.rfind(artifacts_api, 0) == 0 && r.method == "PUT") {
      artifacts[unescape(path.substr(artifacts_api.size()))] = r.body;
      return ok(Json::object());
    }
    const std::string call = r.method + " " + path.substr(api.size());
    if (call == "GET experiments/get-by-name") {
      auto it = experiments.find(q.at("experiment_name"));
      if (it == experiments.end()) return error(404, "RESOURCE_DOES_NOT_EXIST", "no experiment");
      return ok({{"experiment",
                  {{"experiment_id", it->second},
                   {"name", it->first},
                   {"artifact_location", "mlflow-artifacts:/" + it->second},
                   {"lifecycle_stage",
                    deleted_experiments.contains(it->first) ? "deleted" : "active"}}}});
    }
    if (call == "POST experiments/create") {
      const std::string name = body.at("name");
      if (experiments.contains(name)) return error(400, "RESOURCE_ALREADY_EXISTS", "exists");
      const std::string id = std::to_string(experiments.size() + 1);
      experiments[name] = id;
      return ok({{"experiment_id", id}});
    }
    if (call == "POST runs/create") {
      FakeRun run;
      run.run_id = "run" + std::to_string(runs.size() + 1);
      run.experiment_id = body.at("experiment_id");
      run.name = body.value("run_name", "");
      run.start_time = body.value("start_time", int64_t{0});
      for (const Json& t : body.value("tags", Json::array())) run.tags[t["key"]] = t["value"];
      runs[run.run_id] = run;
      return ok({{"run", run_json(run)}});
    }
    if (call == "GET runs/get") {
      auto it = runs.find(q.at("run_id"));
      if (it == runs.end()) return error(404, "RESOURCE_DOES_NOT_EXIST", "no run");
      return ok({{"run", run_json(it->second)}});
    }
    if (call == "POST runs/update") {
      auto it = runs.find(body.at("run_id"));
      if (it == runs.end()) return error(404, "RESOURCE_DOES_NOT_EXIST", "no run");
      it->second.status = body.at("status");
      if (body.contains("end_time")) it->second.end_time = body["end_time"].get<int64_t>();
      return ok({{"run_info", run_json(it->second)["info"]}});
    }
    if (call == "POST runs/log-batch") {
      auto it = runs.find(body.at("run_id"));
      if (it == runs.end()) return error(404, "RESOURCE_DOES_NOT_EXIST", "no run");
      FakeRun& run = it->second;
      if (run.lifecycle != "active") return error(400, "INVALID_PARAMETER_VALUE", "run deleted");
      if (body["metrics"].size() > 1000 || body["params"].size() > 100 ||
          body["tags"].size() > 100 ||
          body["metrics"].size() + body["params"].size() + body["tags"].size() > 1000) {
        return error(400, "INVALID_PARAMETER_VALUE", "batch past the limits");
      }
      for (const Json& p : body["params"]) {
        auto old = run.params.find(p["key"]);
        if (old != run.params.end() && old->second != p["value"]) {
          return error(400, "INVALID_PARAMETER_VALUE", "Changing param values is not allowed");
        }
      }
      for (const Json& p : body["params"]) run.params[p["key"]] = p["value"];
      for (const Json& t : body["tags"]) run.tags[t["key"]] = t["value"];
      for (const Json& m : body["metrics"]) {
        const double v = m["value"].is_string() ? std::nan("") : m["value"].get<double>();
        run.metrics.insert({m["key"], m["step"].get<int64_t>(), m["timestamp"].get<int64_t>(), v});
      }
      return ok(Json::object());
    }
    if (call == "POST runs/search") {
      // The one filter the syncer writes: tags.`KEY` = 'VALUE'.
      static const std::regex kFilter(R"(tags\.`([^`]+)` = '([^']*)')");
      std::smatch m;
      const std::string filter = body.value("filter", "");
      Json out = Json::array();
      const bool matched = std::regex_match(filter, m, kFilter);
      for (const auto& [id, run] : runs) {
        const Json ids = body.value("experiment_ids", Json::array());
        if (std::find(ids.begin(), ids.end(), run.experiment_id) == ids.end()) continue;
        if (run.lifecycle != "active") continue;
        if (matched) {
          auto t = run.tags.find(m[1]);
          if (t == run.tags.end() || t->second != m[2].str()) continue;
        }
        out.push_back(run_json(run));
      }
      return ok({{"runs", out}});
    }
    if (call == "GET metrics/get-history") {
      auto it = runs.find(q.at("run_id"));
      if (it == runs.end()) return error(404, "RESOURCE_DOES_NOT_EXIST", "no run");
      Json out = Json::array();
      for (const auto& [key, step, ts, value] : it->second.metrics) {
        if (key == q.at("metric_key")) {
          out.push_back({{"key", key}, {"value", value}, {"timestamp", ts}, {"step", step}});
        }
      }
      return ok({{"metrics", out}});
    }
    if (call == "GET registered-models/get") {
      auto it = models.find(q.at("name"));
      if (it == models.end()) return error(404, "RESOURCE_DOES_NOT_EXIST", "no model");
      Json aliases = Json::array();
      for (const auto& [a, v] : it->second.aliases)
        aliases.push_back({{"alias", a}, {"version", v}});
      return ok(
          {{"registered_model",
            {{"name", it->first}, {"description", it->second.description}, {"aliases", aliases}}}});
    }
    if (call == "POST registered-models/create") {
      if (models.contains(body.at("name"))) return error(400, "RESOURCE_ALREADY_EXISTS", "exists");
      FakeModel& model = models[body.at("name")];
      model.description = body.value("description", "");
      for (const Json& t : body.value("tags", Json::array())) model.tags[t["key"]] = t["value"];
      return ok({{"registered_model", {{"name", body["name"]}}}});
    }
    if (call == "POST model-versions/create") {
      auto it = models.find(body.at("name"));
      if (it == models.end()) return error(404, "RESOURCE_DOES_NOT_EXIST", "no model");
      const std::string run_id = body.value("run_id", "");
      auto run = runs.find(run_id);
      const std::string source = body.at("source");
      // MLflow: a proxied-artifact source must lie in the run's artifacts.
      if (run == runs.end() || source.rfind("mlflow-artifacts:/" + run->second.experiment_id + "/" +
                                                run_id + "/artifacts",
                                            0) != 0) {
        return error(400, "INVALID_PARAMETER_VALUE", "Invalid model version source");
      }
      FakeVersion v{.version = std::to_string(it->second.versions.size() + 1),
                    .source = source,
                    .run_id = run_id,
                    .description = body.value("description", "")};
      for (const Json& t : body.value("tags", Json::array())) v.tags[t["key"]] = t["value"];
      it->second.versions.push_back(v);
      return ok({{"model_version", version_json(body["name"], v, it->second)}});
    }
    if (call == "GET model-versions/search") {
      static const std::regex kName(R"(name = '([^']*)')");
      std::smatch m;
      const std::string filter = q.at("filter");
      Json out = Json::array();
      if (std::regex_match(filter, m, kName)) {
        if (auto it = models.find(m[1]); it != models.end()) {
          for (const FakeVersion& v : it->second.versions)
            out.push_back(version_json(it->first, v, it->second));
        }
      }
      return ok({{"model_versions", out}});
    }
    if (call == "POST model-versions/set-tag" || call == "PATCH model-versions/update") {
      FakeVersion* v = find_version(body.at("name"), body.at("version"));
      if (v == nullptr) return error(404, "RESOURCE_DOES_NOT_EXIST", "no version");
      if (body.contains("key")) v->tags[body["key"]] = body["value"];
      if (body.contains("description")) v->description = body["description"];
      return ok(Json::object());
    }
    if (call == "POST registered-models/alias") {
      if (find_version(body.at("name"), body.at("version")) == nullptr) {
        return error(404, "RESOURCE_DOES_NOT_EXIST", "no version");
      }
      models[body["name"]].aliases[body["alias"]] = body["version"];
      return ok(Json::object());
    }
    if (call == "DELETE registered-models/alias") {
      auto it = models.find(body.at("name"));
      if (it == models.end() || !it->second.aliases.erase(body.at("alias"))) {
        return error(404, "RESOURCE_DOES_NOT_EXIST", "no alias");
      }
      return ok(Json::object());
    }
    return error(404, "ENDPOINT_NOT_FOUND", "no endpoint " + call);
  }

 public:
  // How many requests went to `endpoint` ("runs/create", "runs/log-batch", ...).
  int count(const std::string& endpoint) {
    std::lock_guard lock(mutex);
    int n = 0;
    for (const HttpRequest& r : requests) n += r.target.find("/" + endpoint) != std::string::npos;
    return n;
  }

 private:
  static HttpResponse ok(const Json& j) { return {200, j.dump()}; }
  static HttpResponse error(int status, const std::string& code, const std::string& message) {
    return {status, Json{{"error_code", code}, {"message", message}}.dump()};
  }
  static std::string unescape(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%' && i + 2 < s.size()) {
        out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        out += s[i];
      }
    }
    return out;
  }
  static std::map<std::string, std::string> query(const std::string& target) {
    std::map<std::string, std::string> q;
    const size_t at = target.find('?');
    if (at == std::string::npos) return q;
    std::string rest = target.substr(at + 1);
    size_t start = 0;
    while (start < rest.size()) {
      size_t end = rest.find('&', start);
      if (end == std::string::npos) end = rest.size();
      const std::string kv = rest.substr(start, end - start);
      const size_t eq = kv.find('=');
      q[unescape(kv.substr(0, eq))] = eq == std::string::npos ? "" : unescape(kv.substr(eq + 1));
      start = end + 1;
    }
    return q;
  }
  static Json kv(const std::map<std::string, std::string>& m) {
    Json out = Json::array();
    for (const auto& [k, v] : m) out.push_back({{"key", k}, {"value", v}});
    return out;
  }
  Json run_json(const FakeRun& run) const {
    Json info = {{"run_id", run.run_id},
                 {"run_uuid", run.run_id},
                 {"experiment_id", run.experiment_id},
                 {"run_name", run.name},
                 {"status", run.status},
                 {"start_time", run.start_time},
                 {"artifact_uri", (serve_artifacts ? "mlflow-artifacts:/" : "/srv/mlruns/") +
                                      run.experiment_id + "/" + run.run_id + "/artifacts"},
                 {"lifecycle_stage", run.lifecycle}};
    if (run.end_time) info["end_time"] = *run.end_time;
    // The latest value of each metric: the highest step, then the latest time, then the value.
    std::map<std::string, std::tuple<int64_t, int64_t, double>> latest;
    for (const auto& [key, step, ts, value] : run.metrics) {
      auto it = latest.find(key);
      if (it == latest.end() || std::make_tuple(step, ts, value) > it->second)
        latest[key] = {step, ts, value};
    }
    Json metrics = Json::array();
    for (const auto& [key, m] : latest) {
      metrics.push_back({{"key", key},
                         {"value", std::get<2>(m)},
                         {"timestamp", std::get<1>(m)},
                         {"step", std::get<0>(m)}});
    }
    return {{"info", info},
            {"data", {{"tags", kv(run.tags)}, {"params", kv(run.params)}, {"metrics", metrics}}}};
  }
  static Json version_json(const std::string& name, const FakeVersion& v, const FakeModel& model) {
    Json aliases = Json::array();
    for (const auto& [a, version] : model.aliases) {
      if (version == v.version) aliases.push_back(a);
    }
    return {{"name", name},       {"version", v.version}, {"source", v.source},
            {"run_id", v.run_id}, {"status", "READY"},    {"description", v.description},
            {"tags", kv(v.tags)}, {"aliases", aliases}};
  }
  FakeVersion* find_version(const std::string& name, const std::string& version) {
    auto it = models.find(name);
    if (it == models.end()) return nullptr;
    for (FakeVersion& v : it->second.versions) {
      if (v.version == version) return &v;
    }
    return nullptr;
  }
};

// A transport to a FakeMlflow (shared: tests read the fake while the client holds this).
class FakeTransport final : public HttpTransport {
 public:
  explicit FakeTransport(std::shared_ptr<FakeMlflow> server) : server_(std::move(server)) {}
  HttpResponse send(const HttpRequest& request) override { return server_->handle(request); }
  const std::string& url() const override { return url_; }

 private:
  std::shared_ptr<FakeMlflow> server_;
  std::string url_ = "http://fake-mlflow:5000";
};

}  // namespace tuner::tracking::testing

#endif  // TUNER_TRACKING_FAKE_MLFLOW_TEST_SUPPORT_H_
