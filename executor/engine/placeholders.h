// Placeholders in an engine job's JSON (internal to executor/): a string that is exactly "{NAME}"
// stands for the trial's value of parameter NAME (engine_placeholder() in job_spec.h is the
// grammar). Here: finding them in a JSON value and substituting a trial's parameters.
//
// Thread safety: pure functions; safe from any thread.
#ifndef TUNER_EXECUTOR_ENGINE_PLACEHOLDERS_H_
#define TUNER_EXECUTOR_ENGINE_PLACEHOLDERS_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "trials/param_value.h"

namespace tuner::engine {

// NAME when `v` is the string "{NAME}"; nullopt for any other value.
std::optional<std::string> placeholder_name(const nlohmann::json& v);

// Whether `v` is a placeholder or holds one at any depth.
bool has_placeholder(const nlohmann::json& v);

// The parameter's value as JSON, keeping its type (1, 1.5, "relu", true).
nlohmann::json param_json(const ParamValue& value);

// `v` with every placeholder replaced by its parameter. `path` is v's JSON path; a placeholder
// whose parameter is missing from `params` is Error(kInvalidArgument) naming its path:
// `job.training.lr: "{lr}": the trial has no parameter 'lr'`.
nlohmann::json substitute(const nlohmann::json& v, const std::string& path, const Params& params);

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_PLACEHOLDERS_H_
