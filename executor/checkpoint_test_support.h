// Test support for a job's checkpoint before it starts (executor/checkpoint_fetch_test.cc,
// executor/trial_run_test.cc): a temporary folder of trial folders, a held command job whose
// trials' folders are there, and a thread that plays the executor's loop and the coordinator,
// answering the job's CHECKPOINT_GETs from files it is given and keeping every other event.
#ifndef TUNER_EXECUTOR_CHECKPOINT_TEST_SUPPORT_H_
#define TUNER_EXECUTOR_CHECKPOINT_TEST_SUPPORT_H_

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "executor/checkpoint_writer.h"
#include "executor/held_job.h"
#include "executor/job_events.h"

namespace tuner {

inline std::string contents_of(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A checkpoint of a trial that ran on this host, in `dir`: resume.ckpt, its history and
// model.ckpt holding `tag`, written by `lease` (0: no record).
inline std::filesystem::path write_local_checkpoint(const std::filesystem::path& dir,
                                                    const std::string& tag, uint64_t lease) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "resume.ckpt") << tag;
  std::ofstream(dir / "resume.ckpt.history.json") << tag + "-history";
  std::ofstream(dir / "model.ckpt") << tag + "-model";
  if (lease != 0) EXPECT_EQ(write_checkpoint_writer(dir / "resume.ckpt", lease), "");
  return dir / "resume.ckpt";
}

class CheckpointJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("tuner-" + std::string(test->test_suite_name()) + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    job_.trial.lease_id = 9;
    // The trials' folders are dir_/trial-<number>.
    job_.trial_job = parse_trial_job(
        R"({"kind": "command", "argv": ["true"], "objective_metric": "loss", "artifacts_dir": ")" +
        dir_.string() + R"("})");
  }
  void TearDown() override {
    stop_ = true;
    events_.wake();
    if (coordinator_.joinable()) coordinator_.join();
    std::filesystem::remove_all(dir_);
  }

  // Plays the loop and the coordinator: answers each CHECKPOINT_GET from `files` (name -> bytes),
  // with the lease that sent each (`writers`, name -> lease), as read_checkpoint_chunk would, and
  // counts the asks; keeps every other event (posted()). With `only`, a CHECKPOINT_GET of the
  // other checkpoint finds nothing.
  void answer_from(std::map<std::string, std::string> files,
                   std::map<std::string, uint64_t> writers = {},
                   std::optional<CheckpointOf> only = std::nullopt) {
    coordinator_ =
        std::thread([this, files = std::move(files), writers = std::move(writers), only] {
          while (!stop_) {
            pollfd p{.fd = events_.fd(), .events = POLLIN};
            ::poll(&p, 1, 20);
            events_.drain();
            for (JobEvent& e : events_.take()) {
              if (!e.checkpoint_get) {
                std::lock_guard lock(mutex_);
                posted_.push_back(std::move(e));
                continue;
              }
              ++asks_;
              const CheckpointGetMessage& get = *e.checkpoint_get;
              CheckpointDataMessage data{
                  .lease_id = get.lease_id, .of = get.of, .file = get.file, .offset = get.offset};
              auto it = only && get.of != *only ? files.end() : files.find(get.file);
              if (it == files.end()) {
                data.found = false;
                data.reason = get.file + ": not on the coordinator's host";
              } else {
                data.size = it->second.size();
                if (!get.stat) data.data = it->second.substr(get.offset, kMaxFileChunkBytes);
                if (auto w = writers.find(get.file); w != writers.end()) {
                  data.written_by_lease = w->second;
                }
              }
              job_.deliver(std::move(data));
            }
          }
        });
  }

  // The events other than CHECKPOINT_GETs the job posted so far, in order.
  std::vector<JobEvent> posted() {
    std::lock_guard lock(mutex_);
    return posted_;
  }

  // The job as PBT segment `number`, attempt `attempt`, starting from the checkpoint `parent`,
  // its lineage's own at `path`.
  void make_segment(int number, int attempt, const std::filesystem::path& parent,
                    const std::filesystem::path& path) {
    job_.trial.number = number;
    job_.trial.attempt = attempt;
    job_.trial.start_checkpoint_path = parent.string();
    job_.trial.checkpoint_path = path.string();
  }

  std::filesystem::path dir_;
  HeldJob job_;
  JobEvents events_;
  std::thread coordinator_;
  std::atomic<bool> stop_{false};
  std::atomic<int> asks_{0};
  std::mutex mutex_;
  std::vector<JobEvent> posted_;  // guarded by mutex_
};

}  // namespace tuner

#endif  // TUNER_EXECUTOR_CHECKPOINT_TEST_SUPPORT_H_
