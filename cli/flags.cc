#include <algorithm>
#include <string>

#include "cli/command.h"

namespace tuner::cli {

Flags::Flags(const std::vector<std::string>& args, const std::vector<std::string>& with_value,
             const std::vector<std::string>& switches, std::string_view command,
             std::vector<std::string>* positional)
    : command_(command) {
  auto known = [](const std::vector<std::string>& list, const std::string& flag) {
    return std::find(list.begin(), list.end(), flag) != list.end();
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (known(switches, arg)) {
      values_[arg] = "";
    } else if (known(with_value, arg)) {
      if (i + 1 >= args.size()) throw UsageError("tuner " + command_ + ": " + arg + " needs a value");
      values_[arg] = args[++i];
    } else if (arg.starts_with("-") || positional == nullptr) {
      throw UsageError("tuner " + command_ + ": unknown " +
                       (arg.starts_with("-") ? "flag '" : "argument '") + arg +
                       "'; see 'tuner help'");
    } else {
      positional->push_back(arg);
    }
  }
}

std::string Flags::get(const std::string& flag, const std::string& fallback) const {
  auto it = values_.find(flag);
  return it == values_.end() ? fallback : it->second;
}

std::optional<std::chrono::milliseconds> Flags::busy_timeout() const {
  if (!has("--busy-timeout")) return std::nullopt;
  const int ms = get_int("--busy-timeout", 0);
  if (ms <= 0) throw UsageError("--busy-timeout must be a number of milliseconds > 0");
  return std::chrono::milliseconds(ms);
}

int Flags::get_int(const std::string& flag, int fallback) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  try {
    size_t used = 0;
    const int value = std::stoi(it->second, &used);
    if (used == it->second.size()) return value;
  } catch (const std::exception&) {
  }
  throw UsageError("tuner " + command_ + ": " + flag + ": '" + it->second + "' is not an integer");
}

double Flags::get_double(const std::string& flag, double fallback) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  try {
    size_t used = 0;
    const double value = std::stod(it->second, &used);
    if (used == it->second.size()) return value;
  } catch (const std::exception&) {
  }
  throw UsageError("tuner " + command_ + ": " + flag + ": '" + it->second + "' is not a number");
}

std::string Flags::require(const std::string& flag, std::string_view hint) const {
  auto it = values_.find(flag);
  if (it == values_.end()) {
    throw UsageError("tuner " + command_ + ": " + flag + " is required (" + std::string(hint) + ")");
  }
  return it->second;
}

}  // namespace tuner::cli
