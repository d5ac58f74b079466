// A fixed pool of worker threads for the CPU backend's kernels.
#ifndef TUNER_TRAINING_BACKENDS_CPU_THREAD_POOL_H_
#define TUNER_TRAINING_BACKENDS_CPU_THREAD_POOL_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace tuner::training {

// Runs one task per thread and waits for all of them; the calling thread runs task 0. Work is
// split statically (parallel_for gives thread t the t-th contiguous chunk), so for a fixed thread
// count every element is always computed by the same thread in the same order: results are
// deterministic. Dispatch allocates nothing. Idle workers, and the caller waiting for them, poll
// for some microseconds before they sleep, since a training step dispatches many short tasks.
// Thread safety: run() and parallel_for() are called by one thread at a time.
class ThreadPool {
 public:
  // REQUIRES: threads >= 1. Starts threads - 1 workers.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return size_; }

  // Calls fn(t) for t in [0, size()), concurrently; returns when all have returned.
  // fn must not throw.
  template <class F>
  void run(F&& fn) {
    if (size_ == 1) {
      fn(0);
      return;
    }
    using Fn = std::remove_reference_t<F>;
    dispatch(const_cast<void*>(static_cast<const void*>(&fn)),
             [](void* obj, int t) { (*static_cast<Fn*>(obj))(t); });
  }

  // Splits [0, n) into size() contiguous chunks and calls fn(begin, end) for each non-empty one.
  // When n < min_per_thread * 2 the whole range runs on the calling thread.
  template <class F>
  void parallel_for(int64_t n, int64_t min_per_thread, F&& fn) {
    if (n <= 0) return;
    if (size_ == 1 || n < 2 * min_per_thread) {
      fn(int64_t{0}, n);
      return;
    }
    const int64_t parts = std::min<int64_t>(size_, n / std::max<int64_t>(min_per_thread, 1));
    run([&](int t) {
      if (t >= parts) return;
      const int64_t begin = n * t / parts, end = n * (t + 1) / parts;
      if (begin < end) fn(begin, end);
    });
  }

 private:
  using Trampoline = void (*)(void*, int);
  void dispatch(void* obj, Trampoline call);
  void worker(int index);

  const int size_;
  std::vector<std::thread> workers_;

  std::mutex mu_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  // Written under mu_; read by polling threads without it. A new generation publishes obj_,
  // call_ and pending_ (release/acquire).
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  // Tasks of the current generation not finished yet (workers only; the caller runs task 0).
  std::atomic<int> pending_{0};
  void* obj_ = nullptr;
  Trampoline call_ = nullptr;
  // State below is protected by mu_.
  int sleeping_workers_ = 0;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_BACKENDS_CPU_THREAD_POOL_H_
