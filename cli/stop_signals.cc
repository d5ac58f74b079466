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

}  // namespace

StopSignals::StopSignals() {
  sigset_t signals = stop_set();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  waiter_ = std::jthread([this] {
    sigset_t wait_for = stop_set();
    const timespec tick{0, 100'000'000};
    while (!finished_) {
      if (sigtimedwait(&wait_for, nullptr, &tick) > 0) {
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
