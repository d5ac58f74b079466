// libFuzzer target for the MLflow client's reading of a tracking server's answers
// (tracking/mlflow_client.h): the server is whatever answers at the tracking URI.
//
// The input is a call's number, then "\xff\xfe" and the server's answers, one per part
// (fuzz_input.h's split_parts): an answer is its body, with status 200, or "NNN " and the body
// for status NNN. The server gives its answers in order, then the last one again for every
// further request (a server that always answers the same). The call's number picks one of the
// client's calls (kCalls), made once. Properties checked on every input:
//   1. the call returns or throws tuner::Error, nothing else, and ends (a libFuzzer timeout is a
//      call that asks forever; ASan/UBSan catch memory errors).
// Build and run: scripts/fuzz (docs/testing.md).
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "tracking/http_transport.h"
#include "tracking/mlflow_client.h"
#include "trials/error.h"

namespace {

using tuner::tracking::HttpRequest;
using tuner::tracking::HttpResponse;
using tuner::tracking::MlflowClient;

class ScriptedServer : public tuner::tracking::HttpTransport {
 public:
  explicit ScriptedServer(std::vector<std::string> answers) : answers_(std::move(answers)) {}

  HttpResponse send(const HttpRequest&) override {
    const std::string& text = answers_[std::min(next_, answers_.size() - 1)];
    ++next_;
    const bool has_status = text.size() >= 4 && text[3] == ' ' && std::isdigit(text[0]) &&
                            std::isdigit(text[1]) && std::isdigit(text[2]);
    if (!has_status) return {.status = 200, .body = text};
    return {.status = std::stoi(text.substr(0, 3)), .body = text.substr(4)};
  }
  const std::string& url() const override { return url_; }

 private:
  std::vector<std::string> answers_;
  size_t next_ = 0;
  std::string url_ = "http://127.0.0.1:5000";
};

using Call = void (*)(MlflowClient&);
const Call kCalls[] = {
    [](MlflowClient& c) { c.find_experiment("e"); },
    [](MlflowClient& c) {
      c.create_experiment("e", {{"k", "v"}});
    },
    [](MlflowClient& c) { c.get_or_create_experiment("e"); },
    [](MlflowClient& c) { c.create_run("1", "r", 5, {}); },
    [](MlflowClient& c) { c.get_run("r"); },
    [](MlflowClient& c) { c.update_run("r", tuner::tracking::RunStatus::kFinished, 7); },
    [](MlflowClient& c) {
      c.log_batch("r", {{"m", 0.5, 1, 2}}, {{"p", "1"}}, {});
    },
    [](MlflowClient& c) { c.search_runs({"1"}, "tags.`tuner.study` = 's'"); },
    [](MlflowClient& c) { c.upload_artifact("mlflow-artifacts:/1/r/artifacts", "a/b", "x"); },
    [](MlflowClient& c) { c.find_registered_model("m"); },
    [](MlflowClient& c) { c.ensure_registered_model("m", "d", {}); },
    [](MlflowClient& c) { c.create_model_version("m", "s", "r", "d", {}); },
    [](MlflowClient& c) { c.search_model_versions("name = 'm'"); },
    [](MlflowClient& c) { c.set_alias("m", "a", "1"); },
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> parts = tuner::fuzz::split_parts(data, size);
  if (parts.size() < 2 || parts[0].empty()) return 0;
  const Call call = kCalls[static_cast<unsigned char>(parts[0][0]) % std::size(kCalls)];
  parts.erase(parts.begin());
  tuner::tracking::RetryPolicy retry{.attempts = 3,
                                     .first_wait = std::chrono::milliseconds(0),
                                     .sleep = [](std::chrono::milliseconds) {}};
  MlflowClient client(std::make_unique<ScriptedServer>(std::move(parts)), retry);
  try {
    call(client);
  } catch (const tuner::Error&) {
  }
  return 0;
}
