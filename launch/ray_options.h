// RayOptions: how a sweep's executors are started on a Ray cluster (the sweep file's
// "executors": {"ray": {...}}; docs/sweep_file.md, "executors.ray"; docs/clusters.md, "Ray").
//
// Thread safety: a plain value.
#ifndef TUNER_LAUNCH_RAY_OPTIONS_H_
#define TUNER_LAUNCH_RAY_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace tuner {

struct RayOptions {
  // The cluster, as ray.init(address=...) takes it: "ray://HOST:10001" (Ray Client),
  // "HOST:6379" (the head's GCS), or "auto" (the cluster this host is a node of). Required.
  std::string address;
  // Ray resources each executor's actor asks for: .options(num_cpus=, num_gpus=). Defaults 1 and
  // 0; fractions are allowed, as in Ray.
  double cpus_per_executor = 1;
  double gpus_per_executor = 0;
  // .options(memory=) as a size such as "8G" (K, M, G, T: powers of 1024). Default (empty): not
  // stated.
  std::string memory;
  // Trial slots of each executor (tuner executor --slots). Default 1.
  int slots = 1;
  // Executors kept (pending or running) while the study runs. Defaults 0 and 1.
  // REQUIRES: 0 <= min_executors <= max_executors, max_executors >= 1.
  int min_executors = 0;
  int max_executors = 1;
  // How long a running executor may stay idle (no trial) before it is stopped, while more than
  // min_executors are kept. Default 2 min.
  std::chrono::seconds idle_grace{120};
  // The Python interpreter on this host that has the `ray` package; it runs tuner's Ray launcher
  // (launch/ray_launcher.py). Default "python3" (looked up in PATH).
  std::string python = "python3";
  // The tuner binary on the cluster's nodes. Default (empty): the running binary's own path.
  std::string tuner_path;
  // Where the executors connect back to, "tcp://HOST:PORT". Default (empty): the coordinator
  // binds every interface of this host on a free port, and the executors connect to this
  // host's name on that port.
  std::string endpoint;
  // ray.init(runtime_env=...): the JSON text of an object. Default (empty): none.
  std::string runtime_env;

  bool operator==(const RayOptions&) const = default;
};

// `memory` ("512M", "8G", a bare number of bytes) in bytes; 0 when it is empty. Throws
// Error(kInvalidArgument) when it is not such a size or does not fit in 63 bits.
int64_t ray_memory_bytes(const std::string& memory);

}  // namespace tuner

#endif  // TUNER_LAUNCH_RAY_OPTIONS_H_
