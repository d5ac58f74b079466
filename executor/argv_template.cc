#include "executor/argv_template.h"

#include "trials/error.h"

namespace tuner {

std::string argv_text(const ParamValue& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  return to_string(value);  // unquoted for every non-string value
}

namespace {

std::string expand_one(const std::string& arg, size_t index, const ArgvValues& values) {
  auto fail = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument,
                 "argv[" + std::to_string(index) + "] \"" + arg + "\": " + why);
  };
  std::string out;
  for (size_t i = 0; i < arg.size(); ++i) {
    char c = arg[i];
    if (c == '}') {
      if (i + 1 < arg.size() && arg[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      throw fail("stray '}' at offset " + std::to_string(i) + " (write '}}' for a brace)");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < arg.size() && arg[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = arg.find('}', i + 1);
    if (close == std::string::npos) {
      throw fail("unterminated '{' at offset " + std::to_string(i) + " (write '{{' for a brace)");
    }
    std::string name = arg.substr(i + 1, close - i - 1);
    if (name == "trial_id") {
      out += std::to_string(values.trial_id);
    } else if (name == "trial_number") {
      out += std::to_string(values.trial_number);
    } else {
      const ParamValue* value = nullptr;
      if (values.params) {
        auto it = values.params->find(name);
        if (it != values.params->end()) value = &it->second;
      }
      if (!value) {
        throw fail("unknown placeholder {" + name + "}: the trial has no parameter '" + name +
                   "' (known: trial_id, trial_number and the parameters)");
      }
      out += argv_text(*value);
    }
    i = close;
  }
  return out;
}

}  // namespace

std::vector<std::string> expand_argv(const std::vector<std::string>& argv_template,
                                     const ArgvValues& values) {
  if (argv_template.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "command argv is empty: name a program to run");
  }
  std::vector<std::string> argv;
  argv.reserve(argv_template.size());
  for (size_t i = 0; i < argv_template.size(); ++i) {
    argv.push_back(expand_one(argv_template[i], i, values));
  }
  if (argv[0].empty()) {
    throw Error(ErrorCode::kInvalidArgument, "argv[0]: the program name is empty");
  }
  return argv;
}

}  // namespace tuner
