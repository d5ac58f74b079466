#include "trials/error.h"

namespace tuner {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kAlreadyExists:
      return "already exists";
    case ErrorCode::kFailedPrecondition:
      return "failed precondition";
    case ErrorCode::kOutOfRange:
      return "out of range";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kAborted:
      return "aborted";
    case ErrorCode::kDataLoss:
      return "data loss";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "unknown";
}

}  // namespace tuner
