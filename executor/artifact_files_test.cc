#include "executor/artifact_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "executor/trial_job.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;

class ArtifactFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("artifact_files_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const fs::path& relative, const std::string& content) {
    fs::create_directories((dir_ / relative).parent_path());
    std::ofstream(dir_ / relative, std::ios::binary) << content;
  }

  fs::path dir_;
};

TEST_F(ArtifactFilesTest, ListsEveryFileBelowTheFolderWithItsSizeSortedByPath) {
  write("trial-3/model/MLmodel", "flavors: {}\n");
  write("trial-3/model/model.pkl", std::string(1000, 'x'));
  write("trial-3/events.out.tfevents.1.host", "abc");
  write("trial-3/a.csv", "");
  fs::create_directories(dir_ / "trial-3" / "empty");
  const ArtifactListing listing = list_artifact_files(dir_ / "trial-3");
  EXPECT_FALSE(listing.truncated);
  EXPECT_EQ(listing.files, (std::vector<ArtifactFile>{{"a.csv", 0},
                                                      {"events.out.tfevents.1.host", 3},
                                                      {"model/MLmodel", 12},
                                                      {"model/model.pkl", 1000}}));
  // At most max_files, the first by path, and says so.
  const ArtifactListing two = list_artifact_files(dir_ / "trial-3", 2);
  EXPECT_TRUE(two.truncated);
  EXPECT_EQ(two.files,
            (std::vector<ArtifactFile>{{"a.csv", 0}, {"events.out.tfevents.1.host", 3}}));
  // A folder that is not there lists nothing.
  EXPECT_TRUE(list_artifact_files(dir_ / "trial-4").files.empty());
}

TEST_F(ArtifactFilesTest, GuessesMimeTypesAsPythonDoes) {
  EXPECT_EQ(guess_mime_type("metrics.json").mimetype, "application/json");
  EXPECT_EQ(guess_mime_type("PLOT.PNG").mimetype, "image/png");
  const MimeGuess csv_gz = guess_mime_type("table.csv.gz");
  EXPECT_EQ(csv_gz.mimetype, "text/csv");
  EXPECT_EQ(csv_gz.encoding, "gzip");
  const MimeGuess onnx = guess_mime_type("model.onnx");
  EXPECT_EQ(onnx.mimetype, "application/octet-stream");
  EXPECT_EQ(onnx.encoding, "");
  EXPECT_EQ(guess_mime_type("MLmodel").mimetype, "application/octet-stream");
}

// Optuna's format: the key "artifacts:<artifact_id>", the value the JSON text of the meta
// stored as a JSON string (optuna.artifacts.upload_artifact's set_trial_system_attr), the
// artifact_id the path below the job's artifacts_dir (FileSystemArtifactStore's base_path).
TEST_F(ArtifactFilesTest, RecordsEachFileAsOptunasArtifactMeta) {
  const auto attrs =
      optuna_artifact_attrs(3, {{"model/MLmodel", 12}, {"plot.png", 5}, {"t.csv.gz", 1}});
  ASSERT_EQ(attrs.size(), 3u);
  const std::string stored = attrs.at("artifacts:trial-3/model/MLmodel");
  const nlohmann::json text = nlohmann::json::parse(stored);
  ASSERT_TRUE(text.is_string());
  const nlohmann::json meta = nlohmann::json::parse(text.get<std::string>());
  EXPECT_EQ(meta, nlohmann::json({{"artifact_id", "trial-3/model/MLmodel"},
                                  {"filename", "MLmodel"},
                                  {"mimetype", "application/octet-stream"},
                                  {"encoding", nullptr}}));
  const nlohmann::json png = nlohmann::json::parse(
      nlohmann::json::parse(attrs.at("artifacts:trial-3/plot.png")).get<std::string>());
  EXPECT_EQ(png["mimetype"], "image/png");
  const nlohmann::json gz = nlohmann::json::parse(
      nlohmann::json::parse(attrs.at("artifacts:trial-3/t.csv.gz")).get<std::string>());
  EXPECT_EQ(gz["encoding"], "gzip");
  // A name that is not UTF-8 cannot be a JSON string: it is not recorded.
  EXPECT_TRUE(optuna_artifact_attrs(1, {{"bad\xff.bin", 1}}).empty());
}

TEST_F(ArtifactFilesTest, RecordsWhatATrialOfAJobLeftInItsFolder) {
  write("trial-2/model.onnx", "onnx");
  write("trial-2/notes.txt", "n");
  auto job = parse_trial_job(R"({"kind": "command", "argv": ["a"], "objective_metric": "m",
      "artifacts_dir": ")" + dir_.string() +
                             R"("})");
  const auto attrs = trial_artifact_attrs(*job, 2);
  ASSERT_EQ(attrs.size(), 2u);
  EXPECT_TRUE(attrs.contains("artifacts:trial-2/model.onnx"));
  EXPECT_TRUE(attrs.contains("artifacts:trial-2/notes.txt"));
  EXPECT_TRUE(trial_artifact_attrs(*job, 7).empty());  // it left nothing
  auto without = parse_trial_job(R"({"kind": "command", "argv": ["a"], "objective_metric": "m"})");
  EXPECT_TRUE(trial_artifact_attrs(*without, 2).empty());
  // At most kMaxRecordedArtifacts files are recorded.
  for (size_t i = 0; i < kMaxRecordedArtifacts + 5; ++i) write("trial-9/f" + std::to_string(i), "");
  EXPECT_EQ(trial_artifact_attrs(*job, 9).size(), kMaxRecordedArtifacts);
}

}  // namespace
}  // namespace tuner
