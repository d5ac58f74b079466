#include "executor/trial_job.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "trials/error.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;

std::string error_of(const std::string& json) {
  try {
    parse_trial_job(json);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "(no error)";
}

// The command job's own spec.
const CommandSpec& command_of(const TrialJob& job) {
  return dynamic_cast<const CommandTrialJob&>(job).spec();
}

TEST(TrialJobTest, ParsesACommandJob) {
  auto job = parse_trial_job(R"({"kind": "command", "argv": ["python3", "t.py", "--lr", "{lr}"],
      "env": {"OMP_NUM_THREADS": "1"}, "working_dir": "/src", "objective_metric": "val_loss"})");
  EXPECT_EQ(job->kind(), "command");
  EXPECT_EQ(command_of(*job).argv, (std::vector<std::string>{"python3", "t.py", "--lr", "{lr}"}));
  EXPECT_EQ(command_of(*job).env.at("OMP_NUM_THREADS"), "1");
  EXPECT_EQ(command_of(*job).working_dir, "/src");
  EXPECT_EQ(job->objective_metric(), "val_loss");
  // It runs as stated, on one executor, without a GPU or a checkpoint of its own.
  EXPECT_EQ(job->command(TrialPlacement{.number = 3, .gpus = {0}}).argv, command_of(*job).argv);
  EXPECT_EQ(job->needs().nodes, 1);
  EXPECT_EQ(job->needs().gpus_per_node, 0);
  EXPECT_EQ(job->checkpoint_path(3), "");
  EXPECT_EQ(job->failure_reason("error: oops\n"), std::nullopt);
  // Without artifacts_dir the executor writes no scalars.
  EXPECT_EQ(job->scalars_dir(3), "");
}

TEST(TrialJobTest, ACommandJobAsksForWholeGpusOrAShareOfOne) {
  const std::string base = R"({"kind": "command", "argv": ["a"], "objective_metric": "m")";
  auto whole = parse_trial_job(base + R"(, "gpus_per_trial": 2})");
  EXPECT_EQ(whole->needs().gpus_per_node, 2);
  EXPECT_EQ(whole->needs().gpu_fraction, 0);
  CommandSpec spec = whole->command(TrialPlacement{.number = 4, .gpus = {1, 3}});
  EXPECT_EQ(spec.env.at("CUDA_VISIBLE_DEVICES"), "1,3");
  EXPECT_EQ(spec.env.at("TUNER_GPUS"), "1,3");
  EXPECT_EQ(parse_trial_job(whole->to_json())->to_json(), whole->to_json());
  EXPECT_NE(whole->to_json().find(R"("gpus_per_trial":2)"), std::string::npos);

  auto half =
      parse_trial_job(base + R"(, "gpus_per_trial": 0.5, "env": {"CUDA_VISIBLE_DEVICES": "7"}})");
  EXPECT_EQ(half->needs().gpus_per_node, 0);
  EXPECT_EQ(half->needs().gpu_fraction, 0.5);
  EXPECT_EQ(half->command(TrialPlacement{.gpus = {2}}).env.at("CUDA_VISIBLE_DEVICES"), "2");
  EXPECT_EQ(parse_trial_job(half->to_json())->needs().gpu_fraction, 0.5);

  // Given none, or another number: the trial fails at its start, naming it.
  try {
    half->command(TrialPlacement{.number = 9});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "trial 9: job.gpus_per_trial is 0.5, but the trial was given 0 GPU(s) (none)");
  }
  EXPECT_THROW(whole->command(TrialPlacement{.gpus = {0}}), Error);

  // Without GPUs (0 or absent) the environment is the executor's: no CUDA_VISIBLE_DEVICES.
  const std::vector<std::string> without = {base + "}", base + R"(, "gpus_per_trial": 0})"};
  for (const std::string& json : without) {
    auto none = parse_trial_job(json);
    EXPECT_EQ(none->needs().gpus_per_node, 0);
    EXPECT_EQ(none->needs().gpu_fraction, 0);
    EXPECT_EQ(none->command(TrialPlacement{.gpus = {}}).env.count("CUDA_VISIBLE_DEVICES"), 0u);
    EXPECT_EQ(none->to_json().find("gpus_per_trial"), std::string::npos);
  }
}

TEST(TrialJobTest, ACommandJobStatesTheGpuMemoryOfATrial) {
  const std::string base = R"({"kind": "command", "argv": ["a"], "objective_metric": "m", )";
  auto job = parse_trial_job(base + R"("gpus_per_trial": 0.25, "gpu_memory_per_trial": "20G"})");
  EXPECT_EQ(job->needs().gpu_memory_bytes, uint64_t{20} << 30);
  EXPECT_EQ(job->command(TrialPlacement{.gpus = {1}}).env.at("TUNER_GPU_MEMORY_BYTES"),
            std::to_string(uint64_t{20} << 30));
  EXPECT_EQ(parse_trial_job(job->to_json())->needs().gpu_memory_bytes, uint64_t{20} << 30);
  EXPECT_EQ(parse_trial_job(base + R"("gpus_per_trial": 1})")
                ->command(TrialPlacement{.gpus = {0}})
                .env.count("TUNER_GPU_MEMORY_BYTES"),
            0u);

  const std::string expected =
      "job.gpu_memory_per_trial: expected a memory size such as \"20G\" "
      "or \"512M\", got ";
  EXPECT_EQ(error_of(base + R"("gpus_per_trial": 1, "gpu_memory_per_trial": "20GB"})"),
            expected + "\"20GB\"");
  EXPECT_EQ(error_of(base + R"("gpus_per_trial": 1, "gpu_memory_per_trial": 20})"),
            expected + "20");
  EXPECT_EQ(error_of(base + R"("gpus_per_trial": 1, "gpu_memory_per_trial": "0"})"),
            expected + "\"0\"");
  EXPECT_EQ(error_of(base + R"("gpu_memory_per_trial": "8G"})"),
            "job.gpu_memory_per_trial: is the memory of a trial's GPUs: the job needs "
            "gpus_per_trial");
}

TEST(TrialJobTest, RefusesABadGpusPerTrialNamingTheJsonPath) {
  const std::string base = R"({"kind": "command", "argv": ["a"], "objective_metric": "m", )";
  const std::string expected =
      "job.gpus_per_trial: expected a whole number of GPUs (1, 2, ...), a share of one GPU in "
      "(0, "
      "1) such as 0.5, or 0 for none, got ";
  EXPECT_EQ(error_of(base + R"("gpus_per_trial": 1.5})"), expected + "1.5");
  EXPECT_EQ(error_of(base + R"("gpus_per_trial": -1})"), expected + "-1");
  EXPECT_EQ(error_of(base + R"("gpus_per_trial": "1"})"), expected + "string \"1\"");
  EXPECT_EQ(error_of(base + R"("gpus_per_trial": 2048})"),
            "job.gpus_per_trial: at most 1024 GPUs, got 2048");
  EXPECT_NE(error_of(base + R"("gpus": 1})").find("job.gpus: unknown member"), std::string::npos);
}

// A command job's artifacts_dir is the study's folder: trial N's reports go to trial-N as
// TensorBoard scalars. An engine job writes its own, so the executor writes none for it.
TEST(TrialJobTest, ACommandJobWithAnArtifactsDirHasAFolderOfScalarsPerTrial) {
  auto job = parse_trial_job(
      R"({"kind": "command", "argv": ["a"], "objective_metric": "m", "artifacts_dir": "/runs/q"})");
  EXPECT_EQ(job->scalars_dir(3), "/runs/q/trial-3");
  EXPECT_EQ(parse_trial_job(job->to_json())->scalars_dir(3), "/runs/q/trial-3");
  auto engine = parse_trial_job(R"({"kind": "engine", "artifacts_dir": "/runs/a",
      "model": {"input": [1, 28, 28], "layers": [{"type": "flatten"}, {"type": "linear", "out": 10}]},
      "data": {"dataset": "fashion-mnist", "train": 100, "validation": 50},
      "objective_metric": "val_accuracy"})");
  EXPECT_EQ(engine->scalars_dir(3), "");
  EXPECT_EQ(engine->trial_dir(3), "/runs/a/trial-3");
  // Either kind keeps a lineage's checkpoint in its first trial's folder (TUNER_CHECKPOINT_PATH).
  EXPECT_EQ(job->checkpoint_path(3), "/runs/q/trial-3/resume.ckpt");
  EXPECT_EQ(engine->checkpoint_path(3), "/runs/a/trial-3/resume.ckpt");
  EXPECT_NE(error_of(R"({"kind": "command", "argv": ["a"], "objective_metric": "m",
      "artifacts_dir": 3})")
                .find("job.artifacts_dir: expected a string"),
            std::string::npos);
}

// A command trial's program is told its own folder: absolute (the program may run elsewhere),
// there before it starts, and only when the job has an artifacts_dir.
TEST(TrialJobTest, ACommandTrialGetsItsOwnFolderAsTunerArtifactsDir) {
  const fs::path base =
      fs::temp_directory_path() / ("trial_job_test_" + std::to_string(::getpid()) + "_artifacts");
  fs::remove_all(base);
  fs::create_directories(base);
  const fs::path cwd = fs::current_path();
  fs::current_path(base);
  const fs::path real_base = fs::current_path();  // as getcwd() spells it
  auto relative = parse_trial_job(R"({"kind": "command", "argv": ["a"], "objective_metric": "m",
      "working_dir": "/tmp", "artifacts_dir": "runs/../runs/q"})");
  const CommandSpec spec = relative->command(TrialPlacement{.number = 3});
  fs::current_path(cwd);
  const fs::path want = real_base / "runs" / "q" / "trial-3";
  EXPECT_EQ(spec.env.at("TUNER_ARTIFACTS_DIR"), want.string());
  EXPECT_TRUE(fs::is_directory(want));
  EXPECT_EQ(relative->trial_dir(3), "runs/../runs/q/trial-3");
  EXPECT_EQ(relative->artifacts_dir(), "runs/../runs/q");

  // With GPUs, both are set.
  auto gpus = parse_trial_job(R"({"kind": "command", "argv": ["a"], "objective_metric": "m",
      "gpus_per_trial": 1, "artifacts_dir": ")" +
                              (base / "g").string() + R"("})");
  const CommandSpec with_gpus = gpus->command(TrialPlacement{.number = 0, .gpus = {2}});
  EXPECT_EQ(with_gpus.env.at("TUNER_ARTIFACTS_DIR"), (base / "g" / "trial-0").string());
  EXPECT_EQ(with_gpus.env.at("TUNER_GPUS"), "2");

  // Without artifacts_dir there is no folder and no variable.
  auto none = parse_trial_job(R"({"kind": "command", "argv": ["a"], "objective_metric": "m"})");
  EXPECT_FALSE(none->command(TrialPlacement{.number = 3}).env.contains("TUNER_ARTIFACTS_DIR"));
  EXPECT_EQ(none->trial_dir(3), "");

  // A folder that cannot be made is an error naming it, before the program starts.
  std::ofstream(base / "file") << "x";
  auto blocked = parse_trial_job(R"({"kind": "command", "argv": ["a"], "objective_metric": "m",
      "artifacts_dir": ")" + (base / "file").string() +
                                 R"("})");
  try {
    blocked->command(TrialPlacement{.number = 5});
    ADD_FAILURE() << "no error for an artifacts_dir under a file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_NE(std::string(e.what()).find("trial 5: cannot create its artifacts folder " +
                                         (base / "file" / "trial-5").string()),
              std::string::npos)
        << e.what();
  }
  fs::remove_all(base);
}

// What the coordinator and the executor ask an engine job, which they once read from its fields.
TEST(TrialJobTest, AnEngineJobSaysWhatATrialNeedsAndWhereItsCheckpointLives) {
  const std::string model = R"("model": {"input": [1, 28, 28], "layers": [{"type": "flatten"},
      {"type": "linear", "out": "{width}"}, {"type": "{act}"}, {"type": "linear", "out": 10}]},
      "data": {"dataset": "fashion-mnist", "train": 100, "validation": 50},
      "objective_metric": "val_accuracy")";
  auto cpu = parse_trial_job(R"({"kind": "engine", "artifacts_dir": "/runs/a", )" + model + "}");
  EXPECT_EQ(cpu->needs().nodes, 1);
  EXPECT_EQ(cpu->needs().gpus_per_node, 0);
  EXPECT_EQ(cpu->checkpoint_path(7), "/runs/a/trial-7/resume.ckpt");
  EXPECT_EQ(parse_trial_job(R"({"kind": "engine", )" + model + "}")->checkpoint_path(7), "");
  EXPECT_EQ(cpu->failure_reason("epoch 1\nerror: data file missing\n"), "data file missing");
  EXPECT_EQ(cpu->probed_params(), (std::vector<std::string>{"width", "act"}));
  EXPECT_NO_THROW(cpu->check_probe({{"width", int64_t{8}}, {"act", std::string("relu")}}, "job"));
  EXPECT_THROW(cpu->check_probe({{"width", int64_t{0}}, {"act", std::string("relu")}}, "job"),
               Error);
  const CommandSpec plain = cpu->command(TrialPlacement{.number = 2, .tuner_path = "/bin/tuner"});
  EXPECT_EQ(plain.argv.at(0), "/bin/tuner");
  EXPECT_FALSE(plain.env.contains("TUNER_GPUS"));
  EXPECT_FALSE(plain.env.contains("TUNER_NODE"));

  // CUDA over two nodes: two executors, each giving the trial the GPUs of its two ranks.
  auto cuda = parse_trial_job(R"({"kind": "engine", "backend": "cuda", "ranks": 4, "nodes": 2, )" +
                              model + "}");
  EXPECT_EQ(cuda->needs().nodes, 2);
  EXPECT_EQ(cuda->needs().gpus_per_node, 2);
  const CommandSpec node1 = cuda->command(TrialPlacement{.number = 2,
                                                         .gpus = {3, 5},
                                                         .node = 1,
                                                         .node_store_dir = "/tmp/store",
                                                         .rank_host = "10.0.0.2",
                                                         .tuner_path = "/bin/tuner"});
  EXPECT_EQ(node1.env.at("TUNER_GPUS"), "3,5");
  EXPECT_EQ(node1.env.at("TUNER_NODE"), "1");
  EXPECT_EQ(node1.env.at("TUNER_NODE_STORE"), "/tmp/store");
  EXPECT_EQ(node1.env.at("TUNER_RANK_HOST"), "10.0.0.2");
  EXPECT_THROW(cuda->command(TrialPlacement{.number = 2, .gpus = {3}}), Error);
}

TEST(TrialJobTest, RoundTripsThroughJson) {
  auto job = parse_trial_job(
      R"({"kind": "command", "argv": ["a", "{x}"], "env": {"A": "b"}, "objective_metric": "m"})");
  auto again = parse_trial_job(job->to_json());
  EXPECT_EQ(command_of(*again).argv, command_of(*job).argv);
  EXPECT_EQ(command_of(*again).env, command_of(*job).env);
  EXPECT_EQ(again->objective_metric(), job->objective_metric());
}

TEST(TrialJobTest, ErrorsNameTheJsonPath) {
  EXPECT_EQ(error_of(R"({"kind": "command", "argv": ["a", 3], "objective_metric": "m"})"),
            "job.argv[1]: expected a string, got 3");
  EXPECT_EQ(error_of(R"({"kind": "command", "argv": ["a"]})"), "job.objective_metric: missing");
  // Regression: an unbalanced brace failed every trial instead of the job.
  EXPECT_EQ(error_of(R"({"kind": "command", "argv": ["a", "x}"], "objective_metric": "m"})"),
            "job.argv[1] \"x}\": stray '}' at offset 1 (write '}}' for a brace)");
  EXPECT_EQ(error_of(R"({"kind": "command", "argv": [], "objective_metric": "m"})"),
            "job.argv: must name a program (it is empty)");
  EXPECT_EQ(error_of(R"({"kind": "command", "argv": ["a"], "env": {"X": 1},
                         "objective_metric": "m"})"),
            "job.env.X: expected a string, got 1");
  EXPECT_EQ(error_of(R"({"kind": "shell", "argv": ["a"], "objective_metric": "m"})"),
            "job.kind: expected \"command\" or \"engine\", got \"shell\"");
  EXPECT_NE(error_of(R"({"kind": "command", "argv": ["a"], "evn": {}, "objective_metric": "m"})")
                .find("job.evn: unknown member"),
            std::string::npos);
  EXPECT_NE(error_of("[1, 2]").find("job: expected an object"), std::string::npos);
  EXPECT_NE(error_of("{oops").find("job: not valid JSON"), std::string::npos);
}

// A number past a double's range escaped the job's parser as nlohmann's out_of_range instead of
// the job's error.
TEST(TrialJobTest, ANumberPastADoublesRangeIsAJobError) {
  EXPECT_NE(error_of(R"({"kind": "command", "argv": ["a"], "objective_metric": "m",
                         "timeout_s": 1e400})")
                .find("job: a number past a double's range"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"kind": "engine", "model": {"input": [1e999], "layers": []}})")
                .find("job: a number past a double's range"),
            std::string::npos);
}

// Regression: there was no per-trial time limit. Both kinds take "timeout_s" and
// "stop_grace_s" (seconds), and they survive the round trip.
TEST(TrialJobTest, ParsesAPerTrialTimeoutAndStopGraceForBothKinds) {
  auto command = parse_trial_job(R"({"kind": "command", "argv": ["sleep", "1000"],
      "objective_metric": "m", "timeout_s": 1.5, "stop_grace_s": 0})");
  EXPECT_EQ(command->timeout(), std::chrono::milliseconds(1500));
  EXPECT_EQ(command->stop_grace(), std::chrono::milliseconds(0));
  auto again = parse_trial_job(command->to_json());
  EXPECT_EQ(again->timeout(), command->timeout());
  EXPECT_EQ(again->stop_grace(), command->stop_grace());

  auto untimed = parse_trial_job(R"({"kind": "command", "argv": ["a"], "objective_metric": "m"})");
  EXPECT_FALSE(untimed->timeout());
  EXPECT_FALSE(untimed->stop_grace());
  EXPECT_FALSE(parse_trial_job(untimed->to_json())->timeout());

  auto engine = parse_trial_job(R"({"kind": "engine", "timeout_s": 30, "stop_grace_s": 5,
      "model": {"input": [1, 28, 28], "layers": [{"type": "flatten"},
                {"type": "linear", "out": "{width}"}]},
      "data": {"dataset": "fashion-mnist", "train": 100, "validation": 50},
      "objective_metric": "val_accuracy"})");
  EXPECT_EQ(engine->kind(), "engine");
  EXPECT_EQ(engine->timeout(), std::chrono::seconds(30));
  EXPECT_EQ(engine->stop_grace(), std::chrono::seconds(5));
  // A limit below a millisecond is a millisecond, not "no limit".
  EXPECT_EQ(parse_trial_job(R"({"kind": "command", "argv": ["a"], "objective_metric": "m",
                                "timeout_s": 0.0001})")
                ->timeout(),
            std::chrono::milliseconds(1));
}

TEST(TrialJobTest, RefusesABadTimeoutOrStopGraceNamingTheJsonPath) {
  auto with = [](const std::string& members) {
    return error_of(R"({"kind": "command", "argv": ["a"], "objective_metric": "m", )" + members +
                    "}");
  };
  EXPECT_EQ(with(R"("timeout_s": 0)"),
            "job.timeout_s: expected a number of seconds in (0, 31536000], got 0");
  EXPECT_EQ(with(R"("timeout_s": -5)"),
            "job.timeout_s: expected a number of seconds in (0, 31536000], got -5");
  EXPECT_EQ(with(R"("timeout_s": 1e12)"),
            "job.timeout_s: expected a number of seconds in (0, 31536000], got 1000000000000.0");
  EXPECT_EQ(with(R"("timeout_s": "30s")"),
            "job.timeout_s: expected a number of seconds in (0, 31536000], got string \"30s\"");
  EXPECT_EQ(with(R"("timeout_s": true)"),
            "job.timeout_s: expected a number of seconds in (0, 31536000], got boolean");
  EXPECT_EQ(with(R"("stop_grace_s": -1)"),
            "job.stop_grace_s: expected a number of seconds in [0, 3600], got -1");
  EXPECT_EQ(with(R"("stop_grace_s": 7200)"),
            "job.stop_grace_s: expected a number of seconds in [0, 3600], got 7200");
  EXPECT_NE(error_of(R"({"kind": "command", "argv": ["a"], "objective_metric": "m",
                         "timeout": 30})")
                .find("job.timeout: unknown member"),
            std::string::npos);
}

TEST(TrialJobTest, SecondsTextIsShort) {
  EXPECT_EQ(seconds_text(std::chrono::milliseconds(1000)), "1 s");
  EXPECT_EQ(seconds_text(std::chrono::milliseconds(30000)), "30 s");
  EXPECT_EQ(seconds_text(std::chrono::milliseconds(1500)), "1.5 s");
  EXPECT_EQ(seconds_text(std::chrono::milliseconds(250)), "0.25 s");
  EXPECT_EQ(seconds_text(std::chrono::milliseconds(1)), "0.001 s");
}

}  // namespace
}  // namespace tuner
