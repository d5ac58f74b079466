#include "training/backends/cpu/thread_pool.h"

#include <chrono>
#include <stdexcept>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tuner::training {
namespace {

// How long a worker waiting for the next task, or the caller waiting for the workers, polls
// before it sleeps on a condition variable. A training step dispatches one task per op, some a
// few microseconds apart: polling that long saves the wake-up (a futex round trip of several
// microseconds per op) without holding a core for long when the pool goes idle.
constexpr std::chrono::microseconds kSpin{50};

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Polls done() for up to kSpin; true when it turned true.
template <class Done>
bool spin_until(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (done()) return true;
    // The clock is read every 16 polls only. Every other poll yields the core, so that on a
    // machine with more runnable threads than cores the thread being waited for can run.
    if ((i & 15) == 15 && std::chrono::steady_clock::now() > deadline) return false;
    if (i & 1)
      std::this_thread::yield();
    else
      cpu_relax();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) : size_(threads) {
  if (threads < 1) throw std::invalid_argument("ThreadPool: threads must be >= 1");
  workers_.reserve(threads - 1);
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_.store(true, std::memory_order_relaxed);
  }
  start_cv_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::dispatch(void* obj, Trampoline call) {
  bool wake;
  {
    std::lock_guard lock(mu_);
    obj_ = obj;
    call_ = call;
    pending_.store(size_ - 1, std::memory_order_relaxed);
    // Release: a worker that sees the new generation sees obj_, call_ and pending_ too.
    generation_.fetch_add(1, std::memory_order_release);
    wake = sleeping_workers_ > 0;
  }
  if (wake) start_cv_.notify_all();
  call(obj, 0);
  auto done = [this] { return pending_.load(std::memory_order_acquire) == 0; };
  if (spin_until(done)) return;
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, done);
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    auto started = [&] {
      return generation_.load(std::memory_order_acquire) != seen ||
             stop_.load(std::memory_order_relaxed);
    };
    if (!spin_until(started)) {
      std::unique_lock lock(mu_);
      ++sleeping_workers_;
      start_cv_.wait(lock, started);
      --sleeping_workers_;
    }
    if (stop_.load(std::memory_order_relaxed)) return;
    seen = generation_.load(std::memory_order_acquire);
    call_(obj_, index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // The lock orders this notify after the caller's check of done() under it (no lost
      // wake-up); the caller may also have seen pending_ reach 0 while polling.
      std::lock_guard lock(mu_);
      done_cv_.notify_one();
    }
  }
}

}  // namespace tuner::training
