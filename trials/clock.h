// Clock: the time source of everything that waits or stamps a time (heartbeats, leases, stale
// trial detection, storage datetimes), injected so that tests run on a FakeClock.
//
// Two times, as the standard library has them: steady time (monotonic) for intervals and
// deadlines, system time (UTC) for datetimes that are stored or compared across processes.
// Thread safety: every method of every Clock may be called from several threads at once.
#ifndef TUNER_TRIALS_CLOCK_H_
#define TUNER_TRIALS_CLOCK_H_

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stop_token>

namespace tuner {

class Clock {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;
  using SystemTime = std::chrono::system_clock::time_point;

  virtual ~Clock() = default;

  // Monotonic time, for intervals and deadlines.
  virtual SteadyTime steady_now() = 0;
  // Wall time (UTC), for datetimes that are stored.
  virtual SystemTime system_now() = 0;
  // Blocks until steady_now() >= deadline (true) or `stop` is requested (false, promptly).
  virtual bool sleep_until(SteadyTime deadline, std::stop_token stop) = 0;
};

// The real clocks of the machine. Stateless.
class SystemClock final : public Clock {
 public:
  SteadyTime steady_now() override { return std::chrono::steady_clock::now(); }
  SystemTime system_now() override { return std::chrono::system_clock::now(); }
  bool sleep_until(SteadyTime deadline, std::stop_token stop) override;
};

// The process's shared SystemClock (what a component uses when it is given no clock).
std::shared_ptr<Clock> system_clock();

// A clock for tests: time stands still until advance() moves both times forward together, and
// sleepers wake when their deadline has been reached.
class FakeClock final : public Clock {
 public:
  // Starts at system time `start` (default 2026-01-01 00:00:00 UTC) and an arbitrary steady time.
  explicit FakeClock(SystemTime start = SystemTime(std::chrono::seconds(1767225600)));

  SteadyTime steady_now() override;
  SystemTime system_now() override;
  bool sleep_until(SteadyTime deadline, std::stop_token stop) override;

  // Moves both times forward by `d` (REQUIRES: d >= 0) and wakes the sleepers that are due.
  void advance(std::chrono::nanoseconds d);
  // How many threads are blocked in sleep_until() now (lets a test wait until a sleeper is
  // parked before it advances the clock).
  int sleepers();

 private:
  std::mutex mutex_;
  std::condition_variable_any cv_;
  // State below is protected by mutex_.
  SteadyTime steady_;
  SystemTime system_;
  int sleepers_ = 0;
};

}  // namespace tuner

#endif  // TUNER_TRIALS_CLOCK_H_
