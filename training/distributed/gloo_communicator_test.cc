#include "training/distributed/gloo_communicator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "training/distributed/gradient_buckets.h"

namespace tuner::training {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

// Rendezvous timeout of the tests: generous, since ctest runs other tests beside them.
constexpr milliseconds kTimeout{10000};

// A fresh directory for one test's FileStore, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tuner-gloo-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

GlooOptions options(milliseconds timeout = kTimeout) {
  GlooOptions o;
  o.timeout = timeout;
  return o;
}

// Runs body(comm) on `size` ranks, one thread each, sharing a FileStore directory.
void run_ranks(int size, const std::function<void(GlooCommunicator&)>& body) {
  TempDir dir;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        GlooCommunicator comm(rank, size, dir.path(), options());
        body(comm);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << rank << ": " << e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

class GlooRanks : public ::testing::TestWithParam<int> {};

TEST_P(GlooRanks, AllReduceSumIsExactOnEveryRank) {
  const int size = GetParam();
  for (const size_t n : {size_t{1}, size_t{7}, size_t{1000}, size_t{300001}}) {
    run_ranks(size, [&](GlooCommunicator& comm) {
      EXPECT_EQ(comm.name(), "gloo");
      EXPECT_EQ(comm.size(), size);
      std::vector<float> x(n);
      // Small integers: their sum is exact in any order.
      for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(comm.rank() * 100 + i % 1000);
      comm.all_reduce_sum(x);
      for (size_t i = 0; i < n; ++i) {
        const float want = static_cast<float>(100 * size * (size - 1) / 2 + size * (i % 1000));
        ASSERT_EQ(x[i], want) << "rank " << comm.rank() << " element " << i << " of " << n;
      }
    });
  }
}

TEST_P(GlooRanks, AllReduceSumGivesTheSameBitsOnEveryRank) {
  const int size = GetParam();
  constexpr size_t kN = 10007;
  std::vector<std::vector<float>> results(size);
  run_ranks(size, [&](GlooCommunicator& comm) {
    std::mt19937 rng(1234 + comm.rank());
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(kN);
    for (float& v : x) v = normal(rng) * 1e3f;
    comm.all_reduce_sum(x);
    results[comm.rank()] = x;
  });
  for (int r = 1; r < size; ++r) {
    ASSERT_EQ(results[r].size(), kN);
    EXPECT_EQ(std::memcmp(results[r].data(), results[0].data(), kN * sizeof(float)), 0)
        << "rank " << r << " differs from rank 0";
  }
}

TEST_P(GlooRanks, AsyncCollectivesCompleteInIssueOrder) {
  const int size = GetParam();
  run_ranks(size, [&](GlooCommunicator& comm) {
    // Twice on the same buffer: only one after the other gives size * size.
    std::vector<float> same(257, 1.0f);
    std::vector<std::vector<float>> buckets(6, std::vector<float>(1000));
    for (size_t b = 0; b < buckets.size(); ++b) {
      for (float& v : buckets[b]) v = static_cast<float>(b + 1);
    }
    std::vector<std::unique_ptr<PendingCollective>> pending;
    pending.push_back(comm.all_reduce_sum_async(same));
    for (auto& b : buckets) pending.push_back(comm.all_reduce_sum_async(b));
    pending.push_back(comm.all_reduce_sum_async(same));
    // The issuing thread computes meanwhile.
    double busy = 0;
    for (int i = 0; i < 100000; ++i) busy += i * 1e-9;
    EXPECT_GT(busy, 0);
    // A synchronous collective queues behind the async ones.
    std::vector<float> after(3, 1.0f);
    comm.all_reduce_sum(after);
    EXPECT_EQ(after[0], static_cast<float>(size));
    for (auto& p : pending) p->wait();
    for (float v : same) ASSERT_EQ(v, static_cast<float>(size * size));
    for (size_t b = 0; b < buckets.size(); ++b) {
      for (float v : buckets[b]) ASSERT_EQ(v, static_cast<float>((b + 1) * size));
    }
  });
}

TEST_P(GlooRanks, BroadcastCopiesTheRootsValues) {
  const int size = GetParam();
  run_ranks(size, [&](GlooCommunicator& comm) {
    for (int root : {0, size - 1}) {
      std::vector<float> x(513, static_cast<float>(comm.rank()) + 0.5f);
      comm.broadcast(x, root);
      for (float v : x) ASSERT_EQ(v, static_cast<float>(root) + 0.5f);
    }
    std::vector<float> x(3);
    EXPECT_THROW(comm.broadcast(x, size), std::invalid_argument);
  });
}

TEST_P(GlooRanks, BarrierReturnsOnlyAfterEveryRankArrived) {
  const int size = GetParam();
  std::atomic<int> arrived{0};
  run_ranks(size, [&](GlooCommunicator& comm) {
    std::this_thread::sleep_for(milliseconds(20 * comm.rank()));
    arrived.fetch_add(1);
    comm.barrier();
    EXPECT_EQ(arrived.load(), size);
  });
}

TEST_P(GlooRanks, GradientBucketsAverageAcrossRanks) {
  const int size = GetParam();
  const std::vector<int64_t> offsets = {0, 5, 105, 106, 300};
  run_ranks(size, [&](GlooCommunicator& comm) {
    std::vector<float> grads(310);
    int scale_calls = 0;
    GradientBuckets buckets(
        grads, offsets, comm,
        [&](std::span<float> g, float s) {
          ++scale_calls;
          for (float& v : g) v *= s;
        },
        /*bucket_bytes=*/64 * sizeof(float));
    for (int step = 0; step < 3; ++step) {
      for (size_t i = 0; i < grads.size(); ++i) {
        grads[i] = static_cast<float>(2 * (comm.rank() + step) + static_cast<int>(i % 4));
      }
      buckets.begin_step();
      for (size_t p = offsets.size(); p-- > 0;) buckets.ready_from(offsets[p]);
      buckets.finish(1.0f / static_cast<float>(size));
      for (size_t i = 0; i < grads.size(); ++i) {
        // The mean over ranks of 2 * (rank + step) + i % 4.
        const float want = static_cast<float>(size - 1 + 2 * step + static_cast<int>(i % 4));
        ASSERT_FLOAT_EQ(grads[i], want) << "step " << step << " element " << i;
      }
    }
    EXPECT_EQ(scale_calls, 3);
  });
}

INSTANTIATE_TEST_SUITE_P(, GlooRanks, ::testing::Values(2, 4),
                         [](const auto& p) { return std::to_string(p.param) + "Ranks"; });

TEST(GlooCommunicator, SingleRankIsTheIdentity) {
  TempDir dir;
  GlooCommunicator comm(0, 1, dir.path(), options());
  std::vector<float> x = {1.5f, -2.0f};
  comm.all_reduce_sum(x);
  comm.all_reduce_sum_async(x)->wait();
  comm.broadcast(x, 0);
  comm.barrier();
  EXPECT_EQ(x, (std::vector<float>{1.5f, -2.0f}));
}

// A RendezvousStore in memory, shared by the threads of one test.
class MemoryStore final : public RendezvousStore {
 public:
  void set(const std::string& key, const std::vector<char>& value) override {
    {
      std::lock_guard lock(mu_);
      values_[key] = value;
    }
    cv_.notify_all();
  }
  std::optional<std::vector<char>> get(const std::string& key, milliseconds timeout) override {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return values_.contains(key); })) return std::nullopt;
    return values_.at(key);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<char>> values_;
};

TEST(GlooCommunicator, RendezvousThroughTheCallersStore) {
  auto store = std::make_shared<MemoryStore>();
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 3; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        GlooCommunicator comm(rank, 3, store, options());
        std::vector<float> x(10, 1.0f);
        comm.all_reduce_sum(x);
        EXPECT_EQ(x[9], 3.0f);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << rank << ": " << e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

TEST(GlooCommunicator, RendezvousWithoutPeersTimesOut) {
  TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  try {
    GlooCommunicator comm(0, 2, dir.path(), options(milliseconds(300)));
    FAIL() << "the rendezvous succeeded alone";
  } catch (const CommunicatorError& e) {
    EXPECT_THAT(e.what(), HasSubstr("gloo rank 0 of 2"));
    EXPECT_THAT(e.what(), HasSubstr("rendezvous"));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  auto store = std::make_shared<MemoryStore>();
  EXPECT_THROW(GlooCommunicator(1, 2, store, options(milliseconds(100))), CommunicatorError);
  EXPECT_THROW(GlooCommunicator(2, 2, dir.path(), options()), std::invalid_argument);
}

// Forks rank 1 of 2: it joins the rendezvous and a barrier, then runs `then` and exits. Returns
// its pid. Only async-signal-safe-enough work in the child: it makes its own threads after fork.
pid_t fork_rank_one(const std::filesystem::path& dir, void (*then)()) {
  const pid_t pid = fork();
  if (pid == 0) {
    try {
      GlooCommunicator comm(1, 2, dir, options());
      comm.barrier();
      then();
    } catch (...) {
      _exit(2);
    }
    _exit(1);
  }
  return pid;
}

// Rank 0's side: the barrier with the child, then `op` must fail within a few seconds.
void expect_rank_zero_fails(const std::filesystem::path& dir, const std::string& op_name,
                            const std::function<void(GlooCommunicator&)>& op) {
  GlooCommunicator comm(0, 2, dir, options(milliseconds(1000)));
  comm.barrier();
  const auto start = std::chrono::steady_clock::now();
  try {
    op(comm);
    FAIL() << op_name << " succeeded without rank 1";
  } catch (const CommunicatorError& e) {
    EXPECT_THAT(e.what(), HasSubstr("gloo rank 0 of 2"));
    EXPECT_THAT(e.what(), HasSubstr(op_name));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
  // Broken now: later calls fail at once, naming the first failure.
  std::vector<float> x(4);
  try {
    comm.all_reduce_sum(x);
    FAIL() << "a broken communicator ran a collective";
  } catch (const CommunicatorError& e) {
    EXPECT_THAT(e.what(), HasSubstr("earlier"));
  }
}

void reap(pid_t pid) {
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
}

TEST(GlooCommunicatorDeath, ARankThatDiesMakesTheOthersFail) {
  TempDir dir;
  const pid_t child = fork_rank_one(dir.path(), [] { _exit(1); });
  ASSERT_GT(child, 0);
  expect_rank_zero_fails(dir.path(), "all_reduce_sum of 100000 floats", [](GlooCommunicator& c) {
    std::vector<float> x(100000, 1.0f);
    c.all_reduce_sum(x);
  });
  reap(child);
}

TEST(GlooCommunicatorDeath, ARankThatStallsMakesTheOthersTimeOut) {
  TempDir dir;
  const pid_t child = fork_rank_one(dir.path(), [] { sleep(30); });
  ASSERT_GT(child, 0);
  expect_rank_zero_fails(dir.path(), "all_reduce_sum of 1000 floats", [](GlooCommunicator& c) {
    std::vector<float> x(1000, 1.0f);
    c.all_reduce_sum_async(x)->wait();
  });
  reap(child);
}

TEST(GlooCommunicatorDeath, ADeadRankFailsTheBarrier) {
  TempDir dir;
  const pid_t child = fork_rank_one(dir.path(), [] { _exit(1); });
  ASSERT_GT(child, 0);
  expect_rank_zero_fails(dir.path(), "barrier", [](GlooCommunicator& c) {
    std::this_thread::sleep_for(milliseconds(50));  // let rank 1 be gone
    c.barrier();
  });
  reap(child);
}

}  // namespace
}  // namespace tuner::training
