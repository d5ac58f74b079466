#include "coordinator/file_receiver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "coordinator/checkpoint_source.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class FileReceiverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tuner-file-receiver-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    where_.log_path = (dir_ / "logs" / "trial-3-lease-7.log").string();
    where_.artifacts_folder = (dir_ / "study" / "trial-3").string();
  }
  void TearDown() override {
    receiver_.reset();
    fs::remove_all(dir_);
  }

  FileAckMessage receive(const FileChunkMessage& chunk) {
    return receiver_->receive(chunk, where_, "lease 7 (trial 3)");
  }
  static FileChunkMessage artifact(std::string path, uint64_t size, uint64_t offset,
                                   std::string data, uint64_t lease = 7) {
    return FileChunkMessage{.lease_id = lease,
                            .kind = TrialFileKind::kArtifact,
                            .path = std::move(path),
                            .size = size,
                            .offset = offset,
                            .data = std::move(data)};
  }
  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // The names in `folder`, sorted.
  static std::vector<std::string> names(const fs::path& folder) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(folder)) out.push_back(e.path().filename());
    std::sort(out.begin(), out.end());
    return out;
  }

  fs::path dir_;
  FileDestination where_;
  std::vector<std::string> log_;
  std::optional<FileReceiver> receiver_{std::in_place,
                                        [this](const std::string& line) { log_.push_back(line); }};
};

TEST_F(FileReceiverTest, ALogAndAnArtifactLandInTheirPlacesOnlyWhenWhole) {
  EXPECT_TRUE(receive(FileChunkMessage{
                          .lease_id = 7, .kind = TrialFileKind::kLog, .size = 3, .data = "hi\n"})
                  .accepted);
  EXPECT_EQ(read(where_.log_path), "hi\n");

  const FileAckMessage first = receive(artifact("sub/model.ckpt", 6, 0, "abc"));
  EXPECT_TRUE(first.accepted);
  EXPECT_EQ(first.path, "sub/model.ckpt");
  EXPECT_EQ(first.offset, 0u);
  const fs::path target = fs::path(where_.artifacts_folder) / "sub" / "model.ckpt";
  EXPECT_FALSE(fs::exists(target)) << "half a file is not in place";
  ASSERT_EQ(names(target.parent_path()).size(), 1u);
  EXPECT_THAT(names(target.parent_path())[0], HasSubstr(".tuner-incoming-7-"));
  EXPECT_EQ(receiver_->partial_files(), 1u);
  EXPECT_TRUE(receive(artifact("sub/model.ckpt", 6, 3, "def")).accepted);
  EXPECT_EQ(read(target), "abcdef");
  EXPECT_EQ(names(target.parent_path()), std::vector<std::string>{"model.ckpt"});
  EXPECT_EQ(receiver_->partial_files(), 0u);

  // An empty file; a file sent again replaces the one in place.
  EXPECT_TRUE(receive(artifact("empty", 0, 0, "")).accepted);
  EXPECT_EQ(read(fs::path(where_.artifacts_folder) / "empty"), "");
  EXPECT_TRUE(receive(artifact("sub/model.ckpt", 1, 0, "z")).accepted);
  EXPECT_EQ(read(target), "z");
  EXPECT_TRUE(log_.empty());
}

TEST_F(FileReceiverTest, NothingIsWrittenThroughASymbolicLinkOrOutsideTheFolder) {
  fs::create_directories(where_.artifacts_folder);
  fs::create_directories(dir_ / "elsewhere");
  fs::create_directory_symlink(dir_ / "elsewhere", fs::path(where_.artifacts_folder) / "link");
  const FileAckMessage through = receive(artifact("link/x", 1, 0, "x"));
  EXPECT_FALSE(through.accepted);
  EXPECT_THAT(through.reason, HasSubstr("is not a folder (a symbolic link or a file)"));
  EXPECT_TRUE(fs::is_empty(dir_ / "elsewhere"));
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_THAT(log_[0], HasSubstr("lease 7 (trial 3): 'link/x' is not kept: "));

  // A path the decoder would refuse is refused here too.
  for (const char* bad : {"../x", "/tmp/x", "a/../../x"}) {
    EXPECT_FALSE(receive(artifact(bad, 1, 0, "x")).accepted) << bad;
  }
  EXPECT_FALSE(fs::exists(dir_ / "study" / "x"));

  // A symbolic link in place of the file itself is replaced, not followed.
  fs::create_symlink(dir_ / "elsewhere" / "target", fs::path(where_.artifacts_folder) / "f");
  EXPECT_TRUE(receive(artifact("f", 1, 0, "f")).accepted);
  EXPECT_FALSE(fs::exists(dir_ / "elsewhere" / "target"));
  EXPECT_FALSE(fs::is_symlink(fs::path(where_.artifacts_folder) / "f"));
}

TEST_F(FileReceiverTest, AChunkOutOfOrderOrAFileThatCannotBeWrittenIsRefusedAndLogged) {
  const FileAckMessage early = receive(artifact("a", 4, 2, "cd"));
  EXPECT_FALSE(early.accepted);
  EXPECT_EQ(early.reason, "its chunk at byte 2 came before its start (byte 0)");
  EXPECT_TRUE(receive(artifact("a", 4, 0, "ab")).accepted);
  const FileAckMessage skipped = receive(artifact("a", 4, 3, "d"));
  EXPECT_FALSE(skipped.accepted);
  EXPECT_EQ(skipped.reason, "its chunk at byte 3 came out of order (2 expected)");
  EXPECT_EQ(receiver_->partial_files(), 0u) << "the file under way is dropped";
  EXPECT_TRUE(names(where_.artifacts_folder).empty()) << "and its temporary file removed";

  // A folder that cannot be made (a file is in its place): the file's path is logged.
  std::ofstream(fs::path(where_.artifacts_folder) / "blocker") << "x";
  const FileAckMessage blocked = receive(artifact("blocker/y", 1, 0, "y"));
  EXPECT_FALSE(blocked.accepted);
  EXPECT_THAT(log_.back(), HasSubstr("'blocker/y' is not kept: "));
  EXPECT_THAT(log_.back(), HasSubstr("blocker"));
}

TEST_F(FileReceiverTest, NowhereToPutAKindIsRefusedQuietly) {
  where_ = FileDestination{.log_refusal = "this coordinator keeps no trial logs",
                           .artifacts_refusal = "the study's job has no artifacts_dir"};
  const FileAckMessage log =
      receive(FileChunkMessage{.lease_id = 7, .kind = TrialFileKind::kLog, .size = 1, .data = "x"});
  EXPECT_FALSE(log.accepted);
  EXPECT_EQ(log.reason, "this coordinator keeps no trial logs");
  EXPECT_EQ(receive(artifact("a", 1, 0, "a")).reason, "the study's job has no artifacts_dir");
  EXPECT_TRUE(log_.empty());
}

// A preempted trial's checkpoint files go to its lineage's checkpoint folder, in place only when
// whole; an earlier lease's copy never replaces a later lease's.
TEST_F(FileReceiverTest, ACheckpointFileGoesToTheLineagesFolderAndAnOlderLeaseNeverReplacesIt) {
  where_.checkpoint_folder = (dir_ / "study" / "trial-0").string();
  auto checkpoint = [](uint64_t lease, uint64_t size, uint64_t offset, std::string data) {
    FileChunkMessage chunk = artifact("resume.ckpt", size, offset, std::move(data), lease);
    chunk.checkpoint = true;
    return chunk;
  };
  const fs::path target = dir_ / "study" / "trial-0" / "resume.ckpt";
  EXPECT_TRUE(receive(checkpoint(7, 6, 0, "step")).accepted);
  EXPECT_FALSE(fs::exists(target)) << "half a checkpoint is never served";
  EXPECT_TRUE(receive(checkpoint(7, 6, 4, " 4")).accepted);
  EXPECT_EQ(read(target), "step 4");
  EXPECT_FALSE(fs::exists(fs::path(where_.artifacts_folder) / "resume.ckpt"));

  EXPECT_TRUE(receive(checkpoint(9, 6, 0, "step 9")).accepted);
  EXPECT_EQ(read(target), "step 9");
  const FileAckMessage older = receive(checkpoint(8, 6, 0, "step 8"));
  EXPECT_FALSE(older.accepted);
  EXPECT_THAT(older.reason, HasSubstr("is newer (lease 9 sent it)"));
  EXPECT_EQ(read(target), "step 9");
  EXPECT_EQ(names(target.parent_path()),
            (std::vector<std::string>{"resume.ckpt", "resume.ckpt.lease"}));

  where_.checkpoint_folder.clear();
  where_.checkpoint_refusal = "the trial has no checkpoint path";
  const FileAckMessage nowhere = receive(checkpoint(10, 6, 0, "step 9"));
  EXPECT_FALSE(nowhere.accepted);
  EXPECT_EQ(nowhere.reason, "the trial has no checkpoint path");
}

// Which lease sent a checkpoint file outlives the coordinator: a restarted one still refuses an
// earlier lease's copy, and tells a re-run which lease sent the copy it serves.
TEST_F(FileReceiverTest, ACheckpointsSenderIsKnownAfterACoordinatorRestart) {
  where_.checkpoint_folder = (dir_ / "study" / "trial-0").string();
  auto checkpoint = [](uint64_t lease, std::string data) {
    FileChunkMessage chunk = artifact("resume.ckpt", data.size(), 0, std::move(data), lease);
    chunk.checkpoint = true;
    return chunk;
  };
  EXPECT_TRUE(receive(checkpoint(9, "step 9")).accepted);
  receiver_.emplace([this](const std::string& line) { log_.push_back(line); });
  const FileAckMessage older = receive(checkpoint(8, "step 8"));
  EXPECT_FALSE(older.accepted);
  EXPECT_THAT(older.reason, HasSubstr("is newer (lease 9 sent it)"));

  const std::string path = where_.checkpoint_folder + "/resume.ckpt";
  const CheckpointDataMessage stat = read_checkpoint_chunk(
      CheckpointGetMessage{
          .lease_id = 10, .of = CheckpointOf::kOwn, .file = "resume.ckpt", .stat = true},
      path);
  EXPECT_TRUE(stat.found) << stat.reason;
  EXPECT_EQ(stat.size, 6u);
  EXPECT_EQ(stat.written_by_lease, 9u);
  EXPECT_TRUE(stat.data.empty());
  const CheckpointDataMessage chunk = read_checkpoint_chunk(
      CheckpointGetMessage{.lease_id = 10, .of = CheckpointOf::kOwn, .file = "resume.ckpt"}, path);
  EXPECT_EQ(chunk.data, "step 9");
  EXPECT_EQ(chunk.written_by_lease, 9u);
}

TEST_F(FileReceiverTest, TheFilesOfEndedLeasesAreDropped) {
  EXPECT_TRUE(receive(artifact("a", 4, 0, "ab", 7)).accepted);
  EXPECT_TRUE(receive(artifact("b", 4, 0, "ab", 8)).accepted);
  receiver_->drop_ended([](uint64_t id) { return id == 8; });
  EXPECT_EQ(receiver_->partial_files(), 1u);
  receiver_.reset();
  EXPECT_TRUE(names(where_.artifacts_folder).empty()) << "no temporary file is left behind";
}

}  // namespace
}  // namespace tuner
