#include "launch/slurm_batch.h"

#include "launch/shell_quote.h"

namespace tuner {

std::string slurm_executor_id(const std::string& job_id) { return "slurm-" + job_id; }

std::string slurm_batch_script(const ExecutorJobSpec& spec) {
  std::string script = "#!/bin/sh\n";
  script += "# A tuner executor for " + spec.description +
            ", started by Slurm (docs/clusters.md). It runs until the sweep cancels its job.\n";
  script += "exec " + shell_quote(spec.tuner_path) + " executor --connect " +
            shell_quote(spec.connect_endpoint) + " --slots " + std::to_string(spec.slots) +
            " --id \"" + slurm_executor_id("${SLURM_JOB_ID}") + "\" --give-up-after-s " +
            std::to_string(kSlurmExecutorGiveUpSeconds) + " --key " + shell_quote(spec.key_file) +
            " --coordinator-key " + shell_quote(spec.coordinator_key_file) + "\n";
  return script;
}

std::vector<std::string> sbatch_argv(const SlurmOptions& options, const std::string& job_name,
                                     const std::string& output_pattern,
                                     const std::string& script_path) {
  std::vector<std::string> argv = {"sbatch",    "--parsable", "--job-name=" + job_name,
                                   "--nodes=1", "--ntasks=1", "--output=" + output_pattern};
  if (!options.partition.empty()) argv.push_back("--partition=" + options.partition);
  if (!options.account.empty()) argv.push_back("--account=" + options.account);
  if (!options.time.empty()) argv.push_back("--time=" + options.time);
  if (options.gpus) argv.push_back("--gpus=" + std::to_string(*options.gpus));
  if (!options.gres.empty()) argv.push_back("--gres=" + options.gres);
  if (options.cpus_per_executor > 0) {
    argv.push_back("--cpus-per-task=" + std::to_string(options.cpus_per_executor));
  }
  if (!options.mem.empty()) argv.push_back("--mem=" + options.mem);
  argv.insert(argv.end(), options.extra_args.begin(), options.extra_args.end());
  argv.push_back(script_path);
  return argv;
}

}  // namespace tuner
