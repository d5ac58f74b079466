// The shape of a csv or npy data set read from its files before any trial
// (read_engine_data_shape): the model's misfits (input width, classes, task) refused with the
// messages a trial's loading gives, files this host cannot read left to the trial, and models
// with placeholders checked on probes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "executor/engine/datasets.h"
#include "executor/engine/engine_data_test_fixture.h"
#include "executor/engine_job.h"
#include "trials/error.h"

namespace tuner::engine {
namespace {

class DataShapeTest : public testing::EngineDataTest {
 protected:
  void write(const std::string& name, const std::string& text) {
    std::ofstream((dir_ / name).string(), std::ios::binary) << text;
  }

  // A job of `data` (its "dir" the temp folder unless given) and `model` (default: an MLP whose
  // input and classes come from the data).
  nlohmann::json job(nlohmann::json data, nlohmann::json model = nullptr) {
    if (!data.contains("dir")) data["dir"] = dir_.string();
    if (model.is_null()) model = mlp("classes");
    const bool regression = data.value("task", "") == "regression";
    return {{"kind", "engine"},
            {"model", model},
            {"data", data},
            {"training", {{"epochs", 1}, {"batch_size", 2}}},
            {"objective_metric", regression ? "val_rmse" : "val_accuracy"}};
  }

  static nlohmann::json mlp(nlohmann::json out, nlohmann::json input = nullptr) {
    nlohmann::json model = {{"layers",
                             {{{"type", "linear"}, {"out", 8}},
                              {{"type", "relu"}},
                              {{"type", "linear"}, {"out", out}}}}};
    if (!input.is_null()) model["input"] = input;
    return model;
  }

  // What read_engine_data_shape says of `j`: its error's message, "not read" or "fits".
  static std::string before_loading(const nlohmann::json& j) {
    try {
      EngineJobSpec spec = parse_engine_job(j.dump());
      return read_engine_data_shape(spec) ? "fits" : "not read";
    } catch (const Error& e) {
      return e.what();
    }
  }

  // The message of a trial's loading of `j` ("loads" when it does).
  static std::string at_loading(const nlohmann::json& j) {
    try {
      const EngineJobSpec spec = parse_engine_job(j.dump());
      EngineTrialConfig config = resolve_engine_job(spec, {});
      load_data(spec, config, "job");
    } catch (const Error& e) {
      return e.what();
    }
    return "loads";
  }

  // Four numeric features, labels x, y and z.
  void write_iris() {
    write("iris.csv",
          "a,b,c,d,kind\n1,2,3,4,x\n2,3,4,5,y\n3,4,5,6,z\n4,5,6,7,x\n5,6,7,8,y\n6,7,8,9,z\n"
          "7,8,9,1,x\n8,9,1,2,y\n9,1,2,3,z\n1,3,5,7,x\n");
  }
};

std::string npy_bytes(const std::string& descr, const std::string& shape, const std::string& data) {
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

template <typename T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

const nlohmann::json kIris = {{"format", "csv"}, {"path", "iris.csv"}, {"label", "kind"}};

TEST_F(DataShapeTest, ACsvModelOfAnotherInputWidthIsRefusedBeforeLoading) {
  write_iris();
  const nlohmann::json bad = job(kIris, mlp("classes", {3}));
  EXPECT_EQ(before_loading(bad),
            "job.model.input: [3] is not the shape of iris.csv's samples, [4]: make the model's "
            "input [4]");
  EXPECT_EQ(before_loading(bad), at_loading(bad));
  EXPECT_EQ(before_loading(job(kIris, mlp("classes", {4}))), "fits");
  EXPECT_EQ(before_loading(job(kIris)), "fits");
}

TEST_F(DataShapeTest, ACsvModelOfOtherClassesOrAnotherTaskIsRefusedBeforeLoading) {
  write_iris();
  const nlohmann::json two = job(kIris, mlp(2));
  EXPECT_EQ(before_loading(two),
            "job.model.layers[2]: the model's output is [2], but iris.csv has 3 classes: the last "
            "layer must give [3] (one logit per class)");
  EXPECT_EQ(before_loading(two), at_loading(two));
  // A regression's head on classes.
  const nlohmann::json one = job(kIris, mlp(1));
  EXPECT_EQ(before_loading(one),
            "job.model.layers[2]: the model's output is [1], but iris.csv has 3 classes: the last "
            "layer must give [3] (one logit per class); a model of one output is a regression's: "
            "set data.task to \"regression\" to predict a value");
  EXPECT_EQ(before_loading(one), at_loading(one));
  // A classifier's head on a regression's target.
  write("houses.csv", "rooms,area,price\n3,70,210.5\n4,90,250\n2,50,150.25\n5,120,330\n3,65,200\n");
  nlohmann::json houses = {
      {"format", "csv"}, {"path", "houses.csv"}, {"label", "price"}, {"task", "regression"}};
  const nlohmann::json three = job(houses, mlp(3));
  EXPECT_EQ(before_loading(three),
            "job.model.layers[2]: the model's output is [3], but data.task is regression and "
            "houses.csv has 1 target: the last layer must give [1] (one value per target; "
            "\"out\": \"targets\")");
  EXPECT_EQ(before_loading(three), at_loading(three));
  EXPECT_EQ(before_loading(job(houses, mlp("targets", {2}))), "fits");
  // Labels that are not the task's: a regression's label that is no number, a binary of 3.
  houses["label"] = "rooms";
  write("houses.csv", "rooms,area,price\nthree,70,210\nfour,90,250\ntwo,50,150\n");
  const nlohmann::json words = job(houses, mlp("targets"));
  EXPECT_EQ(before_loading(words), at_loading(words));
  EXPECT_NE(before_loading(words).find("is not a number (\"three\")"), std::string::npos);
  nlohmann::json binary = kIris;
  binary["task"] = "binary";
  const nlohmann::json three_labels = job(binary);
  EXPECT_EQ(before_loading(three_labels),
            "job.data.label: data.task is \"binary\", but column \"kind\" has 3 distinct labels "
            "(x, y, z), not 2");
  EXPECT_EQ(before_loading(three_labels), at_loading(three_labels));
}

TEST_F(DataShapeTest, ACsvCategoricalColumnLeavesTheInputWidthToLoading) {
  // A categorical column's slots are the training split's categories: the width is not claimed,
  // the classes still are.
  write("pets.csv", "size,color,kind\n1,red,cat\n2,blue,dog\n3,red,cat\n4,green,dog\n5,red,cat\n");
  const nlohmann::json pets = {{"format", "csv"}, {"path", "pets.csv"}, {"label", "kind"}};
  EXPECT_EQ(before_loading(job(pets, mlp("classes", {2}))), "fits");
  EXPECT_EQ(before_loading(job(pets, mlp(3, {2}))),
            "job.model.layers[2]: the model's output is [3], but pets.csv has 2 classes: the last "
            "layer must give [2] (one logit per class)");
  EngineJobSpec spec = parse_engine_job(job(pets).dump());
  ASSERT_TRUE(read_engine_data_shape(spec));
  EXPECT_EQ(spec.files_shape->sample.rank(), 0);
  EXPECT_EQ(spec.files_shape->classes, 2);
}

TEST_F(DataShapeTest, AnNpyModelOfAnotherInputClassesOrTaskIsRefusedBeforeLoading) {
  std::vector<float> x(6 * 4, 0.5f);
  write("x.npy", npy_bytes("<f4", "(6, 4)", raw(x)));
  write("y.npy", npy_bytes("<i8", "(6,)", raw(std::vector<int64_t>{0, 1, 2, 0, 1, 2})));
  const nlohmann::json npy = {{"format", "npy"}, {"x", "x.npy"}, {"y", "y.npy"}};
  const nlohmann::json wide = job(npy, mlp("classes", {5}));
  EXPECT_EQ(before_loading(wide),
            "job.model.input: [5] is not the shape of x.npy's samples, [4]: make the model's "
            "input [4]");
  EXPECT_EQ(before_loading(wide), at_loading(wide));
  const nlohmann::json four = job(npy, mlp(4));
  EXPECT_EQ(before_loading(four),
            "job.model.layers[2]: the model's output is [4], but x.npy has 3 classes: the last "
            "layer must give [3] (one logit per class)");
  EXPECT_EQ(before_loading(four), at_loading(four));
  EXPECT_EQ(before_loading(job(npy)), "fits");

  // Float labels on a classification; a regression's head of another width.
  write("t.npy", npy_bytes("<f4", "(6, 2)", raw(std::vector<float>(12, 1.5f))));
  nlohmann::json targets = {{"format", "npy"}, {"x", "x.npy"}, {"y", "t.npy"}};
  const nlohmann::json floats = job(targets);
  EXPECT_EQ(before_loading(floats), at_loading(floats));
  EXPECT_NE(before_loading(floats).find("set data.task to \"regression\""), std::string::npos);
  targets["task"] = "regression";
  const nlohmann::json one = job(targets, mlp(1));
  EXPECT_EQ(before_loading(one),
            "job.model.layers[2]: the model's output is [1], but data.task is regression and "
            "x.npy has 2 targets: the last layer must give [2] (one value per target; \"out\": "
            "\"targets\")");
  EXPECT_EQ(before_loading(one), at_loading(one));
  EXPECT_EQ(before_loading(job(targets, mlp("targets"))), "fits");
}

TEST_F(DataShapeTest, FilesThisHostCannotReadAreLeftToTheTrial) {
  write_iris();
  const nlohmann::json bad = mlp("classes", {3});
  // Not on this host.
  nlohmann::json elsewhere = kIris;
  elsewhere["dir"] = (dir_ / "elsewhere").string();
  EXPECT_EQ(before_loading(job(elsewhere, bad)), "not read");
  nlohmann::json npy = {
      {"format", "npy"}, {"dir", (dir_ / "elsewhere").string()}, {"x", "x.npy"}, {"y", "y.npy"}};
  EXPECT_EQ(before_loading(job(npy, bad)), "not read");
  // A relative name without data.dir is the trial's working directory's, not this one's.
  nlohmann::json j = job(kIris, bad);
  j["data"].erase("dir");
  EXPECT_EQ(before_loading(j), "not read");
  // Fashion-MNIST's and image folders' shapes need no files.
  EngineJobSpec spec = parse_engine_job(R"({"kind": "engine", "objective_metric": "val_accuracy",
      "model": {"layers": [{"type": "flatten"}, {"type": "linear", "out": "classes"}]},
      "data": {"dataset": "fashion-mnist", "train": 64, "validation": 16}})");
  EXPECT_FALSE(read_engine_data_shape(spec));
}

TEST_F(DataShapeTest, AModelWithPlaceholdersIsCheckedOnItsProbes) {
  write_iris();
  nlohmann::json model = mlp("{k}");
  model["layers"][0]["out"] = "{width}";
  EngineJobSpec spec = parse_engine_job(job(kIris, model).dump());
  ASSERT_TRUE(read_engine_data_shape(spec));
  check_engine_model(spec, {{"width", int64_t{8}}, {"k", int64_t{3}}});
  try {
    check_engine_model(spec, {{"width", int64_t{8}}, {"k", int64_t{2}}});
    ADD_FAILURE() << "a probe of 2 outputs for 3 classes must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "job.model.layers[2]: the model's output is [2], but iris.csv has 3 classes: the "
              "last layer must give [3] (one logit per class)");
  }
  // A concrete input beside the placeholders is checked at once.
  model["input"] = {5};
  EXPECT_EQ(before_loading(job(kIris, model)),
            "job.model.input: [5] is not the shape of iris.csv's samples, [4]: make the model's "
            "input [4]");
}

}  // namespace
}  // namespace tuner::engine
