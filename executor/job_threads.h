// JobThreads: the threads that run an executor's trial jobs, at most `size` of them. A thread is
// started with a task when fewer than `size` exist and then kept, so that a trial starts without
// creating a thread (a new thread's stack is page faults and a clone per trial). A task posted
// when every thread is busy waits for the first to be free. Destruction runs the tasks still
// waiting, then joins the threads.
//
// Thread safety: post() and destruction from one thread (the service's loop); the tasks run on
// the pool's threads.
#ifndef TUNER_EXECUTOR_JOB_THREADS_H_
#define TUNER_EXECUTOR_JOB_THREADS_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

namespace tuner {

class JobThreads {
 public:
  // REQUIRES: size >= 1.
  explicit JobThreads(int size) : size_(size) {}
  ~JobThreads();
  JobThreads(const JobThreads&) = delete;
  JobThreads& operator=(const JobThreads&) = delete;

  // Runs `task` on a free thread, or on the first that frees.
  void post(std::function<void()> task);

 private:
  void work(std::stop_token stop);

  // Constant after construction.
  const int size_;

  // State below is protected by mutex_.
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::deque<std::function<void()>> tasks_;

  // The posting thread's. Last: joined first, before the state above goes.
  std::vector<std::jthread> threads_;
};

}  // namespace tuner

#endif  // TUNER_EXECUTOR_JOB_THREADS_H_
