// CommandRunner: runs a short program (sbatch, squeue, scancel, scontrol) to its end and gives
// back its exit status and output; injected so that tests replace the cluster's commands.
//
// Thread safety: system_command_runner()'s runner may be used from several threads at once.
#ifndef TUNER_LAUNCH_COMMAND_RUNNER_H_
#define TUNER_LAUNCH_COMMAND_RUNNER_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "executor/child_process.h"

namespace tuner {

struct CommandOutput {
  ExitStatus status;
  std::string out;  // what it wrote to stdout
  std::string err;  // what it wrote to stderr
  bool ok() const { return status.exit_code && *status.exit_code == 0; }
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Runs argv (argv[0] looked up in PATH) with this process's environment and waits for it.
  // Throws Error(kNotFound) when the program does not exist, Error(kUnavailable) when it does
  // not end within the runner's timeout (it is killed then).
  virtual CommandOutput run(const std::vector<std::string>& argv) = 0;
};

// Runs the commands as child processes; each is killed after `timeout`. Default 60 s.
std::shared_ptr<CommandRunner> system_command_runner(
    std::chrono::milliseconds timeout = std::chrono::seconds(60));

// argv as one shell-like line, for messages: sbatch --parsable 'a b'.
std::string command_text(const std::vector<std::string>& argv);

}  // namespace tuner

#endif  // TUNER_LAUNCH_COMMAND_RUNNER_H_
