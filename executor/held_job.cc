#include "executor/held_job.h"

namespace tuner {

void HeldJob::decide(JobDecision d) {
  decision.store(d);
  if (d != JobDecision::kContinue) stop_source.request_stop();
}

void HeldJob::stop(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (stop_reason_.empty()) stop_reason_ = reason;
  }
  stop_source.request_stop();
}

std::string HeldJob::stop_reason() const {
  std::lock_guard lock(mutex_);
  return stop_reason_;
}

}  // namespace tuner
