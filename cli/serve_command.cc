// tuner serve: one coordinator for the studies of a SQLite file (sweep/serve.h); and tuner
// stop|pause|unpause, which ask it to change a study's state.
#include <iostream>

#include "cli/command.h"
#include "cli/coordinator_security.h"
#include "cli/stop_signals.h"
#include "sweep/serve.h"

namespace tuner::cli {

int run_serve_command(const std::vector<std::string>& args) {
  Flags flags(args,
              {"--storage", "--endpoint", "--executors", "--key", "--executor-keys",
               "--busy-timeout"},
              {"--insecure", "--verbose"}, "serve");
  ServeOptions options;
  options.storage_path = flags.require("--storage", "the SQLite file whose studies it serves");
  options.endpoint = flags.require("--endpoint", "where executors connect, e.g. tcp://0.0.0.0:5555");
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
  Flags flags(args, {"--study", "--storage"}, {}, command);
  const std::string study = flags.require("--study", "the study to change");
  const std::string storage = flags.require("--storage", "the SQLite file tuner serve runs on");
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

}  // namespace tuner::cli
