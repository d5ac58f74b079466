#include "executor/argv_template.h"

#include "trials/error.h"

namespace tuner {

std::string argv_text(const ParamValue& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  return to_string(value);  // unquoted for every non-string value
}

namespace {

// Walks one argv entry: literal text (braces undoubled) goes to `literal`, each {name} to
// `placeholder`. Throws for a stray '}' or an unterminated '{'.
template <typename Literal, typename Placeholder>
void scan(const std::string& arg, size_t index, Literal literal, Placeholder placeholder) {
  auto fail = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument,
                 "argv[" + std::to_string(index) + "] \"" + arg + "\": " + why);
  };
  for (size_t i = 0; i < arg.size(); ++i) {
    const char c = arg[i];
    if (c == '}') {
      if (i + 1 < arg.size() && arg[i + 1] == '}') {
        literal('}');
        ++i;
        continue;
      }
      throw fail("stray '}' at offset " + std::to_string(i) + " (write '}}' for a brace)");
    }
    if (c != '{') {
      literal(c);
      continue;
    }
    if (i + 1 < arg.size() && arg[i + 1] == '{') {
      literal('{');
      ++i;
      continue;
    }
    const size_t close = arg.find('}', i + 1);
    if (close == std::string::npos) {
      throw fail("unterminated '{' at offset " + std::to_string(i) + " (write '{{' for a brace)");
    }
    placeholder(arg.substr(i + 1, close - i - 1), fail);
    i = close;
  }
}

std::string expand_one(const std::string& arg, size_t index, const ArgvValues& values) {
  std::string out;
  scan(
      arg, index, [&](char c) { out += c; },
      [&](const std::string& name, const auto& fail) {
        if (name == "trial_id") {
          out += std::to_string(values.trial_id);
          return;
        }
        if (name == "trial_number") {
          out += std::to_string(values.trial_number);
          return;
        }
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
      });
  return out;
}

}  // namespace

std::string argv_literal(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 16);
  for (char ch : text) {
    out += ch;
    if (ch == '{' || ch == '}') out += ch;
  }
  return out;
}

std::vector<std::string> argv_placeholders(const std::string& arg, size_t index) {
  std::vector<std::string> names;
  scan(
      arg, index, [](char) {},
      [&](const std::string& name, const auto&) {
        if (name != "trial_id" && name != "trial_number") names.push_back(name);
      });
  return names;
}

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
