// A stand-alone executor process for the distributed tests (until `tuner executor` exists):
//   test_executor --connect ENDPOINT [--id ID] [--slots N] [--heartbeat-ms N] [--timeout-ms N]
//                 [--stop-grace-ms N] [--log-dir DIR]
// Serves the coordinator until SIGTERM or SIGINT, then stops its jobs, says BYE and exits 0.
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stop_token>
#include <string>
#include <thread>

#include "executor/executor_service.h"
#include "trials/error.h"

namespace {

int usage(const std::string& problem) {
  std::cerr << "test_executor: " << problem
            << "\nusage: test_executor --connect ENDPOINT [--id ID] [--slots N] "
               "[--heartbeat-ms N] [--timeout-ms N] [--stop-grace-ms N] [--log-dir DIR]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  tuner::ExecutorOptions options;
  options.gpus = std::vector<int>{};  // the tests need none
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) return usage("missing value after " + flag);
    std::string value = argv[++i];
    try {
      if (flag == "--connect") {
        options.coordinator = value;
      } else if (flag == "--id") {
        options.executor_id = value;
      } else if (flag == "--slots") {
        options.slots = std::stoi(value);
      } else if (flag == "--heartbeat-ms") {
        options.heartbeat_interval = std::chrono::milliseconds(std::stoi(value));
      } else if (flag == "--timeout-ms") {
        options.coordinator_timeout = std::chrono::milliseconds(std::stoi(value));
      } else if (flag == "--stop-grace-ms") {
        options.stop_grace = std::chrono::milliseconds(std::stoi(value));
      } else if (flag == "--log-dir") {
        options.log_dir = value;
      } else {
        return usage("unknown flag " + flag);
      }
    } catch (const std::exception&) {
      return usage("bad value '" + value + "' for " + flag);
    }
  }

  // SIGTERM and SIGINT are taken by a thread of their own (blocked everywhere else; jobs get a
  // clean signal mask from CommandJob).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::stop_source stop;
  std::atomic<bool> finished{false};
  std::jthread signal_thread([&] {
    timespec tick{0, 100'000'000};
    while (!finished) {
      if (sigtimedwait(&signals, nullptr, &tick) > 0) stop.request_stop();
    }
  });

  try {
    tuner::ExecutorService service(options);
    service.run(stop.get_token());
  } catch (const tuner::Error& e) {
    std::cerr << "test_executor: " << e.what() << "\n";
    finished = true;
    return 1;
  }
  finished = true;
  return 0;
}
