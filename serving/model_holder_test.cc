#include "serving/model_holder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "serving/test_support.h"
#include "trials/error.h"

namespace tuner::serving {
namespace {

using ::testing::HasSubstr;

TEST(ModelReferenceTest, ReadsEachForm) {
  testing::TinyRegistry registry(1);
  const auto alias = registry::parse_model_reference(registry.ref("tiny@champion"));
  EXPECT_EQ(alias.registry, registry.dir());
  EXPECT_EQ(alias.ref, "tiny@champion");
  EXPECT_TRUE(alias.can_move());
  EXPECT_TRUE(registry::parse_model_reference(registry.ref("tiny")).can_move());
  const auto version = registry::parse_model_reference(registry.ref("tiny/1"));
  EXPECT_EQ(version.ref, "tiny/1");
  EXPECT_FALSE(version.can_move());
  // A version's own directory keeps its registry name and number; a trailing '/' is the same.
  EXPECT_EQ(registry::parse_model_reference(registry.ref("tiny/1/")).ref, "tiny/1");
  // A model directory outside a registry is itself.
  const std::filesystem::path copy = registry.dir().parent_path() / "copy";
  std::filesystem::copy(registry.dir() / "tiny" / "1", copy,
                        std::filesystem::copy_options::recursive);
  const auto bare = registry::parse_model_reference(copy.string());
  EXPECT_EQ(bare.directory, copy);
  EXPECT_FALSE(bare.can_move());
}

TEST(ModelHolderTest, FollowsAnAliasAndKeepsTheOldModelForItsHolders) {
  testing::TinyRegistry registry(2);
  ModelHolder holder(registry.ref("tiny@champion"), 1);
  const std::shared_ptr<LoadedModel> first = holder.current();
  EXPECT_EQ(first->name, "tiny");
  EXPECT_EQ(first->version, 1);
  EXPECT_EQ(holder.reload(), nullptr);  // unchanged
  registry.move_champion(2);
  const std::shared_ptr<LoadedModel> second = holder.reload();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->version, 2);
  EXPECT_EQ(holder.current(), second);
  EXPECT_EQ(first->version, 1);  // still usable by whoever holds it
  EXPECT_EQ(first->model.forward(std::vector<float>{1, 2, 3, 4}).size(), 3u);
}

TEST(ModelHolderTest, AFailedReloadKeepsTheModelServed) {
  testing::TinyRegistry registry(1);
  ModelHolder holder(registry.ref("tiny@champion"), 1);
  registry::Registry::open(registry.dir(), false).delete_alias("tiny", "champion");
  try {
    holder.reload();
    FAIL() << "reloaded a deleted alias";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("champion"));
  }
  EXPECT_EQ(holder.current()->version, 1);
}

TEST(ModelHolderTest, AMissingModelIsNamed) {
  testing::TinyRegistry registry(1);
  try {
    ModelHolder holder(registry.ref("nope@champion"), 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_THAT(e.what(), HasSubstr("nope"));
  }
}

}  // namespace
}  // namespace tuner::serving
