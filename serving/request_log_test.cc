#include "serving/request_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "drift/request_log.h"
#include "registry/test_util.h"
#include "trials/error.h"

namespace tuner::serving {
namespace {

using ::testing::ElementsAre;
namespace fs = std::filesystem;

LoggedRequest request(int i, int64_t rows = 1) {
  LoggedRequest r;
  r.time = std::chrono::system_clock::from_time_t(1764673200) + std::chrono::milliseconds(123 + i);
  r.model = "fmnist";
  r.version = 3;
  r.rows = rows;
  for (int64_t k = 0; k < rows; ++k) {
    r.inputs.insert(r.inputs.end(), {static_cast<float>(i), 255, 0.5f});
    r.outputs.insert(r.outputs.end(), {-1.5f, 2.25f, static_cast<float>(i % 3)});
  }
  return r;
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(RequestLogTest, ALineIsWhatTheDriftCheckReads) {
  EXPECT_EQ(request_log_line(request(0)),
            R"({"time": "2025-12-02T11:00:00.123Z", "model": "fmnist", "version": 3, )"
            R"("inputs": [[0, 255, 0.5]], "outputs": [[-1.5, 2.25, 0]], "predicted": [1]})");
  LoggedRequest bare = request(4, 2);
  bare.version.reset();
  bare.model = "a \"quoted\"\nname";
  EXPECT_EQ(request_log_line(bare),
            R"({"time": "2025-12-02T11:00:00.127Z", "model": "a \"quoted\"\u000aname", )"
            R"("version": null, "inputs": [[4, 255, 0.5], [4, 255, 0.5]], )"
            R"("outputs": [[-1.5, 2.25, 1], [-1.5, 2.25, 1]], "predicted": [1, 1]})");
  EXPECT_EQ(request_log_file_name(request(0).time, 12), "requests-20251202T110000-12.jsonl");
}

TEST(RequestLogTest, WrittenFilesReadBackInOrder) {
  registry::testing::ScratchDir scratch;
  {
    RequestLogOptions options;
    options.dir = scratch.path() / "log";
    options.max_file_bytes = 300;  // about three lines a file
    RequestLog log(options);
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(log.sampled());
      log.log(request(i, 2));
    }
  }
  EXPECT_GE(files_in(scratch.path() / "log").size(), 3u);
  const drift::Samples s = drift::read_request_log(scratch.path() / "log");
  ASSERT_EQ(s.count, 20);
  EXPECT_EQ(s.input_width, 3);
  EXPECT_EQ(s.output_width, 3);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(s.inputs[static_cast<size_t>(6 * i)], i);  // in order
  EXPECT_EQ(s.predicted[0], 1);
}

TEST(RequestLogTest, SamplesAnEvenFraction) {
  registry::testing::ScratchDir scratch;
  RequestLogOptions options;
  options.dir = scratch.path();
  options.sample = 0.25;
  RequestLog log(options);
  std::vector<bool> taken;
  for (int i = 0; i < 8; ++i) taken.push_back(log.sampled());
  EXPECT_THAT(taken, ElementsAre(false, false, false, true, false, false, false, true));
}

TEST(RequestLogTest, KeepsTheNewestFiles) {
  registry::testing::ScratchDir scratch;
  {
    RequestLogOptions options;
    options.dir = scratch.path();
    options.max_file_bytes = 1;  // a file per line
    options.max_files = 3;
    RequestLog log(options);
    for (int i = 0; i < 7; ++i) log.log(request(i));
  }
  const std::vector<fs::path> files = files_in(scratch.path());
  ASSERT_EQ(files.size(), 3u);
  const drift::Samples s = drift::read_request_log(scratch.path());
  EXPECT_THAT(std::vector<float>(s.inputs.begin(), s.inputs.end()),
              ElementsAre(4, 255, 0.5, 5, 255, 0.5, 6, 255, 0.5));
}

TEST(RequestLogTest, DropsWhatItCannotQueueAndCountsIt) {
  registry::testing::ScratchDir scratch;
  RequestLogOptions options;
  options.dir = scratch.path();
  options.max_queued = 0;  // every request finds the queue full
  int dropped = 0;
  RequestLog log(options, [&](LogOutcome o) { dropped += o == LogOutcome::kDropped ? 1 : 0; });
  log.log(request(0));
  log.log(request(1));
  EXPECT_EQ(dropped, 2);
}

TEST(RequestLogTest, RequestsAfterTheLogStopsBeingWrittenCountAsFailedNotWritten) {
  registry::testing::ScratchDir scratch;
  std::atomic<int> written = 0, failed = 0, dropped = 0;
  {
    RequestLogOptions options;
    options.dir = scratch.path() / "log";
    options.max_file_bytes = 1;  // a file per line: each line opens a file
    RequestLog log(options, [&](LogOutcome o) {
      (o == LogOutcome::kWritten ? written : o == LogOutcome::kFailed ? failed : dropped)++;
    });
    log.log(request(0));
    for (int i = 0; i < 2000 && written.load() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_EQ(written.load(), 1);
    fs::remove_all(scratch.path() / "log");  // the next file cannot be created
    for (int i = 1; i <= 3; ++i) log.log(request(i));
  }
  EXPECT_EQ(written.load(), 1);
  EXPECT_EQ(failed.load(), 3);
  EXPECT_EQ(dropped.load(), 0);
}

TEST(RequestLogTest, RefusesBadOptionsByName) {
  RequestLogOptions options;
  options.dir = fs::temp_directory_path();
  options.sample = 0;
  EXPECT_THROW(RequestLog log(options), Error);
  options.sample = 1;
  options.dir = "/proc/version/log";  // under a file
  try {
    RequestLog log(options);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("/proc/version/log"));
  }
}

}  // namespace
}  // namespace tuner::serving
