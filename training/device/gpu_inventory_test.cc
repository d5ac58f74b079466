#include "training/device/gpu_inventory.h"

#include <gtest/gtest.h>

namespace tuner::training {
namespace {

TEST(GpuInventory, ListsDevicesOrSaysWhyNot) {
  std::string why;
  auto gpus = list_gpus(&why);
  if (gpus.empty()) {
    EXPECT_FALSE(why.empty());
    GTEST_SKIP() << "no GPU here: " << why;
  }
  for (size_t i = 0; i < gpus.size(); ++i) {
    EXPECT_EQ(gpus[i].index, static_cast<int>(i));
    EXPECT_GT(gpus[i].memory_bytes, 0u);
    EXPECT_GE(gpus[i].compute_capability, 50);
  }
}

}  // namespace
}  // namespace tuner::training
