#include "tracking/mlflow_registry.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tracking/fake_mlflow_test_support.h"

namespace tuner::tracking {
namespace {

namespace fs = std::filesystem;
using testing::FakeMlflow;
using testing::FakeTransport;

class MlflowRegistryTest : public ::testing::Test {
 protected:
  MlflowRegistryTest()
      : server_(std::make_shared<FakeMlflow>()),
        client_(std::make_unique<FakeTransport>(server_), RetryPolicy{.attempts = 1}),
        dir_(fs::temp_directory_path() /
             ("tuner_mlflow_registry_test_" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "engine");
    std::ofstream(dir_ / "MLmodel") << "flavors: {}\n";
    std::ofstream(dir_ / "engine" / "model.ckpt") << "weights";
    const std::string experiment = client_.get_or_create_experiment("s");
    run_ = client_.create_run(experiment, "trial-0", 0, {});
  }
  ~MlflowRegistryTest() override { fs::remove_all(dir_); }

  VersionToMirror version(int n) {
    return {.model_name = "m",
            .registry_version = n,
            .model_dir = dir_,
            .run_id = run_.run_id,
            .description = "trial 0",
            .tags = {{"tuner.trial", "0"}}};
  }

  std::shared_ptr<FakeMlflow> server_;
  MlflowClient client_;
  fs::path dir_;
  MlflowRun run_;
};

TEST_F(MlflowRegistryTest, AVersionIsUploadedAndRegisteredOnce) {
  const MirroredVersion v = mirror_version(client_, version(1));
  EXPECT_TRUE(v.created);
  EXPECT_EQ(v.version, "1");
  const std::string root = "1/" + run_.run_id + "/artifacts/model/";
  EXPECT_EQ(server_->artifacts.at(root + "MLmodel"), "flavors: {}\n");
  EXPECT_EQ(server_->artifacts.at(root + "engine/model.ckpt"), "weights");
  EXPECT_EQ(v.source, run_.artifact_uri + "/model");
  const testing::FakeVersion& stored = server_->models.at("m").versions.at(0);
  EXPECT_EQ(stored.run_id, run_.run_id);
  EXPECT_EQ(stored.tags.at(kRegistryVersionTag), "1");
  EXPECT_EQ(stored.tags.at("tuner.trial"), "0");
  EXPECT_EQ(stored.description, "trial 0");
  // Again: found by its tag, nothing uploaded or created.
  const size_t uploads = server_->count("mlflow-artifacts");
  const MirroredVersion again = mirror_version(client_, version(1));
  EXPECT_FALSE(again.created);
  EXPECT_EQ(again.version, "1");
  EXPECT_EQ(server_->models.at("m").versions.size(), 1u);
  EXPECT_EQ(server_->count("mlflow-artifacts"), static_cast<int>(uploads));
}

TEST_F(MlflowRegistryTest, AliasesFollowTheFileRegistry) {
  mirror_version(client_, version(1));
  mirror_version(client_, version(2));
  // A version registered in MLflow by someone else, with an alias of its own.
  server_->models.at("m").versions.push_back(
      {.version = "3", .source = "x", .run_id = run_.run_id});
  server_->models.at("m").aliases["theirs"] = "3";

  EXPECT_EQ(
      mirror_aliases(client_, "m", {{"champion", 1}, {"staging", 2}}),
      (std::map<std::string, std::string>{{"champion", "1"}, {"staging", "2"}, {"theirs", "3"}}));
  // The champion moves to 2, staging is deleted in the file registry.
  EXPECT_EQ(mirror_aliases(client_, "m", {{"champion", 2}}),
            (std::map<std::string, std::string>{{"champion", "2"}, {"theirs", "3"}}));
  EXPECT_EQ(server_->models.at("m").aliases,
            (std::map<std::string, std::string>{{"champion", "2"}, {"theirs", "3"}}));
  // An alias of a version that is not mirrored yet is left for later.
  EXPECT_EQ(mirror_aliases(client_, "m", {{"champion", 2}, {"next", 9}}).count("next"), 0u);
}

}  // namespace
}  // namespace tuner::tracking
