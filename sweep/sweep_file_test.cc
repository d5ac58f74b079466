#include "sweep/sweep_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "executor/engine_job.h"
#include "executor/trial_job.h"
#include "search/registry.h"
#include "search/rng.h"
#include "search/samplers/auto_sampler.h"
#include "search/samplers/grid_sampler.h"
#include "search/samplers/random_sampler.h"
#include "search/space/import_nni.h"
#include "search/space/import_wandb.h"
#include "search/space/search_space_json.h"
#include "trials/error.h"
#include "trials/json.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path kTestdata = fs::path(TUNER_SOURCE_DIR) / "sweep" / "testdata" / "sweeps";
const fs::path kExamples = fs::path(TUNER_SOURCE_DIR) / "examples" / "sweeps";

// The smallest valid sweep: a space, an objective, a budget and a command job.
const char* kMinimal = R"({
  "space": {"params": {"lr": {"type": "float", "low": 0.001, "high": 0.1, "log": true},
                       "n": {"type": "int", "low": 1, "high": 3}}},
  "objective": {"metric": "loss", "direction": "minimize"},
  "budget": {"trials": 10},
  "job": {"kind": "command", "argv": ["python3", "t.py", "--lr", "{lr}", "--n", "{n}"]}
})";

// kMinimal with `patch` applied (RFC 7396: objects merge, null deletes).
std::string patched(std::string_view patch) {
  Json doc = Json::parse(kMinimal);
  doc.merge_patch(Json::parse(patch));
  return doc.dump();
}

// The message of the Error parse_sweep_file throws (empty when it throws none).
std::string error_of(const std::string& text, const std::string& path = "sweep.json") {
  try {
    parse_sweep_file(text, path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string absolute_dir(const fs::path& dir) {
  return fs::absolute(dir).lexically_normal().string();
}

// ---------------------------------------------------------------------------------------------
// Defaults

TEST(SweepFileTest, DefaultsOfEverySection) {
  SweepFile s = parse_sweep_file(kMinimal, "runs/sweep.json");
  EXPECT_EQ(s.path, "runs/sweep.json");
  EXPECT_EQ(s.name, "sweep");  // the stem
  EXPECT_EQ(s.description, "");
  EXPECT_EQ(s.storage_path, "runs/sweep.db");  // <name>.db beside the file
  EXPECT_EQ(s.space.size(), 2u);
  EXPECT_EQ(s.objective_metric(), "loss");
  EXPECT_EQ(s.direction(), StudyDirection::kMinimize);

  // Sampler: auto (TPE's options at their defaults, for a file that names TPE), no seed.
  EXPECT_EQ(s.sampler, SamplerConfig{});
  EXPECT_EQ(s.sampler.type, SamplerType::kAuto);
  EXPECT_FALSE(s.sampler.type_given);
  EXPECT_FALSE(s.sampler.seed.has_value());
  EXPECT_EQ(s.sampler.tpe.n_startup_trials, TpeOptions{}.n_startup_trials);
  EXPECT_FALSE(s.sampler.tpe_gamma.has_value());
  EXPECT_EQ(s.sampler.tpe_weights, TpeWeights::kOptuna);

  EXPECT_EQ(s.scheduler.type, SchedulerType::kNone);
  EXPECT_EQ(make_scheduler(s), nullptr);

  EXPECT_EQ(s.budget.trials, 10);
  EXPECT_FALSE(s.budget.time.has_value());
  EXPECT_EQ(s.budget.max_concurrent, 0);

  EXPECT_EQ(s.job_kind, "command");
  EXPECT_EQ(s.threads_per_trial, 1);
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  EXPECT_EQ(s.local_executors, std::max(1, cores));
  EXPECT_FALSE(s.export_config.has_value());

  // The job handed out has the objective's metric and runs beside the sweep file.
  Json job = Json::parse(s.job_json);
  EXPECT_EQ(job["objective_metric"], "loss");
  EXPECT_EQ(job["working_dir"], absolute_dir("runs"));
}

TEST(SweepFileTest, BareFileNameHasNoDirectory) {
  SweepFile s = parse_sweep_file(kMinimal, "mlp.json");
  EXPECT_EQ(s.name, "mlp");
  EXPECT_EQ(s.storage_path, "mlp.db");
  EXPECT_EQ(Json::parse(s.job_json)["working_dir"], absolute_dir(fs::current_path()));
}

TEST(SweepFileTest, ExecutorsDefaultDividesCoresByEngineThreads) {
  std::string text = patched(R"({"space": {"params": {"w": {"type": "int", "low": 8, "high": 64}}},
      "job": {"kind": "engine", "threads": 4, "argv": null,
              "model": {"input": [4], "layers": [{"type": "linear", "out": "{w}"}]}}})");
  try {
    SweepFile s = parse_sweep_file(text, "sweep.json");
    EXPECT_EQ(s.threads_per_trial, 4);
    int cores = static_cast<int>(std::thread::hardware_concurrency());
    EXPECT_EQ(s.local_executors, std::max(1, cores / 4));
  } catch (const Error& e) {
    // Until parse_trial_job knows engine jobs, the load ends at the job kind, after everything
    // else was checked.
    EXPECT_THAT(e.what(), HasSubstr("sweep.json: job"));
  }
}

TEST(SweepFileTest, LocalExecutorsTakeTrialsAhead) {
  SweepFile s =
      parse_sweep_file(patched(R"({"executors": {"local": 4, "prefetch": 2}})"), "sweep.json");
  EXPECT_EQ(s.local_executors, 4);
  EXPECT_EQ(s.local_prefetch, 2);
}

TEST(SweepFileTest, SlurmExecutorsReadEveryMemberAndRoundTrip) {
  SweepFile s = parse_sweep_file(patched(R"({"executors": {"slurm": {
      "partition": "gpu", "account": "lab", "time": "1-02:00:00", "gpus": 2,
      "cpus_per_executor": 8, "mem": "32G", "slots": 2, "min_executors": 1, "max_executors": 4,
      "idle_grace": "5m", "sbatch_args": ["--qos=long"], "tuner": "/opt/tuner/bin/tuner",
      "endpoint": "tcp://login1:5555"}}})"),
                                 "runs/sweep.json");
  ASSERT_TRUE(s.slurm.has_value());
  const SlurmOptions& slurm = *s.slurm;
  EXPECT_EQ(slurm.partition, "gpu");
  EXPECT_EQ(slurm.account, "lab");
  EXPECT_EQ(slurm.time, "1-02:00:00");
  EXPECT_EQ(slurm.gpus, 2);
  EXPECT_EQ(slurm.gres, "");
  EXPECT_EQ(slurm.cpus_per_executor, 8);
  EXPECT_EQ(slurm.mem, "32G");
  EXPECT_EQ(slurm.slots, 2);
  EXPECT_EQ(slurm.min_executors, 1);
  EXPECT_EQ(slurm.max_executors, 4);
  EXPECT_EQ(slurm.idle_grace, std::chrono::minutes(5));
  EXPECT_EQ(slurm.extra_args, std::vector<std::string>{"--qos=long"});
  EXPECT_EQ(slurm.tuner_path, "/opt/tuner/bin/tuner");
  EXPECT_EQ(slurm.endpoint, "tcp://login1:5555");
  // The trials run on the cluster: no local slots unless the file asks for some.
  EXPECT_EQ(s.local_executors, 0);
  EXPECT_EQ(parse_sweep_file(to_json(s), s.path), s);

  SweepFile defaults = parse_sweep_file(
      patched(R"({"executors": {"local": 2, "slurm": {"gpus": "gpu:a100:1"}}})"), "sweep.json");
  EXPECT_EQ(defaults.local_executors, 2);
  EXPECT_EQ(defaults.slurm->gres, "gpu:a100:1");
  EXPECT_FALSE(defaults.slurm->gpus.has_value());
  EXPECT_EQ(defaults.slurm->slots, 1);
  EXPECT_EQ(defaults.slurm->min_executors, 0);
  EXPECT_EQ(defaults.slurm->max_executors, 1);
  EXPECT_EQ(parse_sweep_file(to_json(defaults), defaults.path), defaults);
  EXPECT_FALSE(parse_sweep_file(kMinimal, "sweep.json").slurm.has_value());
}

TEST(SweepFileTest, SlurmErrorsNameTheMember) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"partition": "gpu", "partiton": "x"})",
       "sweep.json: executors.slurm: unknown field \"partiton\" (did you mean \"partition\"?)"},
      {R"({"time": "2h"})", "sweep.json: executors.slurm.time: expected a Slurm time limit"},
      {R"({"gpus": 0})", "sweep.json: executors.slurm.gpus: expected an integer >= 1, got 0"},
      {R"({"gpus": true})", "sweep.json: executors.slurm.gpus: expected a number of GPUs"},
      {R"({"mem": "8 GB"})", "sweep.json: executors.slurm.mem: expected a memory size"},
      {R"({"slots": 0})", "sweep.json: executors.slurm.slots: expected an integer >= 1, got 0"},
      {R"({"min_executors": 3, "max_executors": 2})",
       "sweep.json: executors.slurm.min_executors: must be at most max_executors (2), got 3"},
      {R"({"max_executors": 0})",
       "sweep.json: executors.slurm.max_executors: expected an integer >= 1, got 0"},
      {R"({"idle_grace": "soon"})", "sweep.json: executors.slurm.idle_grace: expected a duration"},
      {R"({"sbatch_args": "--qos=long"})",
       "sweep.json: executors.slurm.sbatch_args: expected a list of sbatch arguments"},
      {R"({"sbatch_args": ["qos"]})",
       "sweep.json: executors.slurm.sbatch_args[0]: expected an option such as"},
      {R"({"endpoint": "login1:5555"})",
       "sweep.json: executors.slurm.endpoint: expected the address the executors connect to"},
      {R"({"endpoint": "tcp://*:5555"})",
       "sweep.json: executors.slurm.endpoint: expected the address the executors connect to"},
      {R"({"partition": ""})", "sweep.json: executors.slurm.partition: "},
      {R"([1])", "sweep.json: executors.slurm: expected an object"},
  };
  for (const auto& [slurm, error] : cases) {
    EXPECT_THAT(error_of(patched(R"({"executors": {"slurm": )" + slurm + "}}")), HasSubstr(error))
        << slurm;
  }
}

TEST(SweepFileTest, RayExecutorsReadEveryMemberAndRoundTrip) {
  SweepFile s = parse_sweep_file(patched(R"({"executors": {"ray": {
      "address": "ray://head:10001", "cpus_per_executor": 4, "gpus_per_executor": 0.5,
      "memory": "16G", "slots": 2, "min_executors": 1, "max_executors": 8, "idle_grace": "5m",
      "python": "venv/bin/python", "tuner": "/opt/tuner/bin/tuner",
      "endpoint": "tcp://login1:5555",
      "runtime_env": {"env_vars": {"OMP_NUM_THREADS": "1"}}}}})"),
                                 "runs/sweep.json");
  ASSERT_TRUE(s.ray.has_value());
  const RayOptions& ray = *s.ray;
  EXPECT_EQ(ray.address, "ray://head:10001");
  EXPECT_EQ(ray.cpus_per_executor, 4);
  EXPECT_EQ(ray.gpus_per_executor, 0.5);
  EXPECT_EQ(ray.memory, "16G");
  EXPECT_EQ(ray_memory_bytes(ray.memory), int64_t{16} << 30);
  EXPECT_EQ(ray.slots, 2);
  EXPECT_EQ(ray.min_executors, 1);
  EXPECT_EQ(ray.max_executors, 8);
  EXPECT_EQ(ray.idle_grace, std::chrono::minutes(5));
  // A path is the sweep file's directory's.
  EXPECT_EQ(ray.python, absolute_dir("runs/venv/bin/python"));
  EXPECT_EQ(ray.tuner_path, "/opt/tuner/bin/tuner");
  EXPECT_EQ(ray.endpoint, "tcp://login1:5555");
  EXPECT_EQ(Json::parse(ray.runtime_env), Json::parse(R"({"env_vars": {"OMP_NUM_THREADS": "1"}})"));
  // The trials run on the cluster: no local slots unless the file asks for some.
  EXPECT_EQ(s.local_executors, 0);
  EXPECT_FALSE(s.slurm.has_value());
  EXPECT_EQ(parse_sweep_file(to_json(s), s.path), s);

  SweepFile defaults = parse_sweep_file(
      patched(R"({"executors": {"local": 2, "ray": {"address": "auto"}}})"), "sweep.json");
  EXPECT_EQ(defaults.local_executors, 2);
  EXPECT_EQ(defaults.ray->cpus_per_executor, 1);
  EXPECT_EQ(defaults.ray->gpus_per_executor, 0);
  EXPECT_EQ(defaults.ray->memory, "");
  EXPECT_EQ(defaults.ray->slots, 1);
  EXPECT_EQ(defaults.ray->min_executors, 0);
  EXPECT_EQ(defaults.ray->max_executors, 1);
  EXPECT_EQ(defaults.ray->idle_grace, std::chrono::minutes(2));
  EXPECT_EQ(defaults.ray->python, "python3");
  EXPECT_EQ(defaults.ray->tuner_path, "");
  EXPECT_EQ(defaults.ray->runtime_env, "");
  EXPECT_EQ(parse_sweep_file(to_json(defaults), defaults.path), defaults);
  EXPECT_FALSE(parse_sweep_file(kMinimal, "sweep.json").ray.has_value());
}

TEST(SweepFileTest, RayErrorsNameTheMember) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"address": "auto", "adress": "x"})",
       "sweep.json: executors.ray: unknown field \"adress\" (did you mean \"address\"?)"},
      {R"({})", "sweep.json: executors.ray: missing required field \"address\""},
      {R"({"address": ""})", "sweep.json: executors.ray.address: "},
      {R"({"address": "auto", "cpus_per_executor": -1})",
       "sweep.json: executors.ray.cpus_per_executor: "},
      {R"({"address": "auto", "gpus_per_executor": "1"})",
       "sweep.json: executors.ray.gpus_per_executor: "},
      {R"({"address": "auto", "memory": "8 GB"})",
       "sweep.json: executors.ray.memory: expected a memory size"},
      {R"({"address": "auto", "memory": "99999999999T"})",
       "sweep.json: executors.ray.memory: expected a memory size"},
      {R"({"address": "auto", "slots": 0})",
       "sweep.json: executors.ray.slots: expected an integer >= 1, got 0"},
      {R"({"address": "auto", "min_executors": 3, "max_executors": 2})",
       "sweep.json: executors.ray.min_executors: must be at most max_executors (2), got 3"},
      {R"({"address": "auto", "max_executors": 0})",
       "sweep.json: executors.ray.max_executors: expected an integer >= 1, got 0"},
      {R"({"address": "auto", "idle_grace": "soon"})",
       "sweep.json: executors.ray.idle_grace: expected a duration"},
      {R"({"address": "auto", "python": ""})", "sweep.json: executors.ray.python: "},
      {R"({"address": "auto", "endpoint": "login1:5555"})",
       "sweep.json: executors.ray.endpoint: expected the address the executors connect to"},
      {R"({"address": "auto", "runtime_env": "pip"})",
       "sweep.json: executors.ray.runtime_env: expected an object"},
      {R"([1])", "sweep.json: executors.ray: expected an object"},
  };
  for (const auto& [ray, error] : cases) {
    EXPECT_THAT(error_of(patched(R"({"executors": {"ray": )" + ray + "}}")), HasSubstr(error))
        << ray;
  }
  EXPECT_THAT(error_of(patched(R"({"executors": {"slurm": {}, "ray": {"address": "auto"}}})")),
              HasSubstr("sweep.json: executors.ray: a sweep starts its executors on one cluster"));
}

TEST(SweepFileTest, ACommandJobAsksForGpusAndTheLocalExecutorDeclaresThem) {
  SweepFile s = parse_sweep_file(
      patched(
          R"({"job": {"gpus_per_trial": 0.5}, "executors": {"local": 8, "gpus": [0, 1, 2, 3]}})"),
      "sweep.json");
  EXPECT_EQ(s.local_gpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(Json::parse(s.job_json)["gpus_per_trial"], 0.5);
  EXPECT_EQ(parse_sweep_file(to_json(s), s.path), s);
  EXPECT_FALSE(parse_sweep_file(kMinimal, "sweep.json").local_gpus.has_value());
  EXPECT_EQ(parse_sweep_file(patched(R"({"executors": {"gpus": []}})"), "s.json").local_gpus,
            std::vector<int>{});

  EXPECT_EQ(error_of(patched(R"({"executors": {"gpus": [0, 0]}})")),
            "sweep.json: executors.gpus[1]: GPU 0 is listed twice");
  EXPECT_THAT(error_of(patched(R"({"executors": {"gpus": 4}})")),
              HasSubstr("sweep.json: executors.gpus: expected an array of GPU ids"));
  EXPECT_THAT(error_of(patched(R"({"executors": {"gpus": [-1]}})")),
              HasSubstr("sweep.json: executors.gpus[0]: "));
  EXPECT_THAT(error_of(patched(R"({"job": {"gpus_per_trial": 1.5}})")),
              HasSubstr("sweep.json: job.gpus_per_trial: expected a whole number of GPUs"));
  // A misspelt member of a command job: a did-you-mean, as everywhere in the file.
  EXPECT_EQ(error_of(patched(R"({"job": {"gpus_per_trail": 1}})")),
            "sweep.json: job: unknown field \"gpus_per_trail\" (did you mean "
            "\"gpus_per_trial\"?)");
}

// budget.max_failures: unset is the default rule, null and 0 no limit, N a limit; each survives
// the trip through to_json (the stored sweep a resume reads).
TEST(SweepFileTest, MaxFailuresUnsetNullZeroOrALimit) {
  const SweepFile unset = parse_sweep_file(kMinimal, "sweep.json");
  EXPECT_EQ(unset.budget.max_failures, std::nullopt);
  EXPECT_EQ(parse_sweep_file(to_json(unset), "sweep.json"), unset);
  for (const auto& [given, expected] :
       std::vector<std::pair<std::string, int>>{{"null", 0}, {"0", 0}, {"5", 5}}) {
    Json doc = Json::parse(kMinimal);  // not patched(): a merge patch's null deletes
    doc["budget"]["max_failures"] = Json::parse(given);
    const SweepFile s = parse_sweep_file(doc.dump(), "sweep.json");
    EXPECT_EQ(s.budget.max_failures, expected) << given;
    EXPECT_EQ(parse_sweep_file(to_json(s), "sweep.json"), s) << given;
  }
}

TEST(SweepFileTest, ExplicitValues) {
  SweepFile s = parse_sweep_file(patched(R"({
      "version": 1, "name": "study-a", "description": "about it", "storage": "db/a.sqlite",
      "objective": {"metric": "acc", "direction": "maximize"},
      "budget": {"trials": 5, "time": "1h30m", "max_concurrent": 3},
      "executors": {"local": 0},
      "export": {"registry": "../registry", "name": "model-a"}})"),
                                 "x/y/sweep.json");
  EXPECT_EQ(s.name, "study-a");
  EXPECT_EQ(s.description, "about it");
  EXPECT_EQ(s.storage_path, "x/y/db/a.sqlite");
  EXPECT_EQ(s.objective_metric(), "acc");
  EXPECT_EQ(s.direction(), StudyDirection::kMaximize);
  EXPECT_EQ(s.budget.trials, 5);
  EXPECT_EQ(s.budget.time, std::chrono::seconds(5400));
  EXPECT_EQ(s.budget.max_concurrent, 3);
  EXPECT_EQ(s.local_executors, 0);
  EXPECT_EQ(s.local_prefetch, 0);
  ASSERT_TRUE(s.export_config.has_value());
  EXPECT_EQ(s.export_config->registry_path, "x/registry");
  EXPECT_EQ(s.export_config->model_name, "model-a");
  EXPECT_EQ(s.export_config->metric, "acc");  // the objective's
  EXPECT_EQ(s.export_config->direction, StudyDirection::kMaximize);
  EXPECT_EQ(Json::parse(s.job_json)["objective_metric"], "acc");
}

TEST(SweepFileTest, ExportDefaultsAndOtherMetric) {
  SweepFile s = parse_sweep_file(patched(R"({"export": {"registry": "/abs/reg"}})"), "d/s.json");
  EXPECT_EQ(s.export_config->registry_path, "/abs/reg");
  EXPECT_EQ(s.export_config->model_name, "s");
  EXPECT_EQ(s.export_config->direction, StudyDirection::kMinimize);

  s = parse_sweep_file(
      patched(R"({"export": {"registry": "r", "metric": "acc", "direction": "maximize"}})"),
      "s.json");
  EXPECT_EQ(s.export_config->metric, "acc");
  EXPECT_EQ(s.export_config->direction, StudyDirection::kMaximize);
}

// MLflow tracking, and the export's MLflow model registry.
TEST(SweepFileTest, TrackingAndTheExportsMlflowRegistry) {
  SweepFile s =
      parse_sweep_file(patched(R"({"tracking": {"mlflow": {"uri": "http://127.0.0.1:5000"}},
                  "export": {"registry": "r", "mlflow": {}}})"),
                       "s.json");
  ASSERT_TRUE(s.tracking);
  EXPECT_EQ(s.tracking->mlflow_uri, "http://127.0.0.1:5000");
  EXPECT_EQ(s.tracking->experiment, "");
  EXPECT_EQ(s.tracking->interval, std::chrono::seconds(5));
  EXPECT_TRUE(s.tracking->log_model);
  ASSERT_TRUE(s.export_config->mlflow);
  EXPECT_EQ(s.export_mlflow_uri(), "http://127.0.0.1:5000");  // tracking's
  EXPECT_EQ(parse_sweep_file(to_json(s), s.path), s);

  s = parse_sweep_file(
      patched(R"({"tracking": {"mlflow": {"uri": "http://t:80/mlflow", "experiment": "exp",
                                          "interval": "30s", "log_model": false}},
                  "export": {"registry": "r", "mlflow": {"uri": "http://registry:5000"}}})"),
      "s.json");
  EXPECT_EQ(s.tracking->experiment, "exp");
  EXPECT_EQ(s.tracking->interval, std::chrono::seconds(30));
  EXPECT_FALSE(s.tracking->log_model);
  EXPECT_EQ(s.export_mlflow_uri(), "http://registry:5000");
  EXPECT_EQ(parse_sweep_file(to_json(s), s.path), s);
  // Without either, no MLflow at all.
  s = parse_sweep_file(patched(R"({"export": {"registry": "r"}})"), "s.json");
  EXPECT_FALSE(s.tracking);
  EXPECT_EQ(s.export_mlflow_uri(), "");
  EXPECT_FALSE(Json::parse(to_json(s)).contains("tracking"));

  for (const auto& [patch, expected] : std::vector<std::pair<std::string, std::string>>{
           {R"({"tracking": {}})", "sweep.json: tracking: missing required field \"mlflow\""},
           {R"({"tracking": {"mlflow": {}}})",
            "sweep.json: tracking.mlflow: missing required field \"uri\""},
           {R"({"tracking": {"mlflow": {"uri": "https://x"}}})",
            "sweep.json: tracking.mlflow.uri: 'https://x' is not a tracking server's URL: https "
            "is not supported"},
           {R"({"tracking": {"mlflow": {"uri": "localhost:5000"}}})",
            "it does not start with http://"},
           {R"({"tracking": {"mlflow": {"uri": "http://h:1", "interval": "0s"}}})",
            "tracking.mlflow.interval: must be at least 1 s"},
           {R"({"tracking": {"mlflow": {"uri": "http://h:1", "intreval": "1s"}}})",
            "tracking.mlflow: unknown field \"intreval\""},
           {R"({"tracking": {"mlflow": {"uri": "http://h:1", "log_model": "yes"}}})",
            "tracking.mlflow.log_model"},
           {R"({"export": {"registry": "r", "mlflow": {}}})",
            "sweep.json: export.mlflow: missing required field \"uri\""},
           {R"({"export": {"registry": "r", "mlflow": {"url": "http://h:1"}}})",
            "export.mlflow: unknown field \"url\""},
       }) {
    EXPECT_THAT(error_of(patched(patch)), HasSubstr(expected)) << patch;
  }
}

// The export of a sweep of several objectives, with limits on the others.
TEST(SweepFileTest, ExportWithSeveralObjectivesAndLimits) {
  const std::string objectives = R"("objective": null, "objectives": [
      {"metric": "val_accuracy", "direction": "maximize"},
      {"metric": "latency_ms", "direction": "minimize"},
      {"metric": "num_params", "direction": "minimize"}])";
  // The primary metric defaults to the first objective, with its direction.
  SweepFile s =
      parse_sweep_file(patched("{" + objectives + R"(, "export": {"registry": "r", "limits": [
          {"metric": "latency_ms", "max": 2}, {"metric": "num_params", "max": 1000000}]}})"),
                       "s.json");
  ASSERT_TRUE(s.export_config);
  EXPECT_EQ(s.export_config->metric, "val_accuracy");
  EXPECT_EQ(s.export_config->direction, StudyDirection::kMaximize);
  EXPECT_EQ(s.export_config->limits,
            (std::vector<MetricConstraint>{{"latency_ms", MetricConstraint::Bound::kMax, 2},
                                           {"num_params", MetricConstraint::Bound::kMax, 1e6}}));
  EXPECT_EQ(parse_sweep_file(to_json(s), "s.json"), s);
  EXPECT_EQ(Json::parse(to_json(s))["export"]["limits"][1]["max"], 1e6);
  // Another objective as the primary metric: its direction.
  s = parse_sweep_file(
      patched("{" + objectives + R"(, "export": {"registry": "r", "metric": "latency_ms",
          "limits": [{"metric": "val_accuracy", "min": 0.8}]}})"),
      "s.json");
  EXPECT_EQ(s.export_config->direction, StudyDirection::kMinimize);
  EXPECT_EQ(s.export_config->limits[0].bound, MetricConstraint::Bound::kMin);
  // No limits: none, and to_json writes none.
  s = parse_sweep_file(patched("{" + objectives + R"(, "export": {"registry": "r"}})"), "s.json");
  EXPECT_TRUE(s.export_config->limits.empty());
  EXPECT_FALSE(Json::parse(to_json(s))["export"].contains("limits"));

  for (const auto& [patch, expected] : std::vector<std::pair<std::string, std::string>>{
           {R"({"export": {"registry": "r", "limits": {"metric": "latency_ms", "max": 2}}})",
            "sweep.json: export.limits: expected a list of bounds such as"},
           {R"({"export": {"registry": "r", "limits": [{"metric": "latency_ms"}]}})",
            "sweep.json: export.limits[0]: has neither \"max\" nor \"min\""},
           {R"({"export": {"registry": "r", "limits": [{"metric": "a", "max": 1},
                                                       {"metric": "b", "max": "2"}]}})",
            "sweep.json: export.limits[1].max: expected a finite number, got \"2\""},
           {R"({"export": {"registry": "r", "limits": [{"metric": "a", "max": 1},
                                                       {"metric": "a", "max": 3}]}})",
            "sweep.json: export.limits[1]: bounds \"a\" as export.limits[0] does"},
           {R"({"export": {"registry": "r", "limits": [{"metric": "loss", "max": 1}]}})",
            "sweep.json: export.limits[0].metric: \"loss\" is the primary metric"},
           {R"({"export": {"registry": "r", "limits": [{"metirc": "a", "max": 1}]}})",
            "sweep.json: export.limits[0]: unknown field \"metirc\""},
       }) {
    EXPECT_THAT(error_of(patched(patch)), HasSubstr(expected)) << patch;
  }
}

// A sweep of several objectives (a study ranked by Pareto dominance).
TEST(SweepFileTest, SeveralObjectives) {
  const std::string text = patched(R"({"objective": null, "objectives": [
      {"metric": "val_accuracy", "direction": "maximize"},
      {"metric": "latency_ms", "direction": "minimize"}]})");
  const SweepFile s = parse_sweep_file(text, "s.json");
  ASSERT_EQ(s.objectives.size(), 2u);
  EXPECT_EQ(s.objectives[1].metric, "latency_ms");
  EXPECT_EQ(s.objectives[1].direction, StudyDirection::kMinimize);
  // The first is the job's objective metric, what its reports carry.
  EXPECT_EQ(s.objective_metric(), "val_accuracy");
  EXPECT_EQ(Json::parse(s.job_json)["objective_metric"], "val_accuracy");
  EXPECT_EQ(make_study_options(s).directions,
            (std::vector{StudyDirection::kMaximize, StudyDirection::kMinimize}));
  EXPECT_EQ(parse_sweep_file(to_json(s), "s.json"), s);
  EXPECT_FALSE(Json::parse(to_json(s)).contains("objective"));
  EXPECT_EQ(make_study_options(s).noisy_objective, false);
  // "noisy": the study's objective may give another value for the same parameters.
  const SweepFile noisy = parse_sweep_file(
      patched(R"({"objective": {"metric": "loss", "direction": "minimize", "noisy": true}})"),
      "s.json");
  EXPECT_TRUE(noisy.objectives[0].noisy);
  EXPECT_EQ(make_study_options(noisy).noisy_objective, true);
  EXPECT_EQ(parse_sweep_file(to_json(noisy), "s.json"), noisy);

  // One objective in the list is the same sweep as "objective".
  const SweepFile one = parse_sweep_file(
      patched(
          R"({"objective": null, "objectives": [{"metric": "loss", "direction": "minimize"}]})"),
      "s.json");
  EXPECT_EQ(one, parse_sweep_file(patched("{}"), "s.json"));

  for (const auto& [patch, expected] : std::vector<std::pair<std::string, std::string>>{
           {R"({"objectives": [{"metric": "a", "direction": "minimize"}]})",
            "sweep.json: objectives: give \"objective\" (one) or \"objectives\" (several), not "
            "both"},
           {R"({"objective": null, "objectives": []})",
            "sweep.json: objectives: expected a non-empty list such as"},
           {R"({"objective": null, "objectives": [{"metric": "a", "direction": "up"}]})",
            "sweep.json: objectives[0].direction: expected \"minimize\" or \"maximize\", got "
            "\"up\""},
           {R"({"objective": null, "objectives": [{"metric": "a", "direction": "minimize"},
                                                  {"metric": "a", "direction": "maximize"}]})",
            "sweep.json: objectives[1].metric: \"a\" is an objective already"},
           {R"({"objective": null, "scheduler": {"type": "median"}, "objectives": [
                {"metric": "a", "direction": "minimize"}, {"metric": "b", "direction": "minimize"}]})",
            "sweep.json: scheduler: early stopping judges trials by one metric, but this sweep has "
            "2 objectives"},
       }) {
    EXPECT_THAT(error_of(patched(patch)), HasSubstr(expected)) << patch;
  }
}

TEST(SweepFileTest, TimeBudgetAloneAndInSeconds) {
  SweepFile s = parse_sweep_file(patched(R"({"budget": {"trials": null, "time": 600}})"), "s.json");
  EXPECT_FALSE(s.budget.trials.has_value());
  EXPECT_EQ(s.budget.time, std::chrono::seconds(600));
}

// Regression: a hanging trial ran forever (no per-trial time limit). budget.trial_time
// is each trial's limit, in budget.time's format, and becomes the job's timeout_s.
TEST(SweepFileTest, TrialTimeBecomesTheJobsTimeout) {
  SweepFile s = parse_sweep_file(patched(R"({"budget": {"trial_time": "1m30s"}})"), "s.json");
  EXPECT_EQ(s.budget.trial_time, std::chrono::seconds(90));
  EXPECT_EQ(Json::parse(s.job_json)["timeout_s"], 90);
  EXPECT_EQ(parse_trial_job(s.job_json)->timeout(), std::chrono::seconds(90));
  EXPECT_EQ(Json::parse(to_json(s))["budget"]["trial_time"], "1m30s");
  EXPECT_EQ(parse_sweep_file(to_json(s), "s.json"), s);

  s = parse_sweep_file(patched(R"({"budget": {"trial_time": 5}})"), "s.json");
  EXPECT_EQ(s.budget.trial_time, std::chrono::seconds(5));
  // The job may state the same limit, and its own stop grace.
  s = parse_sweep_file(
      patched(R"({"budget": {"trial_time": 5}, "job": {"timeout_s": 5, "stop_grace_s": 2}})"),
      "s.json");
  EXPECT_EQ(parse_trial_job(s.job_json)->stop_grace(), std::chrono::seconds(2));
  // Without it, no limit.
  s = parse_sweep_file(kMinimal, "s.json");
  EXPECT_FALSE(s.budget.trial_time);
  EXPECT_FALSE(Json::parse(s.job_json).contains("timeout_s"));
}

TEST(SweepFileTest, RefusesABadTrialTimeNamingTheJsonPath) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"budget": {"trial_time": "ten minutes"}})",
       "sweep.json: budget.trial_time: expected a duration such as"},
      {R"({"budget": {"trial_time": "0s"}})",
       "sweep.json: budget.trial_time: must be longer than 0 s"},
      {R"({"budget": {"trial_time": -1}})",
       "sweep.json: budget.trial_time: expected an integer >= 1, got -1"},
      {R"({"budget": {"trial_time": "400d"}})",
       "sweep.json: budget.trial_time: must be at most a year (365d), got 400d"},
      {R"({"budget": {"trial_tme": "1h"}})",
       "sweep.json: budget: unknown field \"trial_tme\" (did you mean \"trial_time\"?)"},
      {R"({"budget": {"trial_time": "1m"}, "job": {"timeout_s": 30}})",
       "sweep.json: job.timeout_s: 30 differs from budget.trial_time \"1m\" (60 s); state the "
       "limit once"},
      {R"({"job": {"timeout_s": "1m"}})",
       "sweep.json: job.timeout_s: expected a number of seconds in (0, 31536000], got string"},
      {R"({"job": {"stop_grace_s": -2}})",
       "sweep.json: job.stop_grace_s: expected a number of seconds in [0, 3600], got -2"},
  };
  for (const auto& [patch, expected] : cases) {
    SCOPED_TRACE(patch);
    EXPECT_THAT(error_of(patched(patch)), HasSubstr(expected));
  }
}

TEST(SweepFileTest, GridNeedsNoBudget) {
  std::string text = patched(R"({"budget": null, "sampler": {"type": "grid", "max_points": 100},
      "space": {"params": {"lr": {"type": "categorical", "choices": [0.1, 0.01], "low": null,
                                  "high": null, "log": null}}}})");
  SweepFile s = parse_sweep_file(text, "s.json");
  EXPECT_EQ(s.sampler.type, SamplerType::kGrid);
  EXPECT_EQ(s.sampler.grid_max_points, 100u);
  EXPECT_FALSE(s.budget.trials.has_value());
  auto grid = std::dynamic_pointer_cast<GridSampler>(make_sampler(s));
  ASSERT_NE(grid, nullptr);
  EXPECT_EQ(grid->size(), 6u);  // 2 lr x 3 n
}

// ---------------------------------------------------------------------------------------------
// Sampler and scheduler options

TEST(SweepFileTest, GpSampler) {
  SweepFile s = parse_sweep_file(
      patched(R"({"sampler": {"type": "gp", "seed": 4, "n_startup_trials": 6}})"), "s.json");
  EXPECT_EQ(s.sampler.type, SamplerType::kGp);
  EXPECT_EQ(s.sampler.gp.n_startup_trials, 6);
  EXPECT_NE(std::dynamic_pointer_cast<GpSampler>(make_sampler(s)), nullptr);
  EXPECT_EQ(parse_sweep_file(to_json(s), "s.json").sampler, s.sampler);
}

TEST(SweepFileTest, EveryTpeOption) {
  SweepFile s = parse_sweep_file(patched(R"({"sampler": {
      "type": "tpe", "seed": 18446744073709551615, "n_startup_trials": 3, "n_ei_candidates": 48,
      "multivariate": true, "group": true, "constant_liar": false, "consider_prior": false,
      "prior_weight": 0.5, "consider_magic_clip": false, "consider_endpoints": true,
      "gamma": {"fraction": 0.25, "max": 10}, "weights": "uniform",
      "improvement_weights": false}})"),
                                 "s.json");
  const SamplerConfig& c = s.sampler;
  EXPECT_EQ(c.seed, 18446744073709551615ull);
  EXPECT_EQ(c.tpe.n_startup_trials, 3);
  EXPECT_EQ(c.tpe.n_ei_candidates, 48);
  EXPECT_TRUE(c.tpe.multivariate);
  EXPECT_TRUE(c.tpe.group);
  EXPECT_EQ(c.tpe.constant_liar, ConstantLiar::kOff);
  EXPECT_FALSE(c.tpe.consider_prior);
  EXPECT_EQ(c.tpe.prior_weight, 0.5);
  EXPECT_FALSE(c.tpe.consider_magic_clip);
  EXPECT_TRUE(c.tpe.consider_endpoints);
  EXPECT_FALSE(c.tpe.improvement_weights);
  EXPECT_EQ(c.tpe_gamma, (TpeGamma{0.25, 10}));
  EXPECT_EQ(c.tpe_weights, TpeWeights::kUniform);

  auto tpe = std::dynamic_pointer_cast<TpeSampler>(make_sampler(s));
  ASSERT_NE(tpe, nullptr);
  const TpeOptions& o = tpe->options();
  EXPECT_EQ(o.n_ei_candidates, 48);
  EXPECT_EQ(o.constant_liar, ConstantLiar::kOff);
  ASSERT_TRUE(o.gamma);
  EXPECT_EQ(o.gamma(8), 2);     // ceil(0.25 * 8)
  EXPECT_EQ(o.gamma(100), 10);  // capped
  ASSERT_TRUE(o.weights);
  EXPECT_EQ(o.weights(30), std::vector<double>(30, 1.0));
  EXPECT_FALSE(o.improvement_weights);

  s = parse_sweep_file(patched(R"({"sampler": {"constant_liar": true}})"), "s.json");
  EXPECT_EQ(s.sampler.tpe.constant_liar, ConstantLiar::kOn);
  s = parse_sweep_file(patched(R"({"sampler": {"constant_liar": "auto"}})"), "s.json");
  EXPECT_EQ(s.sampler.tpe.constant_liar, ConstantLiar::kAuto);
  // Defaults leave the functions empty: TpeSampler uses Optuna's.
  auto plain = std::dynamic_pointer_cast<TpeSampler>(make_sampler(s));
  EXPECT_FALSE(plain->options().gamma);
  EXPECT_FALSE(plain->options().weights);
}

TEST(SweepFileTest, Nsga2Sampler) {
  SweepFile s = parse_sweep_file(patched(R"({"sampler": {
      "type": "nsga2", "seed": 4, "population_size": 20, "crossover_prob": 0.8,
      "crossover": "sbx", "swapping_prob": 0.4, "mutation_prob": 0.1, "sbx_eta": 15,
      "sbx_use_child_gene_prob": 0.6, "sbx_uniform_crossover_prob": 0.3}})"),
                                 "s.json");
  EXPECT_EQ(s.sampler.type, SamplerType::kNsga2);
  const Nsga2Options& o = s.sampler.nsga2;
  EXPECT_EQ(o.population_size, 20);
  EXPECT_EQ(o.crossover_prob, 0.8);
  EXPECT_EQ(o.crossover, Nsga2Crossover::kSbx);
  EXPECT_EQ(o.swapping_prob, 0.4);
  EXPECT_EQ(o.mutation_prob, 0.1);
  EXPECT_EQ(o.sbx_eta, 15.0);
  EXPECT_EQ(o.sbx_use_child_gene_prob, 0.6);
  EXPECT_EQ(o.sbx_uniform_crossover_prob, 0.3);
  auto nsga2 = std::dynamic_pointer_cast<Nsga2Sampler>(make_sampler(s));
  ASSERT_NE(nsga2, nullptr);
  EXPECT_EQ(nsga2->options().population_size, 20);
  EXPECT_EQ(parse_sweep_file(to_json(s), "s.json").sampler, s.sampler);

  // Unset probabilities stay unset (their defaults depend on the study).
  s = parse_sweep_file(patched(R"({"sampler": {"type": "nsga2"}})"), "s.json");
  EXPECT_FALSE(s.sampler.nsga2.mutation_prob);
  EXPECT_EQ(parse_sweep_file(to_json(s), "s.json").sampler, s.sampler);

  EXPECT_THAT(error_of(patched(R"({"sampler": {"type": "nsga2", "population_size": 1}})")),
              HasSubstr("sweep.json: sampler.population_size: expected an integer >= 2"));
  EXPECT_THAT(error_of(patched(R"({"sampler": {"type": "nsga2", "crossover": "blend"}})")),
              HasSubstr("sweep.json: sampler.crossover: expected \"uniform\" or \"sbx\""));
  EXPECT_THAT(error_of(patched(R"({"sampler": {"type": "nsga2", "mutation_prob": 1.5}})")),
              HasSubstr("sweep.json: sampler.mutation_prob: "));
}

TEST(SweepFileTest, RandomSampler) {
  SweepFile s =
      parse_sweep_file(patched(R"({"sampler": {"type": "random", "seed": 4}})"), "s.json");
  EXPECT_EQ(s.sampler.type, SamplerType::kRandom);
  EXPECT_EQ(s.sampler.seed, 4u);
  EXPECT_NE(std::dynamic_pointer_cast<RandomSampler>(make_sampler(s)), nullptr);
}

TEST(SweepFileTest, EverySchedulerType) {
  auto load = [](std::string_view scheduler) {
    return parse_sweep_file(
        patched(std::string(R"({"scheduler": )") + std::string(scheduler) + "}"), "s.json");
  };
  SweepFile s = load(R"({"type": "none"})");
  EXPECT_EQ(make_scheduler(s), nullptr);

  s = load(R"({"type": "median", "n_startup_trials": 2, "n_warmup_steps": 3, "interval_steps": 2,
               "n_min_trials": 4})");
  EXPECT_EQ(s.scheduler.type, SchedulerType::kMedian);
  auto median = std::dynamic_pointer_cast<MedianStopping>(make_scheduler(s));
  ASSERT_NE(median, nullptr);
  EXPECT_EQ(median->options().percentile, 50.0);
  EXPECT_EQ(median->options().n_startup_trials, 2);
  EXPECT_EQ(median->options().n_warmup_steps, 3);
  EXPECT_EQ(median->options().interval_steps, 2);
  EXPECT_EQ(median->options().n_min_trials, 4);

  s = load(R"({"type": "percentile", "percentile": 25})");
  auto pct = std::dynamic_pointer_cast<PercentileStopping>(make_scheduler(s));
  ASSERT_NE(pct, nullptr);
  EXPECT_EQ(std::dynamic_pointer_cast<MedianStopping>(pct), nullptr);
  EXPECT_EQ(pct->options().percentile, 25.0);
  EXPECT_EQ(pct->options().n_startup_trials, 5);  // the default

  s = load(R"({"type": "asha", "min_resource": 2, "reduction_factor": 4, "max_resource": 64,
               "min_early_stopping_rate": 1, "bootstrap_count": 2})");
  auto asha = std::dynamic_pointer_cast<AshaScheduler>(make_scheduler(s));
  ASSERT_NE(asha, nullptr);
  EXPECT_EQ(asha->options().min_resource, 2);
  EXPECT_EQ(asha->options().reduction_factor, 4);
  EXPECT_EQ(asha->options().max_resource, 64);
  EXPECT_EQ(asha->options().min_early_stopping_rate, 1);
  EXPECT_EQ(asha->options().bootstrap_count, 2);
  s = load(R"({"type": "asha"})");
  EXPECT_FALSE(s.scheduler.asha.max_resource.has_value());

  s = load(R"({"type": "hyperband", "max_resource": 27})");
  auto hb = std::dynamic_pointer_cast<HyperbandScheduler>(make_scheduler(s));
  ASSERT_NE(hb, nullptr);
  EXPECT_EQ(hb->options().max_resource, 27);
  EXPECT_EQ(hb->options().min_resource, 1);
  EXPECT_EQ(hb->options().reduction_factor, 3);
  EXPECT_EQ(hb->n_brackets(), 4);

  s = load(R"({"type": "patience", "patience": 3, "min_delta": 0.01, "n_warmup_steps": 5})");
  auto patience = std::dynamic_pointer_cast<PatienceStopping>(make_scheduler(s));
  ASSERT_NE(patience, nullptr);
  EXPECT_EQ(patience->options().patience, 3);
  EXPECT_EQ(patience->options().min_delta, 0.01);
  EXPECT_EQ(patience->options().n_warmup_steps, 5);
}

TEST(SweepFileTest, AutoSampler) {
  SweepFile s = parse_sweep_file(patched(R"({"sampler": {"type": "auto", "seed": 4}})"), "s.json");
  EXPECT_EQ(s.sampler.type, SamplerType::kAuto);
  EXPECT_TRUE(s.sampler.type_given);
  EXPECT_NE(std::dynamic_pointer_cast<AutoSampler>(make_sampler(s)), nullptr);
  EXPECT_EQ(parse_sweep_file(to_json(s), "s.json").sampler, s.sampler);
  EXPECT_THAT(
      [] {
        try {
          parse_sweep_file(patched(R"({"sampler": {"type": "auto", "n_startup_trials": 3}})"),
                           "s.json");
        } catch (const Error& e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      HasSubstr("unknown field \"n_startup_trials\" for sampler type \"auto\""));
}

TEST(SweepFileTest, AutoSamplerBudgetInput) {
  SweepFile s = parse_sweep_file(
      patched(R"({"sampler": {"type": "auto", "seed": 4, "budget_input": true}})"), "s.json");
  EXPECT_TRUE(s.sampler.gp.budget_input);
  EXPECT_EQ(parse_sweep_file(to_json(s), "s.json").sampler, s.sampler);
  SweepFile plain =
      parse_sweep_file(patched(R"({"sampler": {"type": "auto", "seed": 4}})"), "s.json");
  EXPECT_FALSE(plain.sampler.gp.budget_input);
  EXPECT_FALSE(plain.sampler == s.sampler);
  EXPECT_EQ(to_json(plain).find("budget_input"), std::string::npos);
}

// Files written while TPE was the default give its options without a type: they stay TPE.
TEST(SweepFileTest, TpeOptionsWithoutATypeAreTpe) {
  SweepFile s = parse_sweep_file(patched(R"({"sampler": {"n_ei_candidates": 48}})"), "s.json");
  EXPECT_EQ(s.sampler.type, SamplerType::kTpe);
  EXPECT_EQ(s.sampler.tpe.n_ei_candidates, 48);
  SweepFile seeded = parse_sweep_file(patched(R"({"sampler": {"seed": 2}})"), "s.json");
  EXPECT_EQ(seeded.sampler.type, SamplerType::kAuto);
  EXPECT_FALSE(seeded.sampler.type_given);
}

TEST(SweepFileTest, StudyOptions) {
  SweepFile s = parse_sweep_file(patched(R"({"name": "q", "sampler": {"seed": 9},
      "objective": {"direction": "maximize"}, "scheduler": {"type": "median"}})"),
                                 "s.json");
  StudyOptions o = make_study_options(s);
  EXPECT_EQ(o.name, "q");
  EXPECT_EQ(o.directions, std::vector<StudyDirection>{StudyDirection::kMaximize});
  EXPECT_EQ(o.seed, 9u);
  ASSERT_TRUE(o.space.has_value());
  EXPECT_EQ(*o.space, s.space);
  EXPECT_NE(std::dynamic_pointer_cast<AutoSampler>(o.sampler), nullptr);
  EXPECT_NE(std::dynamic_pointer_cast<MedianStopping>(o.scheduler), nullptr);
  EXPECT_TRUE(o.load_if_exists);
  EXPECT_EQ(o.storage, nullptr);
}

// The option tables of sweep_file.cc drive the parser, ==, to_json and the allowed fields;
// docs/sweep_file.md lists the options by hand. This keeps the two the same: every option of
// every type is in the docs' tables, and every option the docs give a type takes.
std::string markdown_section(const std::string& doc, std::string_view heading) {
  size_t start = doc.find(std::string(heading) + "\n");
  if (start == std::string::npos) return "";
  size_t end = doc.find("\n### ", start + heading.size());
  return doc.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The rows of the markdown tables in `section`, as their cells (trimmed).
std::vector<std::vector<std::string>> table_rows(const std::string& section) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(section);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("| ") || line.starts_with("|---")) continue;
    std::vector<std::string> cells;
    size_t at = 1;
    while (at < line.size()) {
      size_t bar = line.find(" | ", at);
      if (bar == std::string::npos) bar = line.rfind(" |");
      if (bar == std::string::npos || bar < at) break;
      std::string cell = line.substr(at, bar - at);
      cell.erase(0, cell.find_first_not_of(' '));
      cells.push_back(cell);
      at = bar + 2;
    }
    rows.push_back(std::move(cells));
  }
  return rows;
}

std::string code(std::string_view name) { return "`" + std::string(name) + "`"; }

TEST(SweepFileTest, DocsListEveryOption) {
  std::ifstream in(fs::path(TUNER_SOURCE_DIR) / "docs" / "sweep_file.md");
  ASSERT_TRUE(in) << "docs/sweep_file.md";
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();

  // Sampler: one row per option, | `name` | types | default | meaning |, types "all" or a list.
  const auto sampler_rows = table_rows(markdown_section(doc, "### `sampler`"));
  ASSERT_GT(sampler_rows.size(), 2u);
  const std::span<const SamplerType> kSamplerTypes = sampler_types();
  auto documented_for = [&](std::string_view name, SamplerType type) {
    for (const auto& row : sampler_rows) {
      if (row.size() < 2 || row[0] != code(name)) continue;
      if (row[1] == "all") return true;
      std::istringstream types(row[1]);
      for (std::string t; std::getline(types, t, ',');) {
        t.erase(0, t.find_first_not_of(' '));
        if (t == to_string(type)) return true;
      }
    }
    return false;
  };
  for (SamplerType type : kSamplerTypes) {
    for (std::string_view name : sampler_option_names(type)) {
      EXPECT_TRUE(documented_for(name, type))
          << "docs/sweep_file.md's sampler table lacks " << name << " for " << to_string(type);
    }
  }
  for (const auto& row : sampler_rows) {
    if (row.size() < 2 || row[0] == "field") continue;
    for (SamplerType type : kSamplerTypes) {
      if (!documented_for(row[0].substr(1, row[0].size() - 2), type)) continue;
      auto names = sampler_option_names(type);
      EXPECT_NE(std::find(names.begin(), names.end(), row[0].substr(1, row[0].size() - 2)),
                names.end())
          << "docs/sweep_file.md gives sampler type " << to_string(type) << " " << row[0];
    }
  }

  // Scheduler: one row per type, | `type` | fields |; "the fields of `median`" includes its row.
  const auto scheduler_rows = table_rows(markdown_section(doc, "### `scheduler`"));
  auto fields_of = [&](std::string_view type) {
    std::string fields;
    for (const auto& row : scheduler_rows) {
      if (row.size() >= 2 && row[0] == code(type)) fields = row[1];
    }
    return fields;
  };
  const std::span<const SchedulerType> kSchedulerTypes = scheduler_types();
  for (SchedulerType type : kSchedulerTypes) {
    std::string fields = fields_of(to_string(type));
    ASSERT_FALSE(fields.empty()) << "docs/sweep_file.md has no scheduler row " << to_string(type);
    size_t of = fields.find("the fields of `");
    if (of != std::string::npos) {
      size_t end = fields.find('`', of + 15);
      fields += " " + fields_of(fields.substr(of + 15, end - of - 15));
    }
    for (std::string_view name : scheduler_option_names(type)) {
      EXPECT_NE(fields.find(code(name)), std::string::npos)
          << "docs/sweep_file.md's scheduler row " << to_string(type) << " lacks " << name;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The space, from a file, imported, inline

TEST(SweepFileTest, SpaceFromFileRelativeToSweep) {
  fs::path sweep = kTestdata / "sweep.json";
  SweepFile s = parse_sweep_file(patched(R"({"space": {"params": null, "file": "space.json"},
                  "job": {"argv": ["python3", "t.py", "--lr", "{lr}", "--layers", "{layers}"]}})"),
                                 sweep.string());
  EXPECT_EQ(s.space, load_search_space(kTestdata / "space.json"));
}

TEST(SweepFileTest, SpaceImports) {
  std::string sweep = (kTestdata / "sweep.json").string();
  auto space_of = [&](std::string_view space) {
    // The job refers to no parameter, so that every space fits it.
    Json doc = Json::parse(kMinimal);
    doc["space"] = Json::parse(space);
    doc["job"]["argv"] = Json::array({"true"});
    return parse_sweep_file(doc.dump(), sweep).space;
  };
  EXPECT_EQ(space_of(R"({"import": "nni", "file": "nni_space.json"})"),
            load_nni_search_space(kTestdata / "nni_space.json"));
  EXPECT_EQ(space_of(R"({"import": "wandb", "file": "wandb_sweep.json"})"),
            load_wandb_parameters(kTestdata / "wandb_sweep.json"));
  EXPECT_EQ(space_of(R"({"import": "wandb", "parameters": {
                 "lr": {"distribution": "log_uniform_values", "min": 1e-05, "max": 0.1},
                 "batch_size": {"values": [32, 64]}}})"),
            load_wandb_parameters(kTestdata / "wandb_sweep.json"));
  EXPECT_EQ(space_of(R"({"import": "nni", "search_space": {
                 "lr": {"_type": "loguniform", "_value": [1e-05, 0.1]},
                 "batch_size": {"_type": "choice", "_value": [32, 64, 128]}}})"),
            load_nni_search_space(kTestdata / "nni_space.json"));
}

TEST(SweepFileTest, SpaceFileErrors) {
  std::string sweep = (kTestdata / "sweep.json").string();
  // A missing file: kNotFound, naming the sweep's field and the file.
  try {
    parse_sweep_file(patched(R"({"space": {"params": null, "file": "nope.json"}})"), sweep);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_THAT(e.what(), HasSubstr("sweep.json: space.file: "));
    EXPECT_THAT(e.what(), HasSubstr("nope.json"));
  }
  // An invalid space file: its own name and path.
  EXPECT_THAT(error_of(patched(R"({"space": {"params": null, "file": "bad_space.json"}})"), sweep),
              HasSubstr("bad_space.json: params.lr.low"));
  try {
    parse_sweep_file(patched(R"({"space": {"params": null, "import": "wandb",
                                           "file": "nope.json"}})"),
                     sweep);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

// ---------------------------------------------------------------------------------------------
// The objective and the job

TEST(SweepFileTest, JobObjectiveMetricMustAgree) {
  // Stated and the same: kept.
  SweepFile s = parse_sweep_file(patched(R"({"job": {"objective_metric": "loss"}})"), "s.json");
  EXPECT_EQ(Json::parse(s.job_json)["objective_metric"], "loss");
  // Not stated: filled in.
  s = parse_sweep_file(kMinimal, "s.json");
  EXPECT_EQ(Json::parse(s.job_json)["objective_metric"], "loss");
  // Different: an error naming both.
  EXPECT_THAT(error_of(patched(R"({"job": {"objective_metric": "val_loss"}})")),
              HasSubstr("sweep.json: job.objective_metric: \"val_loss\" differs from "
                        "objective.metric \"loss\""));
}

TEST(SweepFileTest, JobWorkingDirResolvesAgainstSweepDir) {
  SweepFile s = parse_sweep_file(patched(R"({"job": {"working_dir": "src"}})"), "a/b/s.json");
  EXPECT_EQ(Json::parse(s.job_json)["working_dir"], absolute_dir("a/b/src"));
  s = parse_sweep_file(patched(R"({"job": {"working_dir": "/opt/x"}})"), "a/b/s.json");
  EXPECT_EQ(Json::parse(s.job_json)["working_dir"], "/opt/x");
}

TEST(SweepFileTest, PlaceholdersMustNotNameConditionalParameters) {
  std::string conditional = R"({"space": {"params": {
      "opt": {"type": "categorical", "choices": ["sgd", "adam"]},
      "momentum": {"type": "float", "low": 0.0, "high": 0.9,
                   "condition": {"parent": "opt", "values": ["sgd"]}}}},)";
  EXPECT_THAT(error_of(patched(conditional + R"("job": {"argv": ["t", "{momentum}"]}})")),
              HasSubstr("sweep.json: job.argv[1]: placeholder {momentum} names a conditional "
                        "parameter (active only for some values of \"opt\")"));
  EXPECT_THAT(error_of(patched(conditional + R"("job": {"kind": "engine", "argv": null,
      "training": {"momentum": "{momentum}"}}})")),
              HasSubstr("sweep.json: job.training.momentum: placeholder {momentum} names a "
                        "conditional parameter"));
  // Built-in names and doubled braces are not parameters.
  EXPECT_EQ(error_of(patched(R"({"job": {"argv": ["t", "{trial_number}", "{{x}}", "{lr}"]}})")),
            "");
}

TEST(SweepFileTest, EngineJobPlaceholdersMustNameParameters) {
  std::string text = patched(R"({"job": {"kind": "engine", "argv": null,
      "model": {"input": [4], "layers": [{"type": "linear", "out": "{widht}"}]}}})");
  EXPECT_THAT(error_of(text),
              HasSubstr("sweep.json: job.model.layers[0].out: placeholder {widht} names no "
                        "parameter of the space"));
}

// Constraints on the job's metrics.
TEST(SweepFileTest, ConstraintsBoundTheJobsMetrics) {
  SweepFile s = parse_sweep_file(patched(R"({"constraints": [
      {"metric": "latency_ms", "max": 2.0}, {"metric": "params", "max": 1e6},
      {"metric": "recall", "min": 0.9}]})"),
                                 "sweep.json");
  ASSERT_EQ(s.constraints.size(), 3u);
  EXPECT_EQ(s.constraints[0], (MetricConstraint{"latency_ms", MetricConstraint::Bound::kMax, 2.0}));
  EXPECT_EQ(s.constraints[1].limit, 1e6);
  EXPECT_EQ(s.constraints[2], (MetricConstraint{"recall", MetricConstraint::Bound::kMin, 0.9}));
  // The stored value is <= 0 exactly when the bound holds.
  EXPECT_EQ(constraint_value(s.constraints[0], 2.5), 0.5);
  EXPECT_EQ(constraint_value(s.constraints[0], 1.5), -0.5);
  EXPECT_EQ(constraint_value(s.constraints[2], 0.95), 0.9 - 0.95);
  EXPECT_EQ(to_string(s.constraints[0]), "latency_ms <= 2");
  EXPECT_EQ(to_string(s.constraints[2]), "recall >= 0.9");
  EXPECT_EQ(to_string(s.constraints[1]), "params <= 1e+06");
  EXPECT_TRUE(parse_sweep_file(kMinimal, "sweep.json").constraints.empty());
}

TEST(SweepFileTest, RefusesBadConstraintsNamingTheJsonPath) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"constraints": {"metric": "a", "max": 1}})",
       "sweep.json: constraints: expected a list of bounds such as [{\"metric\": "
       "\"latency_ms\", \"max\": 2}], got an object"},
      {R"({"constraints": [3]})", "sweep.json: constraints[0]: expected an object, got 3"},
      {R"({"constraints": [{"max": 1}]})",
       "sweep.json: constraints[0]: missing required field \"metric\""},
      {R"({"constraints": [{"metric": "", "max": 1}]})",
       "sweep.json: constraints[0].metric: must not be empty"},
      {R"({"constraints": [{"metric": "a", "max": 1}, {"metric": "b"}]})",
       "sweep.json: constraints[1]: has neither \"max\" nor \"min\"; a bound is one of them "
       "(bound a metric on both sides with two entries)"},
      {R"({"constraints": [{"metric": "a", "max": 1, "min": 0}]})",
       "sweep.json: constraints[0]: has both \"max\" and \"min\""},
      {R"({"constraints": [{"metric": "a", "max": "1"}]})",
       "sweep.json: constraints[0].max: expected a finite number, got \"1\""},
      {R"({"constraints": [{"metric": "a", "min": null}]})",
       "sweep.json: constraints[0].min: expected a finite number, got null"},
      {R"({"constraints": [{"metric": "a", "max": 1, "limit": 2}]})",
       "sweep.json: constraints[0]: unknown field \"limit\""},
      {R"({"constraints": [{"metric": "a", "max": 1}, {"metric": "a", "max": 3}]})",
       "sweep.json: constraints[1]: bounds \"a\" as constraints[0] does (a <= 1); state each "
       "bound once"},
      {R"({"constraint": []})", "(did you mean \"constraints\"?)"},
  };
  for (const auto& [patch, want] : cases) {
    EXPECT_THAT(error_of(patched(patch)), HasSubstr(want)) << patch;
  }
}

// An engine sweep on Fashion-MNIST with `params` (a space's "params") and `layers` (the model's).
std::string engine_sweep(std::string_view params, std::string_view layers,
                         std::string_view input = "[1, 28, 28]") {
  Json doc = Json::parse(kMinimal);
  doc["space"]["params"] = Json::parse(params);
  doc["objective"] = {{"metric", "val_accuracy"}, {"direction", "maximize"}};
  doc["job"] = Json::parse(R"({"kind": "engine",
      "data": {"dataset": "fashion-mnist", "train": 600, "validation": 200},
      "training": {"epochs": 1, "batch_size": 64}})");
  doc["job"]["model"] = {{"input", Json::parse(input)}, {"layers", Json::parse(layers)}};
  return doc.dump();
}

TEST(SweepFileTest, EngineConstraintsMustNameMetricsTheEngineReports) {
  const char* params = R"({"lr": {"type": "float", "low": 0.001, "high": 0.1}})";
  const char* layers = R"([{"type": "flatten"}, {"type": "linear", "out": 10}])";
  Json doc = Json::parse(engine_sweep(params, layers));
  doc["constraints"] = Json::parse(R"([{"metric": "epoch_seconds", "max": 30},
                                       {"metric": "num_params", "max": 1e6},
                                       {"metric": "val_los", "max": 0.5}])");
  EXPECT_THAT(error_of(doc.dump()),
              HasSubstr("sweep.json: constraints[2].metric: \"val_los\" is not a metric of an "
                        "engine job (it reports \"train_loss\", \"val_loss\""));
  EXPECT_THAT(error_of(doc.dump()), HasSubstr("(did you mean \"val_loss\"?)"));
  doc["constraints"] = Json::parse(R"([{"metric": "test_accuracy", "min": 0.5}])");
  EXPECT_THAT(error_of(doc.dump()),
              HasSubstr("sweep.json: constraints[0].metric: \"test_accuracy\" is reported only "
                        "when the job's data.test is > 0"));
  doc["job"]["data"]["test"] = 100;
  EXPECT_EQ(error_of(doc.dump()), "");
  EXPECT_EQ(parse_sweep_file(doc.dump(), "sweep.json").constraints.size(), 1u);
}

// Regression: a model that could not fit the data was accepted, and every trial failed
// with "exited with code 1".
TEST(SweepFileTest, RefusesAnEngineModelWhoseOutputIsNotTheDatasetsClasses) {
  const char* params = R"({"lr": {"type": "float", "low": 0.001, "high": 0.1}})";
  EXPECT_EQ(error_of(engine_sweep(params, R"([{"type": "flatten"},
                                              {"type": "linear", "out": 3}])")),
            "sweep.json: job.model.layers[1]: the model's output is [3], but fashion-mnist has "
            "10 classes: the last layer must give [10] (one logit per class)");
  EXPECT_EQ(error_of(engine_sweep(params, R"([{"type": "flatten"},
                                              {"type": "linear", "out": 10}])")),
            "");
}

TEST(SweepFileTest, RefusesAnEngineModelWhoseInputIsNotTheDatasetsSamples) {
  const char* params = R"({"w": {"type": "int", "low": 8, "high": 64}})";
  EXPECT_EQ(error_of(engine_sweep(params, R"([{"type": "linear", "out": "{w}"},
                                              {"type": "linear", "out": 10}])",
                                  "[784]")),
            "sweep.json: job.model.input: [784] is not the shape of fashion-mnist's samples, "
            "[1, 28, 28]: make the model's input [1, 28, 28]");
}

// Regression: a csv data set's misfit (input width, classes) was found only when the trials
// loaded the data; the files this host reads are checked at load, models with placeholders on
// their probes.
TEST(SweepFileTest, RefusesAnEngineModelThatDoesNotFitItsCsvFilesAtLoad) {
  const fs::path dir = fs::temp_directory_path() / ("sweep_csv_fit_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "iris.csv") << "a,b,c,d,kind\n1,2,3,4,x\n2,3,4,5,y\n3,4,5,6,z\n"
                                     "4,5,6,7,x\n5,6,7,8,y\n6,7,8,9,z\n";
  const auto sweep = [&](const std::string& params, const std::string& model) {
    Json doc = Json::parse(kMinimal);
    doc["space"]["params"] = Json::parse(params);
    doc["objective"] = {{"metric", "val_accuracy"}, {"direction", "maximize"}};
    doc["job"] = {
        {"kind", "engine"},
        {"model", Json::parse(model)},
        {"data",
         {{"format", "csv"}, {"dir", dir.string()}, {"path", "iris.csv"}, {"label", "kind"}}},
        {"training", {{"epochs", 1}, {"batch_size", 2}}}};
    return doc.dump();
  };
  const std::string lr = R"({"lr": {"type": "float", "low": 0.001, "high": 0.1}})";
  EXPECT_EQ(
      error_of(sweep(lr, R"({"input": [3], "layers": [{"type": "linear", "out": "classes"}]})")),
      "sweep.json: job.model.input: [3] is not the shape of iris.csv's samples, [4]: make "
      "the model's input [4]");
  EXPECT_EQ(error_of(sweep(lr, R"({"layers": [{"type": "linear", "out": 2}]})")),
            "sweep.json: job.model.layers[0]: the model's output is [2], but iris.csv has 3 "
            "classes: the last layer must give [3] (one logit per class)");
  EXPECT_THAT(error_of(sweep(R"({"k": {"type": "categorical", "choices": [3, 4]}})",
                             R"({"layers": [{"type": "linear", "out": "{k}"}]})")),
              HasSubstr("sweep.json: job.model.layers[0]: the model's output is [4], but "
                        "iris.csv has 3 classes"));
  EXPECT_EQ(error_of(sweep(lr, R"({"layers": [{"type": "linear", "out": "classes"}]})")), "");
  fs::remove_all(dir);
}

// Regression: an embedding of a column the CSV lacks was found only when each trial loaded the
// data, so every trial failed.
TEST(SweepFileTest, RefusesAnEmbeddingOfAColumnItsCsvFileLacksAtLoad) {
  const fs::path dir =
      fs::temp_directory_path() / ("sweep_csv_embed_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "shops.csv") << "size,region,kind\n1,north,x\n2,south,y\n3,north,x\n";
  Json doc = Json::parse(kMinimal);
  doc["space"]["params"] = Json::parse(R"({"lr": {"type": "float", "low": 0.001, "high": 0.1}})");
  doc["objective"] = {{"metric", "val_accuracy"}, {"direction", "maximize"}};
  doc["job"] = {{"kind", "engine"},
                {"model", {{"layers", {{{"type", "linear"}, {"out", "classes"}}}}}},
                {"data",
                 {{"format", "csv"},
                  {"dir", dir.string()},
                  {"path", "shops.csv"},
                  {"label", "kind"},
                  {"embedding", {{"regoin", 2}}}}},
                {"training", {{"epochs", 1}, {"batch_size", 2}}}};
  EXPECT_EQ(error_of(doc.dump()),
            "sweep.json: job.data.embedding.regoin: \"regoin\" is not a column of " +
                (dir / "shops.csv").string() + " (its header has size, region, kind)");
  doc["job"]["data"]["embedding"] = {{"region", 2}};
  EXPECT_EQ(error_of(doc.dump()), "");
  fs::remove_all(dir);
}

// The probes: each categorical choice of the model's placeholders, the others at their lowest
// values or first choices.
TEST(SweepFileTest, RefusesAnEngineModelChoiceThatCannotBuild) {
  const char* layers = R"([{"type": "flatten"}, {"type": "linear", "out": "{w}"},
                           {"type": "{act}"}, {"type": "linear", "out": 10}])";
  EXPECT_EQ(error_of(engine_sweep(R"({"w": {"type": "int", "low": 8, "high": 64},
      "act": {"type": "categorical", "choices": ["relu", "tanh", "gelu"]}})",
                                  layers)),
            "");
  const std::string error = error_of(engine_sweep(R"({"w": {"type": "int", "low": 8, "high": 64},
      "act": {"type": "categorical", "choices": ["relu", "swish", "tanh"]}})",
                                                  layers));
  EXPECT_THAT(error, HasSubstr("sweep.json: job.model.layers[2].type: unknown layer \"swish\""));
  EXPECT_THAT(error, HasSubstr("; every trial with w = 8, act = \"swish\" would fail (the "
                               "sweep tries the model with its parameters at their lowest values "
                               "or first choices, and each categorical choice in turn)"));
  // A choice whose model gives another number of outputs than the dataset's classes.
  EXPECT_THAT(error_of(engine_sweep(R"({"k": {"type": "categorical", "choices": [10, 3]}})",
                                    R"([{"type": "flatten"}, {"type": "linear", "out": "{k}"}])")),
              HasSubstr("sweep.json: job.model.layers[1]: the model's output is [3], but "
                        "fashion-mnist has 10 classes"));
  // A kernel that does not fit at the range's lowest value.
  EXPECT_THAT(error_of(engine_sweep(R"({"k": {"type": "int", "low": 30, "high": 31}})",
                                    R"([{"type": "conv2d", "out": 4, "kernel": "{k}"},
                                        {"type": "flatten"}, {"type": "linear", "out": 10}])")),
              HasSubstr("sweep.json: job.model.layers[0].kernel: 30 does not fit"));
}

// ---------------------------------------------------------------------------------------------
// Errors: each names the file and the JSON path.

struct BadCase {
  const char* patch;
  const char* fragment;
};

TEST(SweepFileTest, ErrorsNameFileAndPath) {
  const BadCase cases[] = {
      {R"({"sampler": {"n_startup_trials": -1}})",
       "sweep.json: sampler.n_startup_trials: expected an integer >= 0, got -1"},
      {R"({"sampler": {"n_startup_trials": 1.5}})",
       "sweep.json: sampler.n_startup_trials: expected an integer >= 0, got 1.5"},
      {R"({"sampler": {"type": "tpee"}})",
       "sweep.json: sampler.type: expected \"tpe\", \"random\", \"grid\", \"gp\", \"auto\" or "
       "\"nsga2\", got \"tpee\" "
       "(did you mean \"tpe\"?)"},
      {R"({"sampler": {"type": "gp", "multivariate": true}})",
       "sweep.json: sampler: unknown field \"multivariate\" for sampler type \"gp\""},
      {R"({"sampler": {"type": "random", "n_startup_trials": 3}})",
       "sweep.json: sampler: unknown field \"n_startup_trials\" for sampler type \"random\""},
      {R"({"sampler": {"n_ei_candidate": 3}})", "(did you mean \"n_ei_candidates\"?)"},
      {R"({"sampler": {"n_ei_candidates": 0}})",
       "sweep.json: sampler.n_ei_candidates: expected an integer >= 1, got 0"},
      {R"({"sampler": {"group": true, "multivariate": false}})", "sweep.json: sampler.group: "},
      {R"({"sampler": {"prior_weight": -1}})",
       "sweep.json: sampler.prior_weight: expected a number >= 0, got -1"},
      {R"({"sampler": {"constant_liar": "yes"}})",
       "sweep.json: sampler.constant_liar: expected \"auto\", true or false, got \"yes\""},
      {R"({"sampler": {"multivariate": 1}})",
       "sweep.json: sampler.multivariate: expected true or false, got 1"},
      {R"({"sampler": {"gamma": {"fraction": 0}}})",
       "sweep.json: sampler.gamma.fraction: expected a number in (0, 1], got 0"},
      {R"({"sampler": {"gamma": {"fraction": 0.1, "cap": 3}}})",
       "sweep.json: sampler.gamma: unknown field \"cap\""},
      {R"({"sampler": {"weights": "flat"}})",
       "sweep.json: sampler.weights: expected \"optuna\" or \"uniform\", got \"flat\""},
      {R"({"sampler": {"seed": -5}})",
       "sweep.json: sampler.seed: expected an integer >= 0, got -5"},
      {R"({"sampler": {"type": "grid"}})",
       "sweep.json: sampler.type: \"grid\" over this space: grid: parameter 'lr'"},
      {R"({"sampler": {"type": "grid", "max_points": 0}})",
       "sweep.json: sampler.max_points: expected an integer >= 1, got 0"},
      {R"({"sampler": 3})", "sweep.json: sampler: expected an object, got 3"},
      {R"({"scheduler": {"type": "asha", "reduction_factor": 1}})",
       "sweep.json: scheduler.reduction_factor: expected an integer >= 2, got 1"},
      {R"({"scheduler": {"type": "asha", "min_resource": 4, "max_resource": 4}})",
       "sweep.json: scheduler.max_resource: expected an integer >= 5, got 4"},
      {R"({"scheduler": {"type": "asha", "max_resource": "4"}})",
       "sweep.json: scheduler.max_resource: expected an integer >= 2, got \"4\""},
      {R"({"scheduler": {"type": "hyperband"}})",
       "sweep.json: scheduler: missing required field \"max_resource\""},
      {R"({"scheduler": {"type": "patience"}})",
       "sweep.json: scheduler: missing required field \"patience\""},
      {R"({"scheduler": {"type": "patience", "patience": 2, "min_delta": -0.5}})",
       "sweep.json: scheduler.min_delta: expected a number >= 0, got -0.5"},
      {R"({"scheduler": {"type": "median", "percentile": 30}})",
       "sweep.json: scheduler: unknown field \"percentile\" for scheduler type \"median\""},
      {R"({"scheduler": {"type": "median", "interval_steps": 0}})",
       "sweep.json: scheduler.interval_steps: expected an integer >= 1, got 0"},
      {R"({"scheduler": {"type": "percentile", "percentile": 120}})",
       "sweep.json: scheduler.percentile: expected a number in [0, 100], got 120"},
      {R"({"scheduler": {"type": "percentile"}})",
       "sweep.json: scheduler: missing required field \"percentile\""},
      {R"({"scheduler": {"kind": "asha"}})",
       "sweep.json: scheduler: missing required field \"type\""},
      {R"({"scheduler": {"type": "sha"}})", "sweep.json: scheduler.type: expected \"none\""},
      {R"({"scheduler": {"type": "none", "max_resource": 3}})",
       "sweep.json: scheduler: unknown field \"max_resource\" for scheduler type \"none\""},
      {R"({"budget": {"trials": 0}})",
       "sweep.json: budget.trials: expected an integer >= 1, got 0"},
      {R"({"budget": {"trials": null, "time": "2 hours"}})",
       "sweep.json: budget.time: expected a duration such as"},
      {R"({"budget": {"time": "0s"}})", "sweep.json: budget.time: must be longer than 0 s"},
      {R"({"budget": {"time": -3}})", "sweep.json: budget.time: expected an integer >= 1, got -3"},
      {R"({"budget": {"trials": null}})", "sweep.json: budget: needs \"trials\", \"time\" or both"},
      {R"({"budget": null})", "sweep.json: missing required field \"budget\""},
      {R"({"budget": {"max_concurrent": -1}})",
       "sweep.json: budget.max_concurrent: expected an integer >= 0, got -1"},
      {R"({"budget": {"max_failures": -2}})",
       "sweep.json: budget.max_failures: expected an integer >= 0, got -2"},
      {R"({"budget": {"max_failures": "3"}})", "sweep.json: budget.max_failures: expected"},
      {R"({"budget": {"trails": 5}})",
       "sweep.json: budget: unknown field \"trails\" (did you mean \"trials\"?)"},
      {R"({"objective": {"direction": "max"}})",
       "sweep.json: objective.direction: expected \"minimize\" or \"maximize\", got \"max\""},
      {R"({"objective": {"direction": null}})",
       "sweep.json: objective: missing required field \"direction\""},
      {R"({"objective": {"metric": ""}})", "sweep.json: objective.metric: must not be empty"},
      {R"({"objective": {"goal": "minimize"}})", "sweep.json: objective: unknown field \"goal\""},
      {R"({"objective": null})", "sweep.json: missing required field \"objective\""},
      {R"({"job": {"kind": "docker"}})",
       "sweep.json: job.kind: expected \"command\" or \"engine\", got \"docker\""},
      {R"({"job": {"kind": null}})", "sweep.json: job: missing required field \"kind\""},
      {R"({"job": {"argv": ["python3", "{lrr}"]}})",
       "sweep.json: job.argv[1]: placeholder {lrr} names no parameter of the space (did you mean "
       "\"lr\"?)"},
      // Regression: unbalanced braces passed loading, then every trial failed.
      {R"({"job": {"argv": ["python3", "{lr"]}})",
       "sweep.json: job.argv[1] \"{lr\": unterminated '{' at offset 0 (write '{{' for a brace)"},
      {R"({"job": {"argv": ["python3", "lr}"]}})",
       "sweep.json: job.argv[1] \"lr}\": stray '}' at offset 2 (write '}}' for a brace)"},
      {R"({"job": {"evn": {}}})", "sweep.json: job: unknown field \"evn\" (did you mean \"env\"?)"},
      {R"({"job": {"argv": []}})", "sweep.json: job.argv: must name a program"},
      {R"({"job": null})", "sweep.json: missing required field \"job\""},
      {R"({"executors": {"local": -1}})",
       "sweep.json: executors.local: expected an integer >= 0, got -1"},
      {R"({"executors": {"remote": 2}})", "sweep.json: executors: unknown field \"remote\""},
      {R"({"executors": {"local": 2, "prefetch": 3}})",
       "sweep.json: executors.prefetch: must be at most the local slots (2), got 3"},
      {R"({"executors": {"prefetch": -1}})",
       "sweep.json: executors.prefetch: expected an integer >= 0, got -1"},
      {R"({"export": {"name": "m"}})", "sweep.json: export: missing required field \"registry\""},
      {R"({"export": {"registry": "r", "metric": "acc"}})",
       "sweep.json: export: missing required field \"direction\""},
      {R"({"export": {"registry": "r", "flavor": "onnx"}})",
       "sweep.json: export: unknown field \"flavor\""},
      {R"({"spcae": {}})", "sweep.json: unknown field \"spcae\" (did you mean \"space\"?)"},
      {R"({"version": 2})", "sweep.json: version: this tuner reads version 1"},
      {R"({"name": ""})", "sweep.json: name: must not be empty"},
      {R"({"storage": 3})", "sweep.json: storage: expected a string, got 3"},
      {R"({"space": null})", "sweep.json: missing required field \"space\""},
      {R"({"space": {"params": {"lr": {"low": 0}}}})", "sweep.json: space.params.lr.low"},
      {R"({"space": {"params": {"lr": {"hgih": 1}}}})",
       "sweep.json: space.params.lr: unknown field \"hgih\""},
      {R"({"space": {"params": {"lr": null, "n": null}}, "job": {"argv": ["true"]}})",
       "sweep.json: space"},
      {R"({"space": {"file": "space.json"}})",
       "sweep.json: space: unknown field \"params\" next to \"file\""},
      {R"({"space": {"params": null, "import": "optuna", "file": "x.json"}})",
       "sweep.json: space.import: expected \"nni\" or \"wandb\", got \"optuna\""},
      {R"({"space": {"params": null, "import": "wandb"}})",
       "sweep.json: space: an import needs exactly one of \"file\" and \"parameters\""},
      {R"({"space": {"params": null, "import": "nni", "parameters": {}}})",
       "sweep.json: space: unknown field \"parameters\" for an NNI import"},
      {R"({"space": {"params": null, "import": "wandb",
                     "parameters": {"lr": {"min": 1.0, "max": 0.5}}}})",
       "sweep.json: space.parameters: lr.max: "},
      {R"({"space": {"params": null, "import": "nni",
                     "search_space": {"lr": {"_type": "uniformm", "_value": [0, 1]}}}})",
       "sweep.json: space.search_space: lr._type"},
  };
  for (const BadCase& c : cases) {
    std::string message = error_of(patched(c.patch));
    EXPECT_THAT(message, HasSubstr(c.fragment)) << "patch: " << c.patch;
  }
}

TEST(SweepFileTest, DocumentErrors) {
  EXPECT_THAT(error_of("[1, 2]"), HasSubstr("sweep.json: expected a sweep (a JSON object)"));
  EXPECT_THAT(error_of("{\"name\": \"a\",\n  \"name\": \"b\"}"), HasSubstr("sweep.json"));
  EXPECT_THAT(error_of("{\n  \"name\": }"), HasSubstr("sweep.json:2:"));
  try {
    load_sweep_file((kTestdata / "does_not_exist.json").string());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_THAT(e.what(), HasSubstr("does_not_exist.json"));
  }
  // A sweep file without a stem has no default name.
  EXPECT_THAT(error_of(kMinimal, "dir/"), HasSubstr("name: missing"));
}

// Regression: a description nested 100,000 levels deep crashed the loader (SIGSEGV).
TEST(SweepFileTest, RefusesJsonNestedDeeperThanTheLimit) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(error_of(patched(R"({"description": "x"})").insert(1, "\"notes\": " + deep + ",")),
            "sweep.json: JSON nested deeper than 256 levels");
}

// ---------------------------------------------------------------------------------------------
// Round trip

TEST(SweepFileTest, RoundTrip) {
  const std::string path = (kTestdata / "full.json").string();
  const char* patches[] = {
      "{}",
      R"({"name": "full", "description": "d", "storage": "out/full.db",
          "space": {"params": null, "import": "wandb", "file": "wandb_sweep.json"},
          "objective": {"direction": "maximize"},
          "sampler": {"seed": 3, "n_startup_trials": 4, "group": true, "constant_liar": true,
                      "prior_weight": 0.3, "gamma": {"fraction": 0.15, "max": 7},
                      "weights": "uniform", "improvement_weights": false},
          "scheduler": {"type": "asha", "max_resource": 27, "bootstrap_count": 1},
          "budget": {"trials": 7, "time": "1d2h3m4s", "max_concurrent": 2},
          "job": {"env": {"A": "1"}, "working_dir": "/tmp", "argv": ["true"]},
          "executors": {"local": 3, "prefetch": 2},
          "export": {"registry": "../reg", "metric": "acc", "direction": "maximize",
                     "limits": [{"metric": "latency_ms", "max": 2}, {"metric": "size", "min": 1}]}})",
      R"({"sampler": {"type": "random"}, "scheduler": {"type": "percentile", "percentile": 10.5,
          "n_warmup_steps": 2}, "storage": "/abs/x.db"})",
      R"({"sampler": {"type": "grid"}, "budget": null,
          "space": {"params": {"lr": {"low": 0.1, "high": 0.3, "step": 0.1, "log": null}}},
          "scheduler": {"type": "hyperband", "max_resource": 9, "min_resource": 1}})",
      R"({"scheduler": {"type": "median"}})",
      R"({"scheduler": {"type": "patience", "patience": 2, "min_delta": 0.125}})",
      R"({"constraints": [{"metric": "latency_ms", "max": 2.5}, {"metric": "acc", "min": 0.8},
                          {"metric": "latency_ms", "min": 1e-3}]})",
  };
  for (const char* patch : patches) {
    SCOPED_TRACE(patch);
    SweepFile first = parse_sweep_file(patched(patch), path);
    std::string text = to_json(first);
    SweepFile second = parse_sweep_file(text, path);
    EXPECT_EQ(second, first) << text;
    EXPECT_EQ(to_json(second), text);
  }
}

TEST(SweepFileTest, ToJsonWritesPathsRelativeToTheSweep) {
  SweepFile s = parse_sweep_file(patched(R"({"storage": "out/s.db"})"), "a/b/s.json");
  Json doc = Json::parse(to_json(s));
  EXPECT_EQ(doc["storage"], "out/s.db");
  EXPECT_EQ(doc["version"], kSweepFileVersion);
  EXPECT_EQ(doc["scheduler"]["type"], "none");
}

TEST(SweepFileTest, LoadFromFile) {
  SweepFile s = load_sweep_file((kTestdata / "command.json").string());
  EXPECT_EQ(s.name, "command");
  EXPECT_EQ(s.storage_path, (kTestdata / "command.db").lexically_normal().string());
  EXPECT_EQ(s.space, load_search_space(kTestdata / "space.json"));
  EXPECT_EQ(Json::parse(s.job_json)["working_dir"], absolute_dir(kTestdata));
}

// ---------------------------------------------------------------------------------------------
// Durations

TEST(SweepFileTest, ParseDuration) {
  using std::chrono::seconds;
  EXPECT_EQ(parse_duration("90s"), seconds(90));
  EXPECT_EQ(parse_duration("30m"), seconds(1800));
  EXPECT_EQ(parse_duration("2h"), seconds(7200));
  EXPECT_EQ(parse_duration("1h30m"), seconds(5400));
  EXPECT_EQ(parse_duration("1d"), seconds(86400));
  EXPECT_EQ(parse_duration("1d2h3m4s"), seconds(93784));
  EXPECT_EQ(parse_duration("90m"), seconds(5400));  // a unit may exceed the next one up
  EXPECT_EQ(parse_duration("3600"), seconds(3600));
  EXPECT_EQ(parse_duration("0s"), seconds(0));
  for (const char* bad : {"", "2 hours", "1m1h", "1h1h", "h", "1.5h", "1h30", "-5s", "5S", "1h ",
                          "99999999999999999999s", "9999999999999999d"}) {
    EXPECT_THROW(parse_duration(bad), Error) << bad;
  }
  try {
    parse_duration("2 hours");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("\"1h30m\""));
    EXPECT_THAT(e.what(), HasSubstr("got \"2 hours\""));
  }
}

TEST(SweepFileTest, FormatDuration) {
  using std::chrono::seconds;
  EXPECT_EQ(format_duration(seconds(0)), "0s");
  EXPECT_EQ(format_duration(seconds(90)), "1m30s");
  EXPECT_EQ(format_duration(seconds(5400)), "1h30m");
  EXPECT_EQ(format_duration(seconds(7200)), "2h");
  EXPECT_EQ(format_duration(seconds(86401)), "1d1s");
  for (int64_t s : {1, 59, 61, 3599, 3601, 86399, 93784, 1000000}) {
    EXPECT_EQ(parse_duration(format_duration(seconds(s))), seconds(s));
  }
}

// ---------------------------------------------------------------------------------------------
// Examples: every file in examples/sweeps loads.

// An engine sweep's objectives and constraints may name any final metric the engine
// reports, the model's figures included; another name would fail every trial, so the load says so.
TEST(SweepFileTest, EngineObjectivesAndConstraintsNameTheEnginesMetrics) {
  std::ifstream in(fs::path(kExamples) / "fashion_mnist_tradeoff.json");
  std::stringstream text;
  text << in.rdbuf();
  const Json example = Json::parse(text.str());
  auto with = [&](const std::string& patch) {
    Json doc = example;
    doc.merge_patch(Json::parse(patch));
    return doc.dump();
  };
  const SweepFile s =
      parse_sweep_file(with(R"({"constraints": [{"metric": "checkpoint_bytes", "max": 1e6},
                               {"metric": "train_flops_per_sample", "max": 1e9}]})"),
                       "t.json");
  EXPECT_EQ(s.objectives.size(), 3u);
  EXPECT_EQ(s.objectives[1].metric, "latency_ms");
  EXPECT_THAT(error_of(with(R"({"objectives": [{"metric": "val_accuracy", "direction": "maximize"},
                                               {"metric": "latncy_ms", "direction": "minimize"}]})")),
              HasSubstr("sweep.json: objectives[1].metric: \"latncy_ms\" is not a metric of an "
                        "engine job"));
  EXPECT_THAT(error_of(with(R"({"objectives": [{"metric": "val_accuracy", "direction": "maximize"},
                                               {"metric": "latncy_ms", "direction": "minimize"}]})")),
              HasSubstr("(did you mean \"latency_ms\"?)"));
  EXPECT_THAT(
      error_of(with(R"({"constraints": [{"metric": "params", "max": 5}]})")),
      HasSubstr("sweep.json: constraints[0].metric: \"params\" is not a metric of an engine"));
}

TEST(SweepFileTest, ExamplesLoad) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kExamples)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 3u);
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    Json doc = Json::parse(text.str());
    const bool engine = doc["job"]["kind"] == "engine";
    try {
      SweepFile s = load_sweep_file(file.string());
      EXPECT_FALSE(s.name.empty());
      EXPECT_EQ(parse_sweep_file(to_json(s), s.path), s);
      EXPECT_NE(make_sampler(s), nullptr);
    } catch (const Error& e) {
      // parse_trial_job checks the job last; until it knows engine jobs, an engine example
      // stops there, everything else found valid.
      if (!engine) throw;
      EXPECT_THAT(e.what(), HasSubstr(file.filename().string() + ": job.kind: "));
    }
    if (engine) {
      // The engine's own check of the job, whatever parse_trial_job does.
      Json job = doc["job"];
      // The objective, or the first of several.
      const Json& metric =
          doc.contains("objectives") ? doc["objectives"][0]["metric"] : doc["objective"]["metric"];
      job["objective_metric"] = metric;
      EngineJobSpec spec = parse_engine_job(job.dump(), "job");
      EXPECT_EQ(spec.objective_metric, metric);
      // Trials with values drawn from the space resolve to valid models and trainings (shapes
      // included), so the example does not fail at its first trial.
      SearchSpace space = parse_search_space(doc["space"].dump(), file.string());
      for (int trial = 0; trial < 20; ++trial) {
        Rng rng = Rng::for_trial(1, trial);
        Params params;
        for (const ParamSpec& p : space.params()) {
          if (space.is_active(p, params)) params[p.name] = RandomSampler::draw(p.distribution, rng);
        }
        EXPECT_NO_THROW(resolve_engine_job(spec, params)) << "trial " << trial;
      }
    }
  }
}

TEST(SweepFileTest, QuadraticExampleRunsItsScriptBesideTheSweep) {
  SweepFile s = load_sweep_file((kExamples / "quadratic_command.json").string());
  Json job = Json::parse(s.job_json);
  fs::path script =
      fs::path(job["working_dir"].get<std::string>()) / job["argv"][1].get<std::string>();
  EXPECT_TRUE(fs::exists(script)) << script;
  EXPECT_EQ(s.local_executors, 2);
  EXPECT_EQ(s.scheduler.type, SchedulerType::kMedian);
}

}  // namespace
}  // namespace tuner
