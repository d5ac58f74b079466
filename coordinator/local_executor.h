// LocalExecutor: an ExecutorService on a thread of this process, for the executor slots that
// `tuner sweep` and `tuner serve` start beside their coordinator. Its jobs are child processes,
// so a crashing trial cannot take the process down.
//
// Thread safety: failure() may be called from any thread.
#ifndef TUNER_COORDINATOR_LOCAL_EXECUTOR_H_
#define TUNER_COORDINATOR_LOCAL_EXECUTOR_H_

#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "wire/curve_keys.h"

namespace tuner {

struct LocalExecutorOptions {
  std::string coordinator;  // the endpoint to connect to
  // The coordinator's key pair when it uses CURVE: the local executor connects with it (the
  // coordinator must accept its own public key).
  std::optional<CurveKeyPair> curve_keys;
  int slots = 1;
  int prefetch = 0;  // ExecutorOptions::prefetch
  // ExecutorOptions::gpus: the GPUs offered. Default: every GPU the engine finds.
  std::optional<std::vector<int>> gpus;
  std::string log_dir;  // per-trial logs
  std::function<void(const std::string&)> log;
};

class LocalExecutor {
 public:
  explicit LocalExecutor(const LocalExecutorOptions& options);
  // Stops the executor (its running jobs are stopped) and joins its thread.
  ~LocalExecutor();
  LocalExecutor(const LocalExecutor&) = delete;
  LocalExecutor& operator=(const LocalExecutor&) = delete;

  // Why the executor stopped serving, or empty while it serves.
  std::string failure() const;

 private:
  mutable std::mutex mutex_;
  std::string failure_;
  std::stop_source stop_;
  std::jthread thread_;  // last: joined before the members above go
};

}  // namespace tuner

#endif  // TUNER_COORDINATOR_LOCAL_EXECUTOR_H_
