// Test helpers of serving/: a registry holding versions of registry/test_util.h's tiny model
// (input [4], 3 logits), each version's weights drawn from its own seed.
#ifndef TUNER_SERVING_TEST_SUPPORT_H_
#define TUNER_SERVING_TEST_SUPPORT_H_

#include <memory>
#include <string>
#include <vector>

#include "registry/mlflow_model.h"
#include "registry/registry.h"
#include "registry/test_util.h"
#include "serving/loaded_model.h"

namespace tuner::serving::testing {

class TinyRegistry {
 public:
  // Versions 1..versions of model "tiny", version v from seed v; `champion` on version 1.
  explicit TinyRegistry(int versions = 2) {
    auto r = registry::Registry::open(dir(), /*create=*/true);
    for (int v = 1; v <= versions; ++v) {
      registry::Lineage lineage;
      lineage.trial = v;
      registry::RegisterOptions options;
      if (v == 1) options.aliases = {"champion"};
      r.register_version("tiny", registry::testing::tiny_checkpoint(static_cast<uint64_t>(v)),
                         lineage, options);
    }
  }
  std::filesystem::path dir() const { return scratch_.path() / "registry"; }
  std::string ref(const std::string& suffix) const { return (dir() / suffix).string(); }
  void move_champion(int version) {
    registry::Registry::open(dir(), false).set_alias("tiny", version, "champion");
  }
  // Version v's outputs for `inputs`, computed by a model of its own.
  std::vector<float> expected(int version, const std::vector<float>& inputs) const {
    auto model = registry::ServedModel::load(dir() / "tiny" / std::to_string(version));
    std::vector<float> x = inputs;
    model.preprocess(x);
    return model.forward(x);
  }

 private:
  registry::testing::ScratchDir scratch_;
};

}  // namespace tuner::serving::testing

#endif  // TUNER_SERVING_TEST_SUPPORT_H_
