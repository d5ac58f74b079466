#include "training/distributed/nccl_communicator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "training/distributed/device_floats.h"
#include "training/distributed/gradient_buckets.h"

namespace tuner::training {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

constexpr milliseconds kTimeout{20000};

// The checks one rank runs; values are small integers, so every sum is exact.
void exercise(NcclCommunicator& comm) {
  const int size = comm.size();
  const int rank = comm.rank();
  constexpr size_t kN = 100003;
  DeviceFloats x(comm.device(), kN);
  std::vector<float> host(kN);
  for (size_t i = 0; i < kN; ++i) host[i] = static_cast<float>(rank + static_cast<int>(i % 100));
  x.upload(host);
  comm.all_reduce_sum(x.span());
  std::vector<float> got = x.download();
  for (size_t i = 0; i < kN; ++i) {
    const float want = static_cast<float>(size * (size - 1) / 2 + size * static_cast<int>(i % 100));
    ASSERT_EQ(got[i], want) << "rank " << rank << " element " << i;
  }

  // Async, twice on one buffer and once on another: in issue order.
  DeviceFloats a(comm.device(), 1000);
  DeviceFloats b(comm.device(), 10);
  a.upload(std::vector<float>(1000, 1.0f));
  b.upload(std::vector<float>(10, 2.0f));
  auto p1 = comm.all_reduce_sum_async(a.span());
  auto p2 = comm.all_reduce_sum_async(b.span());
  auto p3 = comm.all_reduce_sum_async(a.span());
  p1->wait();
  p2->wait();
  p3->wait();
  for (float v : a.download()) ASSERT_EQ(v, static_cast<float>(size * size));
  for (float v : b.download()) ASSERT_EQ(v, static_cast<float>(2 * size));

  DeviceFloats c(comm.device(), 77);
  c.upload(std::vector<float>(77, static_cast<float>(rank) + 0.5f));
  comm.broadcast(c.span(), size - 1);
  for (float v : c.download()) ASSERT_EQ(v, static_cast<float>(size - 1) + 0.5f);
  comm.barrier();

  // Gradient buckets over device memory: the mean over ranks.
  DeviceFloats grads(comm.device(), 300);
  grads.upload(std::vector<float>(300, static_cast<float>(2 * rank)));
  GradientBuckets buckets(
      grads.span(), std::vector<int64_t>{0, 100, 150, 290}, comm, [](std::span<float>, float) {},
      64 * sizeof(float));
  buckets.begin_step();
  buckets.ready_from(150);
  buckets.ready_from(0);
  buckets.finish(1.0f);
  for (float v : grads.download()) ASSERT_EQ(v, static_cast<float>(size * (size - 1)));
}

TEST(NcclCommunicator, OneRank) {
  const NcclDevices devices = nccl_visible_devices();
  if (devices.count == 0) GTEST_SKIP() << devices.why_none;
  const std::string id = nccl_new_unique_id();
  ASSERT_EQ(id.size(), 256u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  NcclCommunicator comm(0, 1, id, 0, kTimeout);
  EXPECT_EQ(comm.name(), "nccl");
  exercise(comm);
}

TEST(NcclCommunicator, OneRankPerVisibleGpu) {
  const NcclDevices devices = nccl_visible_devices();
  if (devices.count == 0) GTEST_SKIP() << devices.why_none;
  if (devices.count < 2) GTEST_SKIP() << "one GPU: needs two or more";
  const int size = devices.count;
  const std::string id = nccl_new_unique_id();
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        NcclCommunicator comm(rank, size, id, rank, kTimeout);
        exercise(comm);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << rank << ": " << e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

TEST(NcclCommunicator, MissingPeersTimeOutInsteadOfHanging) {
  const NcclDevices devices = nccl_visible_devices();
  if (devices.count == 0) GTEST_SKIP() << devices.why_none;
  const auto start = std::chrono::steady_clock::now();
  try {
    NcclCommunicator comm(0, 2, nccl_new_unique_id(), 0, milliseconds(1500));
    FAIL() << "rank 0 of 2 joined without rank 1";
  } catch (const CommunicatorError& e) {
    EXPECT_THAT(e.what(), HasSubstr("nccl rank 0 of 2"));
    EXPECT_THAT(e.what(), HasSubstr("init"));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(NcclCommunicator, RejectsAMalformedId) {
  const NcclDevices devices = nccl_visible_devices();
  if (devices.count == 0) GTEST_SKIP() << devices.why_none;
  EXPECT_THROW(NcclCommunicator(0, 1, "abc", 0, kTimeout), std::invalid_argument);
  EXPECT_THROW(NcclCommunicator(0, 1, std::string(256, 'g'), 0, kTimeout), std::invalid_argument);
}

}  // namespace
}  // namespace tuner::training
