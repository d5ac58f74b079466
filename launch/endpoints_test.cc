#include "launch/endpoints.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace tuner {
namespace {

TEST(LauncherEndpoint, ListensEverywhereAndIsReachedByThisHostsName) {
  EXPECT_EQ(launcher_bind_endpoint(""), "tcp://0.0.0.0:*");
  EXPECT_EQ(launcher_bind_endpoint("tcp://login1:5555"), "tcp://0.0.0.0:5555");
  char name[256] = {};
  ASSERT_EQ(::gethostname(name, sizeof name - 1), 0);
  EXPECT_EQ(launcher_connect_endpoint("", "tcp://0.0.0.0:41234", "executors.slurm"),
            "tcp://" + std::string(name) + ":41234");
  EXPECT_EQ(launcher_connect_endpoint("", "tcp://10.0.0.5:41234", "executors.slurm"),
            "tcp://10.0.0.5:41234");
  EXPECT_EQ(launcher_connect_endpoint("tcp://login1:5555", "tcp://0.0.0.0:5555", "executors.ray"),
            "tcp://login1:5555");
  EXPECT_EQ(launcher_connect_endpoint("", "ipc:///tmp/x.sock", "executors.ray"),
            "ipc:///tmp/x.sock");
}

}  // namespace
}  // namespace tuner
