#include "executor/job_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

namespace tuner {
namespace {

TEST(JobThreadsTest, RunsEveryTaskPostedBeforeItGoes) {
  std::atomic<int> ran{0};
  {
    JobThreads threads(2);
    for (int i = 0; i < 20; ++i) threads.post([&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 20);
}

TEST(JobThreadsTest, UsesAtMostItsSizeOfThreads) {
  std::mutex mutex;
  std::set<std::thread::id> ids;
  {
    JobThreads threads(2);
    for (int i = 0; i < 50; ++i) {
      threads.post([&] {
        std::lock_guard lock(mutex);
        ids.insert(std::this_thread::get_id());
      });
    }
  }
  EXPECT_GE(ids.size(), 1u);
  EXPECT_LE(ids.size(), 2u);
  EXPECT_FALSE(ids.contains(std::this_thread::get_id()));
}

}  // namespace
}  // namespace tuner
