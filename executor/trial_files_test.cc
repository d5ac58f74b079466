#include "executor/trial_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace tuner {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class TrialFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tuner-trial-files-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "trial-3");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& relative, const std::string& content) {
    const fs::path path = dir_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << content;
    return path.string();
  }
  std::string folder() const { return (dir_ / "trial-3").string(); }

  // Sends every chunk of `sender`, each accepted at once, and returns the files as received.
  static std::map<std::string, std::string> deliver(FileSender& sender) {
    std::map<std::string, std::string> received;
    std::vector<std::string> problems;
    while (!sender.done()) {
      std::optional<FileChunkMessage> chunk = sender.next_chunk(problems);
      if (!chunk) {
        ADD_FAILURE() << "not done, and no chunk to send";
        break;
      }
      std::string& file = received[chunk->path];
      EXPECT_EQ(chunk->offset, file.size());
      file += chunk->data;
      EXPECT_EQ(sender.on_ack(FileAckMessage{.lease_id = chunk->lease_id,
                                             .kind = chunk->kind,
                                             .path = chunk->path,
                                             .offset = chunk->offset}),
                "");
    }
    EXPECT_TRUE(problems.empty());
    return received;
  }

  fs::path dir_;
};

TEST_F(TrialFilesTest, PlansTheLogFirstThenTheFolderInPathOrderWithinTheLimit) {
  const std::string log = write("logs/trial-3-lease-7.log", "hello\n");
  write("trial-3/b.bin", std::string(100, 'b'));
  write("trial-3/a/events.out.tfevents.1", std::string(10, 'e'));
  write("trial-3/big.ckpt", std::string(1000, 'c'));
  write("trial-3/z.txt", "z");
  fs::create_symlink("/etc/passwd", dir_ / "trial-3" / "passwd");
  fs::create_directory_symlink("/etc", dir_ / "trial-3" / "etc");

  const TrialFilesPlan plan = plan_trial_files(log, folder(), 200);
  ASSERT_EQ(plan.send.size(), 4u);
  EXPECT_EQ(plan.send[0].kind, TrialFileKind::kLog);
  EXPECT_EQ(plan.send[0].path, "");
  EXPECT_EQ(plan.send[0].size, 6u);
  EXPECT_EQ(plan.send[1].path, "a/events.out.tfevents.1");
  EXPECT_EQ(plan.send[2].path, "b.bin");
  EXPECT_EQ(plan.send[3].path, "z.txt") << "a smaller file after one left still fits";
  ASSERT_EQ(plan.left.size(), 1u);
  EXPECT_EQ(plan.left[0].path, (dir_ / "trial-3" / "big.ckpt").string());
  EXPECT_EQ(plan.left[0].size, 1000u);
  EXPECT_EQ(plan.limit_bytes, 200u);
  EXPECT_EQ(files_left_text(plan.left, plan.limit_bytes, "node7"),
            "1 file(s) of 1000 bytes in all stay on host node7, past the limit of 200 bytes per "
            "trial (tuner executor --max-files-mb): " +
                (dir_ / "trial-3" / "big.ckpt").string() + " (1000 bytes)");
}

TEST_F(TrialFilesTest, NothingToPlanWithoutALogOrAFolder) {
  EXPECT_TRUE(plan_trial_files("", "", 100).empty());
  EXPECT_TRUE(
      plan_trial_files((dir_ / "missing.log").string(), (dir_ / "nope").string(), 100).empty());
  EXPECT_TRUE(plan_trial_files("", folder(), 100).empty()) << "an empty folder";
}

TEST_F(TrialFilesTest, ANameThatCannotTravelStaysOnTheHost) {
  write("trial-3/ok.txt", "ok");
  write(std::string("trial-3/bad-\xff.txt"), "x");
  std::vector<std::string> problems;
  const TrialFilesPlan plan = plan_trial_files("", folder(), 100, &problems);
  ASSERT_EQ(plan.send.size(), 1u);
  EXPECT_EQ(plan.send[0].path, "ok.txt");
  ASSERT_EQ(plan.left.size(), 1u);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], HasSubstr("its name cannot travel (not UTF-8)"));
}

// A stopped job's checkpoint: the files it wrote (new, or changed since the stamps taken before
// it ran) go, companions first and the checkpoint last, marked `checkpoint`; one it left alone
// stays.
TEST_F(TrialFilesTest, ACheckpointPlanHoldsTheFilesTheJobWroteWithTheCheckpointLast) {
  const fs::path checkpoint = dir_ / "trial-0" / "resume.ckpt";
  write("trial-0/resume.ckpt", "step 3");
  write("trial-0/model.ckpt", "model of step 2");
  const CheckpointStamps before = stamp_checkpoint(checkpoint);
  EXPECT_EQ(before.size(), 2u);
  write("trial-0/resume.ckpt", "step 10");
  write("trial-0/resume.ckpt.history.json", "[]");
  const TrialFilesPlan plan = plan_checkpoint_files(checkpoint, before, 1 << 20);
  ASSERT_EQ(plan.send.size(), 2u);
  EXPECT_EQ(plan.send[0].path, "resume.ckpt.history.json");
  EXPECT_EQ(plan.send[1].path, "resume.ckpt");
  EXPECT_EQ(plan.send[1].size, 7u);
  EXPECT_TRUE(plan.send[0].checkpoint && plan.send[1].checkpoint);
  EXPECT_TRUE(plan.left.empty());
  FileSender sender(7, plan.send);
  std::vector<std::string> problems;
  const std::optional<FileChunkMessage> chunk = sender.next_chunk(problems);
  ASSERT_TRUE(chunk);
  EXPECT_TRUE(chunk->checkpoint);
  EXPECT_EQ(chunk->kind, TrialFileKind::kArtifact);

  // Past the limit: left, named.
  const TrialFilesPlan small = plan_checkpoint_files(checkpoint, before, 4);
  ASSERT_EQ(small.send.size(), 1u);
  EXPECT_EQ(small.send[0].path, "resume.ckpt.history.json");
  ASSERT_EQ(small.left.size(), 1u);
  EXPECT_EQ(small.left[0].path, checkpoint.string());
  // Nothing written: nothing to send.
  EXPECT_TRUE(plan_checkpoint_files(checkpoint, stamp_checkpoint(checkpoint), 1 << 20).empty());
}

TEST_F(TrialFilesTest, SendsEveryFileInChunksAndCountsThemDelivered) {
  const std::string log = write("trial-3-lease-7.log", "line\n");
  std::string big(kMaxFileChunkBytes * 2 + 5, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  write("trial-3/model.ckpt", big);
  write("trial-3/empty", "");
  FileSender sender(7, plan_trial_files(log, folder(), uint64_t{1} << 30).send);
  const std::map<std::string, std::string> received = deliver(sender);
  EXPECT_EQ(received.at(""), "line\n");
  EXPECT_EQ(received.at("model.ckpt"), big);
  EXPECT_EQ(received.at("empty"), "");
  EXPECT_EQ(sender.files_delivered(), 3);
  EXPECT_EQ(sender.bytes_delivered(), big.size() + 5);
}

TEST_F(TrialFilesTest, AtMostAWindowOfChunksIsUnanswered) {
  write("trial-3/big", std::string(kMaxFileChunkBytes * (kFileWindow + 2), 'x'));
  FileSender sender(1, plan_trial_files("", folder(), uint64_t{1} << 30).send);
  std::vector<std::string> problems;
  std::vector<FileChunkMessage> sent;
  while (std::optional<FileChunkMessage> chunk = sender.next_chunk(problems))
    sent.push_back(*chunk);
  ASSERT_EQ(sent.size(), kFileWindow);
  EXPECT_EQ(sent[1].offset, kMaxFileChunkBytes);
  // An answer to no chunk in flight changes nothing; the first one's answer opens the window.
  EXPECT_EQ(sender.on_ack(FileAckMessage{
                .lease_id = 1, .kind = TrialFileKind::kArtifact, .path = "other", .offset = 0}),
            "");
  EXPECT_FALSE(sender.next_chunk(problems));
  sender.on_ack(FileAckMessage{.lease_id = 1, .kind = TrialFileKind::kArtifact, .path = "big"});
  std::optional<FileChunkMessage> next = sender.next_chunk(problems);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->offset, kFileWindow * kMaxFileChunkBytes);
  // A chunk that could not be queued goes again.
  sender.unsend(*next);
  EXPECT_EQ(sender.next_chunk(problems)->offset, next->offset);
}

TEST_F(TrialFilesTest, ARefusedFileIsGivenUpAndTheNextOneGoes) {
  write("trial-3/a", "aaaa");
  write("trial-3/b", "bb");
  FileSender sender(2, plan_trial_files("", folder(), 100).send);
  std::vector<std::string> problems;
  std::optional<FileChunkMessage> a = sender.next_chunk(problems);
  std::optional<FileChunkMessage> b = sender.next_chunk(problems);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(b->path, "b");
  EXPECT_EQ(sender.on_ack(FileAckMessage{.lease_id = 2,
                                         .kind = TrialFileKind::kArtifact,
                                         .path = "a",
                                         .accepted = false,
                                         .reason = "No space left on device"}),
            "the coordinator refused 'a' of lease 2: No space left on device");
  EXPECT_FALSE(sender.done());
  sender.on_ack(FileAckMessage{.lease_id = 2, .kind = TrialFileKind::kArtifact, .path = "b"});
  EXPECT_TRUE(sender.done());
  EXPECT_EQ(sender.files_delivered(), 1);
}

TEST_F(TrialFilesTest, AnEndedLeaseStopsEveryFile) {
  write("trial-3/a", "a");
  write("trial-3/b", "b");
  FileSender sender(3, plan_trial_files("", folder(), 100).send);
  std::vector<std::string> problems;
  std::optional<FileChunkMessage> a = sender.next_chunk(problems);
  EXPECT_THAT(sender.on_ack(FileAckMessage{.lease_id = 3,
                                           .kind = TrialFileKind::kArtifact,
                                           .path = "a",
                                           .accepted = false,
                                           .lease_ended = true,
                                           .reason = "lease 3 expired"}),
              HasSubstr("takes no more files of lease 3: lease 3 expired"));
  EXPECT_TRUE(sender.done());
  EXPECT_FALSE(sender.next_chunk(problems));
}

TEST_F(TrialFilesTest, LostChunksStartTheirFileOverAndAFileThatNeverGetsAnswersIsGivenUp) {
  write("trial-3/a", std::string(kMaxFileChunkBytes + 1, 'a'));
  write("trial-3/b", "b");
  FileSender sender(4, plan_trial_files("", folder(), uint64_t{1} << 30).send);
  std::vector<std::string> problems;
  sender.next_chunk(problems);
  sender.next_chunk(problems);
  EXPECT_EQ(sender.check_progress(), "") << "restarted: nothing answered since the start";
  EXPECT_EQ(sender.next_chunk(problems)->offset, 0u);
  for (int i = 1; i < kMaxFileRestarts; ++i) {
    EXPECT_EQ(sender.restart(), "");
    EXPECT_EQ(sender.next_chunk(problems)->offset, 0u);
  }
  EXPECT_THAT(sender.restart(), HasSubstr("not sent: 'a' of lease 4: started over 3 times"));
  std::optional<FileChunkMessage> b = sender.next_chunk(problems);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->path, "b");
  // Answered since the last look: no restart.
  sender.on_ack(FileAckMessage{.lease_id = 4, .kind = TrialFileKind::kArtifact, .path = "b"});
  EXPECT_EQ(sender.check_progress(), "");
  EXPECT_TRUE(sender.done());
}

TEST_F(TrialFilesTest, AFileGoneOrShrunkBeforeItIsSentIsGivenUpWithWhy) {
  const std::string gone = write("trial-3/gone", "gone");
  const std::string shrinks = write("trial-3/shrinks", "0123456789");
  FileSender sender(5, plan_trial_files("", folder(), 100).send);
  fs::remove(gone);
  std::ofstream(shrinks, std::ios::trunc) << "01";
  std::vector<std::string> problems;
  EXPECT_FALSE(sender.next_chunk(problems));
  EXPECT_TRUE(sender.done());
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_THAT(problems[0], HasSubstr("gone: No such file or directory"));
  EXPECT_THAT(problems[1], HasSubstr("shrinks: it shrank while being sent"));
}

}  // namespace
}  // namespace tuner
