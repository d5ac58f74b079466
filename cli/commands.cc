// The table of the `tuner` command's subcommands, in help order. Each entry (its synopsis,
// description and flag table) is defined in the command's own file, cli/*_command.cc.
#include "cli/command.h"

namespace tuner::cli {

extern const Command kSweepCommand;
extern const Command kResumeCommand;
extern const Command kServeCommand;
extern const Command kStopCommand;
extern const Command kPauseCommand;
extern const Command kUnpauseCommand;
extern const Command kStatusCommand;
extern const Command kTrialsCommand;
extern const Command kBestCommand;
extern const Command kLogsCommand;
extern const Command kArtifactsCommand;
extern const Command kSpaceCommand;
extern const Command kExecutorCommand;
extern const Command kKeygenCommand;
extern const Command kGpusCommand;
extern const Command kDevicesCommand;
extern const Command kTrialCommand;
extern const Command kReportCommand;
extern const Command kExportCommand;
extern const Command kSyncMlflowCommand;
extern const Command kRegistryCommand;
extern const Command kPredictCommand;
extern const Command kServeModelCommand;
extern const Command kDriftCommand;
// (new commands: declare their entry here)

std::span<const Command> commands() {
  // The entries are constant-initialized, so copying them here is safe at any time.
  static const Command kCommands[] = {
      kSweepCommand,     kResumeCommand,  kServeCommand,      kStopCommand,   kPauseCommand,
      kUnpauseCommand,   kStatusCommand,  kTrialsCommand,     kBestCommand,   kLogsCommand,
      kArtifactsCommand, kSpaceCommand,   kExecutorCommand,   kKeygenCommand, kGpusCommand,
      kDevicesCommand,   kTrialCommand,   kReportCommand,     kExportCommand, kSyncMlflowCommand,
      kRegistryCommand,  kPredictCommand, kServeModelCommand, kDriftCommand,
      // (new commands: add their entry here)
  };
  return kCommands;
}

}  // namespace tuner::cli
