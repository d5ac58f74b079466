// launch_engine_trial's checks of a node of a multi-node trial (docs/engine_jobs.md, "Nodes")
// that need no data, GPU or other rank: the node's store is required, and a node other than 0
// waits for rank 0's NCCL id in it no longer than the collective timeout.
#include "executor/engine_launcher.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "executor/node_store.h"
#include "trials/error.h"

namespace tuner {
namespace {

EngineJobSpec cuda_job_of_two_nodes(double collective_timeout_s) {
  const nlohmann::json job = {
      {"kind", "engine"},
      {"model",
       {{"input", {1, 28, 28}},
        {"layers", {{{"type", "flatten"}}, {{"type", "linear"}, {"out", 10}}}}}},
      {"data", {{"dataset", "fashion-mnist"}, {"train", 8}, {"validation", 0}}},
      {"training", {{"batch_size", 4}}},
      {"backend", "cuda"},
      {"ranks", 2},
      {"nodes", 2},
      {"collective_timeout_s", collective_timeout_s},
      {"objective_metric", "train_loss"}};
  return parse_engine_job(job.dump());
}

Error launch_error(const EngineJobSpec& spec, const EngineLaunchOptions& options) {
  try {
    launch_engine_trial(spec, EngineTrial{.number = 4}, options);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "launched";
  return Error(ErrorCode::kInternal, "");
}

TEST(EngineLauncherNodes, ANodeNeedsItsStoreDirectory) {
  const Error e = launch_error(cuda_job_of_two_nodes(1), {.gpus = {0}, .node = 1});
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(std::string(e.what()),
            "trial 4: job.nodes: node 1 of 2 needs 0 <= node < nodes and the node's store "
            "directory (TUNER_NODE, TUNER_NODE_STORE: the executor sets them)");
}

TEST(EngineLauncherNodes, ANodeOtherThanZeroWaitsForTheNcclIdNoLongerThanTheTimeout) {
  NodeStoreDir store;
  const auto start = std::chrono::steady_clock::now();
  const Error e = launch_error(cuda_job_of_two_nodes(0.2),
                               {.gpus = {0}, .node = 1, .node_store_dir = store.path().string()});
  EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
  EXPECT_EQ(std::string(e.what()),
            "trial 4: job.nodes: node 1: the NCCL id of rank 0 (node 0) did not come through the "
            "coordinator within collective_timeout_s (200 ms)");
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
}

}  // namespace
}  // namespace tuner
