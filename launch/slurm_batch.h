// The batch script of a Slurm executor job and the sbatch command that submits it.
//
// The script execs `tuner executor`, which reads its CURVE keys from files (the executor's
// secret key file is mode 0600, in a directory only its owner reads): no secret is on a command
// line, where `ps` and Slurm's job records would show it. The executor gives up after
// kSlurmExecutorGiveUpSeconds without word from its coordinator, so that a sweep killed before
// it could cancel its jobs (SIGKILL, a crashed host) leaves none running for long.
//
// Thread safety: pure functions.
#ifndef TUNER_LAUNCH_SLURM_BATCH_H_
#define TUNER_LAUNCH_SLURM_BATCH_H_

#include <string>
#include <vector>

#include "launch/slurm_options.h"

namespace tuner {

// tuner executor --give-up-after-s of the executors Slurm runs for a sweep.
inline constexpr int kSlurmExecutorGiveUpSeconds = 600;

// What one executor job runs.
struct ExecutorJobSpec {
  std::string tuner_path;            // the tuner binary on the node
  std::string connect_endpoint;      // tcp://HOST:PORT of the coordinator
  int slots = 1;                     // tuner executor --slots
  std::string key_file;              // the executor's .key file (its key pair)
  std::string coordinator_key_file;  // the coordinator's .pub file
  std::string description;           // who it serves, for the script's comment: "sweep 'mlp'"
};

// The executor id of the executor that job `job_id` runs: "slurm-<job id>".
std::string slurm_executor_id(const std::string& job_id);

// A POSIX sh script that execs the executor; its id is slurm_executor_id($SLURM_JOB_ID).
std::string slurm_batch_script(const ExecutorJobSpec& spec);

// sbatch --parsable with the options' resources, the job's name, its output file
// (`output_pattern`, with Slurm's %j for the job id), the extra arguments, then the script.
std::vector<std::string> sbatch_argv(const SlurmOptions& options, const std::string& job_name,
                                     const std::string& output_pattern,
                                     const std::string& script_path);

}  // namespace tuner

#endif  // TUNER_LAUNCH_SLURM_BATCH_H_
