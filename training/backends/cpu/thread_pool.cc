#include "training/backends/cpu/thread_pool.h"

#include <stdexcept>

namespace tuner::training {

ThreadPool::ThreadPool(int threads) : size_(threads) {
  if (threads < 1) throw std::invalid_argument("ThreadPool: threads must be >= 1");
  workers_.reserve(threads - 1);
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::dispatch(void* obj, Trampoline call) {
  {
    std::lock_guard lock(mu_);
    obj_ = obj;
    call_ = call;
    pending_ = size_ - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  call(obj, 0);
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    void* obj;
    Trampoline call;
    {
      std::unique_lock lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      obj = obj_;
      call = call_;
    }
    call(obj, index);
    bool last;
    {
      std::lock_guard lock(mu_);
      last = --pending_ == 0;
    }
    if (last) done_cv_.notify_one();
  }
}

}  // namespace tuner::training
