#include "registry/mlflow_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "onnx/onnx_pb.h"
#include "registry/test_util.h"
#include "training/data/dataset.h"
#include "trials/error.h"

namespace tuner::registry {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::ScratchDir;
using testing::tiny_checkpoint;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

Lineage lineage() {
  Lineage l;
  l.study = "fmnist";
  l.trial = 7;
  l.storage = "/data/fmnist.db";
  l.params = {{"lr", "1e-05"}, {"act", "\"relu\""}, {"width", "64"}};
  l.metrics = {{"val_accuracy", 0.9}, {"val_loss", 0.000012}};
  l.objective_metric = "val_accuracy";
  return l;
}

MlflowModelOptions pinned() {
  MlflowModelOptions o;
  o.model_uuid = "0123456789abcdef0123456789abcdef";
  o.utc_time_created = "2024-01-02 03:04:05.000006";
  return o;
}

TEST(MlflowModelTest, WritesTheMlflowDirectory) {
  ScratchDir scratch;
  const fs::path out = scratch.path() / "1";
  write_mlflow_model(tiny_checkpoint(), lineage(), {.mean = 0.5f, .stddev = 2.0f}, out, pinned());
  EXPECT_EQ(entries(out), (std::vector<std::string>{"MLmodel", "conda.yaml", "engine", "model.onnx",
                                                    "python_env.yaml", "requirements.txt"}));
  EXPECT_EQ(entries(out / "engine"),
            (std::vector<std::string>{"metadata.json", "model.ckpt", "model_spec.json",
                                      "preprocessing.json"}));
  EXPECT_EQ(entries(scratch.path()), std::vector<std::string>{"1"});  // no temporary left

  const std::string mlmodel = slurp(out / "MLmodel");
  for (const char* line :
       {"artifact_path: 'model'\n",
        "flavors:\n  onnx:\n    code: null\n    data: 'model.onnx'\n    onnx_version: '",
        "    providers:\n    - 'CUDAExecutionProvider'\n    - 'CPUExecutionProvider'\n",
        "  python_function:\n    data: 'model.onnx'\n    env:\n      conda: 'conda.yaml'\n"
        "      virtualenv: 'python_env.yaml'\n    loader_module: 'mlflow.onnx'\n"
        "    python_version: '3.11'\n",
        "model_uuid: '0123456789abcdef0123456789abcdef'\n",
        "utc_time_created: '2024-01-02 03:04:05.000006'\n",
        "signature:\n  inputs: '[{\"type\":\"tensor\",\"tensor-spec\":{\"dtype\":\"float32\","
        "\"shape\":[-1,4]}}]'\n  outputs: '[{\"type\":\"tensor\",\"tensor-spec\":{\"dtype\":"
        "\"float32\",\"shape\":[-1,3]}}]'\n  params: null\n",
        "metadata:\n  tuner_format_version: 2\n  study: 'fmnist'\n  trial: 7\n",
        "  params:\n    act: 'relu'\n    lr: 1.0e-05\n    width: 64\n",
        "  metrics:\n    val_accuracy: 0.9\n    val_loss: 1.2e-05\n",
        "mlflow_version: '2.9.2'\n"}) {
    EXPECT_THAT(mlmodel, HasSubstr(line));
  }
  EXPECT_THAT(slurp(out / "python_env.yaml"), HasSubstr("- -r requirements.txt"));
  EXPECT_THAT(slurp(out / "requirements.txt"), HasSubstr("mlflow>=2.9.2\n"));
  EXPECT_THAT(slurp(out / "requirements.txt"), HasSubstr("onnxruntime"));
  EXPECT_THAT(slurp(out / "engine" / "preprocessing.json"), HasSubstr("\"stddev\": 2.0"));
}

TEST(MlflowModelTest, ServedModelGivesTheCheckpointsOutputs) {
  ScratchDir scratch;
  const training::Checkpoint c = tiny_checkpoint(3);
  write_mlflow_model(c, lineage(), {.mean = 1.0f, .stddev = 2.0f}, scratch.path() / "m");
  ServedModel served = ServedModel::load(scratch.path() / "m");
  EXPECT_EQ(served.spec().input.to_string(), "[4]");
  std::vector<float> x = {1, 3, 5, 7, -1, 1, 3, 5};
  served.preprocess(x);
  EXPECT_EQ(x, (std::vector<float>{0, 1, 2, 3, -1, 0, 1, 2}));

  auto backend = training::make_cpu_backend(1);
  const training::ModelSpec spec = training::parse_model_spec(c.model_spec);
  auto model = model_from_checkpoint(c, spec, 2, *backend);
  training::Tensor t(spec.input.with_batch(2));
  t.copy_from(x);
  const training::Tensor& want = model->forward(t, training::Mode::kEval);
  const std::vector<float> got = served.forward(x);
  ASSERT_EQ(got.size(), 6u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], want.span()[i]);
  EXPECT_THAT(served.metadata_json(), HasSubstr("\"trial\": 7"));
}

// Regression: the exported model took normalized inputs and said so only in its metadata;
// fed raw pixels it answered wrongly. Now model.onnx normalizes at its input and its signature
// takes the dataset's own pixels, uint8 0..255.
TEST(MlflowModelTest, TheExportedModelTakesTheDatasetsOwnPixels) {
  ScratchDir scratch;
  const fs::path out = scratch.path() / "1";
  const Preprocessing pixels{.input = RawInput::kUint8,
                             .divisor = 255.0f,
                             .mean = 0.25f,
                             .stddev = 0.5f,
                             .dataset = "fashion-mnist"};
  write_mlflow_model(tiny_checkpoint(3), lineage(), pixels, out, pinned());

  const std::string mlmodel = slurp(out / "MLmodel");
  EXPECT_THAT(mlmodel, HasSubstr("signature:\n  inputs: '[{\"type\":\"tensor\",\"tensor-spec\":"
                                 "{\"dtype\":\"uint8\",\"shape\":[-1,4]}}]'\n"));
  EXPECT_THAT(mlmodel, HasSubstr("  input_description: 'uint8 [N, 4]: fashion-mnist''s own pixel "
                                 "values 0..255, as its files hold them; model.onnx divides them "
                                 "by 255.0 and normalizes them (mean 0.25, stddev 0.5) itself: "
                                 "pass raw values, not normalized ones'\n"));
  EXPECT_THAT(slurp(out / "engine" / "preprocessing.json"), HasSubstr("\"dtype\": \"uint8\""));

  // model.onnx: a uint8 input, then Cast, Div, Sub and Mul before the model's first layer.
  onnx::ModelProto proto;
  {
    std::ifstream in(out / "model.onnx", std::ios::binary);
    ASSERT_TRUE(proto.ParseFromIstream(&in));
  }
  EXPECT_EQ(proto.graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::UINT8);
  std::vector<std::string> ops;
  for (const onnx::NodeProto& n : proto.graph().node()) ops.push_back(n.op_type());
  ASSERT_GE(ops.size(), 5u);
  EXPECT_EQ(std::vector<std::string>(ops.begin(), ops.begin() + 5),
            (std::vector<std::string>{"Cast", "Div", "Sub", "Mul", "Gemm"}));

  // The engine takes the same raw values (tuner predict): pixels / 255, then normalized.
  ServedModel served = ServedModel::load(out);
  EXPECT_EQ(served.preprocessing().input, RawInput::kUint8);
  EXPECT_EQ(served.preprocessing().divisor, 255.0f);
  std::vector<float> x = {0, 51, 255, 102};
  served.preprocess(x);
  for (size_t i = 0; i < x.size(); ++i) {
    const float raw[] = {0, 51, 255, 102};
    EXPECT_EQ(x[i], (raw[i] / 255.0f - 0.25f) * (1.0f / 0.5f)) << i;
  }
  // Scaled or normalized values are refused, not answered wrongly.
  std::vector<float> scaled = {0, 0.2f, 1, 0.4f, 0, 0.5f, 1, 0};
  try {
    served.preprocess(scaled);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("input value 0.2"));
    EXPECT_THAT(e.what(), HasSubstr("(sample 0, value 1) is not a uint8 pixel value 0..255: this "
                                    "model takes fashion-mnist's own pixel values"));
  }
}

// A table's preprocessing for tiny_checkpoint's 4 inputs and 3 outputs: a numeric column and a
// categorical one of two categories and a missing slot.
Preprocessing table_preprocessing() {
  Preprocessing p;
  p.dataset = "csv";
  p.feature_mean = {5.0f, 0.5f, 0.25f, 0.125f};
  p.feature_stddev = {2.0f, 0.5f, 0.25f, 1.0f};
  p.class_labels = {"setosa", "versicolor", "virginica"};
  TableEncoding& t = p.table.emplace();
  t.columns = {TableColumn{.name = "sepal", .fill = 5.5f},
               TableColumn{.name = "site",
                           .categorical = true,
                           .categories = {"north", "south"},
                           .missing_slot = true}};
  t.features = {"sepal", "site=north", "site=south", "site=(missing)"};
  t.label = "species";
  t.missing_mean = true;
  return p;
}

TEST(MlflowModelTest, ATableModelCarriesItsEncodingLabelsAndPerFeatureNormalization) {
  ScratchDir scratch;
  const fs::path out = scratch.path() / "1";
  const Preprocessing table = table_preprocessing();
  write_mlflow_model(tiny_checkpoint(3), lineage(), table, out, pinned());

  const auto p = nlohmann::json::parse(slurp(out / "engine" / "preprocessing.json"));
  EXPECT_EQ(p["version"], 3);
  EXPECT_EQ(p["normalize"]["mean"], nlohmann::json({5.0, 0.5, 0.25, 0.125}));
  EXPECT_EQ(p["labels"], nlohmann::json({"setosa", "versicolor", "virginica"}));
  EXPECT_EQ(p["table"]["missing"], "mean");
  EXPECT_EQ(p["table"]["columns"][1]["categories"], nlohmann::json({"north", "south"}));
  const std::string mlmodel = slurp(out / "MLmodel");
  EXPECT_THAT(mlmodel, HasSubstr("tuner_format_version: 3\n"));
  EXPECT_THAT(mlmodel, HasSubstr("float32 [N, 4]: the encoded features of a row of the table"));

  // model.onnx normalizes each feature: Sub and Mul by [4] constants before the first layer.
  onnx::ModelProto proto;
  {
    std::ifstream in(out / "model.onnx", std::ios::binary);
    ASSERT_TRUE(proto.ParseFromIstream(&in));
  }
  std::vector<std::string> ops;
  for (const onnx::NodeProto& n : proto.graph().node()) ops.push_back(n.op_type());
  ASSERT_GE(ops.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(ops.begin(), ops.begin() + 3),
            (std::vector<std::string>{"Sub", "Mul", "Gemm"}));
  std::map<std::string, std::vector<float>> constants;
  for (const onnx::TensorProto& t : proto.graph().initializer()) {
    if (t.name() == "input_mean" || t.name() == "input_inv_stddev") {
      ASSERT_EQ(t.dims_size(), 1);
      EXPECT_EQ(t.dims(0), 4);
      constants[t.name()].assign(t.float_data().begin(), t.float_data().end());
    }
  }
  EXPECT_EQ(constants["input_mean"], table.feature_mean);
  EXPECT_EQ(constants["input_inv_stddev"], (std::vector<float>{0.5f, 2.0f, 4.0f, 1.0f}));
  bool has_preprocessing = false;
  for (const auto& e : proto.metadata_props())
    has_preprocessing |= e.key() == "tuner.preprocessing";
  EXPECT_TRUE(has_preprocessing);

  // The engine reads it all back and applies the same normalization.
  ServedModel served = ServedModel::load(out);
  const Preprocessing& back = served.preprocessing();
  EXPECT_EQ(back.feature_mean, table.feature_mean);
  EXPECT_EQ(back.feature_stddev, table.feature_stddev);
  EXPECT_EQ(back.class_labels, table.class_labels);
  ASSERT_TRUE(back.table);
  EXPECT_EQ(back.table->features, table.table->features);
  EXPECT_EQ(back.table->label, "species");
  EXPECT_TRUE(back.table->missing_mean);
  ASSERT_EQ(back.table->columns.size(), 2u);
  EXPECT_EQ(back.table->columns[0].fill, 5.5f);
  EXPECT_TRUE(back.table->columns[1].categorical);
  EXPECT_TRUE(back.table->columns[1].missing_slot);
  EXPECT_EQ(served.class_label(2), "virginica");
  std::vector<float> x = {7, 1, 0, 0, 5, 0, 0, 1};
  served.preprocess(x);
  EXPECT_EQ(x, (std::vector<float>{(7 - 5.0f) * 0.5f, (1 - 0.5f) * 2.0f, (0 - 0.25f) * 4.0f,
                                   (0 - 0.125f) * 1.0f, 0, (0 - 0.5f) * 2.0f, (0 - 0.25f) * 4.0f,
                                   (1 - 0.125f) * 1.0f}));
}

// A checkpoint of a model of RGB images [3, 2, 2] of 3 classes, its parameters drawn from `seed`.
training::Checkpoint rgb_checkpoint(uint64_t seed) {
  const training::ModelSpec spec = training::parse_model_spec(
      R"({"input": [3, 2, 2], "layers": [{"type": "conv2d", "out": 2, "kernel": 1},
                                          {"type": "relu"}, {"type": "flatten"},
                                          {"type": "linear", "out": 3}]})");
  auto backend = training::make_cpu_backend(1);
  auto model = training::build_model(spec, 2, *backend, seed);
  training::Checkpoint c;
  c.model_spec = spec.json;
  c.parameters = model->parameters().values_to_host();
  c.buffers = model->parameters().buffer_values_to_host();
  return c;
}

TEST(MlflowModelTest, AnRgbModelCarriesItsPerChannelNormalizationAndImageEncoding) {
  ScratchDir scratch;
  const fs::path out = scratch.path() / "1";
  // Three RGB images in [0, 1], normalized per channel as the image-folder loader does.
  std::vector<float> raw(36);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<float>((i * 5) % 13) / 12.0f;
  training::Dataset data(training::Shape{3, 2, 2}, raw, {0, 1, 2}, 3);
  const training::Normalizer norm =
      training::Normalizer::fit(data, training::NormalizeBy::kChannel);
  ASSERT_EQ(norm.mean().size(), 3u);
  norm.apply(data);
  Preprocessing p;
  p.feature_mean.assign(norm.mean().begin(), norm.mean().end());
  p.feature_stddev.assign(norm.stddev().begin(), norm.stddev().end());
  p.image = ImageEncoding{.height = 2, .width = 2, .grayscale = false};
  p.class_labels = {"red", "green", "blue"};
  const training::Checkpoint c = rgb_checkpoint(5);
  write_mlflow_model(c, lineage(), p, out, pinned());

  // Version 4: normalize holds one mean and stddev per channel, which version 3 read per value.
  const auto j = nlohmann::json::parse(slurp(out / "engine" / "preprocessing.json"));
  EXPECT_EQ(j["version"], 4);
  EXPECT_EQ(j["normalize"]["mean"].size(), 3u);
  EXPECT_EQ(j["image"], nlohmann::json({{"size", {2, 2}}, {"color", "rgb"}}));
  const std::string mlmodel = slurp(out / "MLmodel");
  EXPECT_THAT(mlmodel, HasSubstr("tuner_format_version: 4\n"));
  EXPECT_THAT(mlmodel, HasSubstr("float32 [N, 3, 2, 2]: images in RGB"));

  // model.onnx: Sub and Mul by [3, 1, 1] constants, broadcast over [N, 3, 2, 2].
  onnx::ModelProto proto;
  {
    std::ifstream in(out / "model.onnx", std::ios::binary);
    ASSERT_TRUE(proto.ParseFromIstream(&in));
  }
  ASSERT_GE(proto.graph().node_size(), 2);
  EXPECT_EQ(proto.graph().node(0).op_type(), "Sub");
  EXPECT_EQ(proto.graph().node(1).op_type(), "Mul");
  for (const onnx::TensorProto& t : proto.graph().initializer()) {
    if (t.name() == "input_mean" || t.name() == "input_inv_stddev") {
      EXPECT_EQ(std::vector<int64_t>(t.dims().begin(), t.dims().end()),
                (std::vector<int64_t>{3, 1, 1}))
          << t.name();
    }
    if (t.name() == "input_mean") {
      EXPECT_EQ(std::vector<float>(t.float_data().begin(), t.float_data().end()), p.feature_mean);
    }
  }

  // Served from raw pixels, the model gives the engine's outputs on the normalized ones.
  ServedModel served = ServedModel::load(out);
  const Preprocessing& back = served.preprocessing();
  EXPECT_EQ(back.feature_mean, p.feature_mean);
  EXPECT_EQ(back.feature_stddev, p.feature_stddev);
  ASSERT_TRUE(back.image);
  EXPECT_EQ(back.image->height, 2);
  EXPECT_EQ(back.image->width, 2);
  EXPECT_FALSE(back.image->grayscale);
  EXPECT_FALSE(back.table);
  EXPECT_EQ(served.class_label(1), "green");
  std::vector<float> x = raw;
  served.preprocess(x);
  const std::span<const float> engine_inputs = data.features();
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i], engine_inputs[i]) << "value " << i;
  auto backend = training::make_cpu_backend(1);
  const training::ModelSpec spec = training::parse_model_spec(c.model_spec);
  auto model = model_from_checkpoint(c, spec, 3, *backend);
  training::Tensor t(spec.input.with_batch(3));
  t.copy_from(engine_inputs);
  const training::Tensor& want = model->forward(t, training::Mode::kEval);
  const std::vector<float> got = served.forward(x);
  ASSERT_EQ(got.size(), 9u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want.span()[i], 1e-5);

  // A preprocessing.json whose image or channels do not fit the model is corrupt.
  auto rewrite = [&](const nlohmann::json& doc) {
    std::ofstream(out / "engine" / "preprocessing.json") << doc.dump();
  };
  nlohmann::json tall = j;
  tall["image"]["size"] = {4, 2};
  rewrite(tall);
  std::string message;
  EXPECT_EQ(testing::code_of([&] { (void)ServedModel::load(out); }, &message),
            ErrorCode::kDataLoss);
  EXPECT_THAT(message, HasSubstr("image of [4,2] in rgb, the model takes [3, 2, 2]"));
  nlohmann::json per_value = j;
  per_value["normalize"]["mean"] = std::vector<float>(12, 0.5f);
  per_value["normalize"]["stddev"] = std::vector<float>(12, 0.2f);
  rewrite(per_value);
  EXPECT_EQ(testing::code_of([&] { (void)ServedModel::load(out); }, &message),
            ErrorCode::kDataLoss);
  EXPECT_THAT(message, HasSubstr("normalize needs 3 means and stddevs, one per channel"));
}

TEST(MlflowModelTest, APreprocessingJsonWithMembersOfAnotherTypeIsCorruptNotACrash) {
  // Found by fuzzing: a member of another type escaped as nlohmann's type_error, a version past
  // an int's range was converted to one (undefined behaviour), and a number no float holds (or 0
  // as a float) was kept as an infinite mean or a zero stddev or divisor.
  const training::Shape table{2}, one{1};
  for (const char* text : {
           R"({"version": {"dtype": "float32"}})",
           R"({"version": 1e121})",
           R"({"dataset": 3, "input": {"dtype": "float32", "divisor": "1"}})",
           R"({"normalize": {"mean": 1e300, "stddev": 1}})",
           R"({"normalize": {"mean": 0, "stddev": 1e-50}})",
           R"({"normalize": {"mean": [0, 0], "stddev": [1, 1e-60]}})",
           R"({"input": {"dtype": "float32", "divisor": 1e-60}})",
           R"({"image": {"size": [-1, 2], "color": "rgb"}})",
           R"({"table": {"label": "y", "missing": "mean", "features": ["a"],
                         "columns": [{"name": "a", "type": "numeric", "fill": 1e40}]}})",
       }) {
    std::string message;
    EXPECT_EQ(
        testing::code_of([&] { (void)read_preprocessing(text, "p.json", table, one); }, &message),
        ErrorCode::kDataLoss)
        << text;
    EXPECT_THAT(message, HasSubstr("p.json")) << text;
  }
  const Preprocessing ok = read_preprocessing(
      R"({"normalize": {"mean": [0.5, 1], "stddev": [2, 0.25]}})", "p.json", table, one);
  EXPECT_EQ(ok.feature_stddev, (std::vector<float>{2, 0.25f}));
}

TEST(MlflowModelTest, RefusesAnImageEncodingOrChannelsThatDoNotFitTheModel) {
  ScratchDir scratch;
  Preprocessing p;
  p.feature_mean = {0.5f, 0.5f, 0.5f};
  p.feature_stddev = {0.2f, 0.2f, 0.2f};
  p.image = ImageEncoding{.height = 4, .width = 2, .grayscale = false};
  std::string message;
  EXPECT_EQ(testing::code_of(
                [&] { write_mlflow_model(rgb_checkpoint(1), lineage(), p, scratch.path() / "1"); },
                &message),
            ErrorCode::kInvalidArgument);
  EXPECT_THAT(message, HasSubstr("images of [3, 4, 2], the model takes [3, 2, 2]"));
  p.image->height = 2;
  p.feature_mean.push_back(0.5f);  // 4 means for 3 channels
  p.feature_stddev.push_back(0.2f);
  EXPECT_EQ(testing::code_of(
                [&] { write_mlflow_model(rgb_checkpoint(1), lineage(), p, scratch.path() / "2"); },
                &message),
            ErrorCode::kInvalidArgument);
  EXPECT_THAT(message, HasSubstr("per-channel normalization"));
  EXPECT_FALSE(fs::exists(scratch.path() / "1"));
  EXPECT_FALSE(fs::exists(scratch.path() / "2"));
}

TEST(MlflowModelTest, RefusesATableThatDoesNotFitTheModel) {
  ScratchDir scratch;
  Preprocessing wide = table_preprocessing();
  wide.table->features.push_back("extra");
  try {
    write_mlflow_model(tiny_checkpoint(), lineage(), wide, scratch.path() / "1");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("the table's columns encode 5 features, the model takes [4]"));
  }
  Preprocessing labels = table_preprocessing();
  labels.class_labels.pop_back();
  try {
    write_mlflow_model(tiny_checkpoint(), lineage(), labels, scratch.path() / "1");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("2 class labels, the model has [3] outputs"));
  }
  EXPECT_FALSE(fs::exists(scratch.path() / "1"));
}

TEST(MlflowModelTest, AVersionOneModelStillTakesTheLoadersUnits) {
  ScratchDir scratch;
  const fs::path out = scratch.path() / "1";
  write_mlflow_model(tiny_checkpoint(3), lineage(), {.mean = 1.0f, .stddev = 2.0f}, out);
  // What version 1 wrote: no "input", the values in the loader's units.
  std::ofstream(out / "engine" / "preprocessing.json")
      << R"({"version": 1, "normalize": {"mean": 1.0, "stddev": 2.0}, "dataset": "x"})";
  ServedModel served = ServedModel::load(out);
  EXPECT_EQ(served.preprocessing().input, RawInput::kFloat32);
  EXPECT_EQ(served.preprocessing().divisor, 1.0f);
  std::vector<float> x = {1, 3, 0.5f, 7};
  served.preprocess(x);
  EXPECT_EQ(x, (std::vector<float>{0, 1, -0.25f, 3}));
}

TEST(MlflowModelTest, AFailedWriteLeavesNothing) {
  ScratchDir scratch;
  MlflowModelOptions options;
  options.before_publish = [](const fs::path& tmp) {
    EXPECT_TRUE(fs::exists(tmp / "model.onnx"));
    throw Error(ErrorCode::kUnavailable, "disk full (injected)");
  };
  EXPECT_THROW(write_mlflow_model(tiny_checkpoint(), lineage(), {}, scratch.path() / "1", options),
               Error);
  EXPECT_TRUE(entries(scratch.path()).empty());
}

TEST(MlflowModelTest, RefusesACheckpointThatDoesNotFitItsSpec) {
  ScratchDir scratch;
  training::Checkpoint c = tiny_checkpoint();
  c.parameters.pop_back();
  try {
    write_mlflow_model(c, lineage(), {}, scratch.path() / "1");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("do not fit its model spec"));
  }
  c = tiny_checkpoint();
  c.model_spec = R"({"input": [4], "layers": [{"type": "swish"}]})";
  EXPECT_THROW(write_mlflow_model(c, lineage(), {}, scratch.path() / "1"), Error);
  EXPECT_TRUE(entries(scratch.path()).empty());
}

TEST(MlflowModelTest, RefusesAnExistingTarget) {
  ScratchDir scratch;
  fs::create_directories(scratch.path() / "1");
  try {
    write_mlflow_model(tiny_checkpoint(), lineage(), {}, scratch.path() / "1");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kAlreadyExists);
  }
}

TEST(MlflowModelTest, LoadNamesADirectoryThatIsNotAModel) {
  ScratchDir scratch;
  try {
    (void)ServedModel::load(scratch.path());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_THAT(e.what(), HasSubstr("not a model written by tuner export"));
  }
}

}  // namespace
}  // namespace tuner::registry
