// SlurmOptions: how a sweep's executors are started as Slurm batch jobs (the sweep file's
// "executors": {"slurm": {...}}; docs/sweep_file.md, "Slurm"; docs/clusters.md).
//
// Thread safety: a plain value.
#ifndef TUNER_LAUNCH_SLURM_OPTIONS_H_
#define TUNER_LAUNCH_SLURM_OPTIONS_H_

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace tuner {

struct SlurmOptions {
  // sbatch --partition. Default (empty): the cluster's default partition.
  std::string partition;
  // sbatch --account. Default (empty): the user's default account.
  std::string account;
  // sbatch --time: each executor job's time limit in Slurm's own form ("30", "2:00:00",
  // "1-12:00:00"). Default (empty): the partition's default.
  std::string time;
  // GPUs per executor job: a count (sbatch --gpus=N) or a gres string (sbatch --gres=, e.g.
  // "gpu:a100:2"); at most one of the two is set. Default: none.
  std::optional<int> gpus;
  std::string gres;
  // sbatch --cpus-per-task. Default 0: not stated (Slurm's default, one CPU).
  int cpus_per_executor = 0;
  // sbatch --mem, e.g. "8G". Default (empty): the partition's default.
  std::string mem;
  // Trial slots of each executor (tuner executor --slots). Default 1.
  int slots = 1;
  // Executor jobs kept submitted (pending or running) while the study runs. Defaults 0 and 1.
  // REQUIRES: 0 <= min_executors <= max_executors, max_executors >= 1.
  int min_executors = 0;
  int max_executors = 1;
  // How long a running executor job may stay idle (no trial) before it is cancelled, while more
  // than min_executors are kept. Default 2 min.
  std::chrono::seconds idle_grace{120};
  // More sbatch arguments, each one word, e.g. {"--qos=long", "--constraint=a100"}. Default: none.
  std::vector<std::string> extra_args;
  // The tuner binary on the cluster's nodes. Default (empty): the running binary's own path
  // (a shared file system).
  std::string tuner_path;
  // Where the executors connect back to, "tcp://HOST:PORT". Default (empty): the coordinator
  // binds every interface of this host on a free port, and the executors connect to this
  // host's name on that port.
  std::string endpoint;

  bool operator==(const SlurmOptions&) const = default;
};

}  // namespace tuner

#endif  // TUNER_LAUNCH_SLURM_OPTIONS_H_
