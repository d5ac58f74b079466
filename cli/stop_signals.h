// SIGINT and SIGTERM as a std::stop_source, for long-running commands (executor, sweep): the
// signals are blocked in every thread we start and waited for by one thread of their own, so no
// handler runs inside our code, and child jobs start with a clean signal mask (CommandJob). A
// thread that a library started before main (OpenBLAS's pool) does not block them: there a
// handler only counts them for the waiting thread.
#ifndef TUNER_CLI_STOP_SIGNALS_H_
#define TUNER_CLI_STOP_SIGNALS_H_

#include <atomic>
#include <stop_token>
#include <thread>

namespace tuner::cli {

// Thread safety: construct on the main thread before starting any other thread.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Requested at the first signal.
  std::stop_token first() const { return first_.get_token(); }
  // Requested at the second signal (stop at once, still consistently).
  std::stop_token second() const { return second_.get_token(); }

 private:
  std::stop_source first_, second_;
  std::atomic<bool> finished_{false};
  std::jthread waiter_;
};

}  // namespace tuner::cli

#endif  // TUNER_CLI_STOP_SIGNALS_H_
