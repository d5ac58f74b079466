#include "executor/checkpoint_fetch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "executor/checkpoint_test_support.h"
#include "executor/checkpoint_writer.h"
#include "executor/trial_run.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

class CheckpointFetchTest : public CheckpointJobTest {};

TEST_F(CheckpointFetchTest, AFileOfSeveralChunksArrivesWholeUnderItsNameOnly) {
  std::string bytes(2 * kMaxFileChunkBytes + 123, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i % 253);
  answer_from({{"resume.ckpt", bytes}, {"empty", ""}});
  const fs::path target = dir_ / "resume.ckpt";
  EXPECT_EQ(fetch_checkpoint_file(job_, events_, CheckpointOf::kStart, "resume.ckpt", target), "");
  EXPECT_EQ(contents_of(target), bytes);
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
  EXPECT_EQ(contents_of(dir_ / "resume.ckpt"), "state");

  HeldJob stopped;
  stopped.stop("pruned");
  EXPECT_EQ(fetch_checkpoint_file(stopped, events_, CheckpointOf::kStart, "resume.ckpt",
                                  dir_ / "again.ckpt", 5ms, 1),
            "the job was stopped");
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
  EXPECT_EQ(contents_of(path), "new");
  EXPECT_EQ(contents_of(dir_ / "trial-1" / "resume.ckpt.history.json"), "new-history");
  EXPECT_EQ(contents_of(dir_ / "trial-1" / "model.ckpt"), "new-model");
  EXPECT_EQ(read_checkpoint_writer(path), 9u);  // this lease writes it from now on
  EXPECT_FALSE(fs::exists(path.string() + ".fetched"));
}

TEST_F(CheckpointFetchTest, ACopyHereAsNewAsTheCoordinatorsIsKeptWithoutFetching) {
  const fs::path path = write_local_checkpoint(dir_ / "trial-1", "here", 8);
  answer_from({{"resume.ckpt", "coordinator's"}}, {{"resume.ckpt", 8}});
  job_.trial.attempt = 1;
  job_.trial.checkpoint_path = path.string();
  EXPECT_EQ(prepare_checkpoint(job_, events_), path.string());
  EXPECT_EQ(contents_of(path), "here");
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
  EXPECT_EQ(contents_of(path), "here");
  EXPECT_EQ(contents_of(dir_ / "trial-1" / "model.ckpt"), "here-model");
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
  EXPECT_EQ(contents_of(path), "new");
  EXPECT_EQ(contents_of(dir_ / "trial-6" / "resume.ckpt.history.json"), "new-history");
  EXPECT_EQ(contents_of(dir_ / "trial-6" / "model.ckpt"), "new-model");
  EXPECT_EQ(contents_of(parent), "old");  // the parent's folder here is not the segment's to change
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
  EXPECT_EQ(contents_of(path), "here");
  EXPECT_EQ(contents_of(dir_ / "trial-6" / "resume.ckpt.history.json"), "here-history");
  EXPECT_EQ(contents_of(dir_ / "trial-6" / "model.ckpt"), "here-model");
  EXPECT_EQ(asks_.load(), 1);  // the stat only
}

// A PBT segment (first run as trial 6) preempted elsewhere mid-segment, whose executor sent its
// checkpoint: its re-run (trial 7) on a host that holds the parent's checkpoint resumes from the
// segment's own, not from the parent's.
TEST_F(CheckpointFetchTest, APbtSegmentsRerunResumesFromItsOwnCheckpointNotItsParents) {
  const fs::path parent = write_local_checkpoint(dir_ / "trial-3", "parent", 5);
  answer_from({{"resume.ckpt", "own"},
               {"resume.ckpt.history.json", "own-history"},
               {"model.ckpt", "own-model"}},
              {{"resume.ckpt", 8}}, CheckpointOf::kOwn);
  const fs::path path = dir_ / "trial-6" / "resume.ckpt";
  make_segment(7, 1, parent, path);
  EXPECT_EQ(prepare_checkpoint(job_, events_), path.string());
  EXPECT_EQ(contents_of(path), "own");
  EXPECT_EQ(contents_of(dir_ / "trial-6" / "resume.ckpt.history.json"), "own-history");
  EXPECT_EQ(contents_of(dir_ / "trial-6" / "model.ckpt"), "own-model");
  EXPECT_FALSE(fs::exists(checkpoint_pause_path(path)));
}

// The segment's first run was paused at its end and its files sent: the re-run elsewhere gets
// the record of that pause with the checkpoint (executor/trial_run.h: it then does not train).
TEST_F(CheckpointFetchTest, APbtSegmentsRerunFetchesThePauseRecordOfItsCheckpointWithIt) {
  const fs::path parent = write_local_checkpoint(dir_ / "trial-3", "parent", 5);
  answer_from({{"resume.ckpt", "own"},
               {"resume.ckpt.paused.json", R"({"lease": 8, "step": 6, "metrics": {"loss": 0.5}})"}},
              {{"resume.ckpt", 8}}, CheckpointOf::kOwn);
  const fs::path path = dir_ / "trial-6" / "resume.ckpt";
  make_segment(7, 1, parent, path);
  EXPECT_EQ(prepare_checkpoint(job_, events_), path.string());
  EXPECT_EQ(contents_of(path), "own");
  const std::optional<CheckpointPause> pause = read_checkpoint_pause(path);
  ASSERT_TRUE(pause);
  EXPECT_EQ(pause->step, 6);
  EXPECT_EQ(pause->lease, 8u);
  EXPECT_EQ(pause->metrics, (Metrics{{"loss", 0.5}}));
}

// A re-run whose host holds an older copy of its checkpoint, recorded as paused, and whose
// coordinator holds a newer one without a pause record (a later run sent it when preempted):
// the record here goes with the copy it was of.
TEST_F(CheckpointFetchTest, ANewerCheckpointWithoutAPauseRecordReplacesThisHostsRecordToo) {
  const fs::path path = write_local_checkpoint(dir_ / "trial-1", "old", 5);
  ASSERT_EQ(write_checkpoint_pause(path, CheckpointPause{.lease = 5, .step = 6}), "");
  answer_from({{"resume.ckpt", "new"}}, {{"resume.ckpt", 8}});
  job_.trial.attempt = 2;
  job_.trial.checkpoint_path = path.string();
  EXPECT_EQ(prepare_checkpoint(job_, events_), path.string());
  EXPECT_EQ(contents_of(path), "new");
  EXPECT_FALSE(fs::exists(checkpoint_pause_path(path)));
  EXPECT_FALSE(fs::exists(dir_ / "trial-1" / "model.ckpt"));  // the old copy's
}

// A segment starts from its parent's checkpoint, not at the parent segment's end: the parent's
// pause record stays behind, and a stray one in the segment's folder is removed.
TEST_F(CheckpointFetchTest, APbtSegmentStartsWithoutItsParentsPauseRecord) {
  answer_from(
      {{"resume.ckpt", "parent"}, {"resume.ckpt.paused.json", R"({"lease": 5, "step": 9})"}},
      {{"resume.ckpt", 5}}, CheckpointOf::kStart);
  const fs::path path = dir_ / "trial-6" / "resume.ckpt";
  fs::create_directories(path.parent_path());
  ASSERT_EQ(write_checkpoint_pause(path, CheckpointPause{.lease = 2, .step = 9}), "");
  make_segment(6, 0, dir_ / "elsewhere" / "trial-3" / "resume.ckpt", path);
  EXPECT_EQ(prepare_checkpoint(job_, events_), path.string());
  EXPECT_EQ(contents_of(path), "parent");
  EXPECT_FALSE(fs::exists(checkpoint_pause_path(path)));
}

TEST_F(CheckpointFetchTest, APbtSegmentsRerunWithoutACheckpointOfItsOwnStartsFromItsParents) {
  const fs::path parent = write_local_checkpoint(dir_ / "trial-3", "parent", 5);
  answer_from({{"resume.ckpt", "parent"}}, {{"resume.ckpt", 5}}, CheckpointOf::kStart);
  const fs::path path = dir_ / "trial-6" / "resume.ckpt";
  make_segment(7, 1, parent, path);
  EXPECT_EQ(prepare_checkpoint(job_, events_), path.string());
  EXPECT_EQ(contents_of(path), "parent");
  EXPECT_EQ(contents_of(dir_ / "trial-6" / "model.ckpt"), "parent-model");
}

}  // namespace
}  // namespace tuner
