// The JSON form of a trial's parameters, shared by storage attributes and the wire protocol.
//
// A JSON object whose members keep their types: booleans, integers (int64), floats and strings.
// An integer 1 and a float 1.0 stay different ("1" vs "1.0"), and floats are written with the
// shortest text that reads back as the same double, so every finite value round-trips exactly.
#ifndef TUNER_TRIALS_PARAMS_JSON_H_
#define TUNER_TRIALS_PARAMS_JSON_H_

#include <string>
#include <string_view>

#include "trials/param_value.h"

namespace tuner {

// Compact JSON text, members in name order: {"layers":3,"lr":0.001,"opt":"adam","bn":true}.
// Strings must be UTF-8; invalid bytes are written as U+FFFD.
// Throws Error(kInvalidArgument) naming the parameter when a float is NaN or infinite (JSON cannot
// hold them, and no distribution contains them).
std::string params_to_json(const Params& params);

// Parses text written by params_to_json (or any JSON object of such values).
// Throws Error(kInvalidArgument) whose message starts with `where` (e.g. "trial 3: fixed_params"
// or "TRIAL.params") and names the key when the text is not a JSON object, a member is null, an
// array or an object, an integer does not fit in int64, or a float is not finite.
Params params_from_json(std::string_view json, const std::string& where);

}  // namespace tuner

#endif  // TUNER_TRIALS_PARAMS_JSON_H_
