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
inline constexpr int kExitInvalidInput = 1;   // a bad file or value; the message names it
inline constexpr int kExitUsage = 2;          // wrong usage: unknown command or flag
inline constexpr int kExitDrift = 3;          // tuner drift: a statistic past its threshold
inline constexpr int kExitInterrupted = 130;  // stopped by SIGINT/SIGTERM after saving everything

// Wrong usage; main prints the message and exits with kExitUsage.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One flag of a command, declared once in the command's table: the parser accepts what the table
// declares, and `tuner help` prints a line for each entry.
struct Flag {
  std::string_view name;   // "--storage"
  std::string_view value;  // the value's placeholder in help ("PATH"); empty: a switch
  std::string_view help;   // one line: what it does, its default
  // Shown as required in help; the command checks it (Flags::require) where its message belongs.
  bool required = false;

  constexpr bool takes_value() const { return !value.empty(); }
};

inline constexpr bool kRequired = true;

// Flags that several commands share, word for word.
inline constexpr Flag kStorageFlag = {"--storage", "PATH", "the study database, a SQLite file",
                                      kRequired};
inline constexpr Flag kStudyFlag = {"--study", "NAME",
                                    "the study's name; 'tuner status' lists them", kRequired};
// Read by Flags::busy_timeout.
inline constexpr Flag kBusyTimeoutFlag = {
    "--busy-timeout", "MS", "how long a write waits for another process's lock (5000)"};

struct Command {
  std::string_view name;
  // The synopsis line(s) as `tuner help` prints them ("best --storage PATH --study NAME
  // [--json]"); continuation lines start with their own indentation.
  std::string_view synopsis;
  // What it does: lines separated by '\n', printed under the synopsis in the description column.
  std::string_view description;
  std::span<const Flag> flags;  // every flag the command accepts
  int (*run)(const std::vector<std::string>& args);
};

// Every command, in the order `tuner help` lists them.
std::span<const Command> commands();

// A command's entry in `tuner help`: its synopsis, its description, then one line per flag of
// its table ("--storage PATH" and the flag's help, "(required)" for a required one).
std::string command_help(const Command& command);

// Whether a command takes positional arguments (besides its flags).
enum class Positional { kRefused, kAccepted };

// Parsed `--flag value` pairs and `--switch`es of one command line.
// Thread-compatible: const methods may be called concurrently.
class Flags {
 public:
  // Every argument that starts with '-' must be a flag of `table` (one that takes a value takes
  // the next argument); anything else is a UsageError naming the command and the argument.
  // Positional arguments are refused unless `positional` is kAccepted; then positional() holds
  // them in order. A flag given twice keeps its last value.
  // REQUIRES: `table` outlives this object and names each flag once.
  Flags(const std::vector<std::string>& args, std::span<const Flag> table, std::string_view command,
        Positional positional = Positional::kRefused);

  // The accessors below take a flag of the table; any other is a programming error
  // (std::logic_error naming the command and the flag).
  bool has(std::string_view flag) const;
  // The value, or `fallback` when the flag was not given.
  std::string get(std::string_view flag, const std::string& fallback = "") const;
  // The value as an integer (UsageError naming the flag when it is not one).
  int get_int(std::string_view flag, int fallback) const;
  // The value as a number (UsageError naming the flag when it is not one).
  double get_double(std::string_view flag, double fallback) const;
  // --busy-timeout MS (> 0), when given.
  std::optional<std::chrono::milliseconds> busy_timeout() const;
  // Throws UsageError("tuner COMMAND: FLAG is required (hint)") when absent.
  std::string require(std::string_view flag, std::string_view hint) const;
  // The same with the flag's help line as the hint.
  std::string require(std::string_view flag) const;

  const std::vector<std::string>& positional() const { return positional_; }

 private:
  // The flag's entry in the table; logic_error when it has none.
  const Flag& declared(std::string_view flag) const;
  // The flag's value when given (nullptr when not); logic_error when it is not in the table.
  const std::string* find(std::string_view flag) const;

  // Constant after construction.
  std::string command_;
  std::span<const Flag> table_;
  std::map<std::string, std::string, std::less<>> values_;  // switches map to ""
  std::vector<std::string> positional_;
};

}  // namespace tuner::cli

#endif  // TUNER_CLI_COMMAND_H_
