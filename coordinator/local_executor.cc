#include "coordinator/local_executor.h"

#include <unistd.h>

#include <chrono>

#include "executor/executor_service.h"

namespace tuner {

LocalExecutor::LocalExecutor(const LocalExecutorOptions& options) {
  ExecutorOptions eo;
  eo.coordinator = options.coordinator;
  if (options.curve_keys) {
    eo.curve_keys = options.curve_keys;
    eo.coordinator_key = options.curve_keys->public_key;
  }
  eo.executor_id = "local-" + std::to_string(::getpid());
  eo.slots = options.slots;
  eo.prefetch = options.prefetch;
  eo.gpus = options.gpus;
  eo.log_dir = options.log_dir;
  eo.stop_grace = std::chrono::seconds(5);
  eo.log = options.log;
  thread_ = std::jthread([this, eo, stop = stop_.get_token()] {
    try {
      ExecutorService service(eo);
      service.run(stop);
    } catch (const std::exception& e) {
      std::lock_guard lock(mutex_);
      failure_ = e.what();
    }
  });
}

LocalExecutor::~LocalExecutor() {
  stop_.request_stop();
  if (thread_.joinable()) thread_.join();
}

std::string LocalExecutor::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

}  // namespace tuner
