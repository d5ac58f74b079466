// Where a coordinator whose executors a cluster (Slurm, Ray) starts listens, and where those
// executors connect to it. `endpoint` is the sweep file's executors.<cluster>.endpoint
// (tcp://HOST:PORT, as the nodes reach the coordinator), or empty.
//
// Thread safety: pure functions (connect reads this host's name).
#ifndef TUNER_LAUNCH_ENDPOINTS_H_
#define TUNER_LAUNCH_ENDPOINTS_H_

#include <string>
#include <string_view>

namespace tuner {

// Every interface, on the port of `endpoint` or a free one ("tcp://0.0.0.0:*").
std::string launcher_bind_endpoint(const std::string& endpoint);
// `endpoint`, else `bound` (the coordinator's endpoint) with a wildcard host (0.0.0.0, *, [::])
// replaced by this host's name. Throws Error(kUnavailable) naming `section` ("executors.slurm")
// when the host has no name.
std::string launcher_connect_endpoint(const std::string& endpoint, const std::string& bound,
                                      std::string_view section);

}  // namespace tuner

#endif  // TUNER_LAUNCH_ENDPOINTS_H_
