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
  Flags flags(args, {}, "gpus");
  print_gpus();
  return kExitOk;
}

int run_devices(const std::vector<std::string>& args) {
  Flags flags(args, {}, "devices");
  std::cout << training::describe_cpu_kernels() << "\n";
  print_gpus();
  return kExitOk;
}

extern const Command kGpusCommand = {
    .name = "gpus",
    .synopsis = "gpus",
    .description = "list the GPUs this build can use",
    .flags = {},
    .run = &run_gpus,
};

extern const Command kDevicesCommand = {
    .name = "devices",
    .synopsis = "devices",
    .description =
        "the CPU (its vector ISA) and the GEMM kernels the engine\n"
        "runs on it, then the GPUs",
    .flags = {},
    .run = &run_devices,
};

}  // namespace tuner::cli
