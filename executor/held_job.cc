#include "executor/held_job.h"

namespace tuner {

void HeldJob::decide(JobDecision d) {
  // A continue answers an earlier report: it does not take back a stop or pause decided since
  // (a later DECISION, or a pause at TRIAL's pause_at_step).
  if (d == JobDecision::kContinue) return;
  decision.store(d);
  stop_source.request_stop();
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

bool HeldJob::wait_for_stop(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return delivered_cv_.wait_for(lock, stop_source.get_token(), timeout, [] { return false; }) ||
         stop_source.stop_requested();
}

void HeldJob::deliver(CheckpointDataMessage data) {
  {
    std::lock_guard lock(mutex_);
    delivered_.push_back(std::move(data));
  }
  delivered_cv_.notify_all();
}

std::optional<CheckpointDataMessage> HeldJob::take_checkpoint_data(
    std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  delivered_cv_.wait_for(lock, stop_source.get_token(), timeout,
                         [this] { return !delivered_.empty(); });
  if (delivered_.empty() || stop_source.stop_requested()) return std::nullopt;
  CheckpointDataMessage data = std::move(delivered_.front());
  delivered_.pop_front();
  return data;
}

}  // namespace tuner
