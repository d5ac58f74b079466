// The argv of a command trial: a template with {name} placeholders, expanded per trial.
//
// Placeholders: {trial_id}, {trial_number} and {PARAM} for each of the trial's parameters (the
// built-in names win over parameters of the same name). "{{" is a literal '{' and "}}" a
// literal '}', as in Python's str.format. Values are written as JSON writes them: integers
// "3", floats with round-trip precision as Python prints them ("0.001", "1e-05", "3.0"), strings
// as they are (unquoted), booleans "true"/"false".
//
// Example: ["python3", "train.py", "--lr", "{lr}", "--layers", "{layers}"]
//       -> ["python3", "train.py", "--lr", "0.001", "--layers", "3"]
//
// Thread safety: pure functions.
#ifndef TUNER_EXECUTOR_ARGV_TEMPLATE_H_
#define TUNER_EXECUTOR_ARGV_TEMPLATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trials/param_value.h"

namespace tuner {

// The values a template may refer to.
struct ArgvValues {
  int64_t trial_id = -1;
  int trial_number = -1;
  const Params* params = nullptr;  // borrowed; null means no parameters
};

// The expanded argv. Throws Error(kInvalidArgument) naming the argv index and the placeholder for
// an unknown name ("argv[3]: unknown placeholder {lr}: the trial has no parameter 'lr'"), an
// unterminated '{', a stray '}', or an empty template or program name.
std::vector<std::string> expand_argv(const std::vector<std::string>& argv_template,
                                     const ArgvValues& values);

// The parameter names that argv entry `arg` (at `index`) refers to, in order, without the
// built-in names: what a sweep checks against its space when it is loaded. Throws
// Error(kInvalidArgument) for an unterminated '{' or a stray '}', as expand_argv does.
std::vector<std::string> argv_placeholders(const std::string& arg, size_t index);

// `text` as an argv entry that expands to itself: every '{' and '}' doubled.
std::string argv_literal(const std::string& text);

// The text a parameter value takes in an argv (see above).
std::string argv_text(const ParamValue& value);

}  // namespace tuner

#endif  // TUNER_EXECUTOR_ARGV_TEMPLATE_H_
