#include "search/schedulers/scheduler.h"

namespace tuner {

std::string_view to_string(Decision decision) {
  switch (decision) {
    case Decision::kContinue:
      return "continue";
    case Decision::kStop:
      return "stop";
    case Decision::kPause:
      return "pause";
  }
  return "unknown";
}

}  // namespace tuner
