#include "executor/job_threads.h"

#include <utility>

namespace tuner {

JobThreads::~JobThreads() {
  for (std::jthread& t : threads_) t.request_stop();
  wake_.notify_all();
  threads_.clear();  // joins
}

void JobThreads::post(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  if (static_cast<int>(threads_.size()) < size_) {
    threads_.emplace_back([this](std::stop_token stop) { work(stop); });
  }
  wake_.notify_one();
}

void JobThreads::work(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, stop, [this] { return !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopped, and nothing left to run
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

}  // namespace tuner
