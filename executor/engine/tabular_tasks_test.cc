// Engine jobs of each data.task on the user's files: regression (float targets, mean squared
// error, val_rmse and val_mae) and binary classification (val_auc), the job's "task" member, and
// the data, model and objective that must fit the task; sweeps of each trained end to end on a
// small CSV.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "executor/engine/datasets.h"
#include "executor/engine/engine_data_test_fixture.h"
#include "executor/engine_job.h"
#include "training/rng.h"
#include "trials/error.h"

namespace tuner::engine {
namespace {

namespace fs = std::filesystem;

class TabularTasksTest : public testing::EngineDataTest {
 protected:
  void write(const std::string& name, const std::string& text) {
    std::ofstream((dir_ / name).string(), std::ios::binary) << text;
  }

  // A job of `data` (its "dir" the temp folder) whose model ends in "out": `out`.
  nlohmann::json job(nlohmann::json data, const std::string& objective,
                     const std::string& out = "targets") {
    data["dir"] = dir_.string();
    return {{"kind", "engine"},
            {"model",
             {{"layers",
               {{{"type", "linear"}, {"out", 16}},
                {{"type", "relu"}},
                {{"type", "linear"}, {"out", out}}}}}},
            {"data", data},
            {"training", {{"epochs", 1}, {"batch_size", 2}}},
            {"objective_metric", objective}};
  }

  Splits load(const nlohmann::json& j, EngineTrialConfig* config_out = nullptr) {
    const EngineJobSpec spec = parse_engine_job(j.dump());
    EngineTrialConfig config = resolve_engine_job(spec, {});
    Splits s = load_data(spec, config, "job");
    if (config_out) *config_out = config;
    return s;
  }

  // The message of the Error that parsing and loading `j` throws ("no error" when none).
  std::string error(const nlohmann::json& j) {
    try {
      load(j);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }
};

// n rows of x1, x2 ~ N(0, 1), a categorical column, and y = 3 x1 - 2 x2 + 0.5 + N(0, 0.1^2).
std::string linear_csv(int n, std::vector<double>* ys = nullptr) {
  training::Rng rng(7);
  std::string text = "x1,x2,site,y\n";
  const char* sites[] = {"north", "south"};
  for (int i = 0; i < n; ++i) {
    const double x1 = rng.normal(), x2 = rng.normal();
    const double y = 3 * x1 - 2 * x2 + 0.5 + 0.1 * rng.normal();
    if (ys) ys->push_back(y);
    text += std::to_string(x1) + "," + std::to_string(x2) + "," + sites[rng.next_u64() % 2] + "," +
            std::to_string(y) + "\n";
  }
  return text;
}

double stddev(const std::vector<double>& v) {
  double sum = 0, sq = 0;
  for (double d : v) sum += d, sq += d * d;
  const double mean = sum / static_cast<double>(v.size());
  return std::sqrt(sq / static_cast<double>(v.size()) - mean * mean);
}

TEST_F(TabularTasksTest, RegressionSweepOfACsvReachesAFractionOfTheLabelsSpread) {
  std::vector<double> ys;
  write("linear.csv", linear_csv(300, &ys));
  nlohmann::json j = job({{"format", "csv"},
                          {"path", "linear.csv"},
                          {"label", "y"},
                          {"task", "regression"},
                          {"validation_fraction", 0.2},
                          {"test_fraction", 0.1}},
                         "val_rmse");
  j["training"] = {{"epochs", 40}, {"batch_size", 16}, {"lr", 0.01}, {"seed", 1}};
  j["artifacts_dir"] = (dir_ / "runs").string();
  const EngineJobSpec spec = parse_engine_job(j.dump());
  EXPECT_FALSE(spec.maximize);
  std::vector<double> rmse_per_epoch;
  const EngineOutcome out = run_engine_trial(spec, {.number = 0}, [&](const EngineReport& r) {
    EXPECT_EQ(r.metrics.count("val_accuracy"), 0u);
    rmse_per_epoch.push_back(r.metrics.at("val_rmse"));
    return JobDecision::kContinue;
  });
  ASSERT_EQ(out.epochs_completed, 40);
  const Metrics& m = out.final_metrics;
  const double spread = stddev(ys);
  EXPECT_LT(m.at("val_rmse"), 0.5 * spread) << "the labels' standard deviation is " << spread;
  EXPECT_LT(m.at("val_rmse"), rmse_per_epoch.front());
  // val_loss is of the standardized targets, val_rmse in the label's units.
  EXPECT_LT(m.at("val_loss"), 0.25);
  EXPECT_LE(m.at("val_mae"), m.at("val_rmse"));
  EXPECT_LT(m.at("test_rmse"), 0.5 * spread);
  EXPECT_LE(m.at("test_mae"), m.at("test_rmse"));
  EXPECT_EQ(m.count("test_accuracy"), 0u);
  // The best epoch is the lowest val_rmse.
  EXPECT_EQ(m.at("val_rmse"), *std::min_element(rmse_per_epoch.begin(), rmse_per_epoch.end()));
  std::ifstream data_json(dir_ / "runs" / "trial-0" / "data.json");
  const nlohmann::json described = nlohmann::json::parse(data_json);
  EXPECT_EQ(described["task"], "regression");
  EXPECT_EQ(described["targets"], nlohmann::json({"y"}));
  EXPECT_FALSE(described.contains("classes"));
}

// Two classes, "yes" when x1 + x2 > 0 (a margin around the boundary left out): separable.
std::string separable_csv(int n) {
  training::Rng rng(3);
  std::string text = "x1,x2,label\n";
  for (int written = 0; written < n;) {
    const double x1 = rng.normal(), x2 = rng.normal();
    if (std::abs(x1 + x2) < 0.3) continue;
    text +=
        std::to_string(x1) + "," + std::to_string(x2) + "," + (x1 + x2 > 0 ? "yes" : "no") + "\n";
    ++written;
  }
  return text;
}

TEST_F(TabularTasksTest, BinarySweepOfACsvReportsItsAuc) {
  write("sep.csv", separable_csv(300));
  nlohmann::json j = job({{"format", "csv"},
                          {"path", "sep.csv"},
                          {"label", "label"},
                          {"task", "binary"},
                          {"validation_fraction", 0.25}},
                         "val_auc", "classes");
  j["training"] = {{"epochs", 15}, {"batch_size", 16}, {"lr", 0.01}, {"seed", 1}};
  const EngineJobSpec spec = parse_engine_job(j.dump());
  EXPECT_TRUE(spec.maximize);
  const EngineOutcome out = run_engine_trial(spec, {.number = 0});
  const Metrics& m = out.final_metrics;
  EXPECT_GT(m.at("val_auc"), 0.9);
  EXPECT_LE(m.at("val_auc"), 1.0);
  EXPECT_GT(m.at("val_accuracy"), 0.85);
  EXPECT_EQ(m.count("val_rmse"), 0u);
}

TEST_F(TabularTasksTest, RegressionTargetsAndTheModelsOutputComeFromTheData) {
  write("linear.csv", linear_csv(20));
  EngineTrialConfig config;
  const Splits s = load(job({{"format", "csv"},
                             {"path", "linear.csv"},
                             {"label", "y"},
                             {"task", "regression"},
                             {"validation_fraction", 0.0}},
                            "train_loss"),
                        &config);
  ASSERT_TRUE(s.train.is_regression());
  EXPECT_EQ(s.train.num_targets(), 1);
  EXPECT_TRUE(s.class_names.empty());
  EXPECT_EQ(s.target_names, (std::vector<std::string>{"y"}));
  EXPECT_EQ(s.features, (std::vector<std::string>{"x1", "x2", "site=north", "site=south"}));
  // The targets are the file's values, not normalized.
  std::ifstream in(dir_ / "linear.csv");
  std::string header, first;
  std::getline(in, header);
  std::getline(in, first);
  bool found = false;
  const double y0 = std::stod(first.substr(first.rfind(',') + 1));
  for (float t : s.train.targets()) found = found || std::abs(t - y0) < 1e-4;
  EXPECT_TRUE(found) << "no target " << y0;
  const nlohmann::json model = nlohmann::json::parse(config.model_json);
  EXPECT_EQ(model["layers"].back()["out"], 1);
}

// An .npy file's header and data.
std::string npy_bytes(const std::string& descr, const std::string& shape,
                      const std::vector<float>& values) {
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header +
         std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

TEST_F(TabularTasksTest, NpyRegressionOfSeveralTargets) {
  std::vector<float> x, y;
  for (int i = 0; i < 10; ++i) {
    x.insert(x.end(), {static_cast<float>(i), static_cast<float>(i % 3), 1.0f});
    y.insert(y.end(), {0.5f * static_cast<float>(i), -static_cast<float>(i)});
  }
  write("x.npy", npy_bytes("<f4", "(10, 3)", x));
  write("y.npy", npy_bytes("<f4", "(10, 2)", y));
  EngineTrialConfig config;
  const Splits s = load(job({{"format", "npy"},
                             {"x", "x.npy"},
                             {"y", "y.npy"},
                             {"task", "regression"},
                             {"validation_fraction", 0.2}},
                            "val_mae"),
                        &config);
  EXPECT_EQ(s.train.num_targets(), 2);
  EXPECT_EQ(s.train.size(), 8);
  EXPECT_EQ(s.validation.size(), 2);
  EXPECT_EQ(nlohmann::json::parse(config.model_json)["layers"].back()["out"], 2);
  // A float y without data.task "regression" is refused, and the message says how to ask for it.
  const std::string e =
      error(job({{"format", "npy"}, {"x", "x.npy"}, {"y", "y.npy"}, {"validation_fraction", 0.2}},
                "val_accuracy", "classes"));
  EXPECT_NE(e.find("set data.task to \"regression\""), std::string::npos) << e;
}

TEST_F(TabularTasksTest, TheTaskTheDataTheModelAndTheObjectiveMustFit) {
  write("linear.csv", linear_csv(40));
  write("three.csv", "a,b,kind\n1,2,x\n2,3,y\n3,4,z\n4,5,x\n5,6,y\n");
  write("words.csv", "a,y\n1,3.5\n2,high\n");
  auto csv = [](const std::string& file, const std::string& label, const std::string& task) {
    nlohmann::json d = {{"format", "csv"}, {"path", file}, {"label", label}};
    if (!task.empty()) d["task"] = task;
    return d;
  };
  // The member.
  EXPECT_EQ(error(job(csv("linear.csv", "y", "ordinal"), "val_loss")),
            "job.data.task: expected \"classification\", \"binary\" or \"regression\", got "
            "\"ordinal\"");
  // The objective.
  EXPECT_EQ(error(job(csv("linear.csv", "y", "regression"), "val_accuracy")),
            "job.objective_metric: val_accuracy is not a metric of data.task \"regression\" (it "
            "reports train_loss, val_loss, val_rmse and val_mae)");
  EXPECT_EQ(error(job(csv("three.csv", "kind", ""), "val_auc", "classes")),
            "job.objective_metric: val_auc is not a metric of data.task \"classification\" (it "
            "reports train_loss, val_loss and val_accuracy; val_auc is data.task \"binary\"'s)");
  // A float label under classification: refused, suggesting regression.
  const std::string floats = error(job(csv("linear.csv", "y", ""), "val_accuracy", "classes"));
  EXPECT_NE(floats.find("job.data.label: column \"y\" holds 40 distinct numbers, not all "
                        "integers"),
            std::string::npos)
      << floats;
  EXPECT_NE(floats.find("set data.task to \"regression\""), std::string::npos) << floats;
  // A regression's label must be numbers.
  const std::string words = error(job(csv("words.csv", "y", "regression"), "val_rmse"));
  EXPECT_NE(words.find("words.csv:3: column \"y\" (the label of data.task \"regression\") is not "
                       "a number (\"high\")"),
            std::string::npos)
      << words;
  // Binary needs two classes.
  EXPECT_EQ(error(job(csv("three.csv", "kind", "binary"), "val_auc", "classes")),
            "job.data.label: data.task is \"binary\", but column \"kind\" has 3 distinct labels "
            "(x, y, z), not 2");
  // Heads that do not fit the task, refused naming both.
  EXPECT_EQ(error(job(csv("linear.csv", "y", "regression"), "val_rmse", "classes")),
            "job.model: a layer's \"out\": \"classes\" does not fit data.task \"regression\" "
            "(whose data has targets: use \"out\": \"targets\")");
  EXPECT_EQ(error(job(csv("three.csv", "kind", ""), "val_accuracy", "targets")),
            "job.model: a layer's \"out\": \"targets\" does not fit data.task "
            "\"classification\" (whose data has classes: use \"out\": \"classes\", or set "
            "data.task to \"regression\")");
  nlohmann::json regression_head = job(csv("three.csv", "kind", ""), "val_accuracy");
  regression_head["model"]["layers"][2]["out"] = 1;
  EXPECT_EQ(error(regression_head),
            "job.model.layers[2]: the model's output is [1], but three.csv has 3 classes: the "
            "last layer must give [3] (one logit per class); a model of one output is a "
            "regression's: set data.task to \"regression\" to predict a value");
  nlohmann::json classifier_head = job(csv("linear.csv", "y", "regression"), "val_rmse");
  classifier_head["model"]["layers"][2]["out"] = 3;
  EXPECT_EQ(error(classifier_head),
            "job.model.layers[2]: the model's output is [3], but data.task is regression and "
            "linear.csv has 1 target: the last layer must give [1] (one value per target; "
            "\"out\": \"targets\")");
}

}  // namespace
}  // namespace tuner::engine
