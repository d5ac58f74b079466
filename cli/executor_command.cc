// tuner executor: serve a coordinator's trials until SIGTERM or SIGINT.
#include <chrono>
#include <sstream>

#include "cli/command.h"
#include "cli/stop_signals.h"
#include "executor/executor_service.h"
#include "wire/curve_keys.h"

namespace tuner::cli {
namespace {

std::vector<int> gpu_list(const std::string& text) {
  std::vector<int> gpus;
  if (text == "none") return gpus;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    try {
      size_t used = 0;
      gpus.push_back(std::stoi(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw UsageError("--gpus: '" + item + "' is not a GPU index (give e.g. 0,1 or none)");
    }
  }
  return gpus;
}

}  // namespace

int run_executor(const std::vector<std::string>& args) {
  Flags flags(args,
              {"--connect", "--slots", "--prefetch", "--gpus", "--id", "--log-dir", "--heartbeat-ms",
               "--timeout-ms", "--stop-grace-ms", "--key", "--coordinator-key", "--rank-host"},
              {}, "executor");
  ExecutorOptions options;
  options.coordinator = flags.require("--connect", "e.g. tcp://host:5555");
  options.slots = flags.get_int("--slots", 1);
  options.prefetch = flags.get_int("--prefetch", 0);
  if (options.prefetch < 0 || options.prefetch > options.slots) {
    throw UsageError("--prefetch: " + std::to_string(options.prefetch) +
                     " is not in [0, --slots = " + std::to_string(options.slots) + "]");
  }
  if (flags.has("--gpus")) options.gpus = gpu_list(flags.get("--gpus"));
  if (flags.has("--id")) options.executor_id = flags.get("--id");
  if (flags.has("--key") != flags.has("--coordinator-key")) {
    throw UsageError(
        "--key and --coordinator-key go together: this executor's key pair (a .key file from "
        "'tuner keygen') and the coordinator's public key (its .pub file)");
  }
  if (flags.has("--key")) {
    options.curve_keys = read_curve_secret_key_file(flags.get("--key"));
    options.coordinator_key = read_curve_public_key_file(flags.get("--coordinator-key"));
  }
  if (flags.has("--log-dir")) options.log_dir = flags.get("--log-dir");
  if (flags.has("--rank-host")) options.rank_host = flags.get("--rank-host");
  using std::chrono::milliseconds;
  options.heartbeat_interval =
      milliseconds(flags.get_int("--heartbeat-ms", int(options.heartbeat_interval.count())));
  options.coordinator_timeout =
      milliseconds(flags.get_int("--timeout-ms", int(options.coordinator_timeout.count())));
  options.stop_grace =
      milliseconds(flags.get_int("--stop-grace-ms", int(options.stop_grace.count())));

  StopSignals signals;
  ExecutorService service(options);
  service.run(signals.first());
  return kExitOk;
}

}  // namespace tuner::cli
