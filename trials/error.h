// Typed errors that cross module boundaries.
//
// Every fallible public function of the project either returns a value or throws a tuner::Error
// whose code says how the caller may react (the codes follow Abseil's canonical ones) and whose
// message names the thing, the place (a JSON path, a trial number, a file) and what to do.
#ifndef TUNER_TRIALS_ERROR_H_
#define TUNER_TRIALS_ERROR_H_

#include <stdexcept>
#include <string>
#include <string_view>

namespace tuner {

enum class ErrorCode {
  kInvalidArgument,     // the input is wrong: fix the input
  kNotFound,            // the named study, trial or file does not exist
  kAlreadyExists,       // creating something that exists
  kFailedPrecondition,  // the state forbids it (a finished trial, an exhausted grid)
  kOutOfRange,          // a step, index or budget past its end
  kUnavailable,         // transient (a busy database, an unreachable peer): retry the call
  kAborted,             // a conflict: retry the whole operation higher up
  kDataLoss,            // stored data is corrupt or was written by something else
  kInternal,            // a broken invariant of this project: a bug
};

std::string_view to_string(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace tuner

#endif  // TUNER_TRIALS_ERROR_H_
