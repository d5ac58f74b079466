// Reading a job's JSON text (internal to executor/): the object itself, and errors that name
// the JSON path. Included only by the job parsers' .cc files, so nlohmann/json stays out of the
// public headers.
#ifndef TUNER_EXECUTOR_JOB_JSON_H_
#define TUNER_EXECUTOR_JOB_JSON_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "trials/error.h"
#include "trials/json_depth.h"

namespace tuner::job_json {

// Error(kInvalidArgument, "<path>: <what>").
[[noreturn]] inline void fail(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, path + ": " + what);
}

// The text parsed as a JSON object; an error naming `where` when it is not valid JSON, holds a
// number past a double's range, or is not an object.
inline nlohmann::json parse_object(std::string_view text, const std::string& where) {
  check_json_depth(text, where);
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail(where, std::string("not valid JSON: ") + e.what());
  } catch (const nlohmann::json::out_of_range& e) {
    fail(where, std::string("a number past a double's range: ") + e.what());
  }
  if (!root.is_object()) fail(where, std::string("expected an object, got ") + root.type_name());
  return root;
}

}  // namespace tuner::job_json

#endif  // TUNER_EXECUTOR_JOB_JSON_H_
