#include "trials/clock.h"

namespace tuner {

bool SystemClock::sleep_until(SteadyTime deadline, std::stop_token stop) {
  std::mutex mutex;
  std::condition_variable_any cv;
  std::unique_lock lock(mutex);
  cv.wait_until(lock, stop, deadline, [] { return false; });
  return !stop.stop_requested();
}

std::shared_ptr<Clock> system_clock() {
  static const std::shared_ptr<Clock> clock = std::make_shared<SystemClock>();
  return clock;
}

FakeClock::FakeClock(SystemTime start)
    : steady_(SteadyTime(std::chrono::hours(1000))), system_(start) {}

Clock::SteadyTime FakeClock::steady_now() {
  std::lock_guard lock(mutex_);
  return steady_;
}

Clock::SystemTime FakeClock::system_now() {
  std::lock_guard lock(mutex_);
  return system_;
}

bool FakeClock::sleep_until(SteadyTime deadline, std::stop_token stop) {
  std::unique_lock lock(mutex_);
  ++sleepers_;
  cv_.notify_all();  // sleepers() changed
  bool due = cv_.wait(lock, stop, [&] { return steady_ >= deadline; });
  --sleepers_;
  return due && !stop.stop_requested();
}

void FakeClock::advance(std::chrono::nanoseconds d) {
  {
    std::lock_guard lock(mutex_);
    steady_ += d;
    system_ += std::chrono::duration_cast<SystemTime::duration>(d);
  }
  cv_.notify_all();
}

int FakeClock::sleepers() {
  std::lock_guard lock(mutex_);
  return sleepers_;
}

}  // namespace tuner
