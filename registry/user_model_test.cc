#include "registry/user_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "registry/registry.h"
#include "registry/test_util.h"
#include "trials/error.h"

namespace tuner::registry {
namespace {

namespace fs = std::filesystem;
using testing::code_of;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ScratchDir;
using testing::tiny_checkpoint;

// An MLmodel as mlflow.sklearn.save_model writes it (MLflow 2.x and 3.x).
constexpr char kSklearnMlmodel[] = R"(artifact_path: model
flavors:
  python_function:
    env:
      conda: conda.yaml
      virtualenv: python_env.yaml
    loader_module: mlflow.sklearn
    model_path: model.pkl
    predict_fn: predict
    python_version: 3.11.2
  sklearn:
    code: null
    pickled_model: model.pkl
    serialization_format: cloudpickle
    sklearn_version: 1.5.0
mlflow_version: 2.14.1
model_size_bytes: 1234
model_uuid: 0123456789abcdef0123456789abcdef
utc_time_created: '2024-06-01 10:00:00.000000'
)";

void write(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    names.push_back(fs::relative(e.path(), dir).generic_string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A hand-made MLflow model directory of the sklearn flavor.
fs::path sklearn_model(const fs::path& dir) {
  write(dir / "MLmodel", kSklearnMlmodel);
  write(dir / "model.pkl", std::string("\x80\x04pickled\x00bytes", 15));
  write(dir / "requirements.txt", "mlflow\nscikit-learn\n");
  write(dir / "python_env.yaml", "python: 3.11.2\n");
  write(dir / "conda.yaml", "name: mlflow-env\n");
  return dir;
}

// A real ONNX model: an engine model's model.onnx.
fs::path onnx_file(const fs::path& scratch, const fs::path& out) {
  write_mlflow_model(tiny_checkpoint(), Lineage{}, {}, scratch / "engine-model");
  fs::create_directories(out.parent_path());
  fs::copy_file(scratch / "engine-model" / "model.onnx", out);
  fs::remove_all(scratch / "engine-model");
  return out;
}

Lineage lineage_with(double accuracy, int trial = 3) {
  Lineage l;
  l.study = "s";
  l.trial = trial;
  l.params = {{"C", "0.5"}};
  l.metrics = {{"val_accuracy", accuracy}};
  l.objective_metric = "val_accuracy";
  return l;
}

TEST(UserModelTest, ReadsTheFlavorsAnMlmodelNames) {
  EXPECT_THAT(mlmodel_flavors(kSklearnMlmodel), ElementsAre("python_function", "sklearn"));
  EXPECT_THAT(mlmodel_flavors("flavors:\n    'a b':\n      x: 1\n    onnx: {}\nsignature: null\n"),
              ElementsAre("a b", "onnx"));
  EXPECT_TRUE(mlmodel_flavors("artifact_path: model\n").empty());
}

TEST(UserModelTest, AModelIsAnMlflowDirectoryOrAnOnnxFile) {
  ScratchDir scratch;
  const UserModel dir = read_user_model(sklearn_model(scratch.path() / "model"));
  EXPECT_EQ(dir.format, UserModelFormat::kMlflow);
  EXPECT_THAT(dir.flavors, ElementsAre("python_function", "sklearn"));
  write(scratch.path() / "net.onnx", "x");
  const UserModel onnx = read_user_model(scratch.path() / "net.onnx");
  EXPECT_EQ(onnx.format, UserModelFormat::kOnnx);
  EXPECT_THAT(onnx.flavors, ElementsAre("onnx", "python_function"));

  std::string message;
  fs::create_directories(scratch.path() / "plain");
  EXPECT_EQ(code_of([&] { read_user_model(scratch.path() / "plain"); }, &message),
            ErrorCode::kInvalidArgument);
  EXPECT_THAT(message, HasSubstr("plain: not an MLflow model directory (it has no MLmodel file)"));
  write(scratch.path() / "model.pkl", "x");
  EXPECT_EQ(code_of([&] { read_user_model(scratch.path() / "model.pkl"); }, &message),
            ErrorCode::kInvalidArgument);
  EXPECT_THAT(message, HasSubstr("an MLflow model directory (mlflow.<flavor>.save_model) or an "
                                 ".onnx file"));
  EXPECT_EQ(code_of([&] { read_user_model(scratch.path() / "missing"); }), ErrorCode::kNotFound);
}

TEST(UserModelTest, FindsTheModelsInATrialsFolder) {
  ScratchDir scratch;
  const fs::path trial = scratch.path() / "trial-3";
  sklearn_model(trial / "model");
  write(trial / "model" / "inner.onnx", "x");  // part of the MLflow model: not one of its own
  write(trial / "exports" / "net.onnx", "x");
  write(trial / "events.out.tfevents.1.host", "x");
  write(trial / "a" / "b" / "c" / "d" / "deep.onnx", "x");  // below the depth looked at
  const std::vector<UserModel> found = find_user_models(trial);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].path, trial / "exports" / "net.onnx");
  EXPECT_EQ(found[0].format, UserModelFormat::kOnnx);
  EXPECT_EQ(found[1].path, trial / "model");
  EXPECT_EQ(found[1].format, UserModelFormat::kMlflow);
  // The folder itself may be the model; a missing one holds none.
  sklearn_model(scratch.path() / "trial-4");
  ASSERT_EQ(find_user_models(scratch.path() / "trial-4").size(), 1u);
  EXPECT_TRUE(find_user_models(scratch.path() / "trial-5").empty());
}

TEST(UserModelTest, AnMlflowDirectoryIsStoredAsItIs) {
  ScratchDir scratch;
  const fs::path source = sklearn_model(scratch.path() / "trial-3" / "model");
  const fs::path out = scratch.path() / "reg-1";
  write_user_model(read_user_model(source), lineage_with(0.9), out);
  EXPECT_EQ(entries(out), entries(source));
  for (const std::string& name : entries(source)) {
    EXPECT_EQ(slurp(out / name), slurp(source / name)) << name;
  }
  EXPECT_EQ(code_of([&] { write_user_model(read_user_model(source), lineage_with(0.9), out); }),
            ErrorCode::kAlreadyExists);
}

TEST(UserModelTest, AnOnnxFileBecomesAnMlflowModelOfTheOnnxFlavor) {
  ScratchDir scratch;
  const fs::path file = onnx_file(scratch.path(), scratch.path() / "trial-3" / "net.onnx");
  const fs::path out = scratch.path() / "reg-1";
  MlflowModelOptions options;
  options.model_uuid = "0123456789abcdef0123456789abcdef";
  options.utc_time_created = "2024-01-02 03:04:05.000006";
  options.extra_metadata["registered_model"] = "\"m\"";
  write_user_model(read_user_model(file), lineage_with(0.9), out, options);
  EXPECT_EQ(entries(out), (std::vector<std::string>{"MLmodel", "conda.yaml", "model.onnx",
                                                    "python_env.yaml", "requirements.txt"}));
  EXPECT_EQ(slurp(out / "model.onnx"), slurp(file));
  const std::string mlmodel = slurp(out / "MLmodel");
  for (const char* text :
       {"flavors:\n  onnx:\n    code: null\n    data: 'model.onnx'\n",
        "  python_function:\n    data: 'model.onnx'\n", "    loader_module: 'mlflow.onnx'\n",
        "metadata:\n  study: 's'\n  trial: 3\n", "  metrics:\n    val_accuracy: 0.9\n",
        "  registered_model: 'm'\n", "  model_format: 'onnx'\n",
        "utc_time_created: '2024-01-02 03:04:05.000006'\n"}) {
    EXPECT_THAT(mlmodel, HasSubstr(text));
  }
  EXPECT_THAT(mlmodel, Not(HasSubstr("signature")));  // its inputs are the file's own
  EXPECT_THAT(mlmodel_flavors(mlmodel), ElementsAre("onnx", "python_function"));
  EXPECT_THAT(slurp(out / "requirements.txt"), HasSubstr("onnxruntime"));
}

TEST(UserModelTest, AFileThatIsNoOnnxModelLeavesNothing) {
  ScratchDir scratch;
  write(scratch.path() / "trial-3" / "net.onnx", "not a protobuf at all");
  std::string message;
  EXPECT_EQ(code_of(
                [&] {
                  write_user_model(read_user_model(scratch.path() / "trial-3" / "net.onnx"),
                                   lineage_with(0.9), scratch.path() / "out");
                },
                &message),
            ErrorCode::kInvalidArgument);
  EXPECT_THAT(message, HasSubstr("net.onnx: not an ONNX model"));
  EXPECT_THAT(entries(scratch.path()), ElementsAre("trial-3", "trial-3/net.onnx"));
  // A failure before the rename leaves neither the target nor the temporary.
  const fs::path source = sklearn_model(scratch.path() / "m");
  MlflowModelOptions failing;
  failing.before_publish = [](const fs::path&) {
    throw Error(ErrorCode::kUnavailable, "disk full");
  };
  EXPECT_EQ(code_of([&] {
              write_user_model(read_user_model(source), lineage_with(0.9), scratch.path() / "out",
                               failing);
            }),
            ErrorCode::kUnavailable);
  EXPECT_FALSE(fs::exists(scratch.path() / "out"));
  for (const auto& e : fs::directory_iterator(scratch.path())) {
    EXPECT_THAT(e.path().filename().string(), Not(HasSubstr("tmp"))) << e.path();
  }
}

// Versions of a trial's own model sit beside engine versions: numbered in one sequence, judged by
// the same promotion rule, kept in registry.json with their format and flavors.
TEST(UserModelTest, TheRegistryKeepsUserModelsAsVersions) {
  ScratchDir scratch;
  Registry r = Registry::open(scratch.path() / "reg", /*create=*/true);
  RegisterOptions promote;
  promote.metric = "val_accuracy";
  promote.maximize = true;
  promote.promote_if_better = true;
  const UserModel sklearn = read_user_model(sklearn_model(scratch.path() / "trial-3" / "model"));
  const ModelVersion v1 = r.register_user_model("m", sklearn, lineage_with(0.8), promote);
  EXPECT_EQ(v1.version, 1);
  ASSERT_TRUE(v1.promotion && v1.promotion->promoted);
  const UserModel onnx =
      read_user_model(onnx_file(scratch.path(), scratch.path() / "trial-4" / "net.onnx"));
  const ModelVersion v2 = r.register_user_model("m", onnx, lineage_with(0.9, 4), promote);
  EXPECT_TRUE(v2.promotion->promoted);
  const ModelVersion v3 = r.register_version("m", tiny_checkpoint(), lineage_with(0.7, 5), promote);
  EXPECT_FALSE(v3.promotion->promoted);

  const RegisteredModel m = r.model("m");
  ASSERT_EQ(m.versions.size(), 3u);
  EXPECT_EQ(m.versions[0].user_model, UserModelFormat::kMlflow);
  EXPECT_THAT(m.versions[0].flavors, ElementsAre("python_function", "sklearn"));
  EXPECT_EQ(m.versions[1].user_model, UserModelFormat::kOnnx);
  EXPECT_EQ(m.versions[2].user_model, std::nullopt);  // an engine model
  EXPECT_EQ(r.resolve("m@champion").version.version, 2);
  const std::string json = slurp(scratch.path() / "reg" / "m" / "registry.json");
  EXPECT_THAT(json, HasSubstr("\"model_format\": \"mlflow\""));
  EXPECT_THAT(json, HasSubstr("\"model_format\": \"engine\""));
  EXPECT_TRUE(fs::is_regular_file(scratch.path() / "reg" / "m" / "1" / "model.pkl"));

  // tuner's own inference says what it is and who serves it, instead of failing obscurely.
  std::string message;
  EXPECT_EQ(code_of([&] { (void)ServedModel::load(scratch.path() / "reg" / "m" / "1"); }, &message),
            ErrorCode::kFailedPrecondition);
  EXPECT_THAT(message, HasSubstr("an MLflow model of flavors python_function, sklearn that a "
                                 "trial's own program saved, not an engine model"));
  EXPECT_THAT(message, HasSubstr("mlflow models serve -m"));
  EXPECT_EQ(code_of([&] { (void)ServedModel::load(scratch.path() / "reg" / "m" / "2"); }),
            ErrorCode::kFailedPrecondition);
  EXPECT_NO_THROW((void)ServedModel::load(scratch.path() / "reg" / "m" / "3"));
}

}  // namespace
}  // namespace tuner::registry
