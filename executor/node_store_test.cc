#include "executor/node_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace tuner {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

class NodeStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tuner-node-store-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(NodeStoreTest, FileNamesHoldAnyKeyAndOnlyKeys) {
  EXPECT_EQ(node_store_file("0"), "k30");
  EXPECT_EQ(node_store_key("k30"), "0");
  const std::string odd("a/b\0c", 5);
  EXPECT_EQ(node_store_key(node_store_file(odd)), odd);
  EXPECT_EQ(node_store_key(".tmp-1-2-k30"), std::nullopt);
  EXPECT_EQ(node_store_key("k3"), std::nullopt);
  EXPECT_EQ(node_store_key("kzz"), std::nullopt);
  EXPECT_EQ(node_store_key("notes"), std::nullopt);
}

TEST_F(NodeStoreTest, WrittenKeysAreReadBackWithBinaryValues) {
  const std::string value("\x00\x01\xff", 3);
  write_node_store_key(dir_, "0", value);
  write_node_store_key(dir_, kNcclIdKey, "id");
  std::ofstream(dir_ / ".tmp-half-written") << "x";  // a temporary: not a key
  const auto entries = read_node_store(dir_);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries.at("0"), value);
  EXPECT_EQ(entries.at("nccl_id"), "id");
  EXPECT_TRUE(read_node_store(dir_ / "missing").empty());
}

TEST_F(NodeStoreTest, GetWaitsForAKeyAnotherWriterSets) {
  NodeStore store(dir_);
  std::jthread writer([&] {
    std::this_thread::sleep_for(milliseconds(30));
    write_node_store_key(dir_, "1", "address of rank 1");
  });
  const std::optional<std::vector<char>> value = store.get("1", milliseconds(5000));
  ASSERT_TRUE(value);
  EXPECT_EQ(std::string(value->begin(), value->end()), "address of rank 1");
}

TEST_F(NodeStoreTest, GetGivesUpAfterItsTimeout) {
  NodeStore store(dir_);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(store.get("never", milliseconds(40)), std::nullopt);
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(40));
  store.set("mine", {'x'});
  EXPECT_EQ(read_node_store(dir_).at("mine"), "x");
}

}  // namespace
}  // namespace tuner
