// tuner executor: serve a coordinator's trials until SIGTERM or SIGINT.
#include <chrono>
#include <cstdint>
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

constexpr Flag kFlags[] = {
    {"--connect", "ENDPOINT", "the coordinator: tcp://HOST:PORT or ipc://PATH", kRequired},
    {"--slots", "N", "trials that run at once (default 1)"},
    {"--prefetch", "P", "trials taken ahead, at most N (default 0)"},
    {"--gpus", "LIST", "GPU indices offered, e.g. 0,1, or none (default: all found)"},
    {"--id", "ID", "this executor's id (default: HOSTNAME-PID)"},
    {"--log-dir", "DIR", "write each trial's log there"},
    {"--keep-files", "", "send no trial files: the coordinator shares this host's file system"},
    {"--files-dir", "DIR", "keep the trials' files there (default: a new folder in /tmp)"},
    {"--max-files-mb", "N", "send at most N MiB of one trial's files (default 1024)"},
    {"--heartbeat-ms", "N", "how often a heartbeat goes to the coordinator"},
    {"--timeout-ms", "N", "reconnect after this long without word from the coordinator"},
    {"--give-up-after-s", "S", "exit after S s without word from it, reconnects and all"},
    {"--stop-grace-ms", "N",
     "a stopped job's time between SIGTERM and SIGKILL unless its job sets stop_grace_s; a "
     "stopped executor says BYE within the longest of this and its jobs' graces"},
    {"--key", "FILE", "this executor's .key file (CURVE; with --coordinator-key)"},
    {"--coordinator-key", "FILE", "the coordinator's .pub file (CURVE; with --key)"},
    {"--rank-host", "HOST", "the address of this host multi-node trials' ranks listen on"},
};

}  // namespace

int run_executor(const std::vector<std::string>& args) {
  Flags flags(args, kFlags, "executor");
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
  // An executor joins from another host: its trials' files go to the coordinator's.
  options.send_files = !flags.has("--keep-files");
  if (!options.send_files && (flags.has("--files-dir") || flags.has("--max-files-mb"))) {
    throw UsageError("--keep-files sends no files: --files-dir and --max-files-mb do not apply");
  }
  if (flags.has("--files-dir")) options.files_dir = flags.get("--files-dir");
  if (flags.has("--max-files-mb")) {
    const int mib = flags.get_int("--max-files-mb", 1024);
    if (mib < 0) throw UsageError("--max-files-mb: " + std::to_string(mib) + " is negative");
    options.max_trial_files_bytes = static_cast<uint64_t>(mib) << 20;
  }
  if (flags.has("--rank-host")) options.rank_host = flags.get("--rank-host");
  using std::chrono::milliseconds;
  options.heartbeat_interval =
      milliseconds(flags.get_int("--heartbeat-ms", int(options.heartbeat_interval.count())));
  options.coordinator_timeout =
      milliseconds(flags.get_int("--timeout-ms", int(options.coordinator_timeout.count())));
  options.stop_grace =
      milliseconds(flags.get_int("--stop-grace-ms", int(options.stop_grace.count())));
  if (flags.has("--give-up-after-s")) {
    const int seconds = flags.get_int("--give-up-after-s", 0);
    if (seconds <= 0) {
      throw UsageError("--give-up-after-s: " + std::to_string(seconds) +
                       " is not a number of "
                       "seconds > 0");
    }
    options.give_up_after = std::chrono::seconds(seconds);
  }

  StopSignals signals;
  ExecutorService service(options);
  service.run(signals.first());
  return kExitOk;
}

extern const Command kExecutorCommand = {
    .name = "executor",
    .synopsis =
        "executor --connect ENDPOINT [--slots N] [--prefetch P] [--gpus LIST] [--id ID]\n"
        "         [--log-dir DIR] [--keep-files] [--files-dir DIR] [--max-files-mb N]\n"
        "         [--heartbeat-ms N] [--timeout-ms N] [--give-up-after-s S]\n"
        "         [--stop-grace-ms N]\n"
        "         [--key FILE --coordinator-key FILE] [--rank-host HOST]",
    .description =
        "serve a coordinator: run its trials on N slots until\n"
        "SIGTERM or SIGINT (its trials then run again elsewhere,\n"
        "from their checkpoints, without costing a retry);\n"
        "reconnects when the coordinator goes away. --prefetch\n"
        "is for trials of a second or less: they start the\n"
        "moment a slot frees. Each trial's log and\n"
        "artifacts folder go to the coordinator's host before its\n"
        "outcome (--keep-files: they stay, for a shared file\n"
        "system). --rank-host defaults to $TUNER_RANK_HOST, else\n"
        "127.0.0.1",
    .flags = kFlags,
    .run = &run_executor,
};

}  // namespace tuner::cli
