#include "service/model_export.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "registry/test_util.h"
#include "service/sweep_runner.h"
#include "storage/sqlite_storage.h"
#include "training/data/fashion_mnist.h"
#include "trials/error.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using registry::testing::ScratchDir;

constexpr char kModel[] =
    R"({"input": [1, 28, 28], "layers": [{"type": "flatten"}, {"type": "linear", "out": 10}]})";

// A study as `tuner sweep` leaves it: the sweep file stored with it, three trials (0 and 2
// COMPLETE, 1 FAIL) and the engine's checkpoints of the complete ones in the artifacts dir.
class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = (scratch_.path() / "s.db").string();
    const std::string artifacts = (scratch_.path() / "artifacts").string();
    const std::string text = std::string(R"({"name": "s",
      "space": {"params": {"lr": {"type": "float", "low": 0.001, "high": 0.1}}},
      "objective": {"metric": "val_accuracy", "direction": "maximize"},
      "budget": {"trials": 3},
      "job": {"kind": "engine", "model": )") + kModel + R"(,
              "data": {"dataset": "fashion-mnist", "train": 300, "validation": 100},
              "training": {"lr": "{lr}"}, "artifacts_dir": ")" + artifacts + R"("},
      "export": {"registry": "reg", "name": "clf"}})";
    sweep_ = parse_sweep_file(text, (scratch_.path() / "s.json").string());
    SqliteStorage storage(db_);
    const StudyRecord study = storage.create_study("s", {StudyDirection::kMaximize});
    const nlohmann::json stored = {{"path", sweep_.path},
                                   {"file", nlohmann::json::parse(to_json(sweep_))}};
    storage.set_study_system_attr(study.study_id, kSweepAttr,
                                  nlohmann::json(stored.dump()).dump());
    const training::ModelSpec spec = training::parse_model_spec(kModel);
    auto backend = training::make_cpu_backend(1);
    const double accuracy[] = {0.80, 0.0, 0.85};
    for (int n = 0; n < 3; ++n) {
      const FrozenTrial t = storage.create_trial(study.study_id);
      storage.set_trial_param(t.trial_id, "lr", FloatDistribution{.low = 0.001, .high = 0.1},
                              0.01 * (n + 1));
      if (n == 1) {
        storage.finish_trial(t.trial_id, TrialState::kFail, {});
        continue;
      }
      storage.set_trial_user_attr(t.trial_id, "val_accuracy", std::to_string(accuracy[n]));
      storage.set_trial_user_attr(t.trial_id, "val_loss", std::to_string(1 - accuracy[n]));
      storage.finish_trial(t.trial_id, TrialState::kComplete, {accuracy[n]});
      auto model = training::build_model(spec, 1, *backend, static_cast<uint64_t>(n));
      training::Checkpoint c;
      c.model_spec = spec.json;
      c.parameters = model->parameters().values_to_host();
      c.buffers = model->parameters().buffer_values_to_host();
      const fs::path dir = fs::path(artifacts) / ("trial-" + std::to_string(n));
      fs::create_directories(dir);
      training::save_checkpoint((dir / "model.ckpt").string(), c);
    }
  }

  bool have_data() const {
    return fs::exists(training::fashion_mnist_dir() + "train-images-idx3-ubyte.gz");
  }

  ScratchDir scratch_;
  std::string db_;
  SweepFile sweep_;
};

TEST_F(ExportTest, ExportsTheBestTrialByDefaultAndTheRequestedOne) {
  if (!have_data()) GTEST_SKIP() << "install Debian's dataset-fashion-mnist";
  ExportRequest r;
  r.study = "s";
  r.storage = db_;
  r.registry_dir = (scratch_.path() / "reg").string();
  r.promote_if_better = true;
  const ExportResult best = export_trial(r);
  EXPECT_EQ(best.model_name, "s");
  EXPECT_EQ(best.version.version, 1);
  EXPECT_EQ(best.version.lineage.trial, 2);
  EXPECT_EQ(best.version.metric, "val_accuracy");
  EXPECT_TRUE(best.version.maximize);
  EXPECT_EQ(best.version.metric_value, 0.85);
  EXPECT_EQ(best.version.lineage.params.at("lr"), "0.03");
  EXPECT_TRUE(best.version.promotion->promoted);
  EXPECT_EQ(best.alias_summary, "champion");
  EXPECT_THAT(best.version.source, HasSubstr("trial-2/model.ckpt"));

  r.trial = 0;
  const ExportResult first = export_trial(r);
  EXPECT_EQ(first.version.version, 2);
  EXPECT_FALSE(first.version.promotion->promoted);
  EXPECT_EQ(first.version.promotion->champion_value, 0.85);

  // The normalization of the trial's training split, for predict and Python clients.
  std::ifstream in(first.dir / "engine" / "preprocessing.json");
  const nlohmann::json p = nlohmann::json::parse(in);
  EXPECT_GT(p["normalize"]["mean"].get<double>(), 0.1);
  EXPECT_GT(p["normalize"]["stddev"].get<double>(), 0.1);
  EXPECT_EQ(p["dataset"], "fashion-mnist");
  // Issue 15, item 12: the model takes the dataset's own pixels (uint8 0..255) and normalizes
  // them in model.onnx; the signature says so.
  EXPECT_EQ(p["input"]["dtype"], "uint8");
  EXPECT_EQ(p["input"]["divisor"], 255.0);
  EXPECT_EQ(p["in_model_onnx"], true);
  std::ifstream mlmodel(first.dir / "MLmodel");
  std::stringstream text;
  text << mlmodel.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("\"dtype\":\"uint8\",\"shape\":[-1,1,28,28]"));
}

TEST_F(ExportTest, ExportBestOfSweepUsesTheExportSection) {
  if (!have_data()) GTEST_SKIP() << "install Debian's dataset-fashion-mnist";
  SweepFile no_export = sweep_;
  no_export.export_config.reset();
  EXPECT_FALSE(export_best_of_sweep(no_export));
  SweepFile sweep = sweep_;
  sweep.storage_path = db_;
  const std::optional<ExportResult> result = export_best_of_sweep(sweep);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->model_name, "clf");
  EXPECT_EQ(result->version.lineage.trial, 2);
  EXPECT_EQ(result->alias_summary, "champion");
  EXPECT_TRUE(fs::exists(fs::path(sweep.export_config->registry_path) / "clf" / "1" / "MLmodel"));
}

TEST_F(ExportTest, ErrorsNameTheStudyAndTrial) {
  ExportRequest r;
  r.study = "s";
  r.storage = db_;
  r.registry_dir = (scratch_.path() / "reg").string();
  auto message = [&](const ExportRequest& req, ErrorCode code) {
    try {
      (void)export_trial(req);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      return std::string(e.what());
    }
    ADD_FAILURE() << "expected an error";
    return std::string();
  };
  r.trial = 1;
  EXPECT_THAT(message(r, ErrorCode::kFailedPrecondition), HasSubstr("trial 1 of study 's' is FAIL"));
  r.trial = 9;
  EXPECT_THAT(message(r, ErrorCode::kNotFound), HasSubstr("study 's' has no trial 9"));
  r.trial.reset();
  r.study = "other";
  EXPECT_THAT(message(r, ErrorCode::kNotFound), HasSubstr("no study 'other'"));
  r.study = "s";
  r.metric = "epoch_seconds";
  EXPECT_THAT(message(r, ErrorCode::kInvalidArgument), HasSubstr("direction of metric"));
  r.metric.clear();
  fs::remove(scratch_.path() / "artifacts" / "trial-2" / "model.ckpt");
  EXPECT_THAT(message(r, ErrorCode::kNotFound), HasSubstr("trial 2 of study 's' has no model"));
  EXPECT_FALSE(fs::exists(scratch_.path() / "reg" / "s"));
}

}  // namespace
}  // namespace tuner
