// "model": {"from": "init_from"}: the model spec taken from training.init_from's weights, its
// refusals (contradictory declarations, a head it cannot replace, factors past its layers), the
// check before any trial runs against the data's files, and a trial that fine-tunes it with a new
// head for another number of classes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "executor/engine/engine_data_test_fixture.h"
#include "executor/engine/init_source.h"
#include "executor/engine_job.h"
#include "registry/registry.h"
#include "registry/test_util.h"
#include "training/init_from.h"
#include "training/rng.h"
#include "trials/error.h"

namespace tuner::engine {
namespace {

namespace fs = std::filesystem;
using registry::testing::code_of;
using registry::testing::ScratchDir;
using registry::testing::tiny_checkpoint;

std::string message_of(const std::function<void()>& f) {
  std::string message;
  code_of(f, &message);
  return message;
}

// A csv of 4 numeric features and `classes` labels, 12 rows per class, in `dir`.
void write_csv(const fs::path& file, int classes) {
  training::Rng rng(3);
  std::string csv = "a,b,c,d,kind\n";
  for (int i = 0; i < 12 * classes; ++i) {
    const int k = i % classes;
    for (int j = 0; j < 4; ++j) csv += std::to_string(k * (j + 1) + 0.3 * rng.normal()) + ",";
    csv += "k" + std::to_string(k) + "\n";
  }
  std::ofstream(file.string()) << csv;
}

// A job on `dir`/t.csv whose model is the source's, with `training` (init_from added).
nlohmann::json from_init_job(const fs::path& dir, const std::string& init_from,
                             nlohmann::json training) {
  training["init_from"] = init_from;
  training["epochs"] = 2;
  training["batch_size"] = 8;
  return {
      {"kind", "engine"},
      {"model", {{"from", "init_from"}}},
      {"data", {{"format", "csv"}, {"dir", dir.string()}, {"path", "t.csv"}, {"label", "kind"}}},
      {"training", training},
      {"artifacts_dir", (dir / "runs").string()},
      {"objective_metric", "val_accuracy"}};
}

// Each test's data cache in a folder of its own.
class ModelFromInit : public testing::EngineDataTest {};

TEST_F(ModelFromInit, IsDeclaredAloneAndNeedsInitFrom) {
  const fs::path dir = "/data";
  const EngineJobSpec spec =
      parse_engine_job(from_init_job(dir, "reg/backbone@champion", {{"lr", "{lr}"}}).dump());
  EXPECT_TRUE(spec.model_from_init);
  EXPECT_EQ(spec.model_json, "");
  EXPECT_EQ(resolve_engine_job(spec, {{"lr", 0.01}}).model_json, "");

  nlohmann::json j = from_init_job(dir, "reg/backbone@champion", {});
  j["model"]["layers"] = nlohmann::json::array();
  EXPECT_EQ(message_of([&] { parse_engine_job(j.dump()); }),
            "job.model.layers: \"from\": \"init_from\" takes the whole model from "
            "training.init_from's weights: leave out \"layers\", or \"from\" to give the model "
            "here");
  j = from_init_job(dir, "reg/backbone@champion", {});
  j["model"]["from"] = "checkpoint";
  EXPECT_EQ(message_of([&] { parse_engine_job(j.dump()); }),
            "job.model.from: expected \"init_from\" (the model of training.init_from's weights), "
            "got \"checkpoint\"");
  j = from_init_job(dir, "reg/backbone@champion", {});
  j["training"].erase("init_from");
  EXPECT_EQ(message_of([&] { parse_engine_job(j.dump()); }),
            "job.model.from: needs training.init_from (the registered model, checkpoint or ONNX "
            "file whose model it takes)");
}

TEST_F(ModelFromInit, TakesTheSourcesModelWithANewHeadWhenReplaced) {
  const InitSource source{.name = "tiny.ckpt", .weights = tiny_checkpoint(1)};
  EngineTrialConfig c;
  const nlohmann::json same = source_model(source, c, training::Task::kClassification, "job");
  EXPECT_EQ(same, nlohmann::json::parse(source.weights.model_spec));
  c.replace_head = true;
  nlohmann::json head = source_model(source, c, training::Task::kClassification, "job");
  EXPECT_EQ(head["layers"][3]["out"], "classes");
  EXPECT_EQ(head["layers"][0], same["layers"][0]);
  head = source_model(source, c, training::Task::kRegression, "job");
  EXPECT_EQ(head["layers"][3]["out"], "targets");

  c.freeze = 5;
  EXPECT_EQ(message_of([&] { source_model(source, c, training::Task::kClassification, "job"); }),
            "job.training.freeze: 5 is more than the 4 entries of the model.layers of tiny.ckpt");
  c.freeze = 0;
  c.lr_factors.assign(6, 1.0);
  EXPECT_EQ(message_of([&] { source_model(source, c, training::Task::kClassification, "job"); }),
            "job.training.lr_factors: 6 factors for the 4 entries of the model.layers of "
            "tiny.ckpt (one per entry, from layers[0])");

  // A model ending with a normalization has no "out" to replace.
  c.lr_factors.clear();
  InitSource normed = source;
  nlohmann::json spec = nlohmann::json::parse(source.weights.model_spec);
  spec["layers"].erase(3);
  normed.weights.model_spec = training::parse_model_spec(spec.dump()).json;
  EXPECT_EQ(message_of([&] { source_model(normed, c, training::Task::kClassification, "job"); }),
            "job.training.replace_head: tiny.ckpt: its last layer with weights, the " +
                training::weighted_layers(training::parse_model_spec(normed.weights.model_spec))
                    .back()
                    .describe() +
                ", has no \"out\" to give the data's classes: replace_head with \"model\": "
                "{\"from\": \"init_from\"} needs a model that ends with a linear or conv2d layer; "
                "give the model in full instead");
}

// A champion registered by a first sweep (3 classes), fine-tuned on data of 2 classes with the
// model it holds: refused before any trial without replace_head, trained with it.
TEST_F(ModelFromInit, ATrialFineTunesTheRegisteredModelWithANewHead) {
  ScratchDir dir;
  const training::Checkpoint champion = tiny_checkpoint(4);
  registry::Registry::open(dir.path() / "registry", /*create=*/true)
      .register_version("backbone", champion, {}, {.aliases = {"champion"}});
  const std::string ref = (dir.path() / "registry" / "backbone@champion").string();
  write_csv(dir.path() / "t.csv", 2);

  // Without replace_head the source's 3 outputs do not fit the 2 classes.
  EngineJobSpec spec = parse_engine_job(from_init_job(dir.path(), ref, {}).dump());
  ASSERT_TRUE(read_engine_data_shape(spec, "s.json: job"));
  const std::string refused = message_of([&] { check_engine_init_from(spec, "s.json: job"); });
  EXPECT_NE(refused.find("s.json: job.model.layers[3]: the model's output is [3], but t.csv has 2 "
                         "classes"),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.find("(the model is training.init_from's, " + ref + " (version 1, "),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.find("set training.replace_head to true)"), std::string::npos) << refused;
  EXPECT_EQ(message_of([&] { run_engine_trial(spec, {.number = 0}); }).find("trial 0: job.model."),
            0u);

  // Samples of another width: a new head would not help, and the message does not offer one.
  std::ofstream((dir.path() / "wide.csv").string())
      << "a,b,c,d,e,kind\n1,2,3,4,5,x\n2,3,4,5,6,y\n3,4,5,6,7,x\n4,5,6,7,8,y\n";
  nlohmann::json wide = from_init_job(dir.path(), ref, {{"replace_head", true}});
  wide["data"]["path"] = "wide.csv";
  spec = parse_engine_job(wide.dump());
  ASSERT_TRUE(read_engine_data_shape(spec, "s.json: job"));
  EXPECT_EQ(message_of([&] { check_engine_init_from(spec, "s.json: job"); }),
            "s.json: job.model.input: [4] is not the shape of wide.csv's samples, [5]: make the "
            "model's input [5] (the model is training.init_from's, " +
                read_init_source(ref, "p").name + ")");

  spec = parse_engine_job(
      from_init_job(dir.path(), ref, {{"replace_head", true}, {"freeze", 1}}).dump());
  ASSERT_TRUE(read_engine_data_shape(spec, "s.json: job"));
  check_engine_init_from(spec, "s.json: job");
  const EngineOutcome outcome = run_engine_trial(spec, {.number = 1});
  EXPECT_EQ(outcome.epochs_completed, 2);
  const training::Checkpoint trained =
      training::load_checkpoint((dir.path() / "runs" / "trial-1" / "model.ckpt").string());
  const training::ModelSpec model = training::parse_model_spec(trained.model_spec);
  EXPECT_EQ(model.output, training::Shape{2});
  const std::vector<training::WeightedLayer> layers = training::weighted_layers(model);
  ASSERT_EQ(layers.size(), 3u);  // linear (frozen), batch_norm, the new linear head
  for (int64_t i = layers[0].begin; i < layers[0].end; ++i) {
    ASSERT_EQ(trained.parameters[i], champion.parameters[i]) << "the frozen layer moved at " << i;
  }
}

}  // namespace
}  // namespace tuner::engine
