#include "training/distributed/gradient_buckets.h"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace tuner::training {
namespace {

// In-process stand-in for `kWorld` identical ranks: a collective multiplies by kWorld when it is
// waited for, and every start and wait is logged as an offset into the gradient array.
class FakeCommunicator final : public Communicator {
 public:
  static constexpr int kWorld = 3;

  explicit FakeCommunicator(const float* base) : base_(base) {}

  std::string_view name() const override { return "fake"; }
  int rank() const override { return 0; }
  int size() const override { return kWorld; }

  void all_reduce_sum(std::span<float> x) override { all_reduce_sum_async(x)->wait(); }

  std::unique_ptr<PendingCollective> all_reduce_sum_async(std::span<float> x) override {
    started.push_back(x.data() - base_);
    return std::make_unique<Pending>(this, x, fail_start == x.data() - base_);
  }
  void broadcast(std::span<float>, int) override {}
  void barrier() override {}

  std::vector<int64_t> started;  // bucket begins, in start order
  std::vector<int64_t> waited;   // bucket begins, in wait order
  int64_t fail_start = -1;       // the bucket starting here fails

 private:
  class Pending final : public PendingCollective {
   public:
    Pending(FakeCommunicator* comm, std::span<float> x, bool fail)
        : comm_(comm), x_(x), fail_(fail) {}
    ~Pending() override { wait_once(); }
    void wait() override {
      if (wait_once() && fail_) throw CommunicatorError("fake: all_reduce_sum failed");
    }

   private:
    bool wait_once() {
      if (done_) return false;
      done_ = true;
      comm_->waited.push_back(x_.data() - comm_->base_);
      for (float& v : x_) v *= kWorld;
      return true;
    }
    FakeCommunicator* comm_;
    std::span<float> x_;
    bool fail_;
    bool done_ = false;
  };

  const float* base_;
};

using Bucket = GradientBuckets::Bucket;

std::vector<std::pair<int64_t, int64_t>> ranges(std::span<const Bucket> buckets) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const Bucket& b : buckets) out.emplace_back(b.begin, b.end);
  return out;
}

void no_scale(std::span<float>, float) {}

TEST(GradientBuckets, LayoutFollowsParametersFromTheEnd) {
  std::vector<float> grads(120);
  FakeCommunicator comm(grads.data());
  const std::vector<int64_t> offsets = {0, 10, 30, 35, 100};
  // 40 floats a bucket; [35, 100) is bigger and gets a bucket of its own.
  GradientBuckets buckets(grads, offsets, comm, no_scale, 40 * sizeof(float));
  EXPECT_EQ(ranges(buckets.buckets()),
            (std::vector<std::pair<int64_t, int64_t>>{{100, 120}, {35, 100}, {0, 35}}));
  // One huge bucket holds everything.
  GradientBuckets one(grads, offsets, comm, no_scale);
  EXPECT_EQ(ranges(one.buckets()), (std::vector<std::pair<int64_t, int64_t>>{{0, 120}}));
  // Tiny buckets: one parameter each.
  GradientBuckets tiny(grads, offsets, comm, no_scale, 1);
  EXPECT_EQ(ranges(tiny.buckets()), (std::vector<std::pair<int64_t, int64_t>>{
                                        {100, 120}, {35, 100}, {30, 35}, {10, 30}, {0, 10}}));
  std::vector<float> none;
  GradientBuckets empty(none, std::vector<int64_t>{0}, comm, no_scale);
  EXPECT_TRUE(empty.buckets().empty());
}

TEST(GradientBuckets, RandomLayoutsCoverTheArrayAlongParameterBoundaries) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int params = 1 + static_cast<int>(rng() % 20);
    std::vector<int64_t> offsets;
    int64_t n = 0;
    for (int p = 0; p < params; ++p) {
      offsets.push_back(n);
      n += static_cast<int64_t>(rng() % 50);  // zero-sized parameters included
    }
    const int64_t limit = 1 + static_cast<int64_t>(rng() % 80);
    std::vector<float> grads(static_cast<size_t>(n));
    FakeCommunicator comm(grads.data());
    GradientBuckets buckets(grads, offsets, comm, no_scale, limit * sizeof(float));
    int64_t end = n;
    for (const Bucket& b : buckets.buckets()) {
      ASSERT_EQ(b.end, end) << "trial " << trial;
      ASSERT_LT(b.begin, b.end);
      ASSERT_TRUE(std::find(offsets.begin(), offsets.end(), b.begin) != offsets.end())
          << "bucket begins inside a parameter, trial " << trial;
      // Over the limit only when it is one parameter (plus zero-sized ones).
      if (b.end - b.begin > limit) {
        const auto first = std::upper_bound(offsets.begin(), offsets.end(), b.begin);
        ASSERT_TRUE(first == offsets.end() || *first >= b.end) << "trial " << trial;
      }
      end = b.begin;
    }
    ASSERT_EQ(end, 0);
  }
}

TEST(GradientBuckets, BucketsStartAsTheBackwardPassReachesThem) {
  std::vector<float> grads(120, 1.0f);
  FakeCommunicator comm(grads.data());
  const std::vector<int64_t> offsets = {0, 10, 30, 35, 100};
  GradientBuckets buckets(grads, offsets, comm, no_scale, 40 * sizeof(float));
  buckets.begin_step();
  buckets.ready_from(110);  // inside the last bucket: not whole yet
  EXPECT_TRUE(comm.started.empty());
  buckets.ready_from(100);
  EXPECT_EQ(comm.started, (std::vector<int64_t>{100}));
  buckets.ready_from(50);
  buckets.ready_from(120);  // going back is harmless
  EXPECT_EQ(buckets.started(), 1);
  buckets.ready_from(30);
  EXPECT_EQ(comm.started, (std::vector<int64_t>{100, 35}));
  EXPECT_TRUE(comm.waited.empty());  // nothing waited for during the backward pass
  buckets.finish(1.0f);
  EXPECT_EQ(comm.started, (std::vector<int64_t>{100, 35, 0}));
  EXPECT_EQ(comm.waited, (std::vector<int64_t>{100, 35, 0}));
  for (float v : grads) ASSERT_EQ(v, 3.0f);
  // The next step starts over.
  buckets.begin_step();
  buckets.ready_from(0);
  EXPECT_EQ(buckets.started(), 3);
  buckets.finish(1.0f);
  EXPECT_EQ(comm.started.size(), 6u);
}

TEST(GradientBuckets, FinishScalesTheWholeArrayOnceThroughTheBackend) {
  std::vector<float> grads(50, 2.0f);
  FakeCommunicator comm(grads.data());
  std::vector<std::pair<size_t, float>> calls;
  GradientBuckets buckets(
      grads, std::vector<int64_t>{0, 20, 30}, comm,
      [&](std::span<float> g, float s) {
        EXPECT_EQ(g.data(), grads.data());
        calls.emplace_back(g.size(), s);
        for (float& v : g) v *= s;
      },
      16 * sizeof(float));
  buckets.begin_step();
  buckets.finish(0.25f);
  EXPECT_EQ(calls, (std::vector<std::pair<size_t, float>>{{50, 0.25f}}));
  for (float v : grads) ASSERT_EQ(v, 1.5f);  // 2 * 3 ranks / 4
  buckets.begin_step();
  buckets.finish(1.0f);  // no scaling to do
  EXPECT_EQ(calls.size(), 1u);
}

TEST(GradientBuckets, AFailedBucketFailsFinishAfterWaitingForAll) {
  std::vector<float> grads(30, 1.0f);
  FakeCommunicator comm(grads.data());
  comm.fail_start = 10;
  bool scaled = false;
  GradientBuckets buckets(
      grads, std::vector<int64_t>{0, 10, 20}, comm, [&](std::span<float>, float) { scaled = true; },
      10 * sizeof(float));
  buckets.begin_step();
  buckets.ready_from(20);
  EXPECT_THROW(buckets.finish(0.5f), CommunicatorError);
  EXPECT_EQ(comm.waited, (std::vector<int64_t>{20, 10, 0}));
  EXPECT_FALSE(scaled);
  buckets.begin_step();  // the failed step is over
  comm.fail_start = -1;
  buckets.finish(1.0f);
}

TEST(GradientBuckets, MisuseIsRejected) {
  std::vector<float> grads(10);
  FakeCommunicator comm(grads.data());
  EXPECT_THROW(GradientBuckets(grads, std::vector<int64_t>{1, 5}, comm, no_scale),
               std::invalid_argument);
  EXPECT_THROW(GradientBuckets(grads, std::vector<int64_t>{0, 5, 4}, comm, no_scale),
               std::invalid_argument);
  EXPECT_THROW(GradientBuckets(grads, std::vector<int64_t>{0, 11}, comm, no_scale),
               std::invalid_argument);
  EXPECT_THROW(GradientBuckets(grads, std::vector<int64_t>{0}, comm, no_scale, 0),
               std::invalid_argument);
  GradientBuckets buckets(grads, std::vector<int64_t>{0}, comm, no_scale);
  EXPECT_THROW(buckets.ready_from(0), std::logic_error);
  EXPECT_THROW(buckets.finish(1.0f), std::logic_error);
  buckets.begin_step();
  EXPECT_THROW(buckets.begin_step(), std::logic_error);
  buckets.finish(1.0f);
}

}  // namespace
}  // namespace tuner::training
