#include "sweep/model_export.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "executor/engine/datasets.h"
#include "executor/engine_job.h"
#include "registry/table_input.h"
#include "registry/test_util.h"
#include "storage/sqlite_storage.h"
#include "sweep/sweep_runner.h"
#include "training/data/fashion_mnist.h"
#include "training/rng.h"
#include "trials/error.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;

// Trial n's model file, as an engine trial leaves it in its artifacts folder: a model of `spec`
// initialized from seed n.
void write_trial_model(const training::ModelSpec& spec, training::Backend& backend,
                       const std::string& artifacts, int n) {
  auto model = training::build_model(spec, 1, backend, static_cast<uint64_t>(n));
  training::Checkpoint c;
  c.model_spec = spec.json;
  c.parameters = model->parameters().values_to_host();
  c.buffers = model->parameters().buffer_values_to_host();
  const fs::path dir = fs::path(artifacts) / ("trial-" + std::to_string(n));
  fs::create_directories(dir);
  training::save_checkpoint((dir / "model.ckpt").string(), c);
}

using registry::testing::ScratchDir;
using ::testing::HasSubstr;

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
      "job": {"kind": "engine", "model": )") +
                             kModel + R"(,
              "data": {"dataset": "fashion-mnist", "train": 300, "validation": 100},
              "training": {"lr": "{lr}"}, "artifacts_dir": ")" +
                             artifacts + R"("},
      "export": {"registry": "reg", "name": "clf"}})";
    sweep_ = parse_sweep_file(text, (scratch_.path() / "s.json").string());
    SqliteStorage storage(db_);
    const StudyRecord study = storage.create_study("s", {StudyDirection::kMaximize});
    const nlohmann::json stored = {{"path", sweep_.path},
                                   {"file", nlohmann::json::parse(to_json(sweep_))}};
    storage.set_study_system_attr(study.study_id, kSweepAttr, nlohmann::json(stored.dump()).dump());
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
      write_trial_model(spec, *backend, artifacts, n);
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
  // The model takes the dataset's own pixels (uint8 0..255) and normalizes
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

// A study of two objectives (accuracy against latency) with a limit on the
// parameter count, as examples/sweeps/fashion_mnist_tradeoff.json has. The trials, (val_accuracy,
// latency_ms; num_params):
//   0: (0.90, 3.0; 5e5)  on the front, too slow for latency_ms <= 2
//   1: (0.87, 1.5; 2e6)  on the front, too large for num_params <= 1e6
//   2: (0.84, 1.2; 5e5)  on the front, within both limits
//   3: (0.85, 1.6; 5e5)  dominated by 1, within both limits: on the front of those within them
//   4: (0.70, 0.5; 1e5)  on the front, within both limits
//   5: (0.86, 1.4; 5e5)  RUNNING (never a candidate)
class ParetoExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = (scratch_.path() / "p.db").string();
    const std::string artifacts = (scratch_.path() / "artifacts").string();
    const std::string text = std::string(R"({"name": "p",
      "space": {"params": {"lr": {"type": "float", "low": 0.001, "high": 0.1}}},
      "objectives": [{"metric": "val_accuracy", "direction": "maximize"},
                     {"metric": "latency_ms", "direction": "minimize"}],
      "budget": {"trials": 6},
      "job": {"kind": "engine", "model": )") +
                             kModel + R"(,
              "data": {"dataset": "fashion-mnist", "train": 300, "validation": 100},
              "training": {"lr": "{lr}"}, "artifacts_dir": ")" +
                             artifacts + R"("},
      "export": {"registry": "reg", "name": "tradeoff",
                 "limits": [{"metric": "latency_ms", "max": 2},
                            {"metric": "num_params", "max": 1000000}]}})";
    sweep_ = parse_sweep_file(text, (scratch_.path() / "p.json").string());
    sweep_.storage_path = db_;
    SqliteStorage storage(db_);
    const StudyRecord study =
        storage.create_study("p", {StudyDirection::kMaximize, StudyDirection::kMinimize});
    const nlohmann::json stored = {{"path", sweep_.path},
                                   {"file", nlohmann::json::parse(to_json(sweep_))}};
    storage.set_study_system_attr(study.study_id, kSweepAttr, nlohmann::json(stored.dump()).dump());
    const training::ModelSpec spec = training::parse_model_spec(kModel);
    auto backend = training::make_cpu_backend(1);
    const double trials[][3] = {{0.90, 3.0, 5e5}, {0.87, 1.5, 2e6}, {0.84, 1.2, 5e5},
                                {0.85, 1.6, 5e5}, {0.70, 0.5, 1e5}, {0.86, 1.4, 5e5}};
    for (int n = 0; n < 6; ++n) {
      const FrozenTrial t = storage.create_trial(study.study_id);
      storage.set_trial_param(t.trial_id, "lr", FloatDistribution{.low = 0.001, .high = 0.1},
                              0.01 * (n + 1));
      // The objectives are the trial's values; the other figures are its user attributes.
      storage.set_trial_user_attr(t.trial_id, "num_params", std::to_string(trials[n][2]));
      if (n < 5)
        storage.finish_trial(t.trial_id, TrialState::kComplete, {trials[n][0], trials[n][1]});
      write_trial_model(spec, *backend, artifacts, n);
    }
  }

  ExportRequest request() const {
    ExportRequest r;
    r.study = "p";
    r.storage = db_;
    r.registry_dir = (scratch_.path() / "reg").string();
    r.promote_if_better = true;
    return r;
  }

  bool have_data() const {
    return fs::exists(training::fashion_mnist_dir() + "train-images-idx3-ubyte.gz");
  }

  ScratchDir scratch_;
  std::string db_;
  SweepFile sweep_;
};

using Bound = MetricConstraint::Bound;

TEST_F(ParetoExportTest, PicksTheBestOnThePrimaryMetricWithinTheLimits) {
  if (!have_data()) GTEST_SKIP() << "install Debian's dataset-fashion-mnist";
  // Without limits: the front's best on the first objective.
  ExportRequest r = request();
  r.model_name = "free";
  EXPECT_EQ(export_trial(r).version.lineage.trial, 0);
  // The sweep's export section: the best on val_accuracy of the trials within the limits, and
  // the same rule for the promotion.
  const std::optional<ExportResult> result = export_best_of_sweep(sweep_);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->model_name, "tradeoff");
  EXPECT_EQ(result->version.lineage.trial, 3);
  EXPECT_EQ(result->version.metric, "val_accuracy");
  EXPECT_TRUE(result->version.maximize);
  EXPECT_EQ(result->version.lineage.metrics.at("latency_ms"), 1.6);  // the second value
  EXPECT_EQ(result->alias_summary, "champion");
  const registry::PromotionDecision& d = *result->version.promotion;
  EXPECT_TRUE(d.promoted);
  ASSERT_EQ(d.limits.size(), 2u);
  EXPECT_EQ(d.limits[0].limit,
            (registry::MetricLimit{"latency_ms", registry::MetricLimit::Bound::kMax, 2}));
  EXPECT_EQ(d.limits[1].value, 5e5);
  EXPECT_EQ(d.reason, "no champion yet; meets latency_ms <= 2 (1.6), num_params <= 1e+06 (500000)");
  // A trial named outright that breaks a limit is exported, and not promoted.
  r = request();
  r.model_name = "tradeoff";
  r.trial = 0;
  r.limits = sweep_.export_config->limits;
  const ExportResult slow = export_trial(r);
  EXPECT_FALSE(slow.version.promotion->promoted);
  EXPECT_EQ(slow.version.promotion->reason, "latency_ms = 3 breaks latency_ms <= 2");
  // Another objective as the primary metric, with its direction from the study.
  r = request();
  r.model_name = "fastest";
  r.metric = "latency_ms";
  r.limits = {{"val_accuracy", Bound::kMin, 0.8}};
  const ExportResult fastest = export_trial(r);
  EXPECT_EQ(fastest.version.lineage.trial, 2);
  EXPECT_FALSE(fastest.version.maximize);
}

TEST_F(ParetoExportTest, LimitsNoTrialMeetsAreAnError) {
  ExportRequest r = request();
  r.limits = {{"latency_ms", Bound::kMax, 0.4}, {"num_params", Bound::kMax, 1e6}};
  try {
    (void)export_trial(r);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_EQ(std::string(e.what()),
              "no COMPLETE trial of study 'p' meets the limits latency_ms <= 0.4, num_params <= "
              "1e+06 (of 5 with a value of 'val_accuracy': lowest latency_ms 0.5, lowest "
              "num_params 100000); loosen the limits, or name the trial with --trial");
  }
  r.limits = {{"val_accuracy", Bound::kMin, 0.5}};
  try {
    (void)export_trial(r);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("bounds the primary metric 'val_accuracy'"));
  }
  EXPECT_FALSE(fs::exists(scratch_.path() / "reg" / "p"));
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
  EXPECT_THAT(message(r, ErrorCode::kFailedPrecondition),
              HasSubstr("trial 1 of study 's' is FAIL"));
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

// A command study as `tuner sweep` leaves it, each trial's program having saved (or not) its own
// model in its TUNER_ARTIFACTS_DIR (artifacts/trial-N), val_accuracy in brackets:
//   0 (0.80): an MLflow model directory of the sklearn flavor, model/
//   1 (0.85): an ONNX file, net.onnx
//   2 (0.90): no model, only notes.txt
//   3 (0.70): two MLflow model directories, a/ and b/
class CommandExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = (scratch_.path() / "c.db").string();
    artifacts_ = scratch_.path() / "artifacts";
    const std::string text = R"({"name": "c",
      "space": {"params": {"C": {"type": "float", "low": 0.01, "high": 10}}},
      "objective": {"metric": "val_accuracy", "direction": "maximize"},
      "budget": {"trials": 4},
      "job": {"kind": "command", "argv": ["python3", "train.py"], "artifacts_dir": ")" +
                             artifacts_.string() + R"("}})";
    sweep_ = parse_sweep_file(text, (scratch_.path() / "c.json").string());
    SqliteStorage storage(db_);
    const StudyRecord study = storage.create_study("c", {StudyDirection::kMaximize});
    const nlohmann::json stored = {{"path", sweep_.path},
                                   {"file", nlohmann::json::parse(to_json(sweep_))}};
    storage.set_study_system_attr(study.study_id, kSweepAttr, nlohmann::json(stored.dump()).dump());
    const double accuracy[] = {0.80, 0.85, 0.90, 0.70};
    for (int n = 0; n < 4; ++n) {
      const FrozenTrial t = storage.create_trial(study.study_id);
      storage.set_trial_param(t.trial_id, "C", FloatDistribution{.low = 0.01, .high = 10},
                              0.5 * (n + 1));
      storage.set_trial_user_attr(t.trial_id, "val_accuracy", std::to_string(accuracy[n]));
      storage.finish_trial(t.trial_id, TrialState::kComplete, {accuracy[n]});
    }
    sklearn_model(artifacts_ / "trial-0" / "model");
    registry::write_mlflow_model(registry::testing::tiny_checkpoint(), {}, {},
                                 scratch_.path() / "engine-model");
    fs::create_directories(artifacts_ / "trial-1");
    fs::copy_file(scratch_.path() / "engine-model" / "model.onnx",
                  artifacts_ / "trial-1" / "net.onnx");
    write(artifacts_ / "trial-2" / "notes.txt", "no model here");
    sklearn_model(artifacts_ / "trial-3" / "a");
    sklearn_model(artifacts_ / "trial-3" / "b");
  }

  static void write(const fs::path& path, const std::string& content) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << content;
  }

  // A hand-made MLflow model directory as mlflow.sklearn.save_model writes one.
  static void sklearn_model(const fs::path& dir) {
    write(dir / "MLmodel",
          "artifact_path: model\nflavors:\n  python_function:\n    loader_module: mlflow.sklearn\n"
          "    model_path: model.pkl\n  sklearn:\n    pickled_model: model.pkl\n"
          "mlflow_version: 2.14.1\n");
    write(dir / "model.pkl", "pickled");
  }

  ExportRequest request() const {
    ExportRequest r;
    r.study = "c";
    r.storage = db_;
    r.registry_dir = (scratch_.path() / "reg").string();
    r.model_name = "clf";
    r.promote_if_better = true;
    return r;
  }

  std::string error_of(const ExportRequest& r, ErrorCode want) {
    try {
      export_trial(r);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), want) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
  }

  ScratchDir scratch_;
  std::string db_;
  fs::path artifacts_;
  SweepFile sweep_;
};

TEST_F(CommandExportTest, ExportsTheModelATrialsProgramSaved) {
  ExportRequest r = request();
  r.trial = 0;
  const ExportResult mlflow = export_trial(r);
  EXPECT_EQ(mlflow.version.user_model, registry::UserModelFormat::kMlflow);
  EXPECT_EQ(mlflow.version.flavors, (std::vector<std::string>{"python_function", "sklearn"}));
  EXPECT_EQ(mlflow.version.source, (artifacts_ / "trial-0" / "model").string());
  EXPECT_EQ(mlflow.version.lineage.trial, 0);
  EXPECT_EQ(mlflow.version.metric_value, 0.80);
  EXPECT_EQ(mlflow.version.lineage.params.at("C"), "0.5");
  EXPECT_TRUE(mlflow.version.promotion->promoted);
  EXPECT_TRUE(fs::is_regular_file(mlflow.dir / "model.pkl"));  // stored as it is
  EXPECT_FALSE(fs::exists(mlflow.dir / "engine"));

  r.trial = 1;
  const ExportResult onnx = export_trial(r);
  EXPECT_EQ(onnx.version.user_model, registry::UserModelFormat::kOnnx);
  EXPECT_TRUE(onnx.version.promotion->promoted);  // 0.85 > 0.80
  EXPECT_EQ(onnx.alias_summary, "champion");
  EXPECT_TRUE(fs::is_regular_file(onnx.dir / "model.onnx"));
  EXPECT_TRUE(fs::is_regular_file(onnx.dir / "MLmodel"));

  // An artifact named outright: relative to the trial's folder, or absolute.
  r.trial = 3;
  r.artifact = "b";
  EXPECT_EQ(export_trial(r).version.source, (artifacts_ / "trial-3" / "b").string());
  r.artifact = (artifacts_ / "trial-0" / "model").string();
  EXPECT_EQ(export_trial(r).version.lineage.trial, 3);

  // The model alone, without a registry (what MLflow tracking logs as the trial's model).
  r = request();
  r.trial = 0;
  EXPECT_EQ(write_trial_model(r, scratch_.path() / "alone"), 0);
  EXPECT_TRUE(fs::is_regular_file(scratch_.path() / "alone" / "model.pkl"));
}

TEST_F(CommandExportTest, ATrialWithoutOneModelSaysWhatToDo) {
  // The best trial saved none: what to save where.
  const std::string none = error_of(request(), ErrorCode::kNotFound);
  EXPECT_THAT(none, HasSubstr("trial 2 of study 'c' saved no model in " +
                              (artifacts_ / "trial-2").string() + " (it holds notes.txt)"));
  EXPECT_THAT(none, HasSubstr("mlflow.sklearn.save_model(model, "
                              "os.environ['TUNER_ARTIFACTS_DIR'] + '/model')) or an .onnx file "
                              "in $TUNER_ARTIFACTS_DIR"));
  // Two of them: which, and how to choose.
  ExportRequest r = request();
  r.trial = 3;
  EXPECT_THAT(
      error_of(r, ErrorCode::kInvalidArgument),
      HasSubstr("trial 3 of study 'c' saved 2 models in " + (artifacts_ / "trial-3").string() +
                " (a (MLflow: python_function, sklearn), b (MLflow: python_function, "
                "sklearn)): name the one to export with --artifact PATH"));
  r.artifact = "notes.txt";
  r.trial = 2;
  EXPECT_THAT(error_of(r, ErrorCode::kInvalidArgument), HasSubstr("notes.txt: not a model"));
  r.checkpoint = "x.ckpt";
  EXPECT_THAT(error_of(r, ErrorCode::kInvalidArgument), HasSubstr("not both"));
  // Nothing was registered.
  EXPECT_FALSE(fs::exists(scratch_.path() / "reg" / "clf"));
}

// A model trained on a csv file, exported and run on a table's rows: the export round trip.
// Three Gaussian clusters in numeric features of very different scales, a categorical column,
// and missing values of both kinds (data.missing "mean").
std::string clusters_csv(uint64_t seed, int per_class, bool reordered) {
  training::Rng rng(seed);
  std::string text = reordered ? "note,site,height,width,petal,sepal,species\n"
                               : "sepal,petal,width,height,site,species\n";
  const char* names[] = {"setosa", "versicolor", "virginica"};
  const char* sites[] = {"north", "south", "east"};
  for (int i = 0; i < 3 * per_class; ++i) {
    const int k = i % 3;
    const std::string sepal = i % 17 == 5 ? "NA" : std::to_string(5 + k + 0.4 * rng.normal());
    const std::string petal = std::to_string(100 * (1 + k) + 30 * rng.normal());
    const std::string width = std::to_string(0.01 * k + 0.004 * rng.normal());
    const std::string height = std::to_string(2 * rng.normal());
    const std::string site = i % 13 == 4 ? "" : sites[rng.next_u64() % (i < 30 ? 2 : 3)];
    text += reordered ? "n" + std::to_string(i) + "," + site + "," + height + "," + width + "," +
                            petal + "," + sepal + "," + names[k] + "\n"
                      : sepal + "," + petal + "," + width + "," + height + "," + site + "," +
                            names[k] + "\n";
  }
  return text;
}

TEST(TableExportTest, ACsvModelExportsAndPredictsAsTheTrialDid) {
  ScratchDir scratch;
  const fs::path dir = scratch.path();
  std::ofstream(dir / "train.csv") << clusters_csv(11, 60, false);
  std::ofstream(dir / "test.csv") << clusters_csv(12, 20, false);
  // The same test rows, columns in another order, and one more column.
  std::ofstream(dir / "rows.csv") << clusters_csv(12, 20, true);
  const nlohmann::json job = {
      {"kind", "engine"},
      {"model", nlohmann::json::parse(R"({"layers": [{"type": "linear", "out": 16},
          {"type": "relu"}, {"type": "linear", "out": "classes"}]})")},
      {"data",
       {{"format", "csv"},
        {"dir", dir.string()},
        {"train", "train.csv"},
        {"test", "test.csv"},
        {"label", "species"},
        {"missing", "mean"},
        {"validation_fraction", 0.25},
        {"split_seed", 3}}},
      {"training", {{"epochs", 12}, {"batch_size", 16}, {"lr", 0.01}, {"seed", 1}}},
      {"objective_metric", "val_accuracy"},
      {"artifacts_dir", (dir / "runs").string()}};
  const EngineJobSpec spec = parse_engine_job(job.dump());
  const EngineOutcome trial = run_engine_trial(spec, {.number = 0});
  const double test_accuracy = trial.final_metrics.at("test_accuracy");
  ASSERT_GT(test_accuracy, 0.8);

  // Export the trial's model with the preprocessing the export computes.
  const registry::Preprocessing p = engine_preprocessing(spec, resolve_engine_job(spec, {}));
  ASSERT_TRUE(p.table);
  EXPECT_FALSE(p.mean);
  EXPECT_EQ(p.class_labels, (std::vector<std::string>{"setosa", "versicolor", "virginica"}));
  EXPECT_EQ(p.table->label, "species");
  EXPECT_TRUE(p.table->missing_mean);
  ASSERT_EQ(p.table->columns.size(), 5u);
  EXPECT_EQ(p.table->columns[4].name, "site");
  EXPECT_EQ(p.table->columns[4].categories, (std::vector<std::string>{"east", "north", "south"}));
  EXPECT_TRUE(p.table->columns[4].missing_slot);
  EXPECT_EQ(p.feature_mean.size(), 8u);  // 4 numeric, 3 sites, a missing slot
  registry::Lineage lineage;
  lineage.metrics.insert(trial.final_metrics.begin(), trial.final_metrics.end());
  registry::write_mlflow_model(
      training::load_checkpoint((dir / "runs/trial-0/model.ckpt").string()), lineage, p,
      dir / "model");

  // Predict on the test rows as `tuner predict` does: encode, normalize, forward.
  registry::ServedModel model = registry::ServedModel::load(dir / "model");
  registry::TableInput rows =
      registry::read_table_input(dir / "rows.csv", *model.preprocessing().table);
  ASSERT_EQ(rows.count, 60);
  model.preprocess(rows.features);
  // The inputs are the engine's own test split, bit for bit.
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
    const int64_t label = registry::class_index(model.preprocessing().class_labels,
                                                rows.labels[static_cast<size_t>(i)]);
    ASSERT_EQ(label, engine_data.test.labels()[static_cast<size_t>(i)]);
    correct += predicted == label ? 1 : 0;
  }
  EXPECT_EQ(correct, std::lround(test_accuracy * 60));
}

TEST(TableExportTest, AnNpyModelKeepsOneMeanAndStddev) {
  ScratchDir scratch;
  // x: float32 [6, 2], y: int64 [6], as numpy.save writes them.
  auto npy = [](const std::string& descr, const std::string& shape, const std::string& data) {
    std::string header =
        "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string out = "\x93NUMPY";
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    return out + header + data;
  };
  const std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  const std::vector<int64_t> y = {0, 1, 0, 1, 0, 1};
  std::ofstream(scratch.path() / "x.npy", std::ios::binary)
      << npy("<f4", "(6, 2)",
             std::string(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float)));
  std::ofstream(scratch.path() / "y.npy", std::ios::binary)
      << npy("<i8", "(6,)",
             std::string(reinterpret_cast<const char*>(y.data()), y.size() * sizeof(int64_t)));
  const nlohmann::json job = {
      {"kind", "engine"},
      {"model", nlohmann::json::parse(R"({"layers": [{"type": "linear", "out": "classes"}]})")},
      {"data",
       {{"format", "npy"},
        {"dir", scratch.path().string()},
        {"x", "x.npy"},
        {"y", "y.npy"},
        {"validation_fraction", 0.0}}},
      {"training", {{"epochs", 1}, {"batch_size", 2}}},
      {"objective_metric", "train_loss"}};
  const EngineJobSpec spec = parse_engine_job(job.dump());
  const registry::Preprocessing p = engine_preprocessing(spec, resolve_engine_job(spec, {}));
  EXPECT_FALSE(p.table);
  EXPECT_TRUE(p.feature_mean.empty());
  EXPECT_TRUE(p.class_labels.empty());
  ASSERT_TRUE(p.mean && p.stddev);
  EXPECT_NEAR(*p.mean, 5.5f, 1e-5);
  EXPECT_EQ(registry::format_version(p), 2);
}

}  // namespace
}  // namespace tuner
