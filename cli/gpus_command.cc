// tuner gpus: the GPUs this build can use.
#include <iostream>

#include "cli/command.h"
#include "training/device/gpu_inventory.h"

namespace tuner::cli {

int run_gpus(const std::vector<std::string>& args) {
  Flags flags(args, {}, {}, "gpus");
  std::string why;
  auto gpus = training::list_gpus(&why);
  if (gpus.empty()) {
    std::cout << "no GPU: " << why << "\n";
    return kExitOk;
  }
  for (const auto& g : gpus) {
    std::cout << g.index << "  " << g.name << "  " << (g.memory_bytes >> 20) << " MiB  sm_"
              << g.compute_capability << "\n";
  }
  return kExitOk;
}

}  // namespace tuner::cli
