// tuner gpus: the GPUs this build can use; tuner devices: the CPU and the kernels the engine runs
// there, then the GPUs.
#include <iostream>

#include "cli/command.h"
#include "training/backends/cpu/cpu_kernels.h"
#include "training/device/gpu_inventory.h"

namespace tuner::cli {

namespace {

void print_gpus() {
  std::string why;
  auto gpus = training::list_gpus(&why);
  if (gpus.empty()) {
    std::cout << "no GPU: " << why << "\n";
    return;
  }
  for (const auto& g : gpus) {
    std::cout << g.index << "  " << g.name << "  " << (g.memory_bytes >> 20) << " MiB  sm_"
              << g.compute_capability << "\n";
  }
}

}  // namespace

int run_gpus(const std::vector<std::string>& args) {
  Flags flags(args, {}, {}, "gpus");
  print_gpus();
  return kExitOk;
}

int run_devices(const std::vector<std::string>& args) {
  Flags flags(args, {}, {}, "devices");
  std::cout << training::describe_cpu_kernels() << "\n";
  print_gpus();
  return kExitOk;
}

}  // namespace tuner::cli
