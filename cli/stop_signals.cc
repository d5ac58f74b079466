#include "cli/stop_signals.h"

#include <signal.h>

#include <ctime>

namespace tuner::cli {
namespace {

sigset_t stop_set() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  return signals;
}

// Signals that reached a thread which does not block them: one started before main (OpenBLAS
// starts its pool when the library loads), where neither our mask nor sigtimedwait applies.
std::atomic<int> signals_elsewhere{0};
static_assert(std::atomic<int>::is_always_lock_free, "the handler must be async-signal-safe");

void count_signal(int) { signals_elsewhere.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

StopSignals::StopSignals() {
  sigset_t signals = stop_set();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A handler, not just the mask: without it such a thread would take the signal's default
  // action (or drop it, when the shell started us with SIGINT ignored).
  struct sigaction action {};
  action.sa_handler = count_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  waiter_ = std::jthread([this] {
    sigset_t wait_for = stop_set();
    const timespec tick{0, 100'000'000};
    int seen_elsewhere = 0;
    while (!finished_) {
      int arrived = sigtimedwait(&wait_for, nullptr, &tick) > 0 ? 1 : 0;
      const int elsewhere = signals_elsewhere.load(std::memory_order_relaxed);
      arrived += elsewhere - seen_elsewhere;
      seen_elsewhere = elsewhere;
      for (; arrived > 0; --arrived) {
        if (first_.stop_requested()) {
          second_.request_stop();
        } else {
          first_.request_stop();
        }
      }
    }
  });
}

StopSignals::~StopSignals() {
  finished_ = true;
  waiter_.join();
}

}  // namespace tuner::cli
