#include "executor/gpu_memory.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace tuner {

namespace {

// The part of NVML's C interface used here (NVML's public API; nvml.h is not packaged by Debian).
using NvmlReturn = int;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlInsufficientSize = 7;
constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;
using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlProcessInfo {  // nvmlProcessInfo_t, as _v2 and _v3 of the call below fill it
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
using InitFn = NvmlReturn (*)();
using CountFn = NvmlReturn (*)(unsigned int*);
using HandleFn = NvmlReturn (*)(unsigned int, NvmlDevice*);
using ProcessesFn = NvmlReturn (*)(NvmlDevice, unsigned int*, NvmlProcessInfo*);
using ErrorStringFn = const char* (*)(NvmlReturn);

class NvmlProbe final : public GpuMemoryProbe {
 public:
  NvmlProbe(ProcessesFn processes, std::vector<NvmlDevice> devices)
      : processes_(processes), devices_(std::move(devices)) {}

  std::optional<uint64_t> process_group_bytes(pid_t pgid) override {
    uint64_t bytes = 0;
    bool listed = false, visible = false;
    std::vector<NvmlProcessInfo> infos(16);
    for (NvmlDevice device : devices_) {
      unsigned int count = static_cast<unsigned int>(infos.size());
      NvmlReturn status = processes_(device, &count, infos.data());
      while (status == kNvmlInsufficientSize) {
        infos.resize(count + 16);
        count = static_cast<unsigned int>(infos.size());
        status = processes_(device, &count, infos.data());
      }
      if (status != kNvmlSuccess) return std::nullopt;
      for (unsigned int i = 0; i < count; ++i) {
        listed = true;
        const pid_t group = ::getpgid(static_cast<pid_t>(infos[i].pid));
        if (group < 0) continue;  // not in this PID namespace, or gone
        visible = true;
        if (group != pgid) continue;
        if (infos[i].used_gpu_memory == kNvmlValueNotAvailable) return std::nullopt;
        bytes += infos[i].used_gpu_memory;
      }
    }
    if (listed && !visible) return std::nullopt;  // the driver's PIDs are not ours to match
    return bytes;
  }

 private:
  ProcessesFn processes_;
  std::vector<NvmlDevice> devices_;
};

}  // namespace

std::shared_ptr<GpuMemoryProbe> nvml_memory_probe(std::string* why_none) {
  auto none = [why_none](std::string why) -> std::shared_ptr<GpuMemoryProbe> {
    if (why_none) *why_none = std::move(why);
    return nullptr;
  };
  // Loaded once and kept for the process's life: NVML is initialized once, and never shut down
  // while a probe may be in use.
  static void* const library = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) return none("no NVIDIA driver library (libnvidia-ml.so.1)");
  auto symbol = [](const char* name) { return ::dlsym(library, name); };
  auto init = reinterpret_cast<InitFn>(symbol("nvmlInit_v2"));
  auto count_fn = reinterpret_cast<CountFn>(symbol("nvmlDeviceGetCount_v2"));
  auto handle_fn = reinterpret_cast<HandleFn>(symbol("nvmlDeviceGetHandleByIndex_v2"));
  auto processes = reinterpret_cast<ProcessesFn>(symbol("nvmlDeviceGetComputeRunningProcesses_v3"));
  if (!processes) {
    processes = reinterpret_cast<ProcessesFn>(symbol("nvmlDeviceGetComputeRunningProcesses_v2"));
  }
  auto error_string = reinterpret_cast<ErrorStringFn>(symbol("nvmlErrorString"));
  if (!init || !count_fn || !handle_fn || !processes) {
    return none("the NVIDIA driver library lacks the calls for per-process memory");
  }
  auto failed = [error_string](const std::string& call, NvmlReturn status) {
    return call + " failed: " + (error_string ? error_string(status) : std::to_string(status));
  };
  static const NvmlReturn init_status = init();
  if (init_status != kNvmlSuccess) return none(failed("nvmlInit", init_status));
  unsigned int count = 0;
  if (NvmlReturn s = count_fn(&count); s != kNvmlSuccess) {
    return none(failed("nvmlDeviceGetCount", s));
  }
  if (count == 0) return none("the NVIDIA driver sees no GPU");
  std::vector<NvmlDevice> devices(count);
  for (unsigned int i = 0; i < count; ++i) {
    if (NvmlReturn s = handle_fn(i, &devices[i]); s != kNvmlSuccess) {
      return none(failed("nvmlDeviceGetHandleByIndex", s));
    }
  }
  return std::make_shared<NvmlProbe>(processes, std::move(devices));
}

}  // namespace tuner
