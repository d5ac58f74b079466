// tuner serve-model --model DIR | REGISTRY/NAME[@ALIAS|/VERSION] [--port P] ...: the model server
// (serving/model_server.h, docs/serving.md). Runs until SIGINT or SIGTERM, then stops accepting,
// answers what is in flight (up to --grace-seconds) and exits 0: for a server a signal is the
// normal way to stop.
#include <cmath>
#include <condition_variable>
#include <iostream>
#include <mutex>

#include "cli/command.h"
#include "cli/stop_signals.h"
#include "serving/model_server.h"

namespace tuner::cli {

namespace {

constexpr const char* kName = "serve-model";

constexpr Flag kFlags[] = {
    {"--model", "DIR/MODEL[@ALIAS|/VERSION]",
     "a model directory, or REGISTRY/NAME[@ALIAS|/VERSION]", kRequired},
    {"--host", "H", "the address to listen on (default 127.0.0.1)"},
    {"--port", "P", "the port (default 5000; 0: any free one)"},
    {"--threads", "N", "HTTP threads (default 2)"},
    {"--model-threads", "N", "the engine's threads per forward pass (default 1)"},
    {"--max-batch", "N", "the largest micro-batch, in samples (default 64)"},
    {"--max-wait-ms", "MS", "how long a batch waits for more requests (default 0)"},
    {"--reload-seconds", "S", "how often a moved alias is checked (default 2)"},
    {"--log-dir", "DIR", "log requests there, for tuner drift"},
    {"--log-sample", "F", "the fraction of requests logged (default 1; with --log-dir)"},
    {"--log-max-mb", "MB", "the size of a log file (default 64; with --log-dir)"},
    {"--log-keep", "N", "log files kept (default 10; with --log-dir)"},
    {"--max-body-mb", "MB", "the largest request body (default 64)"},
    {"--max-buffered-mb", "MB", "request bodies held at once, all connections (4x --max-body-mb)"},
    {"--max-json-depth", "N", "the deepest nesting of a JSON body (default 64)"},
    {"--max-json-keys", "N", "the most keys in one JSON object (default 262144)"},
    {"--max-json-values", "N", "the most values in a JSON or CSV body (default 4194304)"},
    {"--grace-seconds", "S", "how long requests in flight may finish at SIGTERM (10)"},
};

// A flag's number: > 0 (>= 0 when zero_allowed) and at most `high`; else a UsageError naming
// the flag and the range.
double number(const Flags& flags, const std::string& flag, double fallback, double high,
              bool zero_allowed = false) {
  const double v = flags.get_double(flag, fallback);
  if (!std::isfinite(v) || v < 0 || (v == 0 && !zero_allowed) || v > high) {
    throw UsageError(std::string("tuner ") + kName + ": " + flag + ": " + flags.get(flag) +
                     " is out of range (" + (zero_allowed ? "0" : "> 0") + " to " +
                     std::to_string(static_cast<long long>(high)) + ")");
  }
  return v;
}

// The same for a count or a port: a whole number (UsageError for "1.5").
int whole_number(const Flags& flags, const std::string& flag, int fallback, int high,
                 bool zero_allowed = false) {
  flags.get_int(flag, fallback);
  return static_cast<int>(number(flags, flag, fallback, high, zero_allowed));
}

}  // namespace

int run_serve_model(const std::vector<std::string>& args) {
  Flags flags(args, kFlags, kName);
  const std::string spec = flags.require("--model");
  serving::ModelServerOptions options;
  options.http.host = flags.get("--host", "127.0.0.1");
  options.http.port = static_cast<uint16_t>(whole_number(flags, "--port", 5000, 65535, true));
  options.http.threads = whole_number(flags, "--threads", 2, 256);
  options.http.max_body_bytes =
      static_cast<uint64_t>(number(flags, "--max-body-mb", 64, 1 << 20) * (1 << 20));
  options.http.max_buffered_bytes = static_cast<uint64_t>(
      number(flags, "--max-buffered-mb",
             4 * (static_cast<double>(options.http.max_body_bytes) / (1 << 20)), 1 << 22) *
      (1 << 20));
  const serving::JsonLimits limits;  // the defaults
  options.limits.max_depth = whole_number(flags, "--max-json-depth", limits.max_depth, 4096);
  options.limits.max_object_keys =
      whole_number(flags, "--max-json-keys", static_cast<int>(limits.max_object_keys), 1 << 30);
  options.limits.max_values =
      whole_number(flags, "--max-json-values", static_cast<int>(limits.max_values), 1 << 30);
  options.batching.max_batch = whole_number(flags, "--max-batch", 64, 1 << 20);
  options.batching.max_wait = std::chrono::microseconds(
      std::llround(number(flags, "--max-wait-ms", 0, 60000, true) * 1000));
  options.reload_interval = std::chrono::milliseconds(
      std::max<long long>(1, std::llround(number(flags, "--reload-seconds", 2, 86400) * 1000)));
  if (flags.has("--log-dir")) {
    serving::RequestLogOptions log;
    log.dir = flags.get("--log-dir");
    log.sample = number(flags, "--log-sample", 1, 1);
    log.max_file_bytes =
        static_cast<uint64_t>(number(flags, "--log-max-mb", 64, 1 << 20) * (1 << 20));
    log.max_files = whole_number(flags, "--log-keep", 10, 1 << 20, true);
    options.log = log;
  } else {
    for (const char* f : {"--log-sample", "--log-max-mb", "--log-keep"}) {
      if (flags.has(f))
        throw UsageError(std::string("tuner ") + kName + ": " + f + " needs --log-dir");
    }
  }
  const auto grace = std::chrono::milliseconds(
      std::llround(number(flags, "--grace-seconds", 10, 3600, true) * 1000));
  options.say = [](const std::string& line) { std::cout << line << std::endl; };

  StopSignals signals;  // before any thread starts
  const int model_threads = whole_number(flags, "--model-threads", 1, 256);
  auto holder = std::make_unique<serving::ModelHolder>(spec, model_threads);
  serving::ModelServer server(std::move(holder), options);
  const auto model = server.model();
  std::cout << "serving " << model->name << " version " << model->version_text() << " ("
            << model->dir.string() << ") on http://" << options.http.host << ":" << server.port()
            << (options.log ? ", logging requests to " + options.log->dir.string() : "")
            << std::endl;

  std::mutex mutex;
  std::condition_variable stopped;
  std::stop_callback wake(signals.first(), [&] {
    { std::lock_guard<std::mutex> lock(mutex); }  // not between the waiter's check and its sleep
    stopped.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mutex);
    stopped.wait(lock, [&] { return signals.first().stop_requested(); });
  }
  std::cout << "stopping: answering the " << server.in_flight() << " request(s) in flight (up to "
            << grace.count() / 1000.0 << " s)" << std::endl;
  server.stop(grace);
  std::cout << "stopped" << std::endl;
  return kExitOk;
}

extern const Command kServeModelCommand = {
    .name = "serve-model",
    .synopsis =
        "serve-model --model DIR/MODEL[@ALIAS|/VERSION] [--host H] [--port P] [--threads N]\n"
        "            [--model-threads N] [--max-batch N] [--max-wait-ms MS] [--reload-seconds S]\n"
        "            [--log-dir DIR [--log-sample F] [--log-max-mb MB] [--log-keep N]]\n"
        "            [--max-body-mb MB] [--max-buffered-mb MB] [--max-json-depth N]\n"
        "            [--max-json-keys N] [--max-json-values N] [--grace-seconds S]",
    .description =
        "serve a model over HTTP with MLflow's scoring protocol\n"
        "(POST /invocations: inputs, instances, dataframe_split,\n"
        "dataframe_records, CSV; GET /ping, /health, /version,\n"
        "/metrics), micro-batching concurrent requests, following\n"
        "an alias that moves. SIGTERM stops it after the requests\n"
        "in flight (docs/serving.md)",
    .flags = kFlags,
    .run = &run_serve_model,
};

}  // namespace tuner::cli
