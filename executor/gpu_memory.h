// GpuMemoryProbe: how much GPU memory a trial's processes hold, as the NVIDIA driver tells it.
// While a trial that was given GPUs runs, the executor samples it (kGpuMemorySampleInterval) and
// reports the peak with the trial's RESULT or FAIL (wire/protocol.h); a peak shorter than one
// interval may be missed.
//
// Thread safety: a probe may be called from several threads at once.
#ifndef TUNER_EXECUTOR_GPU_MEMORY_H_
#define TUNER_EXECUTOR_GPU_MEMORY_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace tuner {

inline constexpr std::chrono::milliseconds kGpuMemorySampleInterval{500};

class GpuMemoryProbe {
 public:
  virtual ~GpuMemoryProbe() = default;
  // The GPU memory held now, summed over every GPU, by the processes of process group `pgid` (a
  // trial's program and its children); nullopt when the driver cannot tell.
  virtual std::optional<uint64_t> process_group_bytes(pid_t pgid) = 0;
};

// The probe through NVML (libnvidia-ml.so.1, the library nvidia-smi reads, loaded at run time:
// the build needs no NVIDIA package), or nullptr when there is none (no driver, no GPU), with the
// reason in `why_none` when given. Processes are matched by id, so the driver must see this
// process's PID namespace: in a container without the host's PIDs, the probe answers nullopt.
std::shared_ptr<GpuMemoryProbe> nvml_memory_probe(std::string* why_none = nullptr);

}  // namespace tuner

#endif  // TUNER_EXECUTOR_GPU_MEMORY_H_
