// Embedded categorical columns of a csv file (data.embedding): the index feature each becomes,
// the model's "embeddings" made from them, the declarations refused naming the column, and the
// tables trained, checkpointed and resumed bit for bit, started from and frozen.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <string>
#include <vector>

#include "executor/engine/datasets.h"
#include "executor/engine/engine_data_test_fixture.h"
#include "executor/engine_job.h"
#include "training/checkpoint.h"
#include "training/model_spec.h"
#include "training/rng.h"
#include "trials/error.h"

namespace tuner::engine {
namespace {

class TabularEmbeddingTest : public testing::EngineDataTest {
 protected:
  void write(const std::string& name, const std::string& text) {
    std::ofstream((dir_ / name).string(), std::ios::binary) << text;
  }

  // A job of `data` (its "dir" the temp folder) with a small MLP.
  nlohmann::json job(nlohmann::json data) {
    data["dir"] = dir_.string();
    return {{"kind", "engine"},
            {"model", nlohmann::json::parse(R"({"layers": [{"type": "linear", "out": 8},
                {"type": "relu"}, {"type": "linear", "out": "classes"}]})")},
            {"data", data},
            {"training", {{"epochs", 1}, {"batch_size", 2}}},
            {"objective_metric", "train_loss"}};
  }

  Splits load(const nlohmann::json& j, EngineTrialConfig* config_out = nullptr) {
    const EngineJobSpec spec = parse_engine_job(j.dump());
    EngineTrialConfig config = resolve_engine_job(spec, {});
    Splits s = load_data(spec, config, "job");
    if (config_out) *config_out = config;
    return s;
  }

  // The message of the Error that parsing and loading `j` throws; "no error" when none.
  std::string error_of(const nlohmann::json& j) {
    try {
      load(j);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      return e.what();
    }
    return "no error";
  }

  // 120 rows whose class is the store's number mod 3 (12 stores), with a numeric noise column.
  void write_stores(const std::string& name) {
    training::Rng rng(4);
    std::string text = "noise,store,label\n";
    for (int i = 0; i < 120; ++i) {
      const int store = static_cast<int>(rng.next_u64() % 12);
      text += std::to_string(rng.normal()) + ",s" + std::to_string(10 + store) + ",c" +
              std::to_string(store % 3) + "\n";
    }
    write(name, text);
  }
};

TEST_F(TabularEmbeddingTest, AnEmbeddedColumnIsOneIndexFeatureLeftUnnormalized) {
  write("train.csv", "n,site,code,y\n1,north,7,a\n2,south,8,b\n3,,7,a\n4,east,9,b\n5,north,8,a\n");
  write("test.csv", "n,site,code,y\n6,west,7,a\n7,south,5,b\n");
  EngineTrialConfig config;
  const Splits s = load(job({{"format", "csv"},
                             {"train", "train.csv"},
                             {"test", "test.csv"},
                             {"label", "y"},
                             {"categorical", {"code"}},
                             {"embedding", {{"site", 3}}},
                             {"missing", "mean"},
                             {"validation_fraction", 0.0}}),
                        &config);
  EXPECT_EQ(s.features, (std::vector<std::string>{"n", "site", "code=7", "code=8", "code=9"}));
  ASSERT_EQ(s.columns.size(), 3u);
  EXPECT_EQ(s.columns[1].embedding, 3);
  EXPECT_EQ(s.columns[1].categories, (std::vector<std::string>{"east", "north", "south"}));
  EXPECT_TRUE(s.columns[1].missing_slot);
  EXPECT_EQ(s.columns[2].embedding, 0);
  // The site's index, as written: north 1, south 2, missing 3 (after the categories), east 0.
  ASSERT_EQ(s.train.size(), 5);
  std::vector<float> sites;
  for (int64_t i = 0; i < 5; ++i) sites.push_back(s.train.sample(i)[1]);
  EXPECT_EQ(sites, (std::vector<float>{1, 2, 3, 0, 1}));
  // A site the training file lacks (west) is -1; a known one keeps its index.
  EXPECT_EQ(s.test.sample(0)[1], -1.0f);
  EXPECT_EQ(s.test.sample(1)[1], 2.0f);
  // The model looks the index up; its layers take the features with the vector in its place.
  const training::ModelSpec model = training::parse_model_spec(config.model_json);
  EXPECT_EQ(model.input, (training::Shape{5}));
  ASSERT_EQ(model.layers[0].type, "embedding");
  ASSERT_EQ(model.layers[0].embedded.size(), 1u);
  EXPECT_EQ(model.layers[0].embedded[0].at, 1);
  EXPECT_EQ(model.layers[0].embedded[0].categories, 4);  // 3 sites and the missing one
  EXPECT_EQ(model.layers[0].embedded[0].dim, 3);
  EXPECT_EQ(model.layers[1].input, (training::Shape{7}));

  // A model that gives its input gives the layers' [7]; the features' [5] is refused.
  nlohmann::json given = job({{"format", "csv"},
                              {"train", "train.csv"},
                              {"test", "test.csv"},
                              {"label", "y"},
                              {"categorical", {"code"}},
                              {"embedding", {{"site", 3}}},
                              {"missing", "mean"},
                              {"validation_fraction", 0.0}});
  given["model"]["input"] = {7};
  load(given, &config);
  EXPECT_EQ(training::parse_model_spec(config.model_json).input, (training::Shape{5}));
  given["model"]["input"] = {5};
  try {
    load(given);
    ADD_FAILURE() << "a model input of the index features was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "job.model.input: [5] is not the shape of train.csv's samples, [7]: make the "
              "model's input [7]");
  }
}

TEST_F(TabularEmbeddingTest, AnIntegerEmbedsEveryCategoricalColumn) {
  write("d.csv", "n,site,code,y\n1,north,7,a\n2,south,8,b\n3,north,7,a\n4,east,9,b\n");
  EngineTrialConfig config;
  const Splits s = load(job({{"format", "csv"},
                             {"path", "d.csv"},
                             {"label", "y"},
                             {"categorical", {"code"}},
                             {"embedding", 2},
                             {"validation_fraction", 0.0}}),
                        &config);
  EXPECT_EQ(s.features, (std::vector<std::string>{"n", "site", "code"}));
  const training::ModelSpec model = training::parse_model_spec(config.model_json);
  ASSERT_EQ(model.layers[0].embedded.size(), 2u);
  EXPECT_EQ(model.layers[0].output, (training::Shape{5}));
  // A named column overrides "*".
  const Splits named = load(job({{"format", "csv"},
                                 {"path", "d.csv"},
                                 {"label", "y"},
                                 {"embedding", {{"*", 2}, {"site", 5}}},
                                 {"validation_fraction", 0.0}}),
                            &config);
  EXPECT_EQ(named.columns[1].embedding, 5);
  EXPECT_EQ(named.columns[2].embedding, 0);  // code is numeric: not embedded
}

TEST_F(TabularEmbeddingTest, BadDeclarationsAreRefusedNamingTheColumn) {
  write("d.csv", "n,site,y\n1,north,a\n2,south,b\n3,north,a\n4,east,b\n");
  nlohmann::json data = {
      {"format", "csv"}, {"path", "d.csv"}, {"label", "y"}, {"validation_fraction", 0.0}};
  auto with = [&](nlohmann::json embedding) {
    nlohmann::json d = data;
    d["embedding"] = std::move(embedding);
    return job(d);
  };
  EXPECT_EQ(error_of(with({{"site", 0}})),
            "job.data.embedding.site: expected an integer >= 1 (the dimension of the column's "
            "embedding), got 0");
  EXPECT_EQ(error_of(with({{"site", -2}})),
            "job.data.embedding.site: expected an integer >= 1 (the dimension of the column's "
            "embedding), got -2");
  EXPECT_EQ(error_of(with(0)),
            "job.data.embedding: expected an integer >= 1 (the dimension of the column's "
            "embedding), got 0");
  EXPECT_EQ(error_of(with({{"site", 2.5}})),
            "job.data.embedding.site: expected an integer >= 1 (the dimension of the column's "
            "embedding), got 2.5");
  EXPECT_EQ(error_of(with("site")),
            "job.data.embedding: expected an integer (the dimension of every categorical "
            "column's embedding) or an object of column names to dimensions, got \"site\"");
  EXPECT_EQ(error_of(with({{"city", 2}})), "job.data.embedding.city: \"city\" is not a column of " +
                                               (dir_ / "d.csv").string() +
                                               " (its header has n, site, y)");
  EXPECT_EQ(error_of(with({{"y", 2}})), "job.data.embedding.y: \"y\" is not a feature column");
  nlohmann::json j = with({{"site", 2}});
  j["model"]["embeddings"] = nlohmann::json::array();
  EXPECT_EQ(error_of(j),
            "job.model.embeddings: made from data.embedding; the model does not give it itself");
}

TEST_F(TabularEmbeddingTest, TheTablesResumeBitForBitAndLoadIntoAFrozenModel) {
  write_stores("stores.csv");
  nlohmann::json j = job({{"format", "csv"},
                          {"path", "stores.csv"},
                          {"label", "label"},
                          {"embedding", {{"store", 4}}},
                          {"validation_fraction", 0.25}});
  j["training"] = {{"epochs", 10}, {"batch_size", 8}, {"lr", 0.03}, {"seed", 2}};
  j["objective_metric"] = "val_accuracy";
  const EngineJobSpec spec = parse_engine_job(j.dump());

  // Straight through, and stopped after epoch 1 then resumed: the same weights, bit for bit.
  const std::string straight = (dir_ / "straight.ckpt").string();
  const EngineOutcome whole = run_engine_trial(spec, {.number = 0, .checkpoint_path = straight});
  EXPECT_GT(whole.final_metrics.at("val_accuracy"), 0.9);
  const std::string paused = (dir_ / "paused.ckpt").string();
  std::stop_source stop;
  run_engine_trial(
      spec, {.number = 0, .checkpoint_path = paused},
      [&](const EngineReport&) {
        stop.request_stop();
        return JobDecision::kContinue;
      },
      stop.get_token());
  const EngineOutcome resumed = run_engine_trial(spec, {.number = 0, .checkpoint_path = paused});
  EXPECT_EQ(resumed.resumed_from, 1);
  const training::Checkpoint a = training::load_checkpoint(straight);
  const training::Checkpoint b = training::load_checkpoint(paused);
  EXPECT_EQ(a.parameters, b.parameters);
  EXPECT_EQ(a.optimizer_state, b.optimizer_state);

  // Started from those weights with the first layer (and so the embeddings) frozen: the tables
  // stay the source's while the rest trains.
  nlohmann::json k = j;
  k["training"]["init_from"] = straight;
  k["training"]["freeze"] = 1;
  k["training"]["epochs"] = 1;
  const std::string tuned = (dir_ / "tuned.ckpt").string();
  run_engine_trial(parse_engine_job(k.dump()), {.number = 0, .checkpoint_path = tuned});
  const training::Checkpoint c = training::load_checkpoint(tuned);
  const training::ModelSpec model = training::parse_model_spec(c.model_spec);
  ASSERT_EQ(model.layers[0].type, "embedding");
  const size_t table = 12 * 4;  // the first parameters of the arena
  ASSERT_GT(c.parameters.size(), table);
  EXPECT_TRUE(std::equal(a.parameters.begin(), a.parameters.begin() + table, c.parameters.begin()));
  EXPECT_NE(a.parameters, c.parameters);  // the last layer trained
}

}  // namespace
}  // namespace tuner::engine
