#include "executor/checkpoint_fetch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "executor/checkpoint_writer.h"
#include "executor/trial_run.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class CheckpointFetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tuner-checkpoint-fetch-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
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
    fs::remove_all(dir_);
  }

  // Plays the loop and the coordinator: answers each CHECKPOINT_GET from `files` (name -> bytes),
  // with the lease that sent each (`writers`, name -> lease), as read_checkpoint_chunk would, and
  // counts the asks. With `only`, a CHECKPOINT_GET of the other checkpoint finds nothing.
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
              if (!e.checkpoint_get) continue;
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

  // The job as PBT segment `number`, attempt `attempt`, starting from the checkpoint `parent`,
  // its lineage's own at `path`.
  void make_segment(int number, int attempt, const fs::path& parent, const fs::path& path) {
    job_.trial.number = number;
    job_.trial.attempt = attempt;
    job_.trial.start_checkpoint_path = parent.string();
    job_.trial.checkpoint_path = path.string();
  }

  fs::path dir_;
  HeldJob job_;
  JobEvents events_;
  std::thread coordinator_;
  std::atomic<bool> stop_{false};
  std::atomic<int> asks_{0};
};

TEST_F(CheckpointFetchTest, AFileOfSeveralChunksArrivesWholeUnderItsNameOnly) {
  std::string bytes(2 * kMaxFileChunkBytes + 123, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i % 253);
  answer_from({{"resume.ckpt", bytes}, {"empty", ""}});
  const fs::path target = dir_ / "resume.ckpt";
  EXPECT_EQ(fetch_checkpoint_file(job_, events_, CheckpointOf::kStart, "resume.ckpt", target), "");
  EXPECT_EQ(read_file(target), bytes);
  EXPECT_EQ(asks_.load(), 3);
  EXPECT_FALSE(fs::exists(dir_ / "resume.ckpt.partial"));
  EXPECT_EQ(fetch_checkpoint_file(job_, events_, CheckpointOf::kOwn, "empty", dir_ / "empty"), "");
  EXPECT_TRUE(fs::is_regular_file(dir_ / "empty"));
  EXPECT_EQ(fs::file_size(dir_ / "empty"), 0u);
}

TEST_F(CheckpointFetchTest, AFileTheCoordinatorLacksLeavesNothingAndSaysWhy) {
  answer_from({});
  const fs::path target = dir_ / "resume.ckpt";
  EXPECT_EQ(fetch_checkpoint_file(job_, events_, CheckpointOf::kStart, "resume.ckpt", target),
            "resume.ckpt: not on the coordinator's host");
  EXPECT_FALSE(fs::exists(target));
  EXPECT_FALSE(fs::exists(dir_ / "resume.ckpt.partial"));
}

TEST_F(CheckpointFetchTest, ACoordinatorThatDoesNotAnswerIsAskedAgainThenGivenUp) {
  const std::string why = fetch_checkpoint_file(job_, events_, CheckpointOf::kStart, "resume.ckpt",
                                                dir_ / "resume.ckpt", 5ms, /*asks=*/2);
  EXPECT_THAT(why, HasSubstr("did not answer 2 asks"));
  int gets = 0;
  for (const JobEvent& e : events_.take()) gets += e.checkpoint_get ? 1 : 0;
  EXPECT_EQ(gets, 2);
  EXPECT_FALSE(fs::exists(dir_ / "resume.ckpt"));
}

TEST_F(CheckpointFetchTest, AnAnswerToAnotherAskIsDroppedAndAStoppedJobGivesUp) {
  // A late answer to an earlier ask (another file) waits in the job's mailbox first.
  job_.deliver(CheckpointDataMessage{.lease_id = 9, .file = "other", .size = 1, .data = "x"});
  answer_from({{"resume.ckpt", "state"}});
  EXPECT_EQ(fetch_checkpoint_file(job_, events_, CheckpointOf::kStart, "resume.ckpt",
                                  dir_ / "resume.ckpt"),
            "");
  EXPECT_EQ(read_file(dir_ / "resume.ckpt"), "state");

  HeldJob stopped;
  stopped.stop("pruned");
  EXPECT_EQ(fetch_checkpoint_file(stopped, events_, CheckpointOf::kStart, "resume.ckpt",
                                  dir_ / "again.ckpt", 5ms, 1),
            "the job was stopped");
}

// A re-run's own checkpoint on a host that ran an earlier attempt, in `dir`: resume.ckpt, its
// history and model.ckpt holding `tag`, written by `lease` (0: no record).
fs::path write_local_checkpoint(const fs::path& dir, const std::string& tag, uint64_t lease) {
  fs::create_directories(dir);
  std::ofstream(dir / "resume.ckpt") << tag;
  std::ofstream(dir / "resume.ckpt.history.json") << tag + "-history";
  std::ofstream(dir / "model.ckpt") << tag + "-model";
  if (lease != 0) EXPECT_EQ(write_checkpoint_writer(dir / "resume.ckpt", lease), "");
  return dir / "resume.ckpt";
}

TEST_F(CheckpointFetchTest, ARerunOnAHostWithAStaleCopyResumesFromTheCoordinatorsNewerCopy) {
  // Lease 5 ran here; lease 8 ran elsewhere, went further and sent its checkpoint when preempted.
  const fs::path path = write_local_checkpoint(dir_ / "trial-1", "old", 5);
  answer_from({{"resume.ckpt", "new"},
               {"resume.ckpt.history.json", "new-history"},
               {"model.ckpt", "new-model"}},
              {{"resume.ckpt", 8}, {"resume.ckpt.history.json", 8}, {"model.ckpt", 8}});
  job_.trial.attempt = 2;
  job_.trial.checkpoint_path = path.string();
  EXPECT_EQ(prepare_checkpoint(job_, events_), path.string());
  EXPECT_EQ(read_file(path), "new");
  EXPECT_EQ(read_file(dir_ / "trial-1" / "resume.ckpt.history.json"), "new-history");
  EXPECT_EQ(read_file(dir_ / "trial-1" / "model.ckpt"), "new-model");
  EXPECT_EQ(read_checkpoint_writer(path), 9u);  // this lease writes it from now on
  EXPECT_FALSE(fs::exists(path.string() + ".fetched"));
}

TEST_F(CheckpointFetchTest, ACopyHereAsNewAsTheCoordinatorsIsKeptWithoutFetching) {
  const fs::path path = write_local_checkpoint(dir_ / "trial-1", "here", 8);
  answer_from({{"resume.ckpt", "coordinator's"}}, {{"resume.ckpt", 8}});
  job_.trial.attempt = 1;
  job_.trial.checkpoint_path = path.string();
  EXPECT_EQ(prepare_checkpoint(job_, events_), path.string());
  EXPECT_EQ(read_file(path), "here");
  EXPECT_EQ(asks_.load(), 1);  // the stat only
  EXPECT_EQ(read_checkpoint_writer(path), 9u);
}

TEST_F(CheckpointFetchTest, ACoordinatorThatDoesNotKnowWhoSentItsCopyLeavesTheCopyHere) {
  // A copy from its own host or an older coordinator: written_by_lease 0.
  const fs::path path = write_local_checkpoint(dir_ / "trial-1", "here", 0);
  answer_from({{"resume.ckpt", "coordinator's"}});
  job_.trial.attempt = 1;
  job_.trial.checkpoint_path = path.string();
  EXPECT_EQ(prepare_checkpoint(job_, events_), path.string());
  EXPECT_EQ(read_file(path), "here");
  EXPECT_EQ(read_file(dir_ / "trial-1" / "model.ckpt"), "here-model");
}

// A PBT segment (number 6, lease 9) whose parent's lineage (trial 3) ran on this host under
// lease 5 and then elsewhere under lease 8, which went further and sent its checkpoint: the
// segment starts from the coordinator's copy, not this host's stale one.
TEST_F(CheckpointFetchTest, APbtSegmentOnAHostWithAStaleCopyOfItsParentsCheckpointFetchesTheNewer) {
  const fs::path parent = write_local_checkpoint(dir_ / "trial-3", "old", 5);
  answer_from({{"resume.ckpt", "new"},
               {"resume.ckpt.history.json", "new-history"},
               {"model.ckpt", "new-model"}},
              {{"resume.ckpt", 8}, {"resume.ckpt.history.json", 8}, {"model.ckpt", 8}});
  const fs::path path = dir_ / "trial-6" / "resume.ckpt";
  make_segment(6, 0, parent, path);
  EXPECT_EQ(prepare_checkpoint(job_, events_), path.string());
  EXPECT_EQ(read_file(path), "new");
  EXPECT_EQ(read_file(dir_ / "trial-6" / "resume.ckpt.history.json"), "new-history");
  EXPECT_EQ(read_file(dir_ / "trial-6" / "model.ckpt"), "new-model");
  EXPECT_EQ(read_file(parent), "old");  // the parent's folder here is not the segment's to change
  EXPECT_EQ(read_checkpoint_writer(path), 9u);
  EXPECT_FALSE(fs::exists(path.string() + ".fetched"));
}

TEST_F(CheckpointFetchTest,
       APbtParentsCheckpointHereAsNewAsTheCoordinatorsIsCopiedWithoutFetching) {
  const fs::path parent = write_local_checkpoint(dir_ / "trial-3", "here", 8);
  answer_from({{"resume.ckpt", "coordinator's"}}, {{"resume.ckpt", 8}});
  const fs::path path = dir_ / "trial-6" / "resume.ckpt";
  make_segment(6, 0, parent, path);
  EXPECT_EQ(prepare_checkpoint(job_, events_), path.string());
  EXPECT_EQ(read_file(path), "here");
  EXPECT_EQ(read_file(dir_ / "trial-6" / "resume.ckpt.history.json"), "here-history");
  EXPECT_EQ(read_file(dir_ / "trial-6" / "model.ckpt"), "here-model");
  EXPECT_EQ(asks_.load(), 1);  // the stat only
}

TEST_F(CheckpointFetchTest, APbtSegmentsRerunWithoutACheckpointOfItsOwnStartsFromItsParents) {
  const fs::path parent = write_local_checkpoint(dir_ / "trial-3", "parent", 5);
  answer_from({{"resume.ckpt", "parent"}}, {{"resume.ckpt", 5}}, CheckpointOf::kStart);
  const fs::path path = dir_ / "trial-6" / "resume.ckpt";
  make_segment(7, 1, parent, path);
  EXPECT_EQ(prepare_checkpoint(job_, events_), path.string());
  EXPECT_EQ(read_file(path), "parent");
  EXPECT_EQ(read_file(dir_ / "trial-6" / "model.ckpt"), "parent-model");
}

}  // namespace
}  // namespace tuner
