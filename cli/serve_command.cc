// tuner serve: one coordinator for the studies of a SQLite file (sweep/serve.h); and tuner
// stop|pause|unpause, which ask it to change a study's state.
#include <iostream>

#include "cli/command.h"
#include "cli/coordinator_security.h"
#include "cli/stop_signals.h"
#include "sweep/serve.h"

namespace tuner::cli {

namespace {

constexpr Flag kServeFlags[] = {
    {"--storage", "PATH", "the SQLite file whose studies it serves", kRequired},
    {"--endpoint", "ENDPOINT", "where executors connect, e.g. tcp://0.0.0.0:5555", kRequired},
    {"--executors", "N", "local executor slots (default 0)"},
    kCoordinatorKeyFlag,
    kExecutorKeysFlag,
    kInsecureFlag,
    {"--verbose", "", "log what the coordinator does"},
    kBusyTimeoutFlag,
};

// tuner stop, pause and unpause.
constexpr Flag kRequestFlags[] = {
    {"--study", "NAME", "the study to change", kRequired},
    {"--storage", "PATH", "the SQLite file tuner serve runs on", kRequired},
};

}  // namespace

int run_serve_command(const std::vector<std::string>& args) {
  Flags flags(args, kServeFlags, "serve");
  ServeOptions options;
  options.storage_path = flags.require("--storage");
  options.endpoint = flags.require("--endpoint");
  options.local_executors = flags.get_int("--executors", 0);
  if (options.local_executors < 0) throw UsageError("--executors must be >= 0");
  options.security = coordinator_security(flags);
  options.verbose = flags.has("--verbose");
  options.busy_timeout = flags.busy_timeout();
  options.log = [](const std::string& line) { std::cerr << line << std::endl; };
  StopSignals signals;
  options.drain = signals.first();
  options.abort = signals.second();
  run_serve(options);
  return signals.first().stop_requested() ? kExitInterrupted : kExitOk;
}

namespace {

int request(const std::vector<std::string>& args, const char* command, ServeState state) {
  Flags flags(args, kRequestFlags, command);
  const std::string study = flags.require("--study");
  const std::string storage = flags.require("--storage");
  if (request_serve_state(storage, study, state, std::chrono::seconds(10))) {
    std::cout << "study '" << study << "': " << to_string(state)
              << (state == ServeState::kStopped ? " (running trials finish first)" : "") << "\n";
    return kExitOk;
  }
  std::cout << "study '" << study << "': asked to be " << to_string(state)
            << "; tuner serve has not taken it up within 10 s\n";
  return kExitInvalidInput;
}

}  // namespace

int run_stop(const std::vector<std::string>& args) {
  return request(args, "stop", ServeState::kStopped);
}
int run_pause(const std::vector<std::string>& args) {
  return request(args, "pause", ServeState::kPaused);
}
int run_unpause(const std::vector<std::string>& args) {
  return request(args, "unpause", ServeState::kActive);
}

extern const Command kServeCommand = {
    .name = "serve",
    .synopsis =
        "serve --storage PATH --endpoint ENDPOINT [--executors N] [--key FILE --executor-keys "
        "PATH]\n"
        "      [--insecure] [--verbose] [--busy-timeout MS]",
    .description =
        "one coordinator for every study of PATH that is submitted\n"
        "to it (tuner sweep FILE --submit), shared fairly by the\n"
        "executors that connect to ENDPOINT (and N local slots);\n"
        "Ctrl-C: finish the running trials and stop; twice: now",
    .flags = kServeFlags,
    .run = &run_serve_command,
};

extern const Command kStopCommand = {
    .name = "stop",
    .synopsis = "stop --study NAME --storage PATH",
    .description =
        "a study on tuner serve starts no new trials and leaves it\n"
        "when its running trials have finished",
    .flags = kRequestFlags,
    .run = &run_stop,
};

extern const Command kPauseCommand = {
    .name = "pause",
    .synopsis = "pause --study NAME --storage PATH",
    .description =
        "a study on tuner serve starts no new trials until unpause;\n"
        "its running trials go on",
    .flags = kRequestFlags,
    .run = &run_pause,
};

extern const Command kUnpauseCommand = {
    .name = "unpause",
    .synopsis = "unpause --study NAME --storage PATH",
    .description = "a paused (or stopped) study on tuner serve goes on",
    .flags = kRequestFlags,
    .run = &run_unpause,
};

}  // namespace tuner::cli
