#include "executor/job_events.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "trials/error.h"

namespace tuner {

JobEvents::JobEvents() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (!fd_.valid()) {
    throw Error(ErrorCode::kUnavailable,
                std::string("executor: cannot create an eventfd: ") + std::strerror(errno));
  }
}

void JobEvents::post(JobEvent event) {
  {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(event));
  }
  wake();
}

void JobEvents::wake() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(fd_.get(), &one, sizeof one);
}

std::deque<JobEvent> JobEvents::take() {
  std::deque<JobEvent> batch;
  std::lock_guard lock(mutex_);
  batch.swap(events_);
  return batch;
}

void JobEvents::clear() {
  std::lock_guard lock(mutex_);
  events_.clear();
}

void JobEvents::drain() {
  uint64_t count;
  [[maybe_unused]] ssize_t n = ::read(fd_.get(), &count, sizeof count);
}

}  // namespace tuner
