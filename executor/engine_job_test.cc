// Engine jobs: parsing with JSON paths, typed substitution, and real runs on a Fashion-MNIST slice
// (600 training and 200 validation images, a small MLP): reports, stopping, determinism,
// checkpoint resume and artifacts.
#include "executor/engine_job.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <thread>
#include <vector>

#include "executor/argv_template.h"
#include "executor/trial_job.h"
#include "training/backends/cpu/cpu_backend.h"
#include "training/checkpoint.h"
#include "training/data/fashion_mnist.h"
#include "trials/error.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;

// The tiny job of these tests; `edit` changes it before it is dumped.
nlohmann::json tiny_job() {
  return nlohmann::json::parse(R"({
    "kind": "engine",
    "model": {"input": [1, 28, 28], "layers": [
      {"type": "flatten"}, {"type": "linear", "out": "{width}"}, {"type": "{act}"},
      {"type": "linear", "out": 10}]},
    "data": {"dataset": "fashion-mnist", "train": 600, "validation": 200},
    "training": {"epochs": 2, "batch_size": 64, "lr": "{lr}", "seed": 7},
    "objective_metric": "val_accuracy"})");
}

const Params kParams = {{"width", int64_t{32}}, {"act", std::string("relu")}, {"lr", 0.003}};

std::string error_of(const std::string& json, const Params* params = nullptr) {
  try {
    EngineJobSpec spec = parse_engine_job(json);
    if (params) resolve_engine_job(spec, *params);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
  return "no error";
}

std::string error_of(nlohmann::json job, const std::function<void(nlohmann::json&)>& edit,
                     const Params* params = nullptr) {
  edit(job);
  return error_of(job.dump(), params);
}

TEST(EngineJobSpec, ParsesAndKeepsPlaceholdersUntilATrialComes) {
  EngineJobSpec spec = parse_engine_job(tiny_job().dump());
  EXPECT_EQ(spec.dataset, "fashion-mnist");
  EXPECT_EQ(spec.objective_metric, "val_accuracy");
  EXPECT_TRUE(spec.maximize);
  EXPECT_EQ(spec.threads, 1);
  EXPECT_EQ(spec.backend, "cpu");
  EXPECT_NE(spec.json.find("\"{width}\""), std::string::npos);
  // The job is a TrialJob too, and round-trips through its JSON.
  auto job = parse_trial_job(tiny_job().dump());
  EXPECT_EQ(job->kind(), "engine");
  EXPECT_EQ(job->objective_metric(), "val_accuracy");
  EXPECT_EQ(parse_trial_job(job->to_json())->to_json(), job->to_json());
  EXPECT_EQ(job->to_json(), spec.json);
}

TEST(EngineJobSpec, ErrorsNameTheJsonPath) {
  const nlohmann::json job = tiny_job();
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["training"]["lrr"] = 1; }).substr(0, 38),
            "job.training.lrr: unknown member (trai");
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["extra"] = 1; }).substr(0, 26),
            "job.extra: unknown member ");
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["data"]["tset"] = 1; }).substr(0, 27),
            "job.data.tset: unknown memb");
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["training"]["lr"] = -1; }),
            "job.training.lr: expected a number > 0, got -1");
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["training"]["epochs"] = 2.5; }),
            "job.training.epochs: expected an integer >= 1, got 2.5");
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["training"]["optimizer"] = "lion"; }),
            "job.training.optimizer: expected \"adam\", \"adamw\" or \"sgd\", got \"lion\"");
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["training"]["schedule"] = "linear"; }),
            "job.training.schedule: expected \"constant\", \"cosine\" or \"step\", got "
            "\"linear\"");
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["convolution"] = "cudnn"; }),
            "job.convolution: \"cudnn\" needs \"backend\": \"cuda\" and \"precision\": "
            "\"fp32\"");
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["convolution"] = "winograd"; }),
            "job.convolution: expected \"gemm\" or \"cudnn\", got \"winograd\"");
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["data"]["dataset"] = "cifar"; }),
            "job.data.dataset: unknown dataset \"cifar\" (known: fashion-mnist)");
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["data"]["train"] = 59900; }),
            "job.data: train + validation is 60100 but fashion-mnist has 60000 training images");
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["data"]["validation"] = 0; }),
            "job.data.validation: must be > 0: the objective metric val_accuracy needs a "
            "validation split");
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j.erase("objective_metric"); }),
            "job.objective_metric: missing (one of \"train_loss\", \"val_loss\", "
            "\"val_accuracy\", \"val_auc\", \"val_rmse\" or \"val_mae\")");
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["objective_metric"] = "accuracy"; }),
            "job.objective_metric: expected \"train_loss\", \"val_loss\", \"val_accuracy\", "
            "\"val_auc\", \"val_rmse\" or \"val_mae\", got \"accuracy\"");
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["objective_metric"] = "val_rmse"; }),
            "job.objective_metric: val_rmse is not a metric of data.task \"classification\" (it "
            "reports train_loss, val_loss and val_accuracy)");
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["threads"] = "{threads}"; }),
            "job.threads: cannot be a placeholder (\"{threads}\")");
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["kind"] = "command"; }),
            "job.kind: expected \"engine\", got \"command\"");
  // A model without placeholders is checked in full at once.
  EXPECT_EQ(error_of(job,
                     [](nlohmann::json& j) {
                       j["model"]["layers"][1]["out"] = 0;
                       j["model"]["layers"][2]["type"] = "relu";
                     })
                .substr(0, 35),
            "job.model.layers[1].out: 0 is out o");
  // Through parse_trial_job, with the caller's prefix.
  try {
    nlohmann::json bad = job;
    bad["training"]["momentum"] = 1.5;
    parse_trial_job(bad.dump(), "trial 4: job");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "trial 4: job.training.momentum: expected a number in [0, 1), got 1.5");
  }
}

TEST(EngineJobSpec, SubstitutionKeepsTheParametersTypes) {
  const Params params = {{"width", int64_t{256}},
                         {"act", std::string("relu")},
                         {"lr", 0.001},
                         {"one", 1.0},
                         {"bias", false}};
  nlohmann::json job = tiny_job();
  job["model"]["layers"][3]["bias"] = "{bias}";
  job["training"]["weight_decay"] = "{one}";
  const nlohmann::json out = nlohmann::json::parse(substitute_engine_params(job.dump(), params));
  const nlohmann::json& width = out["model"]["layers"][1]["out"];
  EXPECT_TRUE(width.is_number_integer());
  EXPECT_EQ(width.get<int64_t>(), 256);
  EXPECT_EQ(out["model"]["layers"][2]["type"], "relu");
  EXPECT_TRUE(out["model"]["layers"][3]["bias"].is_boolean());
  EXPECT_TRUE(out["training"]["lr"].is_number_float());
  EXPECT_EQ(out["training"]["lr"].get<double>(), 0.001);
  EXPECT_TRUE(out["training"]["weight_decay"].is_number_float());  // 1.0 stays a float

  const EngineTrialConfig c = resolve_engine_job(parse_engine_job(job.dump()), params);
  EXPECT_EQ(c.lr, 0.001);
  EXPECT_EQ(c.weight_decay, 1.0);
  EXPECT_NE(c.model_json.find("\"out\":256"), std::string::npos) << c.model_json;
  EXPECT_EQ(c.epochs, 2);
  EXPECT_EQ(c.train, 600);
  EXPECT_EQ(c.validation, 200);
  EXPECT_EQ(c.seed, 7u);
}

TEST(EngineJobSpec, ResolveErrorsNameThePathAndThePlaceholder) {
  nlohmann::json job = tiny_job();
  job["training"]["lr"] = "{learning_rate}";
  EXPECT_EQ(error_of(job.dump(), &kParams),
            "job.training.lr: \"{learning_rate}\": the trial has no parameter 'learning_rate'");
  job = tiny_job();
  job["training"]["epochs"] = "{lr}";
  EXPECT_EQ(error_of(job.dump(), &kParams),
            "job.training.epochs: expected an integer >= 1, got 0.003");
  const Params float_width = {{"width", 32.0}, {"act", std::string("relu")}, {"lr", 0.003}};
  EXPECT_EQ(error_of(tiny_job().dump(), &float_width).substr(0, 43),
            "job.model.layers[1].out: expected an intege");
  const Params bad_act = {{"width", int64_t{32}}, {"act", std::string("relux")}, {"lr", 0.003}};
  EXPECT_EQ(error_of(tiny_job().dump(), &bad_act).substr(0, 45),
            "job.model.layers[2].type: unknown layer \"relu");
  job = tiny_job();
  job["data"]["train"] = "{width}";
  const Params big = {{"width", int64_t{64}}, {"act", std::string("relu")}, {"lr", 0.003}};
  EXPECT_EQ(error_of(job.dump(), &big), "no error");
  job["training"]["batch_size"] = 128;
  EXPECT_EQ(error_of(job.dump(), &big),
            "job.training.batch_size: 128 is larger than the training split (data.train 64)");
}

// Regression: a model that does not fit the data failed every trial with only "exited with
// code 1"; what can be told without the data is refused when the job is parsed.
TEST(EngineJobSpec, RefusesAtParseAModelWhoseOutputIsNotTheDatasetsClasses) {
  const nlohmann::json job = tiny_job();
  auto three_outputs = [](nlohmann::json& j) {
    j["model"]["layers"][1]["out"] = 64;
    j["model"]["layers"][2]["type"] = "relu";
    j["model"]["layers"][3]["out"] = 3;
  };
  EXPECT_EQ(error_of(job, three_outputs),
            "job.model.layers[3]: the model's output is [3], but fashion-mnist has 10 classes: "
            "the last layer must give [10] (one logit per class)");
  EXPECT_EQ(error_of(job,
                     [](nlohmann::json& j) {
                       j["model"]["layers"] = nlohmann::json::parse(
                           R"([{"type": "conv2d", "out": 4, "kernel": 3}, {"type": "relu"}])");
                     }),
            "job.model.layers[0]: the model's output is [4, 26, 26], but fashion-mnist's 10 "
            "classes need [10] (one logit per class): end the model with {\"type\": "
            "\"flatten\"} and {\"type\": \"linear\", \"out\": 10}");
  // Through a trial's values too, before any data is loaded.
  nlohmann::json templated = job;
  templated["model"]["layers"][3]["out"] = "{classes}";
  const Params three = {
      {"width", int64_t{32}}, {"act", std::string("relu")}, {"lr", 0.003}, {"classes", int64_t{3}}};
  EXPECT_EQ(error_of(templated.dump(), &three).substr(0, 56),
            "job.model.layers[3]: the model's output is [3], but fash");
}

TEST(EngineJobSpec, RefusesAtParseAModelWhoseInputIsNotTheDatasetsSamples) {
  const nlohmann::json job = tiny_job();
  // Concrete: refused even though the layers have placeholders.
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["model"]["input"] = {784}; }),
            "job.model.input: [784] is not the shape of fashion-mnist's samples, [1, 28, 28]: "
            "make the model's input [1, 28, 28]");
  EXPECT_EQ(error_of(job,
                     [](nlohmann::json& j) {
                       j["model"]["input"] = {1, 32, 32};
                       j["model"]["layers"][1]["out"] = 8;
                       j["model"]["layers"][2]["type"] = "relu";
                     })
                .substr(0, 60),
            "job.model.input: [1, 32, 32] is not the shape of fashion-mni");
  // A malformed input is named at its path.
  EXPECT_EQ(error_of(job,
                     [](nlohmann::json& j) {
                       j["model"]["input"] = {1, 0, 28};
                     })
                .substr(0, 19),
            "job.model.input[1]:");
  // An input that is itself a placeholder waits for the trial.
  nlohmann::json templated = job;
  templated["model"]["input"] = "{shape}";
  EXPECT_EQ(error_of(templated.dump()), "no error");
}

TEST(EngineJobSpec, CheckEngineModelSubstitutesTheModelAlone) {
  const EngineJobSpec spec = parse_engine_job(tiny_job().dump());
  // The training's placeholder ({lr}) is not needed.
  EXPECT_NO_THROW(check_engine_model(spec, {{"width", int64_t{16}}, {"act", std::string("tanh")}},
                                     "sweep.json: job"));
  try {
    check_engine_model(spec, {{"width", int64_t{16}}, {"act", std::string("swish")}},
                       "sweep.json: job");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(std::string(e.what()).substr(0, 56),
              "sweep.json: job.model.layers[2].type: unknown layer \"swi");
  }
  try {
    check_engine_model(spec, {{"act", std::string("relu")}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "job.model.layers[1].out: \"{width}\": the trial has no parameter 'width'");
  }
}

// Regression: the FAIL reason of an engine trial was only "exited with code 1"; it is the
// message of `tuner trial`'s last "error: " line.
TEST(EngineJobSpec, TheFailReasonIsTheLastErrorLineOfTheTrialsOutput) {
  EXPECT_EQ(engine_trial_error("[tuner] trial 3 (id 4): running tuner trial ...\n"
                               "error: trial 3: job.data: /d/train-images-idx3-ubyte.gz: bad "
                               "magic number 0x1f8b0800\n"),
            "trial 3: job.data: /d/train-images-idx3-ubyte.gz: bad magic number 0x1f8b0800");
  // The last one wins; a rank's forwarded line ("rank 1: error: ...") and "[tuner]" lines are
  // not the trial's own.
  EXPECT_EQ(engine_trial_error("error: first\nrank 1: error: a rank\nerror: last\r\n"
                               "[tuner] output closed\n"),
            "last");
  EXPECT_EQ(engine_trial_error("rank 1: error: a rank\nSegmentation fault\n"), std::nullopt);
  EXPECT_EQ(engine_trial_error(""), std::nullopt);
  EXPECT_EQ(engine_trial_error("error: "), std::nullopt);
}

TEST(EngineJobSpec, TheExecutorsCommandCarriesTheJobVerbatim) {
  const EngineJobSpec spec = parse_engine_job(tiny_job().dump());
  const CommandSpec command = engine_job_command(spec, "/opt/tuner/bin/tuner");
  const Params params = kParams;
  const std::vector<std::string> argv =
      expand_argv(command.argv, ArgvValues{.trial_number = 3, .params = &params});
  ASSERT_EQ(argv.size(), 4u);
  EXPECT_EQ(argv[0], "/opt/tuner/bin/tuner");
  EXPECT_EQ(argv[1], "trial");
  EXPECT_EQ(argv[2], "--engine-job");
  EXPECT_EQ(argv[3], spec.json);  // placeholders left for `tuner trial`
}

// --- Ranks (data parallelism) ----------------------------------------------------------------

TEST(EngineJobSpec, RanksAndTheCollectiveTimeoutAreCheckedPlainIntegers) {
  EngineJobSpec spec = parse_engine_job(tiny_job().dump());
  EXPECT_EQ(spec.ranks, 1);
  EXPECT_EQ(spec.collective_timeout_s, 60.0);
  nlohmann::json job = tiny_job();
  job["ranks"] = 4;
  job["collective_timeout_s"] = 2.5;
  spec = parse_engine_job(job.dump());
  EXPECT_EQ(spec.ranks, 4);
  EXPECT_EQ(spec.collective_timeout_s, 2.5);

  EXPECT_EQ(error_of(tiny_job(), [](nlohmann::json& j) { j["ranks"] = 0; }),
            "job.ranks: expected an integer >= 1, got 0");
  EXPECT_EQ(error_of(tiny_job(), [](nlohmann::json& j) { j["ranks"] = 2.0; }),
            "job.ranks: expected an integer >= 1, got 2.0");
  EXPECT_EQ(error_of(tiny_job(), [](nlohmann::json& j) { j["ranks"] = 300; }),
            "job.ranks: expected an integer in [1, 256], got 300");
  EXPECT_EQ(error_of(tiny_job(), [](nlohmann::json& j) { j["ranks"] = "{ranks}"; }),
            "job.ranks: cannot be a placeholder (\"{ranks}\")");
  EXPECT_EQ(error_of(tiny_job(), [](nlohmann::json& j) { j["collective_timeout_s"] = 0; }),
            "job.collective_timeout_s: expected a number in (0, 86400], got 0");
  EXPECT_EQ(error_of(tiny_job(), [](nlohmann::json& j) { j["collective_timeout_s"] = "{t}"; }),
            "job.collective_timeout_s: cannot be a placeholder (\"{t}\")");
}

TEST(EngineJobSpec, NodesDivideTheRanks) {
  EXPECT_EQ(parse_engine_job(tiny_job().dump()).nodes, 1);
  nlohmann::json job = tiny_job();
  job["ranks"] = 4;
  job["nodes"] = 2;
  EXPECT_EQ(parse_engine_job(job.dump()).nodes, 2);
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["nodes"] = 3; }),
            "job.nodes: expected an integer in [1, 64] that divides ranks (4), got 3");
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["nodes"] = 0; }),
            "job.nodes: expected an integer >= 1, got 0");
  EXPECT_EQ(error_of(job, [](nlohmann::json& j) { j["nodes"] = "{n}"; }),
            "job.nodes: cannot be a placeholder (\"{n}\")");
  // CUDA: each node is given the GPUs of its own ranks.
  job["backend"] = "cuda";
  const EngineJobSpec cuda = parse_engine_job(job.dump());
  EXPECT_EQ(engine_rank_gpus(cuda, {6, 7}), (std::vector<int>{6, 7}));
  try {
    engine_rank_gpus(cuda, {0, 1, 2, 3}, "trial 4: job");
    ADD_FAILURE() << "four GPUs for a node of two ranks were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "trial 4: job.ranks: 2 CUDA ranks per node need one GPU each, but the trial was "
              "given 4 (TUNER_GPUS=0,1,2,3)");
  }
}

TEST(EngineJobSpec, CudaRanksNeedOneGpuEach) {
  nlohmann::json job = tiny_job();
  job["backend"] = "cuda";
  job["ranks"] = 2;
  const EngineJobSpec cuda2 = parse_engine_job(job.dump());
  EXPECT_EQ(engine_rank_gpus(cuda2, {3, 5}), (std::vector<int>{3, 5}));
  try {
    engine_rank_gpus(cuda2, {0}, "trial 4: job");
    ADD_FAILURE() << "one GPU for two ranks was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(std::string(e.what()),
              "trial 4: job.ranks: 2 CUDA ranks need one GPU each, but the trial was given 1 "
              "(TUNER_GPUS=0)");
  }
  EXPECT_THROW(engine_rank_gpus(cuda2, {}), Error);
  job["ranks"] = 1;
  EXPECT_EQ(engine_rank_gpus(parse_engine_job(job.dump()), {}), (std::vector<int>{0}));
  EXPECT_EQ(engine_rank_gpus(parse_engine_job(job.dump()), {2, 3}), (std::vector<int>{2}));
  EXPECT_TRUE(engine_rank_gpus(parse_engine_job(tiny_job().dump()), {1}).empty());  // cpu
}

TEST(EngineJobSpec, ARunsRankMustFitTheJob) {
  nlohmann::json job = tiny_job();
  job["ranks"] = 2;
  const EngineJobSpec cpu2 = parse_engine_job(job.dump());
  auto code_and_message = [&](const EngineJobSpec& spec, const EngineTrial& trial) {
    try {
      run_engine_trial(spec, trial);
    } catch (const Error& e) {
      return std::string(to_string(e.code())) + " " + e.what();
    }
    return std::string("no error");
  };
  // One process cannot run a 2-rank job by itself (tuner trial launches the ranks).
  EXPECT_EQ(code_and_message(cpu2, {.params = kParams}).substr(0, 79),
            "invalid argument job.ranks: the job has 2 rank(s) but this run is one of 1 (`tu");
  EXPECT_NE(code_and_message(cpu2, {.params = kParams, .rank = 2, .world = 2})
                .find("job.ranks: rank 2 is not in [0, 2)"),
            std::string::npos);
  EXPECT_NE(code_and_message(cpu2, {.params = kParams, .rank = 1, .world = 2})
                .find("job.ranks: a CPU run of 2 ranks needs a rendezvous directory"),
            std::string::npos);
  job["backend"] = "cuda";
  EXPECT_NE(code_and_message(parse_engine_job(job.dump()), {.params = kParams, .world = 2})
                .find("needs the NCCL id of rank 0 (TUNER_NCCL_ID)"),
            std::string::npos);
}

// --- Real runs
// ------------------------------------------------------------------------------------

class EngineRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(training::fashion_mnist_dir() + "train-images-idx3-ubyte.gz")) {
      GTEST_SKIP() << "no Fashion-MNIST in " << training::fashion_mnist_dir();
    }
    static int counter = 0;
    dir_ = fs::temp_directory_path() /
           ("tuner-engine-job-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    if (!dir_.empty()) fs::remove_all(dir_, ignored);
  }

  static EngineJobSpec spec(const std::function<void(nlohmann::json&)>& edit = {}) {
    nlohmann::json job = tiny_job();
    if (edit) edit(job);
    return parse_engine_job(job.dump());
  }

  // Every metric but the wall time.
  // The metrics that are not timings (which differ from run to run).
  static Metrics without_time(Metrics m) {
    for (const char* timing : {"epoch_seconds", "latency_ms", "latency_ms_per_sample",
                               "samples_per_second", "peak_rss_mb"}) {
      m.erase(timing);
    }
    return m;
  }

  fs::path dir_;
};

TEST_F(EngineRun, ReportsEveryEpochAndTheBestOneAsFinalMetrics) {
  std::vector<EngineReport> reports;
  const EngineOutcome outcome =
      run_engine_trial(spec(), {.number = 0, .params = kParams}, [&](const EngineReport& r) {
        reports.push_back(r);
        return JobDecision::kContinue;
      });
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].step, 1);
  EXPECT_EQ(reports[1].step, 2);
  for (const char* name : {"train_loss", "val_loss", "val_accuracy", "lr", "epoch_seconds",
                           "samples_per_second", "peak_rss_mb"}) {
    EXPECT_TRUE(reports[1].metrics.contains(name)) << name;
  }
  // The system's figures: a throughput from the epoch's time, a process that holds
  // at least its data.
  // The tiny job trains on 600 samples.
  EXPECT_NEAR(reports[1].metrics.at("samples_per_second") * reports[1].metrics.at("epoch_seconds"),
              600.0, 1e-6);
  EXPECT_GT(reports[1].metrics.at("peak_rss_mb"), 1.0);
  EXPECT_NEAR(reports[1].metrics.at("lr"), 0.003, 1e-9);  // the step's float
  EXPECT_LT(reports[1].metrics.at("train_loss"), reports[0].metrics.at("train_loss"));
  EXPECT_GT(reports[1].metrics.at("val_accuracy"), 0.5);  // chance is 0.1
  EXPECT_LT(reports[1].metrics.at("val_loss"), 2.0);

  EXPECT_EQ(outcome.end_reason, "completed");
  EXPECT_EQ(outcome.epochs_completed, 2);
  const Metrics& final = outcome.final_metrics;
  const int best = static_cast<int>(final.at("best_epoch"));
  ASSERT_TRUE(best == 1 || best == 2);
  EXPECT_EQ(final.at("val_accuracy"), reports[best - 1].metrics.at("val_accuracy"));
  EXPECT_GE(final.at("val_accuracy"), reports[0].metrics.at("val_accuracy"));
  EXPECT_GE(final.at("val_accuracy"), reports[1].metrics.at("val_accuracy"));
  EXPECT_FALSE(final.contains("test_accuracy"));
  EXPECT_EQ(final.at("num_params"), 784 * 32 + 32 + 32 * 10 + 10);  // the two linear layers
  // The figures a sweep trades accuracy against: three forward passes' worth of
  // training FLOPs (linear 784 -> 32 with its bias, the relu, linear 32 -> 10 with its bias)...
  EXPECT_EQ(final.at("train_flops_per_sample"), 3 * (32 * (2 * 784 + 1) + 32 + 10 * (2 * 32 + 1)));
  // ... the model checkpoint's size (the weights' 4 bytes each, and the spec and framing) ...
  EXPECT_GT(final.at("checkpoint_bytes"), 4 * final.at("num_params"));
  EXPECT_LT(final.at("checkpoint_bytes"), 4 * final.at("num_params") + 4096);
  // ... and the measured latencies (timings: their sizes move with the machine and the model;
  // a batch is not always cheaper per sample, e.g. when its activations leave the caches).
  EXPECT_GT(final.at("latency_ms"), 0.0);
  EXPECT_GT(final.at("latency_ms_per_sample"), 0.0);
  EXPECT_TRUE(std::isfinite(final.at("latency_ms_per_sample")));

  // Same params and seed: the same metrics, bit for bit.
  const EngineOutcome again = run_engine_trial(spec(), {.number = 0, .params = kParams});
  EXPECT_EQ(without_time(again.final_metrics), without_time(final));
}

// A sweep of accuracy against the model's size or latency stops trials early only if every
// epoch reports them: the size figures are the model's, the latency one measurement per trial
// (the same at every epoch and in the final metrics), kept by a trial resumed from its
// checkpoint, and there also when the run was stopped after its first epoch.
TEST_F(EngineRun, EveryEpochReportsTheModelsSizeAndLatency) {
  const std::string checkpoint = (dir_ / "trial.ckpt").string();
  std::vector<EngineReport> first;
  std::stop_source stop;
  const EngineOutcome paused = run_engine_trial(
      spec(), {.number = 0, .params = kParams, .checkpoint_path = checkpoint},
      [&](const EngineReport& r) {
        first.push_back(r);
        stop.request_stop();  // as SIGTERM would after the epoch's report
        return JobDecision::kContinue;
      },
      stop.get_token());
  ASSERT_EQ(paused.end_reason, "interrupted");
  ASSERT_EQ(first.size(), 1u);
  const Metrics& epoch1 = first[0].metrics;
  EXPECT_EQ(epoch1.at("num_params"), 784 * 32 + 32 + 32 * 10 + 10);
  EXPECT_EQ(epoch1.at("train_flops_per_sample"), 3 * (32 * (2 * 784 + 1) + 32 + 10 * (2 * 32 + 1)));
  EXPECT_GT(epoch1.at("checkpoint_bytes"), 4 * epoch1.at("num_params"));
  const double latency = epoch1.at("latency_ms");
  const double per_sample = epoch1.at("latency_ms_per_sample");
  EXPECT_TRUE(std::isfinite(latency) && latency > 0) << latency;
  EXPECT_TRUE(std::isfinite(per_sample) && per_sample > 0) << per_sample;
  EXPECT_EQ(paused.final_metrics.at("latency_ms"), latency);
  EXPECT_EQ(paused.final_metrics.at("num_params"), epoch1.at("num_params"));

  // Resumed: the epoch it continues from and the new one carry the first run's measurement.
  std::vector<EngineReport> second;
  const EngineOutcome resumed =
      run_engine_trial(spec(), {.number = 0, .params = kParams, .checkpoint_path = checkpoint},
                       [&](const EngineReport& r) {
                         second.push_back(r);
                         return JobDecision::kContinue;
                       });
  ASSERT_EQ(resumed.resumed_from, 1);
  ASSERT_EQ(second.size(), 2u);
  for (const EngineReport& r : second) {
    EXPECT_EQ(r.metrics.at("latency_ms"), latency) << "epoch " << r.step;
    EXPECT_EQ(r.metrics.at("latency_ms_per_sample"), per_sample) << "epoch " << r.step;
    for (const char* figure : {"num_params", "train_flops_per_sample", "checkpoint_bytes"}) {
      EXPECT_EQ(r.metrics.at(figure), epoch1.at(figure)) << figure << ", epoch " << r.step;
    }
  }
  EXPECT_EQ(resumed.final_metrics.at("latency_ms"), latency);
  EXPECT_EQ(resumed.final_metrics.at("latency_ms_per_sample"), per_sample);
}

// "precision": "bf16" trains on the CPU backend where the CPU has AMX or AVX512-BF16,
// to fp32's accuracy, reproducibly; elsewhere the trial fails saying why.
TEST_F(EngineRun, Bf16OnTheCpuTrainsAsFp32DoesOrSaysWhyNot) {
  const EngineJobSpec bf16 = spec([](nlohmann::json& j) { j["precision"] = "bf16"; });
  const std::string why = training::cpu_bf16_unavailable();
  if (!why.empty()) {
    try {
      run_engine_trial(bf16, {.number = 0, .params = kParams});
      FAIL() << "a bf16 trial ran where: " << why;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
      EXPECT_NE(std::string(e.what()).find("job.precision: \"bf16\" on the CPU backend: " + why),
                std::string::npos)
          << e.what();
    }
    return;
  }
  const EngineOutcome b = run_engine_trial(bf16, {.number = 0, .params = kParams});
  const EngineOutcome f = run_engine_trial(spec(), {.number = 0, .params = kParams});
  EXPECT_EQ(b.end_reason, "completed");
  EXPECT_NEAR(b.final_metrics.at("val_accuracy"), f.final_metrics.at("val_accuracy"), 0.05);
  EXPECT_NE(b.final_metrics.at("val_loss"), f.final_metrics.at("val_loss"))
      << "the bf16 run has fp32's exact loss: its products did not run in bf16";
  const EngineOutcome again = run_engine_trial(bf16, {.number = 0, .params = kParams});
  EXPECT_EQ(without_time(again.final_metrics), without_time(b.final_metrics));
}

TEST_F(EngineRun, TheCallbackStopsAfterAnEpochAndTestMetricsComeWhenAsked) {
  int calls = 0;
  const EngineOutcome outcome =
      run_engine_trial(spec([](nlohmann::json& j) {
                         j["data"]["test"] = 100;
                         j["objective_metric"] = "val_loss";
                         j["training"]["optimizer"] = "sgd";
                         j["training"]["lr"] = 0.05;
                         j["training"]["schedule"] = "cosine";
                         j["training"]["warmup_epochs"] = 0.5;
                       }),
                       {.number = 1, .params = kParams}, [&](const EngineReport&) {
                         ++calls;
                         return JobDecision::kStop;
                       });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(outcome.end_reason, "callback");
  EXPECT_EQ(outcome.epochs_completed, 1);
  EXPECT_EQ(outcome.final_metrics.at("best_epoch"), 1.0);
  EXPECT_GT(outcome.final_metrics.at("test_accuracy"), 0.3);
  EXPECT_TRUE(std::isfinite(outcome.final_metrics.at("test_loss")));
}

TEST_F(EngineRun, AStopRequestAbandonsTheEpochAndKeepsTheLastCheckpoint) {
  std::stop_source stop;
  const std::string checkpoint = (dir_ / "trial.ckpt").string();
  const EngineOutcome outcome = run_engine_trial(
      spec([](nlohmann::json& j) {
        j["training"]["optimizer"] = "adamw";
        j["training"]["weight_decay"] = 0.01;
        j["training"]["schedule"] = "step";
      }),
      {.number = 2, .params = kParams, .checkpoint_path = checkpoint},
      [&](const EngineReport&) {
        stop.request_stop();  // as SIGTERM would, while epoch 2 is about to start
        return JobDecision::kContinue;
      },
      stop.get_token());
  EXPECT_EQ(outcome.end_reason, "interrupted");
  EXPECT_EQ(outcome.epochs_completed, 1);
  EXPECT_EQ(outcome.final_metrics.at("best_epoch"), 1.0);
  EXPECT_EQ(training::load_checkpoint(checkpoint).epoch, 1);
}

// Regression: a resumed trial whose checkpoint was already at its PBT segment's end (paused there
// at the replayed epoch) trained one more epoch before it stopped, so its checkpoint went past the
// segment.
TEST_F(EngineRun, AResumedTrialPausedAtAReplayedEpochTrainsNoFurther) {
  const std::string checkpoint = (dir_ / "segment.ckpt").string();
  const EngineOutcome first =
      run_engine_trial(spec(), {.number = 4, .params = kParams, .checkpoint_path = checkpoint},
                       [](const EngineReport&) { return JobDecision::kPause; });
  ASSERT_EQ(first.epochs_completed, 1);
  std::vector<int64_t> steps;
  const EngineOutcome again =
      run_engine_trial(spec(), {.number = 4, .params = kParams, .checkpoint_path = checkpoint},
                       [&](const EngineReport& r) {
                         steps.push_back(r.step);
                         return r.step >= 1 ? JobDecision::kPause : JobDecision::kContinue;
                       });
  EXPECT_EQ(again.resumed_from, 1);
  EXPECT_EQ(steps, (std::vector<int64_t>{1}));
  EXPECT_EQ(again.end_reason, "callback");
  EXPECT_EQ(again.epochs_completed, 1);
  EXPECT_EQ(training::load_checkpoint(checkpoint).epoch, 1);
  EXPECT_EQ(without_time(again.final_metrics), without_time(first.final_metrics));
}

TEST_F(EngineRun, AResumedTrialEndsWithTheWeightsOfAnUninterruptedOne) {
  const std::string whole = (dir_ / "whole.ckpt").string();
  const std::string resumed = (dir_ / "resumed.ckpt").string();
  const EngineOutcome uninterrupted =
      run_engine_trial(spec(), {.number = 3, .params = kParams, .checkpoint_path = whole});
  // Paused after epoch 1, then run again: it continues from the checkpoint.
  const EngineOutcome first =
      run_engine_trial(spec(), {.number = 3, .params = kParams, .checkpoint_path = resumed},
                       [](const EngineReport&) { return JobDecision::kPause; });
  EXPECT_EQ(first.epochs_completed, 1);
  std::vector<int64_t> steps;
  const EngineOutcome second =
      run_engine_trial(spec(), {.number = 3, .params = kParams, .checkpoint_path = resumed},
                       [&](const EngineReport& r) {
                         steps.push_back(r.step);
                         return JobDecision::kContinue;
                       });
  EXPECT_EQ(second.resumed_from, 1);
  // The epoch it continues from is reported again (a re-run is a new trial that needs it).
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(second.epochs_completed, 2);
  EXPECT_EQ(training::load_checkpoint(resumed).parameters,
            training::load_checkpoint(whole).parameters);
  // The best epoch is chosen over both runs' epochs.
  EXPECT_EQ(without_time(second.final_metrics), without_time(uninterrupted.final_metrics));

  // A checkpoint of another model is refused, not half-applied.
  Params wider = kParams;
  wider["width"] = int64_t{48};
  try {
    run_engine_trial(spec(), {.number = 3, .params = wider, .checkpoint_path = resumed});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(std::string(e.what()).find("a checkpoint of another model"), std::string::npos);
  }
}

TEST_F(EngineRun, ArtifactsKeepTheBestEpochsModelAndMetrics) {
  const fs::path artifacts = dir_ / "artifacts";
  const EngineOutcome outcome =
      run_engine_trial(spec([&](nlohmann::json& j) { j["artifacts_dir"] = artifacts.string(); }),
                       {.number = 5, .params = kParams});
  const fs::path trial_dir = artifacts / "trial-5";
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(trial_dir)) {
    files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  // The best model, the metrics, and the epochs' scalars for TensorBoard (the study's
  // artifacts_dir is its log dir).
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0].rfind("events.out.tfevents.", 0), 0u) << files[0];
  EXPECT_EQ(std::vector<std::string>(files.begin() + 1, files.end()),
            (std::vector<std::string>{"metrics.json", "model.ckpt"}));
  EXPECT_GT(fs::file_size(trial_dir / files[0]), 0u);
  const training::Checkpoint model = training::load_checkpoint((trial_dir / "model.ckpt").string());
  EXPECT_EQ(model.epoch, static_cast<int64_t>(outcome.final_metrics.at("best_epoch")));
  EXPECT_NE(model.model_spec.find("\"out\":32"), std::string::npos) << model.model_spec;
  std::ifstream in(trial_dir / "metrics.json");
  const nlohmann::json metrics = nlohmann::json::parse(in);
  EXPECT_EQ(metrics["trial"], 5);
  EXPECT_EQ(metrics["params"]["width"], 32);
  EXPECT_EQ(metrics["metrics"]["best_epoch"].get<double>(), outcome.final_metrics.at("best_epoch"));
  EXPECT_EQ(metrics["epochs"].size(), 2u);
  // Artifacts need the trial's number.
  EXPECT_THROW(
      run_engine_trial(spec([&](nlohmann::json& j) { j["artifacts_dir"] = artifacts.string(); }),
                       {.params = kParams}),
      Error);
}

// Two Gloo ranks (threads here; processes under `tuner trial`) end with the metrics of one
// process that trains on the whole batch, to float tolerance (the tiny job has no dropout or
// batch norm). Rank 0 alone writes the checkpoint.
TEST_F(EngineRun, TwoRanksGiveTheMetricsOfOne) {
  const EngineOutcome one = run_engine_trial(spec(), {.number = 0, .params = kParams});

  const EngineJobSpec two = spec([](nlohmann::json& j) {
    j["ranks"] = 2;
    j["collective_timeout_s"] = 20;
  });
  const std::string rendezvous = (dir_ / "rendezvous").string();
  const std::string checkpoint = (dir_ / "trial.ckpt").string();
  std::vector<EngineOutcome> outcomes(2);
  std::vector<std::vector<EngineReport>> reports(2);
  std::vector<std::string> errors(2);
  {
    std::vector<std::jthread> ranks;
    for (int r = 0; r < 2; ++r) {
      ranks.emplace_back([&, r] {
        try {
          outcomes[r] =
              run_engine_trial(two,
                               {.number = 0,
                                .params = kParams,
                                .checkpoint_path = checkpoint,
                                .rank = r,
                                .world = 2,
                                .rendezvous_dir = rendezvous},
                               [&, r](const EngineReport& report) {
                                 reports[r].push_back(report);
                                 // Rank 0's decision counts: rank 1's is ignored.
                                 return r == 1 ? JobDecision::kStop : JobDecision::kContinue;
                               });
        } catch (const std::exception& e) {
          errors[r] = e.what();
        }
      });
    }
  }
  ASSERT_EQ(errors[0], "");
  ASSERT_EQ(errors[1], "");
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(outcomes[r].end_reason, "completed") << "rank " << r;
    EXPECT_EQ(reports[r].size(), 2u) << "rank " << r;
    for (const char* name : {"train_loss", "val_loss", "val_accuracy", "lr", "best_epoch"}) {
      ASSERT_TRUE(outcomes[r].final_metrics.contains(name)) << name;
      EXPECT_NEAR(outcomes[r].final_metrics.at(name), one.final_metrics.at(name), 1e-4)
          << "rank " << r << ": " << name;
    }
  }
  // Every rank reports the whole batch's metrics.
  EXPECT_EQ(reports[0][1].metrics.at("val_loss"), reports[1][1].metrics.at("val_loss"));
  EXPECT_TRUE(fs::exists(checkpoint));
  const std::vector<std::string> written = [&] {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      if (entry.path().filename() != "rendezvous") names.push_back(entry.path().filename());
    }
    std::sort(names.begin(), names.end());
    return names;
  }();
  EXPECT_EQ(written, (std::vector<std::string>{"trial.ckpt", "trial.ckpt.history.json"}));
}

}  // namespace
}  // namespace tuner
