// The `tuner` command: dispatches to the subcommands of cli/commands.cc.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "trials/error.h"

namespace {

void print_usage(std::ostream& out) {
  out << "usage: tuner COMMAND [ARGS]\n\nCommands:\n";
  for (const tuner::cli::Command& c : tuner::cli::commands()) out << tuner::cli::command_help(c);
  out << "  version                          print the version\n"
         "  help                             print this help\n\n"
         "Exit codes: 0 success, 1 invalid input (the message names the file and the JSON path),\n"
         "            2 wrong usage, 3 drift past a threshold (tuner drift), 130 stopped by\n"
         "            Ctrl-C or SIGTERM after saving everything.\n";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tuner::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
      print_usage(args.empty() ? std::cerr : std::cout);
      return args.empty() ? kExitUsage : kExitOk;
    }
    const std::string command = args[0];
    args.erase(args.begin());
    if (command == "version" || command == "--version") {
      std::cout << "tuner " << TUNER_VERSION << "\n";
      return kExitOk;
    }
    for (const Command& c : commands()) {
      if (c.name == command) return c.run(args);
    }
    throw UsageError("tuner: unknown command '" + command + "'; see 'tuner help'");
  } catch (const UsageError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  } catch (const tuner::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitInvalidInput;
  } catch (const std::exception& e) {
    // A defect rather than bad input (a flag a command reads but does not declare, ...): said,
    // not an abort.
    std::cerr << "tuner: internal error: " << e.what() << "\n";
    return kExitInvalidInput;
  }
}
