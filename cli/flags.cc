#include <algorithm>
#include <stdexcept>
#include <string>

#include "cli/command.h"
#include "trials/json_reader.h"

namespace tuner::cli {

namespace {

const Flag* find_flag(std::span<const Flag> table, std::string_view name) {
  auto it = std::find_if(table.begin(), table.end(), [&](const Flag& f) { return f.name == name; });
  return it == table.end() ? nullptr : &*it;
}

}  // namespace

Flags::Flags(const std::vector<std::string>& args, std::span<const Flag> table,
             std::string_view command, Positional positional)
    : command_(command), table_(table) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (const Flag* flag = find_flag(table_, arg)) {
      if (!flag->takes_value()) {
        values_[arg] = "";
        continue;
      }
      if (i + 1 >= args.size())
        throw UsageError("tuner " + command_ + ": " + arg + " needs a value");
      values_[arg] = args[++i];
    } else if (arg.starts_with("-") || positional == Positional::kRefused) {
      // A mistyped flag gets the command's nearest one (`--executor`: "--executors").
      std::vector<std::string> names;
      for (const Flag& f : table_) names.emplace_back(f.name);
      const std::string hint = arg.starts_with("-") ? did_you_mean(arg, names) : std::string();
      throw UsageError("tuner " + command_ + ": unknown " +
                       (arg.starts_with("-") ? "flag '" : "argument '") + arg + "'" + hint +
                       "; see 'tuner help'");
    } else {
      positional_.push_back(arg);
    }
  }
}

const Flag& Flags::declared(std::string_view flag) const {
  const Flag* entry = find_flag(table_, flag);
  if (entry == nullptr) {
    throw std::logic_error("tuner " + command_ + ": " + std::string(flag) +
                           " is not in the command's flag table");
  }
  return *entry;
}

const std::string* Flags::find(std::string_view flag) const {
  declared(flag);
  auto it = values_.find(flag);
  return it == values_.end() ? nullptr : &it->second;
}

bool Flags::has(std::string_view flag) const { return find(flag) != nullptr; }

std::string Flags::get(std::string_view flag, const std::string& fallback) const {
  const std::string* value = find(flag);
  return value == nullptr ? fallback : *value;
}

std::optional<std::chrono::milliseconds> Flags::busy_timeout() const {
  if (!has("--busy-timeout")) return std::nullopt;
  const int ms = get_int("--busy-timeout", 0);
  if (ms <= 0) throw UsageError("--busy-timeout must be a number of milliseconds > 0");
  return std::chrono::milliseconds(ms);
}

int Flags::get_int(std::string_view flag, int fallback) const {
  const std::string* value = find(flag);
  if (value == nullptr) return fallback;
  try {
    size_t used = 0;
    const int n = std::stoi(*value, &used);
    if (used == value->size()) return n;
  } catch (const std::exception&) {
  }
  throw UsageError("tuner " + command_ + ": " + std::string(flag) + ": '" + *value +
                   "' is not an integer");
}

double Flags::get_double(std::string_view flag, double fallback) const {
  const std::string* value = find(flag);
  if (value == nullptr) return fallback;
  try {
    size_t used = 0;
    const double x = std::stod(*value, &used);
    if (used == value->size()) return x;
  } catch (const std::exception&) {
  }
  throw UsageError("tuner " + command_ + ": " + std::string(flag) + ": '" + *value +
                   "' is not a number");
}

std::string Flags::require(std::string_view flag, std::string_view hint) const {
  const std::string* value = find(flag);
  if (value == nullptr) {
    throw UsageError("tuner " + command_ + ": " + std::string(flag) + " is required (" +
                     std::string(hint) + ")");
  }
  return *value;
}

std::string Flags::require(std::string_view flag) const {
  return require(flag, declared(flag).help);
}

}  // namespace tuner::cli
