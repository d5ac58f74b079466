// The project's one meaning of `Json`: nlohmann::ordered_json, a JSON value whose objects keep the
// order their keys were written in, so that a file saved after loading reads as it was written.
//
// This header only declares the type (nlohmann/json_fwd.hpp); a .cc that builds, reads or dumps
// values includes <nlohmann/json.hpp> as well. Code that wants nlohmann's sorted objects (the wire
// protocol, the job parsers: faster lookups, key order irrelevant) names `nlohmann::json` in full,
// so that `Json` never means two types.
#ifndef TUNER_TRIALS_JSON_H_
#define TUNER_TRIALS_JSON_H_

#include <nlohmann/json_fwd.hpp>

namespace tuner {

using Json = nlohmann::ordered_json;

}  // namespace tuner

#endif  // TUNER_TRIALS_JSON_H_
