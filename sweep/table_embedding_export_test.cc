// A model of a table with an embedded categorical column, from the trial to the registry: the
// embedding learns a target that depends on the category alone, the export carries the column's
// encoding, `tuner predict`'s encoding of a file is the engine's test split bit for bit (unknown
// categories included), and model.onnx read back by the engine's importer computes the trial's
// outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "executor/engine/datasets.h"
#include "executor/engine_job.h"
#include "registry/table_input.h"
#include "registry/test_util.h"
#include "sweep/model_export.h"
#include "training/backends/cpu/cpu_backend.h"
#include "training/checkpoint.h"
#include "training/export/onnx_import.h"
#include "training/model_spec.h"
#include "training/rng.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;
using registry::testing::ScratchDir;

// n rows of: noise (a number), store (one of 12; the class is its number mod 3), color (two
// values, no signal), label. `unknown`: every 7th row's store is one the training file lacks.
std::string stores_csv(uint64_t seed, int n, bool unknown) {
  training::Rng rng(seed);
  static const char* kClasses[] = {"lo", "mid", "hi"};
  std::string text = "noise,store,color,label\n";
  for (int i = 0; i < n; ++i) {
    const int store = static_cast<int>(rng.next_u64() % 12);
    const std::string name =
        unknown && i % 7 == 3 ? "s99"
                              : std::string(store < 10 ? "s0" : "s1") + std::to_string(store % 10);
    text += std::to_string(rng.normal()) + "," + name + "," +
            (rng.uniform() < 0.5 ? "red" : "blue") + "," + kClasses[store % 3] + "\n";
  }
  return text;
}

TEST(TableEmbeddingExportTest, AnEmbeddedColumnTrainsExportsAndPredictsAsTheTrialDid) {
  ScratchDir scratch;
  const fs::path dir = scratch.path();
  std::ofstream(dir / "train.csv") << stores_csv(21, 240, false);
  std::ofstream(dir / "test.csv") << stores_csv(22, 63, true);
  const nlohmann::json job = {
      {"kind", "engine"},
      {"model", nlohmann::json::parse(R"({"layers": [{"type": "linear", "out": 16},
          {"type": "relu"}, {"type": "linear", "out": "classes"}]})")},
      {"data",
       {{"format", "csv"},
        {"dir", dir.string()},
        {"train", "train.csv"},
        {"test", "test.csv"},
        {"label", "label"},
        {"embedding", {{"store", 4}}},
        {"validation_fraction", 0.25},
        {"split_seed", 1}}},
      {"training", {{"epochs", 30}, {"batch_size", 16}, {"lr", 0.02}, {"seed", 1}}},
      {"objective_metric", "val_accuracy"},
      {"artifacts_dir", (dir / "runs").string()}};
  const EngineJobSpec spec = parse_engine_job(job.dump());
  const EngineOutcome trial = run_engine_trial(spec, {.number = 0});
  // The class follows from the store alone: the embedding learns it.
  EXPECT_GT(trial.final_metrics.at("val_accuracy"), 0.95);
  const double test_accuracy = trial.final_metrics.at("test_accuracy");
  EXPECT_GT(test_accuracy, 0.75);  // 9 of the 63 rows have an unknown store

  const registry::Preprocessing p = engine_preprocessing(spec, resolve_engine_job(spec, {}));
  ASSERT_TRUE(p.table);
  ASSERT_EQ(p.table->columns.size(), 3u);
  EXPECT_EQ(p.table->columns[1].name, "store");
  EXPECT_EQ(p.table->columns[1].embedding, 4);
  EXPECT_EQ(p.table->columns[1].categories.size(), 12u);
  EXPECT_EQ(p.table->columns[2].embedding, 0);  // color stays one-hot
  EXPECT_EQ(p.table->features,
            (std::vector<std::string>{"noise", "store", "color=blue", "color=red"}));
  // The index feature is not normalized.
  EXPECT_EQ(p.feature_mean[1], 0.0f);
  EXPECT_EQ(p.feature_stddev[1], 1.0f);
  registry::Lineage lineage;
  const training::Checkpoint ckpt =
      training::load_checkpoint((dir / "runs/trial-0/model.ckpt").string());
  registry::write_mlflow_model(ckpt, lineage, p, dir / "model");

  registry::ServedModel model = registry::ServedModel::load(dir / "model");
  ASSERT_EQ(model.preprocessing().table->columns[1].embedding, 4);
  registry::TableInput rows =
      registry::read_table_input(dir / "test.csv", *model.preprocessing().table);
  ASSERT_EQ(rows.count, 63);
  EXPECT_EQ(rows.features[3 * 4 + 1], -1.0f);  // row 3's store s99
  model.preprocess(rows.features);
  EngineTrialConfig config = resolve_engine_job(spec, {});
  const engine::Splits engine_data = engine::load_data(spec, config, "job");
  const std::span<const float> engine_test = engine_data.test.features();
  ASSERT_EQ(rows.features.size(), engine_test.size());
  for (size_t i = 0; i < rows.features.size(); ++i) {
    ASSERT_EQ(rows.features[i], engine_test[i]) << "value " << i;
  }
  const std::vector<float> logits = model.forward(rows.features);
  int64_t correct = 0;
  for (int64_t i = 0; i < rows.count; ++i) {
    const float* row = logits.data() + i * 3;
    const int64_t predicted = std::max_element(row, row + 3) - row;
    correct += predicted == engine_data.test.labels()[static_cast<size_t>(i)] ? 1 : 0;
  }
  EXPECT_EQ(correct, std::lround(test_accuracy * 63));

  // model.onnx, read back by the engine's importer, computes the same logits.
  const training::Checkpoint imported =
      training::import_onnx_file((dir / "model" / "model.onnx").string());
  const training::ModelSpec read = training::parse_model_spec(imported.model_spec);
  ASSERT_EQ(read.layers[0].type, "embedding");
  training::CpuBackend backend(1);
  auto rebuilt = training::build_model(read, rows.count, backend, 0);
  rebuilt->parameters().set_values(imported.parameters);
  const training::Tensor& y = rebuilt->forward(
      training::Tensor::borrow_const(rows.features.data(), training::Shape{rows.count, 4}),
      training::Mode::kEval);
  ASSERT_EQ(y.numel(), static_cast<int64_t>(logits.size()));
  for (size_t i = 0; i < logits.size(); ++i) EXPECT_NEAR(y.data()[i], logits[i], 1e-5) << i;
}

}  // namespace
}  // namespace tuner
