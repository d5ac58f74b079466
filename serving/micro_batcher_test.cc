#include "serving/micro_batcher.h"

#include <gtest/gtest.h>

#include <future>

#include "serving/model_holder.h"
#include "serving/test_support.h"

namespace tuner::serving {
namespace {

using namespace std::chrono_literals;

std::vector<float> sample(int i) {
  return {static_cast<float>(i), 0.5f, -1.0f * static_cast<float>(i), 2};
}

TEST(MicroBatcherTest, ConcurrentRequestsRunAsOneBatchWithEachRequestsOwnAnswer) {
  testing::TinyRegistry registry(1);
  ModelHolder holder(registry.ref("tiny/1"), 1);
  std::mutex mutex;
  std::vector<int64_t> batch_rows;
  MicroBatcherOptions options;
  options.max_batch = 8;
  options.max_wait = 200ms;  // the first request waits for the others
  MicroBatcher batcher(options, [&](int64_t rows, int64_t) {
    std::lock_guard<std::mutex> lock(mutex);
    batch_rows.push_back(rows);
  });
  std::vector<std::future<Prediction>> answers;
  for (int i = 0; i < 4; ++i) {
    auto done = std::make_shared<std::promise<Prediction>>();
    answers.push_back(done->get_future());
    // Request i has i + 1 rows, 10 in all: 8 fit one batch (rows 1+2+3), the last is another.
    std::vector<float> inputs;
    for (int r = 0; r <= i; ++r) {
      const std::vector<float> s = sample(10 * i + r);
      inputs.insert(inputs.end(), s.begin(), s.end());
    }
    batcher.submit(holder.current(), inputs, i + 1, [done](std::exception_ptr e, Prediction p) {
      ASSERT_FALSE(e);
      done->set_value(std::move(p));
    });
  }
  for (int i = 0; i < 4; ++i) {
    const Prediction p = answers[static_cast<size_t>(i)].get();
    std::vector<float> inputs;
    for (int r = 0; r <= i; ++r) {
      const std::vector<float> s = sample(10 * i + r);
      inputs.insert(inputs.end(), s.begin(), s.end());
    }
    const std::vector<float> want = registry.expected(1, inputs);
    ASSERT_EQ(p.outputs.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(p.outputs[k], want[k], 1e-5f) << i;
  }
  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_EQ(batch_rows.size(), 2u);
  EXPECT_EQ(batch_rows[0], 6);  // 1 + 2 + 3; the 4-row request does not fit
  EXPECT_EQ(batch_rows[1], 4);
}

TEST(MicroBatcherTest, RequestsOfTwoModelsAreNeverMixed) {
  testing::TinyRegistry registry(2);
  ModelHolder one(registry.ref("tiny/1"), 1), two(registry.ref("tiny/2"), 1);
  MicroBatcherOptions options;
  options.max_wait = 100ms;
  std::atomic<int> batches{0};
  std::vector<std::future<Prediction>> answers;
  {
    MicroBatcher batcher(options, [&](int64_t, int64_t) { ++batches; });
    for (int i = 0; i < 4; ++i) {
      auto done = std::make_shared<std::promise<Prediction>>();
      answers.push_back(done->get_future());
      batcher.submit(i % 2 ? two.current() : one.current(), sample(i), 1,
                     [done](std::exception_ptr, Prediction p) { done->set_value(std::move(p)); });
    }
  }  // the destructor answers what is queued
  for (int i = 0; i < 4; ++i) {
    const Prediction p = answers[static_cast<size_t>(i)].get();
    EXPECT_EQ(p.model->version, i % 2 ? 2 : 1);
    const std::vector<float> want = registry.expected(i % 2 ? 2 : 1, sample(i));
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(p.outputs[k], want[k], 1e-5f);
  }
  EXPECT_GE(batches.load(), 2);
}

TEST(MicroBatcherTest, AFailedForwardPassFailsItsRequestsOnly) {
  testing::TinyRegistry registry(1);
  ModelHolder holder(registry.ref("tiny/1"), 1);
  MicroBatcher batcher({}, {});
  std::promise<std::string> failed;
  // 3 values are not a sample of 4: the model refuses them.
  batcher.submit(holder.current(), {1, 2, 3}, 1, [&](std::exception_ptr e, Prediction) {
    try {
      if (e) std::rethrow_exception(e);
      failed.set_value("");
    } catch (const std::exception& x) {
      failed.set_value(x.what());
    }
  });
  EXPECT_NE(failed.get_future().get(), "");
  std::promise<size_t> next;
  batcher.submit(holder.current(), sample(1), 1, [&](std::exception_ptr e, Prediction p) {
    next.set_value(e ? 0 : p.outputs.size());
  });
  EXPECT_EQ(next.get_future().get(), 3u);
}

TEST(MicroBatcherTest, ALoneRequestRunsOnItsOwnThreadAndQueuedOnesWaitForTheModel) {
  testing::TinyRegistry registry(1);
  ModelHolder holder(registry.ref("tiny/1"), 1);
  MicroBatcher batcher({}, {});
  std::thread::id ran_on;
  std::promise<void> queued_done;
  batcher.submit(holder.current(), sample(1), 1, [&](std::exception_ptr, Prediction) {
    ran_on = std::this_thread::get_id();
    // The model is busy with this request: one submitted now is queued for the batcher's
    // thread, and runs after this pass.
    batcher.submit(holder.current(), sample(2), 1, [&](std::exception_ptr, Prediction p) {
      EXPECT_NE(std::this_thread::get_id(), ran_on);
      EXPECT_EQ(p.outputs.size(), 3u);
      queued_done.set_value();
    });
  });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(queued_done.get_future().wait_for(5s), std::future_status::ready);
}

}  // namespace
}  // namespace tuner::serving
