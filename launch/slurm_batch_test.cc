#include "launch/slurm_batch.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tuner {
namespace {

ExecutorJobSpec spec() {
  return {.tuner_path = "/opt/tuner bin/tuner",
          .connect_endpoint = "tcp://login1:41234",
          .slots = 2,
          .key_file = "/home/a/s.db.slurm/executor.key",
          .coordinator_key_file = "/home/a/s.db.slurm/coordinator.pub",
          .description = "sweep 'mlp'"};
}

TEST(SlurmBatchScript, ExecsTheExecutorWithKeyFilesNotKeys) {
  const std::string script = slurm_batch_script(spec());
  EXPECT_EQ(script.rfind("#!/bin/sh\n", 0), 0u);
  EXPECT_NE(script.find("exec '/opt/tuner bin/tuner' executor --connect 'tcp://login1:41234' "
                        "--slots 2 --id \"slurm-${SLURM_JOB_ID}\" --give-up-after-s 600 --key "
                        "'/home/a/s.db.slurm/executor.key' --coordinator-key "
                        "'/home/a/s.db.slurm/coordinator.pub'\n"),
            std::string::npos)
      << script;
  EXPECT_EQ(script.find("secret"), std::string::npos) << script;
}

TEST(SlurmBatchScript, QuotesWhatTheShellWouldRead) {
  ExecutorJobSpec s = spec();
  s.tuner_path = "/x/it's $HOME/tuner";
  EXPECT_NE(slurm_batch_script(s).find("exec '/x/it'\\''s $HOME/tuner' executor"),
            std::string::npos);
}

TEST(SbatchArgv, StatesOnlyTheResourcesGiven) {
  SlurmOptions options;
  EXPECT_EQ(
      sbatch_argv(options, "tuner-mlp-abc", "/d/slurm-%j.out", "/d/executor.sh"),
      (std::vector<std::string>{"sbatch", "--parsable", "--job-name=tuner-mlp-abc", "--nodes=1",
                                "--ntasks=1", "--output=/d/slurm-%j.out", "/d/executor.sh"}));
  options.partition = "gpu";
  options.account = "lab";
  options.time = "2:00:00";
  options.gpus = 1;
  options.cpus_per_executor = 8;
  options.mem = "32G";
  options.extra_args = {"--qos=long"};
  const std::vector<std::string> argv = sbatch_argv(options, "n", "o", "/d/executor.sh");
  for (const char* word : {"--partition=gpu", "--account=lab", "--time=2:00:00", "--gpus=1",
                           "--cpus-per-task=8", "--mem=32G", "--qos=long"}) {
    EXPECT_NE(std::find(argv.begin(), argv.end(), word), argv.end()) << word;
  }
  EXPECT_EQ(argv.back(), "/d/executor.sh");
  options.gpus.reset();
  options.gres = "gpu:a100:2";
  const std::vector<std::string> gres = sbatch_argv(options, "n", "o", "s");
  EXPECT_NE(std::find(gres.begin(), gres.end(), "--gres=gpu:a100:2"), gres.end());
}

}  // namespace
}  // namespace tuner
