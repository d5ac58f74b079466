#include "launch/slurm_jobs_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tuner {
namespace {

namespace fs = std::filesystem;

class SlurmJobsFileTest : public ::testing::Test {
 protected:
  SlurmJobsFileTest()
      : dir_(fs::temp_directory_path() / ("slurm_jobs_file_test_" + std::to_string(::getpid()))) {
    fs::create_directories(dir_);
  }
  ~SlurmJobsFileTest() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(SlurmJobsFileTest, ReadsBackWhatWasWrittenWhileItsProcessRuns) {
  const SlurmJobsRecord record{.pid = ::getpid(),
                               .job_name = "tuner-mlp-abc123",
                               .endpoint = "tcp://login1:5555",
                               .jobs = {{"12", "RUNNING", "None"}, {"13", "PENDING", "Priority"}}};
  write_slurm_jobs_file(dir_.string(), record);
  EXPECT_EQ(read_slurm_jobs_file(dir_.string()), record);
  remove_slurm_jobs_file(dir_.string());
  EXPECT_EQ(read_slurm_jobs_file(dir_.string()), std::nullopt);
}

TEST_F(SlurmJobsFileTest, AFileOfAProcessThatIsGoneOrAnotherVersionIsNone) {
  // The largest pid Linux gives is 2^22; no process has this one.
  write_slurm_jobs_file(dir_.string(), {.pid = (1 << 22) + 1, .job_name = "n", .endpoint = "e"});
  EXPECT_EQ(read_slurm_jobs_file(dir_.string()), std::nullopt);
  std::ofstream(dir_ / "jobs.json") << R"({"version": 2, "pid": 1})";
  EXPECT_EQ(read_slurm_jobs_file(dir_.string()), std::nullopt);
  std::ofstream(dir_ / "jobs.json") << "not json";
  EXPECT_EQ(read_slurm_jobs_file(dir_.string()), std::nullopt);
}

TEST(SlurmWorkDir, IsBesideTheStorage) {
  EXPECT_EQ(slurm_work_dir("runs/mlp.db", "mlp"), "runs/mlp.db.slurm/mlp");
}

}  // namespace
}  // namespace tuner
