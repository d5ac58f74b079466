// The table of the `tuner` command's subcommands: one line each, in help order.
#include "cli/command.h"

namespace tuner::cli {

int run_space(const std::vector<std::string>& args);
int run_executor(const std::vector<std::string>& args);
int run_gpus(const std::vector<std::string>& args);
// (new commands: declare here)

std::span<const Command> commands() {
  static const Command kCommands[] = {
      {"space",
       "space check FILE                 validate a search-space JSON file and print it back\n"
       "space import --from FORMAT FILE  convert an NNI/Hyperopt search_space.json (FORMAT nni) or\n"
       "                                 the parameters of a W&B sweep (FORMAT wandb) to tuner's\n"
       "                                 JSON form",
       &run_space},
      {"executor",
       "executor --connect ENDPOINT [--slots N] [--gpus LIST] [--id ID] [--log-dir DIR]\n"
       "         [--heartbeat-ms N] [--timeout-ms N] [--stop-grace-ms N]\n"
       "                                 serve a coordinator (tcp://HOST:PORT or ipc://PATH): run\n"
       "                                 its trials on N slots (default 1), offering the GPUs in\n"
       "                                 LIST (comma-separated indices, \"none\"; default: all\n"
       "                                 found), until SIGTERM or SIGINT; reconnects when the\n"
       "                                 coordinator goes away",
       &run_executor},
      {"gpus", "gpus                             list the GPUs this build can use", &run_gpus},
      // (new commands: add their entry here)
  };
  return kCommands;
}

}  // namespace tuner::cli
