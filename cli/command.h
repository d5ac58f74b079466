// What every subcommand of the `tuner` command shares: its entry in the command table, usage
// errors, exit codes and flag parsing. Each subcommand lives in its own file (cli/*_command.cc)
// and is listed once in commands.cc.
#ifndef TUNER_CLI_COMMAND_H_
#define TUNER_CLI_COMMAND_H_

#include <chrono>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tuner::cli {

// Exit codes of the `tuner` command (documented in `tuner help`).
inline constexpr int kExitOk = 0;
inline constexpr int kExitInvalidInput = 1;  // a bad file or value; the message names it
inline constexpr int kExitUsage = 2;         // wrong usage: unknown command or flag
inline constexpr int kExitDrift = 3;         // tuner drift: a statistic past its threshold
inline constexpr int kExitInterrupted = 130; // stopped by SIGINT/SIGTERM after saving everything

// Wrong usage; main prints the message and exits with kExitUsage.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Command {
  std::string_view name;
  // The help lines: the synopsis first, then what it does, each continuation line indented.
  std::string_view help;
  int (*run)(const std::vector<std::string>& args);
};

// Every command, in the order `tuner help` lists them.
std::span<const Command> commands();

// Parsed `--flag value` pairs and `--switch`es.
class Flags {
 public:
  // Every flag must be in `with_value` (takes the next argument) or `switches` (takes none);
  // anything else is a UsageError naming the command. Positional arguments are refused unless
  // `positional` is non-null, which then receives them in order.
  Flags(const std::vector<std::string>& args, const std::vector<std::string>& with_value,
        const std::vector<std::string>& switches, std::string_view command,
        std::vector<std::string>* positional = nullptr);

  bool has(const std::string& flag) const { return values_.contains(flag); }
  // The value, or `fallback` when the flag was not given.
  std::string get(const std::string& flag, const std::string& fallback = "") const;
  // The value as an integer (UsageError naming the flag when it is not one).
  int get_int(const std::string& flag, int fallback) const;
  // --busy-timeout MS (> 0), when given.
  std::optional<std::chrono::milliseconds> busy_timeout() const;
  double get_double(const std::string& flag, double fallback) const;
  // Throws UsageError("tuner COMMAND: FLAG is required (hint)") when absent.
  std::string require(const std::string& flag, std::string_view hint) const;

 private:
  std::string command_;
  std::map<std::string, std::string> values_;  // switches map to ""
};

}  // namespace tuner::cli

#endif  // TUNER_CLI_COMMAND_H_
