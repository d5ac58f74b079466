#include "executor/node_store_relay.h"

#include <gtest/gtest.h>

#include <utility>

namespace tuner {
namespace {

using Keys = std::vector<std::pair<std::string, std::string>>;

TEST(NodeStoreRelayTest, EachKeyTheRanksWriteIsTakenOnceAndKeptAsPublished) {
  NodeStoreRelay relay;
  write_node_store_key(relay.path(), "rank0", "10.0.0.1:4000");  // as a rank would
  EXPECT_EQ(relay.take_new_keys(), (Keys{{"rank0", "10.0.0.1:4000"}}));
  EXPECT_TRUE(relay.take_new_keys().empty());
  write_node_store_key(relay.path(), "rank1", "10.0.0.1:4001");
  EXPECT_EQ(relay.take_new_keys(), (Keys{{"rank1", "10.0.0.1:4001"}}));
  EXPECT_EQ(relay.published(), (std::map<std::string, std::string>{{"rank0", "10.0.0.1:4000"},
                                                                   {"rank1", "10.0.0.1:4001"}}));
}

TEST(NodeStoreRelayTest, KeysFromTheCoordinatorAreWrittenOnceAndNotSentBack) {
  NodeStoreRelay relay;
  EXPECT_TRUE(relay.write_keys({{"nccl_id", "abc"}, {"rank2", "x"}}).empty());
  EXPECT_EQ(read_node_store(relay.path()),
            (std::map<std::string, std::string>{{"nccl_id", "abc"}, {"rank2", "x"}}));
  EXPECT_TRUE(relay.take_new_keys().empty());
  EXPECT_TRUE(relay.published().empty());
}

TEST(NodeStoreRelayTest, TheDirectoryGoesWithTheRelay) {
  std::filesystem::path dir;
  {
    NodeStoreRelay relay;
    dir = relay.path();
    EXPECT_TRUE(std::filesystem::is_directory(dir));
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(NodeStoreWatchTest, AWatchedStoreMakesTheDescriptorReadableOnAWrite) {
  NodeStoreRelay relay;
  NodeStoreWatch watch;
  EXPECT_EQ(watch.fd(), -1);
  const std::string problem = watch.watch(relay.path());
  if (!problem.empty()) {  // no inotify here: the loop polls instead
    EXPECT_TRUE(watch.polling());
    return;
  }
  EXPECT_FALSE(watch.polling());
  ASSERT_GE(watch.fd(), 0);
  write_node_store_key(relay.path(), "k", "v");
  watch.drain();  // reads what came, never blocks
  watch.drain();
}

}  // namespace
}  // namespace tuner
