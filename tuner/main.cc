// The `tuner` command. Search-space tools, the executor, and the machine's GPUs; the sweep,
// resume, status and service commands arrive with the issues that build them.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <sstream>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "executor/executor_service.h"
#include "search/import_nni.h"
#include "search/import_wandb.h"
#include "search/search_space_json.h"
#include "training/device/gpu_inventory.h"
#include "trials/error.h"

namespace {

constexpr char kUsage[] = R"(usage: tuner COMMAND [ARGS]

Commands:
  space check FILE                 validate a search-space JSON file and print it back
  space import --from FORMAT FILE  convert an NNI/Hyperopt search_space.json (FORMAT nni) or the
                                   parameters of a W&B sweep (FORMAT wandb) to tuner's JSON form
  executor --connect ENDPOINT [--slots N] [--gpus LIST] [--id ID] [--log-dir DIR]
           [--heartbeat-ms N] [--timeout-ms N] [--stop-grace-ms N]
                                   serve a coordinator (tcp://HOST:PORT or ipc://PATH): run its
                                   trials on N slots (default 1), offering the GPUs in LIST
                                   (comma-separated indices, "none"; default: all found), until
                                   SIGTERM or SIGINT; reconnects when the coordinator goes away
  gpus                             list the GPUs this build can use
  version                          print the version
  help                             print this help

Exit codes: 0 success, 1 invalid input (the message names the file and the JSON path),
            2 wrong usage.
)";

constexpr int kExitInvalidInput = 1;
constexpr int kExitUsage = 2;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int space_command(const std::vector<std::string>& args) {
  if (args.empty()) throw UsageError("tuner space: expected 'check' or 'import'");
  if (args[0] == "check") {
    if (args.size() != 2) throw UsageError("usage: tuner space check FILE");
    std::cout << tuner::to_json(tuner::load_search_space(args[1]));
    return 0;
  }
  if (args[0] == "import") {
    if (args.size() != 4 || args[1] != "--from") {
      throw UsageError("usage: tuner space import --from nni|wandb FILE");
    }
    const std::string& format = args[2];
    const std::string& path = args[3];
    if (format == "nni") {
      std::cout << tuner::to_json(tuner::load_nni_search_space(path));
    } else if (format == "wandb") {
      std::cout << tuner::to_json(tuner::load_wandb_parameters(path));
    } else {
      throw UsageError("tuner space import: unknown format '" + format + "' (nni or wandb)");
    }
    return 0;
  }
  throw UsageError("tuner space: unknown command '" + args[0] + "' (check or import)");
}

// Reads `--flag value` pairs; every flag must be in `known`.
std::map<std::string, std::string> parse_flags(const std::vector<std::string>& args,
                                               const std::vector<std::string>& known,
                                               const std::string& command) {
  std::map<std::string, std::string> flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (std::find(known.begin(), known.end(), flag) == known.end()) {
      throw UsageError("tuner " + command + ": unknown flag '" + flag + "'; see 'tuner help'");
    }
    if (i + 1 >= args.size()) throw UsageError("tuner " + command + ": " + flag + " needs a value");
    flags[flag] = args[++i];
  }
  return flags;
}

int int_flag(const std::map<std::string, std::string>& flags, const std::string& name,
             int fallback) {
  auto it = flags.find(name);
  if (it == flags.end()) return fallback;
  try {
    size_t used = 0;
    int value = std::stoi(it->second, &used);
    if (used == it->second.size()) return value;
  } catch (const std::exception&) {
  }
  throw UsageError(name + ": '" + it->second + "' is not an integer");
}

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

int executor_command(const std::vector<std::string>& args) {
  auto flags = parse_flags(args,
                           {"--connect", "--slots", "--gpus", "--id", "--log-dir", "--heartbeat-ms",
                            "--timeout-ms", "--stop-grace-ms"},
                           "executor");
  if (!flags.contains("--connect")) {
    throw UsageError("tuner executor: --connect ENDPOINT is required (e.g. tcp://host:5555)");
  }
  tuner::ExecutorOptions options;
  options.coordinator = flags["--connect"];
  options.slots = int_flag(flags, "--slots", 1);
  if (flags.contains("--gpus")) options.gpus = gpu_list(flags["--gpus"]);
  if (flags.contains("--id")) options.executor_id = flags["--id"];
  if (flags.contains("--log-dir")) options.log_dir = flags["--log-dir"];
  using std::chrono::milliseconds;
  options.heartbeat_interval =
      milliseconds(int_flag(flags, "--heartbeat-ms", int(options.heartbeat_interval.count())));
  options.coordinator_timeout =
      milliseconds(int_flag(flags, "--timeout-ms", int(options.coordinator_timeout.count())));
  options.stop_grace =
      milliseconds(int_flag(flags, "--stop-grace-ms", int(options.stop_grace.count())));

  // SIGTERM and SIGINT go to a thread of their own (blocked everywhere else; jobs get a clean
  // signal mask from CommandJob), which asks the service to stop.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::stop_source stop;
  std::atomic<bool> finished{false};
  std::jthread signal_thread([&] {
    timespec tick{0, 100'000'000};
    while (!finished) {
      if (sigtimedwait(&signals, nullptr, &tick) > 0) stop.request_stop();
    }
  });
  struct Finish {
    std::atomic<bool>& flag;
    ~Finish() { flag = true; }
  } finish{finished};
  tuner::ExecutorService service(options);
  service.run(stop.get_token());
  return 0;
}

int gpus_command() {
  std::string why;
  auto gpus = tuner::training::list_gpus(&why);
  if (gpus.empty()) {
    std::cout << "no GPU: " << why << "\n";
    return 0;
  }
  for (const auto& g : gpus) {
    std::cout << g.index << "  " << g.name << "  " << (g.memory_bytes >> 20) << " MiB  sm_"
              << g.compute_capability << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
      std::cout << kUsage;
      return args.empty() ? kExitUsage : 0;
    }
    std::string command = args[0];
    args.erase(args.begin());
    if (command == "version" || command == "--version") {
      std::cout << "tuner " << TUNER_VERSION << "\n";
      return 0;
    }
    if (command == "space") return space_command(args);
    if (command == "gpus") return gpus_command();
    if (command == "executor") return executor_command(args);
    throw UsageError("tuner: unknown command '" + command + "'; see 'tuner help'");
  } catch (const UsageError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  } catch (const tuner::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitInvalidInput;
  }
}
