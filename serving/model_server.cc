#include "serving/model_server.h"

#include "serving/scoring_protocol.h"
#include "training/export/onnx_export.h"
#include "trials/error.h"

#ifndef TUNER_VERSION
#define TUNER_VERSION "unknown"
#endif

namespace tuner::serving {

namespace {

using Clock = std::chrono::steady_clock;

HttpReply text_reply(int status, std::string body, std::string content_type = "text/plain") {
  HttpReply reply;
  reply.status = status;
  reply.content_type = std::move(content_type);
  reply.body = std::move(body);
  return reply;
}

// MLflow's error codes for the statuses this server answers with.
const char* error_code_of(int status) {
  switch (status) {
    case 400:
      return "BAD_REQUEST";
    case 404:
      return "ENDPOINT_NOT_FOUND";
    case 405:
      return "BAD_REQUEST";
    case 413:
      return "BAD_REQUEST";
    case 415:
      return "BAD_REQUEST";
    default:
      return "INTERNAL_ERROR";
  }
}

void add_model_headers(HttpReply& reply, const LoadedModel& model) {
  reply.headers.emplace_back("X-Tuner-Model", model.name);
  reply.headers.emplace_back("X-Tuner-Model-Version", model.version_text());
}

}  // namespace

ModelServer::ModelServer(std::unique_ptr<ModelHolder> holder, ModelServerOptions options)
    : options_(std::move(options)), holder_(std::move(holder)) {
  if (options_.reload_interval.count() <= 0) {
    throw Error(ErrorCode::kInvalidArgument, "the reload interval must be > 0");
  }
  const std::shared_ptr<LoadedModel> model = holder_->current();
  metrics_.set_model(model->name, model->version);
  if (options_.log) {
    log_ = std::make_unique<RequestLog>(
        *options_.log, [this](LogOutcome outcome) { metrics_.record_logged(outcome); });
  }
  batcher_ = std::make_unique<MicroBatcher>(
      options_.batching,
      [this](int64_t rows, int64_t requests) { metrics_.record_batch(rows, requests); });
  if (holder_->can_move()) watcher_ = std::thread([this] { watch(); });
  try {
    http_ =
        std::make_unique<HttpServer>(options_.http, [this](HttpRequestIn request, Respond respond) {
          handle(std::move(request), std::move(respond));
        });
  } catch (...) {
    stop();
    throw;
  }
}

ModelServer::~ModelServer() { stop(); }

void ModelServer::stop(std::chrono::milliseconds grace) {
  if (http_) http_->stop(grace);
  {
    std::lock_guard<std::mutex> lock(watch_mutex_);
    stopping_ = true;
  }
  watch_wake_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  batcher_.reset();  // answers what it holds; replies past the grace are not written
  log_.reset();
}

void ModelServer::watch() {
  std::string last_failure;
  std::unique_lock<std::mutex> lock(watch_mutex_);
  while (!watch_wake_.wait_for(lock, options_.reload_interval, [this] { return stopping_; })) {
    lock.unlock();
    const std::shared_ptr<LoadedModel> before = holder_->current();
    try {
      if (const std::shared_ptr<LoadedModel> now = holder_->reload()) {
        metrics_.set_model(now->name, now->version);
        metrics_.record_reload(true);
        last_failure.clear();
        if (options_.say) {
          options_.say("now serving " + now->name + " version " + now->version_text() + " (" +
                       holder_->spec() + "; was version " + before->version_text() + ")");
        }
      }
    } catch (const std::exception& e) {
      metrics_.record_reload(false);
      if (options_.say && e.what() != last_failure) {
        options_.say("cannot reload " + holder_->spec() + ": " + e.what() +
                     "; still serving version " + before->version_text());
      }
      last_failure = e.what();
    }
    lock.lock();
  }
}

void ModelServer::handle(HttpRequestIn request, Respond respond) {
  const std::string path = request.target.substr(0, request.target.find('?'));
  const bool get = request.method == "GET";
  auto answer = [&](HttpReply reply) {
    metrics_.record_request(path, reply.status);
    respond(std::move(reply));
  };
  if (path == "/invocations") {
    if (request.method == "POST") return invocations(std::move(request), std::move(respond));
  } else if (path == "/ping" || path == "/health") {
    if (get) return answer(text_reply(200, "\n"));
  } else if (path == "/version") {
    if (get) return answer(text_reply(200, TUNER_VERSION "\n"));
  } else if (path == "/metrics") {
    if (get)
      return answer(text_reply(200, metrics_.prometheus_text(), "text/plain; version=0.0.4"));
  } else {
    metrics_.record_error(error_code_of(404));
    return answer(text_reply(
        404,
        format_error(error_code_of(404), "no endpoint " + path +
                                             ": POST /invocations, GET /ping, /health, /version, "
                                             "/metrics"),
        "application/json"));
  }
  metrics_.record_error(error_code_of(405));
  answer(text_reply(405,
                    format_error(error_code_of(405), request.method + " " + path +
                                                         " is not served (POST /invocations; GET "
                                                         "the others)"),
                    "application/json"));
}

void ModelServer::invocations(HttpRequestIn request, Respond respond) {
  const Clock::time_point arrived = Clock::now();
  const std::shared_ptr<LoadedModel> model = holder_->current();
  auto fail = [this, &respond, &model, arrived](int status, const std::string& message) {
    metrics_.record_error(error_code_of(status));
    metrics_.record_request("/invocations", status,
                            std::chrono::duration<double>(Clock::now() - arrived).count());
    HttpReply reply =
        text_reply(status, format_error(error_code_of(status), message), "application/json");
    add_model_headers(reply, *model);
    respond(std::move(reply));
  };
  ScoringInput input;
  try {
    const std::optional<registry::TableEncoding>& table = model->model.preprocessing().table;
    input =
        parse_scoring_request(request.content_type, request.body, model->model.spec().input,
                              training::kOnnxInputName, options_.limits, table ? &*table : nullptr);
  } catch (const ScoringError& e) {
    return fail(e.status(), e.what());
  }
  request.body.clear();
  request.body.shrink_to_fit();
  std::vector<float> raw;
  if (log_ && log_->sampled()) raw = input.values;
  try {
    model->model.preprocess(input.values);
  } catch (const Error& e) {
    return fail(400, std::string(to_string(input.form)) + ": " + e.what());
  }
  const PayloadForm form = input.form;
  const int64_t rows = input.rows;
  batcher_->submit(
      model, std::move(input.values), rows,
      [this, respond, arrived, form, rows, raw = std::move(raw)](std::exception_ptr error,
                                                                 Prediction prediction) mutable {
        const double seconds = std::chrono::duration<double>(Clock::now() - arrived).count();
        HttpReply reply;
        if (error) {
          std::string message = "the model failed";
          try {
            std::rethrow_exception(error);
          } catch (const std::exception& e) {
            message += std::string(": ") + e.what();
          } catch (...) {
          }
          reply = text_reply(500, format_error(error_code_of(500), message), "application/json");
          metrics_.record_error(error_code_of(500));
        } else {
          // A table's classifier answers its rows' class labels too; a regression's model its
          // values.
          std::vector<std::string> labels;
          const registry::ServedModel& served = prediction.model->model;
          const bool regression = served.preprocessing().regression;
          if (served.preprocessing().table && !regression && rows > 0) {
            const int64_t k = static_cast<int64_t>(prediction.outputs.size()) / rows;
            for (int64_t c = 0; c < k; ++c) labels.push_back(served.class_label(c));
          }
          reply = text_reply(200,
                             format_predictions(form, prediction.outputs, rows,
                                                training::kOnnxOutputName, labels, regression),
                             "application/json");
          if (!raw.empty()) {
            log_->log({std::chrono::system_clock::now(), prediction.model->name,
                       prediction.model->version, rows, std::move(raw),
                       std::move(prediction.outputs)});
          }
        }
        add_model_headers(reply, *prediction.model);
        metrics_.record_request("/invocations", reply.status, seconds);
        respond(std::move(reply));
      });
}

}  // namespace tuner::serving
