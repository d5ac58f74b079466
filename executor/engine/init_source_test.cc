// training.init_from of engine jobs: its members, the sources it reads (a checkpoint file, a
// registered model by alias or version) and their refusals, the check before any trial runs, and
// a trial that starts from a checkpoint with its first layer frozen.
#include "executor/engine/init_source.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "executor/engine_job.h"
#include "registry/registry.h"
#include "registry/test_util.h"
#include "training/export/onnx_export.h"
#include "training/init_from.h"
#include "training/rng.h"
#include "trials/error.h"

namespace tuner::engine {
namespace {

namespace fs = std::filesystem;
using registry::testing::code_of;
using registry::testing::kTinySpec;
using registry::testing::ScratchDir;
using registry::testing::tiny_checkpoint;

// An engine job on fashion-mnist's catalogue shapes with an MLP and `training`.
nlohmann::json mnist_job(nlohmann::json training, int classes = 10) {
  if (training.is_null()) training = nlohmann::json::object();
  training["batch_size"] = 16;
  return {{"kind", "engine"},
          {"model",
           {{"input", {1, 28, 28}},
            {"layers",
             {{{"type", "flatten"}},
              {{"type", "linear"}, {"out", 8}},
              {{"type", "relu"}},
              {{"type", "linear"}, {"out", classes}}}}}},
          {"data", {{"dataset", "fashion-mnist"}, {"train", 64}, {"validation", 16}}},
          {"training", training},
          {"objective_metric", "val_accuracy"}};
}

// The message of the Error `f` throws.
std::string message_of(const std::function<void()>& f) {
  std::string message;
  code_of(f, &message);
  return message;
}

// A checkpoint of the model of `job`, its weights from `seed`.
training::Checkpoint checkpoint_of(const nlohmann::json& job, uint64_t seed) {
  const EngineJobSpec spec = parse_engine_job(job.dump());
  const training::ModelSpec model = training::parse_model_spec(spec.model_json);
  auto backend = training::make_cpu_backend(1);
  auto built = training::build_model(model, 1, *backend, seed);
  return {.model_spec = model.json,
          .parameters = built->parameters().values_to_host(),
          .buffers = built->parameters().buffer_values_to_host()};
}

TEST(InitFromMembers, AreReadAndChecked) {
  const EngineJobSpec spec = parse_engine_job(mnist_job({{"init_from", "runs/model.ckpt"},
                                                         {"replace_head", true},
                                                         {"freeze", 2},
                                                         {"lr_factors", {1, 1, 0.5}}})
                                                  .dump());
  const EngineTrialConfig c = resolve_engine_job(spec, {});
  EXPECT_EQ(c.init_from, "runs/model.ckpt");
  EXPECT_TRUE(c.replace_head);
  EXPECT_EQ(c.layer_lr_factors(), (std::vector<float>{0, 0, 0.5f}));

  auto error = [](const nlohmann::json& training) {
    return message_of(
        [&] { resolve_engine_job(parse_engine_job(mnist_job(training).dump()), {}); });
  };
  EXPECT_EQ(error({{"replace_head", true}}),
            "job.training.replace_head: needs init_from (the weights whose head it replaces)");
  EXPECT_EQ(error({{"freeze", 5}}),
            "job.training.freeze: 5 is more than the 4 entries of model.layers");
  EXPECT_EQ(error({{"lr_factors", {1, 1, 1, 1, 1}}}),
            "job.training.lr_factors: 5 factors for the 4 entries of model.layers (one per entry, "
            "from layers[0])");
  EXPECT_NE(error({{"lr_factors", {1, -0.5}}}).find("job.training.lr_factors[1]"),
            std::string::npos);
  EXPECT_NE(error({{"init_from", ""}}).find("job.training.init_from"), std::string::npos);
  // A placeholder is read when the trial starts.
  const EngineJobSpec templated =
      parse_engine_job(mnist_job({{"init_from", "{source}"}, {"freeze", "{frozen}"}}).dump());
  const EngineTrialConfig t =
      resolve_engine_job(templated, {{"source", std::string("a.ckpt")}, {"frozen", int64_t{1}}});
  EXPECT_EQ(t.init_from, "a.ckpt");
  EXPECT_EQ(t.freeze, 1);
}

TEST(InitSource, ReadsACheckpointFileAndRefusesOtherFiles) {
  ScratchDir dir;
  const std::string ckpt = (dir.path() / "model.ckpt").string();
  training::save_checkpoint(ckpt, tiny_checkpoint(3));
  const InitSource s = read_init_source(ckpt, "job.training.init_from");
  EXPECT_EQ(s.weights.parameters, tiny_checkpoint(3).parameters);

  const std::string missing = (dir.path() / "nope.ckpt").string();
  std::string message;
  EXPECT_EQ(code_of([&] { read_init_source(missing, "job.training.init_from"); }, &message),
            ErrorCode::kNotFound);
  EXPECT_EQ(message, "job.training.init_from: " + missing + ": no such checkpoint file, and " +
                         dir.path().string() +
                         " is not a model registry (no tuner-registry.json): init_from takes a "
                         "checkpoint file or a registered model REGISTRY/NAME@ALIAS, "
                         "REGISTRY/NAME/VERSION or REGISTRY/NAME");
  const std::string text = (dir.path() / "notes.txt").string();
  std::ofstream(text) << "hello";
  EXPECT_EQ(code_of([&] { read_init_source(text, "p"); }, &message), ErrorCode::kDataLoss);
  EXPECT_NE(message.find("not a checkpoint of the engine"), std::string::npos) << message;
  std::string damaged;
  {
    std::ifstream in(ckpt, std::ios::binary);
    damaged.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(ckpt, std::ios::binary) << damaged.substr(0, damaged.size() / 2);
  EXPECT_EQ(code_of([&] { read_init_source(ckpt, "p"); }, &message), ErrorCode::kDataLoss);
  EXPECT_TRUE(message.starts_with("p: " + ckpt + ": ")) << message;
  EXPECT_EQ(message.find(ckpt, 3 + ckpt.size()), std::string::npos) << message;  // named once
}

TEST(InitSource, ReadsAnOnnxFile) {
  ScratchDir dir;
  const training::ModelSpec spec = training::parse_model_spec(kTinySpec);
  auto backend = training::make_cpu_backend(1);
  auto model = training::build_model(spec, 1, *backend, 4);
  const fs::path file = dir.path() / "tiny.onnx";
  training::export_onnx(spec, *model, file);
  const InitSource s = read_init_source(file.string(), "p");
  auto fresh = training::build_model(spec, 1, *backend, 8);
  load_init_source(s, spec, fresh->parameters(), false, "p");
  EXPECT_EQ(fresh->parameters().values_to_host(), model->parameters().values_to_host());
  // Registered as a trial's own ONNX model (a command job's), it is read the same way.
  registry::Registry r = registry::Registry::open(dir.path() / "registry", /*create=*/true);
  r.register_user_model("own", {.format = registry::UserModelFormat::kOnnx, .path = file}, {}, {});
  EXPECT_EQ(read_init_source((dir.path() / "registry" / "own/1").string(), "p").weights.parameters,
            s.weights.parameters);
  std::ofstream(dir.path() / "bad.onnx") << "not a model";
  EXPECT_EQ(message_of([&] { read_init_source((dir.path() / "bad.onnx").string(), "p"); }),
            "p: " + (dir.path() / "bad.onnx").string() + ": not an ONNX model (it does not parse)");
}

TEST(InitSource, ReadsARegisteredModelByAliasAndVersion) {
  ScratchDir dir;
  const fs::path reg = dir.path() / "registry";
  registry::Registry r = registry::Registry::open(reg, /*create=*/true);
  r.register_version("tiny", tiny_checkpoint(1), {}, {.aliases = {"champion"}});
  r.register_version("tiny", tiny_checkpoint(2), {}, {});
  EXPECT_EQ(read_init_source((reg / "tiny@champion").string(), "p").weights.parameters,
            tiny_checkpoint(1).parameters);
  EXPECT_EQ(read_init_source((reg / "tiny/2").string(), "p").weights.parameters,
            tiny_checkpoint(2).parameters);
  const InitSource s = read_init_source((reg / "tiny").string(), "p");  // the champion
  EXPECT_EQ(s.weights.parameters, tiny_checkpoint(1).parameters);
  EXPECT_NE(s.name.find("(version 1, "), std::string::npos) << s.name;
  // The version's own directory too.
  EXPECT_EQ(read_init_source((reg / "tiny" / "2").string(), "p").weights.parameters,
            tiny_checkpoint(2).parameters);

  std::string message;
  EXPECT_EQ(code_of([&] { read_init_source((reg / "tiny@best").string(), "p"); }, &message),
            ErrorCode::kNotFound);
  EXPECT_EQ(message, "p: " + (reg / "tiny@best").string() +
                         ": model 'tiny' has no alias 'best' (its aliases: champion)");
  EXPECT_EQ(code_of([&] { read_init_source((reg / "other@champion").string(), "p"); }, &message),
            ErrorCode::kNotFound);
  EXPECT_NE(message.find("other"), std::string::npos) << message;
}

TEST(InitSource, AMismatchIsRefusedNamingTheLayerAndTheSource) {
  ScratchDir dir;
  const std::string ckpt = (dir.path() / "ten.ckpt").string();
  training::save_checkpoint(ckpt, checkpoint_of(mnist_job({}), 1));
  // A head of 3 classes on a source of 10: refused, with the hint; with replace_head it fits.
  const InitSource source = read_init_source(ckpt, "job.training.init_from");
  const training::ModelSpec spec = training::parse_model_spec(
      R"({"input": [1, 28, 28], "layers": [{"type": "flatten"}, {"type": "linear", "out": 8},
          {"type": "relu"}, {"type": "linear", "out": 3}]})");
  EXPECT_EQ(message_of([&] { check_init_source(source, spec, false, "job.training.init_from"); }),
            "job.training.init_from: " + ckpt +
                ": layer with weights 1 does not match: the model's layers[3] (linear) has weight "
                "[3, 8], the source's layers[3] has weight [10, 8]; to train a new last layer for "
                "this model's outputs, set training.replace_head to true");
  check_init_source(source, spec, true, "job.training.init_from");

  // Before any trial runs: a model of another width, on the catalogue's shapes, is refused.
  nlohmann::json wide = mnist_job({{"init_from", ckpt}});
  wide["model"]["layers"][1]["out"] = 16;
  EXPECT_EQ(
      message_of([&] { check_engine_init_from(parse_engine_job(wide.dump()), "s.json: job"); }),
      "s.json: job.training.init_from: " + ckpt +
          ": layer with weights 0 does not match: the model's layers[1] (linear) has weight "
          "[16, 784], the source's layers[1] has weight [8, 784]");
  check_engine_init_from(parse_engine_job(mnist_job({{"init_from", ckpt}}).dump()));
  // A missing source is refused then too; a placeholder waits for the trial.
  EXPECT_EQ(
      code_of([&] {
        check_engine_init_from(parse_engine_job(mnist_job({{"init_from", ckpt + ".x"}}).dump()));
      }),
      ErrorCode::kNotFound);
  check_engine_init_from(parse_engine_job(mnist_job({{"init_from", "{source}"}}).dump()));
}

// A trial on a small CSV of 3 classes that starts from a checkpoint of kTinySpec's model (the
// same layers, its input from the data), with its first layer frozen.
TEST(InitSource, ATrialStartsFromTheCheckpointWithItsFrozenLayerUnchanged) {
  ScratchDir dir;
  training::Rng rng(5);
  std::string csv = "a,b,c,d,kind\n";
  for (int i = 0; i < 48; ++i) {
    const int k = i % 3;
    for (int j = 0; j < 4; ++j) csv += std::to_string(k * (j + 1) + 0.3 * rng.normal()) + ",";
    csv += "k" + std::to_string(k) + "\n";
  }
  std::ofstream((dir.path() / "t.csv").string()) << csv;
  const training::Checkpoint source = tiny_checkpoint(9);
  const std::string ckpt = (dir.path() / "source.ckpt").string();
  training::save_checkpoint(ckpt, source);
  nlohmann::json model = nlohmann::json::parse(kTinySpec);
  model.erase("input");
  model["layers"][3]["out"] = "classes";
  const nlohmann::json job = {
      {"kind", "engine"},
      {"model", model},
      {"data",
       {{"format", "csv"}, {"dir", dir.path().string()}, {"path", "t.csv"}, {"label", "kind"}}},
      {"training",
       {{"epochs", 2}, {"batch_size", 8}, {"lr", 0.05}, {"init_from", ckpt}, {"freeze", 1}}},
      {"artifacts_dir", (dir.path() / "runs").string()},
      {"objective_metric", "val_accuracy"}};
  const EngineOutcome outcome = run_engine_trial(parse_engine_job(job.dump()), {.number = 0});
  EXPECT_EQ(outcome.epochs_completed, 2);
  const training::Checkpoint trained =
      training::load_checkpoint((dir.path() / "runs" / "trial-0" / "model.ckpt").string());
  const std::vector<training::WeightedLayer> layers =
      training::weighted_layers(training::parse_model_spec(trained.model_spec));
  ASSERT_EQ(layers.size(), 3u);  // linear, batch_norm, linear
  for (const training::WeightedLayer& l : layers) {
    bool same = true;
    for (int64_t i = l.begin; i < l.end; ++i) {
      same = same && trained.parameters[i] == source.parameters[i];
    }
    EXPECT_EQ(same, l.path == "layers[0]") << l.describe();
  }

  // A source of another model is refused before any trial runs (the data's shapes are the
  // source's for the check), and fails a trial, naming the layer.
  nlohmann::json other = job;
  other["model"]["layers"][0]["out"] = 5;
  EXPECT_EQ(message_of([&] { check_engine_init_from(parse_engine_job(other.dump())); }),
            "job.training.init_from: " + ckpt +
                ": layer with weights 0 does not match: the model's layers[0] (linear) has weight "
                "[5, 4], the source's layers[0] has weight [6, 4]");
  check_engine_init_from(parse_engine_job(job.dump()));
  EXPECT_EQ(message_of([&] { run_engine_trial(parse_engine_job(other.dump()), {.number = 1}); }),
            "trial 1: job.training.init_from: " + ckpt +
                ": layer with weights 0 does not match: the model's layers[0] (linear) has weight "
                "[5, 4], the source's layers[0] has weight [6, 4]");
}

}  // namespace
}  // namespace tuner::engine
