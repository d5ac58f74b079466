#include "launch/ray_executors_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tuner {
namespace {

namespace fs = std::filesystem;

class RayExecutorsFileTest : public ::testing::Test {
 protected:
  RayExecutorsFileTest()
      : dir_(fs::temp_directory_path() / ("ray_executors_file_test_" + std::to_string(::getpid())) /
             "study") {}
  ~RayExecutorsFileTest() override { fs::remove_all(dir_.parent_path()); }
  fs::path dir_;
};

TEST_F(RayExecutorsFileTest, ReadsBackWhatWasWrittenWhileItsProcessRuns) {
  const RayExecutorsRecord record{
      .pid = ::getpid(),
      .launcher = "ray-abc123",
      .address = "ray://head:10001",
      .endpoint = "tcp://login1:5555",
      .executors = {
          {.id = "ray-abc123-1", .state = "alive", .node = "10.0.0.7", .actor_id = "3f"},
          {.id = "ray-abc123-2", .state = "pending", .reason = "infeasible: no node has GPU 2"}}};
  write_ray_executors_file(dir_.string(), record);  // makes the directory
  EXPECT_EQ(read_ray_executors_file(dir_.string()), record);
  remove_ray_executors_file(dir_.string());
  EXPECT_EQ(read_ray_executors_file(dir_.string()), std::nullopt);
  EXPECT_FALSE(fs::exists(dir_.parent_path()));  // nothing left beside the storage
}

TEST_F(RayExecutorsFileTest, AFileOfAProcessThatIsGoneOrAnotherVersionIsNone) {
  // The largest pid Linux gives is 2^22; no process has this one.
  write_ray_executors_file(dir_.string(), {.pid = (1 << 22) + 1, .launcher = "ray-x"});
  EXPECT_EQ(read_ray_executors_file(dir_.string()), std::nullopt);
  std::ofstream(dir_ / "executors.json") << R"({"version": 2, "pid": 1})";
  EXPECT_EQ(read_ray_executors_file(dir_.string()), std::nullopt);
  std::ofstream(dir_ / "executors.json") << "not json";
  EXPECT_EQ(read_ray_executors_file(dir_.string()), std::nullopt);
}

TEST(RayStatusDir, IsBesideTheStorage) {
  EXPECT_EQ(ray_status_dir("runs/mlp.db", "mlp"), "runs/mlp.db.ray/mlp");
}

}  // namespace
}  // namespace tuner
