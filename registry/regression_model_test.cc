// A regression's model exported: its target standardization folded into the last layer, so that
// the served model (and model.onnx, which the same weights make) predicts the label's units.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "registry/mlflow_model.h"
#include "registry/test_util.h"
#include "training/backends/cpu/cpu_backend.h"
#include "trials/error.h"

namespace tuner::registry {
namespace {

using testing::ScratchDir;

constexpr const char* kRegressionSpec = R"({"input": [3], "layers": [
    {"type": "linear", "out": 5}, {"type": "relu"}, {"type": "linear", "out": 2}]})";

training::Checkpoint checkpoint_of(const char* spec_json) {
  const training::ModelSpec spec = training::parse_model_spec(spec_json);
  auto backend = training::make_cpu_backend(1);
  auto model = training::build_model(spec, 2, *backend, 4);
  training::Checkpoint c;
  c.model_spec = spec.json;
  c.parameters = model->parameters().values_to_host();
  c.buffers = model->parameters().buffer_values_to_host();
  return c;
}

Preprocessing regression_preprocessing() {
  Preprocessing p;
  p.regression = true;
  p.target_mean = {5000.0f, -3.0f};
  p.target_stddev = {100.0f, 0.5f};
  return p;
}

TEST(RegressionModelTest, TheExportPredictsTheTargetsInTheirOwnUnits) {
  ScratchDir scratch;
  const training::Checkpoint c = checkpoint_of(kRegressionSpec);
  const Preprocessing p = regression_preprocessing();
  write_mlflow_model(c, {}, p, scratch.path() / "m");
  ServedModel served = ServedModel::load(scratch.path() / "m");
  EXPECT_TRUE(served.preprocessing().regression);
  EXPECT_TRUE(served.preprocessing().class_labels.empty());

  const std::vector<float> x = {0.5f, -1.0f, 2.0f, 1.5f, 0.0f, -0.5f};
  auto backend = training::make_cpu_backend(1);
  const training::ModelSpec spec = training::parse_model_spec(c.model_spec);
  auto model = model_from_checkpoint(c, spec, 2, *backend);
  training::Tensor t(spec.input.with_batch(2));
  t.copy_from(x);
  const training::Tensor& z = model->forward(t, training::Mode::kEval);  // standardized
  const std::vector<float> got = served.forward(x);
  ASSERT_EQ(got.size(), 4u);
  for (size_t i = 0; i < got.size(); ++i) {
    const float want = z.span()[i] * p.target_stddev[i % 2] + p.target_mean[i % 2];
    EXPECT_NEAR(got[i], want, 1e-4f * std::abs(want)) << i;
  }
  std::ifstream in(scratch.path() / "m" / "engine" / "preprocessing.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["task"], "regression");
  EXPECT_EQ(j["target"]["in_model"], true);
  EXPECT_EQ(j["version"], 3);
}

TEST(RegressionModelTest, RefusesAScalingTheModelCannotTake) {
  ScratchDir scratch;
  auto refused = [&](const training::Checkpoint& c, const Preprocessing& p) -> std::string {
    try {
      write_mlflow_model(c, {}, p, scratch.path() / "m");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return e.what();
    }
    return "no error";
  };
  // An activation after the last linear layer.
  EXPECT_EQ(refused(checkpoint_of(R"({"input": [3], "layers": [
                        {"type": "linear", "out": 2}, {"type": "tanh"}]})"),
                    regression_preprocessing()),
            "preprocessing: target scaling: the model must end with a linear layer with a bias "
            "and no activation to take it");
  Preprocessing one = regression_preprocessing();
  one.target_mean.pop_back();
  one.target_stddev.pop_back();
  EXPECT_EQ(refused(checkpoint_of(kRegressionSpec), one),
            "preprocessing: target scaling: 1 means and 1 standard deviations for the model's 2 "
            "outputs");
  Preprocessing labelled = regression_preprocessing();
  labelled.class_labels = {"a", "b"};
  EXPECT_EQ(refused(checkpoint_of(kRegressionSpec), labelled),
            "preprocessing: a regression's model has no class labels (its outputs are values)");
}

}  // namespace
}  // namespace tuner::registry
