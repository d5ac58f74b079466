#include "trials/trial_state.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace tuner {

namespace {
std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}
}  // namespace

std::string_view to_string(TrialState state) {
  switch (state) {
    case TrialState::kRunning:
      return "RUNNING";
    case TrialState::kComplete:
      return "COMPLETE";
    case TrialState::kPruned:
      return "PRUNED";
    case TrialState::kFail:
      return "FAIL";
    case TrialState::kWaiting:
      return "WAITING";
  }
  return "UNKNOWN";
}

std::optional<TrialState> parse_trial_state(std::string_view name) {
  std::string n = lower(name);
  if (n == "running") return TrialState::kRunning;
  if (n == "complete") return TrialState::kComplete;
  if (n == "pruned") return TrialState::kPruned;
  if (n == "fail") return TrialState::kFail;
  if (n == "waiting") return TrialState::kWaiting;
  return std::nullopt;
}

std::string_view to_string(StudyDirection direction) {
  return direction == StudyDirection::kMinimize ? "minimize" : "maximize";
}

}  // namespace tuner
