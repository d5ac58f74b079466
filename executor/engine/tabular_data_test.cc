// Engine jobs on the user's own files: the CSV and NPY loaders (happy paths, and each bad file
// refused naming the file and the place), the seeded split, the model bound to the data, and a
// trial trained end to end on a small CSV.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "executor/engine/data_split.h"
#include "executor/engine/datasets.h"
#include "executor/engine/engine_data_test_fixture.h"
#include "executor/engine_job.h"
#include "training/rng.h"
#include "trials/error.h"

namespace tuner::engine {
namespace {

namespace fs = std::filesystem;

class TabularDataTest : public testing::EngineDataTest {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::string file = (dir_ / name).string();
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }

  // A job of `data` (its "dir" set to the temp folder), objective val_accuracy (train_loss when
  // data.validation_fraction is 0).
  nlohmann::json job(nlohmann::json data, nlohmann::json model = nullptr) {
    data["dir"] = dir_.string();
    if (model.is_null()) {
      model = nlohmann::json::parse(R"({"layers": [
          {"type": "linear", "out": 16}, {"type": "relu"}, {"type": "linear", "out": "classes"}]})");
    }
    return {{"kind", "engine"},
            {"model", model},
            {"data", data},
            {"training", {{"epochs", 1}, {"batch_size", 2}}},
            {"objective_metric",
             data.value("validation_fraction", 0.2) == 0 ? "train_loss" : "val_accuracy"}};
  }

  // The data of `job` loaded, its config fitted.
  Splits load(const nlohmann::json& j, EngineTrialConfig* config_out = nullptr) {
    const EngineJobSpec spec = parse_engine_job(j.dump());
    EngineTrialConfig config = resolve_engine_job(spec, {});
    Splits s = load_data(spec, config, "job");
    if (config_out) *config_out = config;
    return s;
  }

  // The message of the Error loading `j` throws ("no error" when none), its code checked.
  std::string load_error(const nlohmann::json& j, ErrorCode code) {
    try {
      load(j);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      return e.what();
    }
    return "no error";
  }
};

TEST_F(TabularDataTest, CsvNumericAndCategoricalColumns) {
  write("d.csv",
        "size,color,kind\n"
        "1.0,red,cat\n2,blue,dog\n3,red,cat\n4,\"green, light\",dog\n5,red,bird\n");
  EngineTrialConfig config;
  const Splits s = load(
      job({{"format", "csv"}, {"path", "d.csv"}, {"label", "kind"}, {"validation_fraction", 0.0}}),
      &config);
  EXPECT_EQ(s.name, "d.csv");
  EXPECT_EQ(s.class_names, (std::vector<std::string>{"bird", "cat", "dog"}));
  EXPECT_EQ(s.features,
            (std::vector<std::string>{"size", "color=blue", "color=green, light", "color=red"}));
  ASSERT_EQ(s.train.size(), 5);
  EXPECT_TRUE(s.validation.empty());
  EXPECT_EQ(s.train.sample_shape(), training::Shape{4});
  EXPECT_EQ(s.train.labels()[4], 0);  // bird
  EXPECT_EQ(s.train.labels()[1], 2);  // dog
  EXPECT_EQ(config.train, 5);
  // The model took its input and classes from the data.
  const nlohmann::json model = nlohmann::json::parse(config.model_json);
  EXPECT_EQ(model["input"], nlohmann::json::array({4}));
  EXPECT_EQ(model["layers"].back()["out"], 3);
}

TEST_F(TabularDataTest, CsvIntegerLabelsSortNumericallyAndTsvByExtension) {
  write("d.tsv", "a\tb\ty\n1\t2\t10\n3\t4\t9\n5\t6\t10\n7\t8\t2\n");
  const Splits s = load(job({{"format", "csv"},
                             {"path", "d.tsv"},
                             {"label", "y"},
                             {"columns", {"b"}},
                             {"validation_fraction", 0.0}}));
  EXPECT_EQ(s.class_names, (std::vector<std::string>{"2", "9", "10"}));
  EXPECT_EQ(s.train.sample_shape(), training::Shape{1});
  EXPECT_EQ(s.features, (std::vector<std::string>{"b"}));
}

TEST_F(TabularDataTest, CsvDeclaredCategoricalAndMissingMean) {
  write("d.csv", "n,code,y\n1,7,a\nNA,8,b\n3,,a\n5,7,b\n");
  const Splits s = load(job({{"format", "csv"},
                             {"path", "d.csv"},
                             {"label", "y"},
                             {"categorical", {"code"}},
                             {"missing", "mean"},
                             {"validation_fraction", 0.0}}));
  EXPECT_EQ(s.features, (std::vector<std::string>{"n", "code=7", "code=8", "code=(missing)"}));
  ASSERT_EQ(s.train.size(), 4);
  // Row 2's n is the mean of 1, 3, 5 before normalization: normalized, it is the column's mean.
  const training::Normalizer norm = training::Normalizer::fit(s.train, training::NormalizeBy::kAll);
  EXPECT_NEAR(s.train.sample(1)[0], 0.0f, 1e-5);  // (3 - 3) / std, per-feature normalization
  (void)norm;
}

TEST_F(TabularDataTest, CsvBadFilesNameTheFileAndPlace) {
  write("ragged.csv", "a,b,y\n1,2,x\n1,2\n");
  EXPECT_NE(load_error(job({{"format", "csv"}, {"path", "ragged.csv"}, {"label", "y"}}),
                       ErrorCode::kDataLoss)
                .find("ragged.csv:3: 2 fields, but the header has 3"),
            std::string::npos);
  write("missing.csv", "a,b,y\n1,2,x\n1,NaN,y\n");
  EXPECT_NE(load_error(job({{"format", "csv"}, {"path", "missing.csv"}, {"label", "y"}}),
                       ErrorCode::kDataLoss)
                .find("missing.csv:3: column \"b\" has no value (\"NaN\"): fill it, or set "
                      "data.missing to \"mean\""),
            std::string::npos);
  write("nolabel.csv", "a,y\n1,x\n2,\n");
  EXPECT_NE(
      load_error(
          job({{"format", "csv"}, {"path", "nolabel.csv"}, {"label", "y"}, {"missing", "mean"}}),
          ErrorCode::kDataLoss)
          .find("nolabel.csv:3: column \"y\" (the label) has no value"),
      std::string::npos);
  write("ok.csv", "a,y\n1,x\n2,y\n3,x\n");
  EXPECT_NE(load_error(job({{"format", "csv"}, {"path", "ok.csv"}, {"label", "species"}}),
                       ErrorCode::kInvalidArgument)
                .find("job.data.label: \"species\" is not a column of"),
            std::string::npos);
  EXPECT_NE(load_error(job({{"format", "csv"}, {"path", "absent.csv"}, {"label", "y"}}),
                       ErrorCode::kNotFound)
                .find("absent.csv does not exist"),
            std::string::npos);
  write("empty.csv", "a,y\n");
  EXPECT_NE(load_error(job({{"format", "csv"}, {"path", "empty.csv"}, {"label", "y"}}),
                       ErrorCode::kDataLoss)
                .find("empty.csv: no rows under the header"),
            std::string::npos);
}

TEST_F(TabularDataTest, CsvTrainAndTestFiles) {
  write("train.csv", "a,y\n1,x\n2,y\n3,x\n4,y\n");
  write("test.csv", "a,y\n5,x\n6,y\n");
  write("other.csv", "b,y\n5,x\n");
  EngineTrialConfig config;
  const Splits s = load(job({{"format", "csv"},
                             {"train", "train.csv"},
                             {"test", "test.csv"},
                             {"label", "y"},
                             {"validation_fraction", 0.25}}),
                        &config);
  EXPECT_EQ(s.train.size(), 3);
  EXPECT_EQ(s.validation.size(), 1);
  EXPECT_EQ(s.test.size(), 2);
  EXPECT_EQ(config.test, 2);
  EXPECT_NE(
      load_error(
          job({{"format", "csv"}, {"train", "train.csv"}, {"test", "other.csv"}, {"label", "y"}}),
          ErrorCode::kDataLoss)
          .find("other.csv: its header is not the header of"),
      std::string::npos);
}

TEST(DataSplitTest, SameSeedSameSplitAndFractions) {
  const SplitIndices a = split_indices(100, 0.2, 0.1, 7, "job.data");
  const SplitIndices b = split_indices(100, 0.2, 0.1, 7, "job.data");
  const SplitIndices c = split_indices(100, 0.2, 0.1, 8, "job.data");
  EXPECT_EQ(a.train, b.train);
  EXPECT_EQ(a.validation, b.validation);
  EXPECT_EQ(a.test, b.test);
  EXPECT_NE(a.validation, c.validation);
  EXPECT_EQ(a.train.size(), 70u);
  EXPECT_EQ(a.validation.size(), 20u);
  EXPECT_EQ(a.test.size(), 10u);
  std::vector<int64_t> all = a.train;
  all.insert(all.end(), a.validation.begin(), a.validation.end());
  all.insert(all.end(), a.test.begin(), a.test.end());
  std::sort(all.begin(), all.end());
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(all[static_cast<size_t>(i)], i);
  EXPECT_EQ(split_indices(3, 0.01, 0, 1, "x").validation.size(), 1u);  // at least 1
  try {
    split_indices(2, 0.5, 0.5, 1, "job.data");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("leave none for training"), std::string::npos);
  }
}

// --- NPY ----------------------------------------------------------------------------------------

std::string npy_bytes(const std::string& descr, const std::string& shape, const std::string& data,
                      bool fortran = false) {
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': " + shape + ", }";
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

void put(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}

// A zip of stored (uncompressed) members, as numpy.savez writes them.
std::string zip_stored(const std::vector<std::pair<std::string, std::string>>& members) {
  std::string out, central;
  for (const auto& [name, data] : members) {
    const uint64_t offset = out.size();
    const uint32_t crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
    put(out, 0x04034b50, 4), put(out, 20, 2), put(out, 0, 2), put(out, 0, 2), put(out, 0, 4);
    put(out, crc, 4), put(out, data.size(), 4), put(out, data.size(), 4);
    put(out, name.size(), 2), put(out, 0, 2);
    out += name + data;
    put(central, 0x02014b50, 4), put(central, 20, 2), put(central, 20, 2), put(central, 0, 2);
    put(central, 0, 2), put(central, 0, 4), put(central, crc, 4), put(central, data.size(), 4);
    put(central, data.size(), 4), put(central, name.size(), 2), put(central, 0, 2);
    put(central, 0, 2), put(central, 0, 2), put(central, 0, 2), put(central, 0, 4);
    put(central, offset, 4);
    central += name;
  }
  const uint64_t cd = out.size();
  out += central;
  put(out, 0x06054b50, 4), put(out, 0, 2), put(out, 0, 2), put(out, members.size(), 2);
  put(out, members.size(), 2), put(out, central.size(), 4), put(out, cd, 4), put(out, 0, 2);
  return out;
}

TEST_F(TabularDataTest, NpyFilesOfAnySampleShape) {
  std::vector<uint8_t> x(10 * 2 * 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>(i);
  write("x.npy", npy_bytes("|u1", "(10, 2, 3)", raw(x)));
  write("y.npy",
        npy_bytes("<i8", "(10,)", raw(std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1, 2, 3})));
  EngineTrialConfig config;
  const Splits s =
      load(job({{"format", "npy"}, {"x", "x.npy"}, {"y", "y.npy"}, {"validation_fraction", 0.2}},
               nlohmann::json::parse(R"({"layers": [{"type": "flatten"},
                 {"type": "linear", "out": "classes"}]})")),
           &config);
  EXPECT_EQ(s.train.sample_shape(), (training::Shape{2, 3}));
  EXPECT_EQ(s.train.num_classes(), 4);
  EXPECT_EQ(s.train.size(), 8);
  EXPECT_EQ(s.validation.size(), 2);
  EXPECT_EQ(nlohmann::json::parse(config.model_json)["input"], nlohmann::json::array({2, 3}));
}

TEST_F(TabularDataTest, NpzArchiveStoredMembers) {
  std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7};
  write("d.npz",
        zip_stored({{"feat.npy", npy_bytes("<f4", "(4, 2)", raw(x))},
                    {"lab.npy", npy_bytes("<i4", "(4,)", raw(std::vector<int32_t>{1, 0, 1, 0}))}}));
  const Splits s = load(job({{"format", "npy"},
                             {"path", "d.npz"},
                             {"x", "feat"},
                             {"y", "lab"},
                             {"validation_fraction", 0.25}}));
  EXPECT_EQ(s.train.size(), 3);
  EXPECT_EQ(s.train.sample_shape(), training::Shape{2});
  EXPECT_NE(load_error(job({{"format", "npy"}, {"path", "d.npz"}, {"x", "feats"}, {"y", "lab"}}),
                       ErrorCode::kDataLoss)
                .find("d.npz: no array \"feats\" (it has feat, lab)"),
            std::string::npos);
}

TEST_F(TabularDataTest, NpyBadFilesNameTheFileAndWhatWasExpected) {
  write("y.npy", npy_bytes("<i8", "(4,)", raw(std::vector<int64_t>{0, 1, 0, 1})));
  const auto npy_job = [&](const std::string& x) {
    return job({{"format", "npy"}, {"x", x}, {"y", "y.npy"}});
  };
  write("short.npy", npy_bytes("<f4", "(4, 3)", std::string(40, '\0')));
  EXPECT_NE(load_error(npy_job("short.npy"), ErrorCode::kDataLoss)
                .find("short.npy: truncated: the header's shape (4, 3) of <f4 needs 48 bytes of "
                      "data, the file has 40"),
            std::string::npos);
  write("c8.npy", npy_bytes("<c8", "(4, 1)", std::string(32, '\0')));
  EXPECT_NE(load_error(npy_job("c8.npy"), ErrorCode::kDataLoss)
                .find("c8.npy: element type <c8 is not supported"),
            std::string::npos);
  write("text.npy", "not numpy at all");
  EXPECT_NE(
      load_error(npy_job("text.npy"), ErrorCode::kDataLoss).find("text.npy: not an .npy file"),
      std::string::npos);
  write("five.npy", npy_bytes("<f8", "(5, 1)", std::string(40, '\0')));
  EXPECT_NE(load_error(npy_job("five.npy"), ErrorCode::kDataLoss).find("y.npy: 4 labels, but"),
            std::string::npos);
  write("ok.npy", npy_bytes("<f8", "(4, 1)", std::string(32, '\0')));
  write("yf.npy", npy_bytes("<f4", "(4,)", std::string(16, '\0')));
  EXPECT_NE(
      load_error(job({{"format", "npy"}, {"x", "ok.npy"}, {"y", "yf.npy"}}), ErrorCode::kDataLoss)
          .find("yf.npy: element type <f4 (labels are an integer type"),
      std::string::npos);
  write("yneg.npy", npy_bytes("<i2", "(4,)", raw(std::vector<int16_t>{0, -1, 0, 1})));
  EXPECT_NE(
      load_error(job({{"format", "npy"}, {"x", "ok.npy"}, {"y", "yneg.npy"}}), ErrorCode::kDataLoss)
          .find("yneg.npy: label -1 at index 1"),
      std::string::npos);
}

// --- The job
// --------------------------------------------------------------------------------------

TEST_F(TabularDataTest, JobRefusesBadDataMembersAndModelsThatDoNotFit) {
  auto parse_error = [](const nlohmann::json& j) -> std::string {
    try {
      parse_engine_job(j.dump());
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(parse_error(job({{"format", "csv"}, {"path", "d.csv"}})),
            "job.data.label: missing (the header name of the label column)");
  EXPECT_EQ(parse_error(job({{"format", "csv"}, {"path", "d.csv"}, {"label", "y"}, {"x", "a"}})),
            "job.data.x: unknown member (data of format csv has format, dir, path, train, test, "
            "delimiter, label, columns, categorical, embedding, missing, validation_fraction, "
            "test_fraction, split_seed, task, normalize, prefetch)");
  nlohmann::json no_validation =
      job({{"format", "csv"}, {"path", "d.csv"}, {"label", "y"}, {"validation_fraction", 0}});
  no_validation["objective_metric"] = "val_accuracy";
  EXPECT_EQ(parse_error(no_validation),
            "job.data.validation_fraction: must be > 0: the objective metric val_accuracy needs "
            "a validation split");
  EXPECT_EQ(parse_error(job({{"format", "npy"}, {"y", "y.npy"}})),
            "job.data.x: missing (the features' .npy file; or an .npz \"path\")");
  // An MLP whose first layer expects 784 inputs, on a 2-feature CSV.
  write("d.csv", "a,b,y\n1,2,x\n3,4,y\n5,6,x\n7,8,y\n9,10,x\n");
  const nlohmann::json mlp =
      nlohmann::json::parse(R"({"input": [784], "layers": [{"type": "linear", "out": 3}]})");
  EXPECT_EQ(parse_error(job({{"format", "csv"}, {"path", "d.csv"}, {"label", "y"}}, mlp)),
            "no error");
  EXPECT_NE(load_error(job({{"format", "csv"}, {"path", "d.csv"}, {"label", "y"}}, mlp),
                       ErrorCode::kInvalidArgument)
                .find("job.model.input: [784] is not the shape of d.csv's samples, [2]"),
            std::string::npos);
  const nlohmann::json three =
      nlohmann::json::parse(R"({"layers": [{"type": "linear", "out": 3}]})");
  EXPECT_NE(load_error(job({{"format", "csv"}, {"path", "d.csv"}, {"label", "y"}}, three),
                       ErrorCode::kInvalidArgument)
                .find("the model's output is [3], but d.csv has 2 classes"),
            std::string::npos);
}

TEST(FashionMnistJobTest, ModelInputAndClassesFromTheCatalogue) {
  const EngineJobSpec spec = parse_engine_job(R"({"kind": "engine",
    "model": {"layers": [{"type": "flatten"}, {"type": "linear", "out": "classes"}]},
    "data": {"dataset": "fashion-mnist", "format": "idx"},
    "objective_metric": "val_accuracy"})");
  const EngineTrialConfig c = resolve_engine_job(spec, {});
  const nlohmann::json model = nlohmann::json::parse(c.model_json);
  EXPECT_EQ(model["input"], nlohmann::json::array({1, 28, 28}));
  EXPECT_EQ(model["layers"][1]["out"], 10);
  EXPECT_EQ(c.train, 50000);
}

// Three Gaussian clusters in 4 numeric features (scaled very differently) and a categorical
// column that carries no signal: iris-like.
std::string iris_like_csv(int per_class) {
  training::Rng rng(11);
  std::string text = "sepal,petal,width,height,site,species\n";
  const char* names[] = {"setosa", "versicolor", "virginica"};
  const char* sites[] = {"north", "south"};
  for (int i = 0; i < 3 * per_class; ++i) {
    const int k = i % 3;
    text += std::to_string(5 + k + 0.4 * rng.normal()) + "," +
            std::to_string(100 * (1 + k) + 30 * rng.normal()) + "," +
            std::to_string(0.01 * k + 0.004 * rng.normal()) + "," +
            std::to_string(2 * rng.normal()) + "," + sites[rng.next_u64() % 2] + "," + names[k] +
            "\n";
  }
  return text;
}

TEST_F(TabularDataTest, TrainsOnACsvEndToEnd) {
  write("iris.csv", iris_like_csv(60));
  nlohmann::json j = job({{"format", "csv"},
                          {"path", "iris.csv"},
                          {"label", "species"},
                          {"validation_fraction", 0.25},
                          {"test_fraction", 0.15},
                          {"split_seed", 3}});
  j["training"] = {{"epochs", 15}, {"batch_size", 16}, {"lr", 0.01}, {"seed", 1}};
  j["artifacts_dir"] = (dir_ / "runs").string();
  const EngineJobSpec spec = parse_engine_job(j.dump());
  const EngineOutcome out = run_engine_trial(spec, {.number = 0});
  // The model's outputs map back to the labels.
  std::ifstream data_json(dir_ / "runs" / "trial-0" / "data.json");
  const nlohmann::json described = nlohmann::json::parse(data_json);
  EXPECT_EQ(described["classes"], nlohmann::json({"setosa", "versicolor", "virginica"}));
  EXPECT_EQ(described["features"].size(), 6u);  // 4 numeric, site=north, site=south
  EXPECT_EQ(out.epochs_completed, 15);
  EXPECT_GT(out.final_metrics.at("val_accuracy"), 0.9);
  EXPECT_GT(out.final_metrics.at("test_accuracy"), 0.85);
}

}  // namespace
}  // namespace tuner::engine
