// Test helpers of serving/: a registry holding versions of registry/test_util.h's tiny model
// (input [4], 3 logits), each version's weights drawn from its own seed, and the same model as
// one trained on a table (model "table", kTableEncoding).
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

// A table of a numeric column "a" (missing: 1.5) and a categorical column "color" (blue, red,
// and a missing slot): 4 features, as the tiny model takes. Missing values are filled.
inline registry::TableEncoding table_encoding() {
  registry::TableEncoding e;
  e.columns = {registry::TableColumn{.name = "a", .fill = 1.5f},
               registry::TableColumn{.name = "color",
                                     .categorical = true,
                                     .categories = {"blue", "red"},
                                     .missing_slot = true}};
  e.features = {"a", "color=blue", "color=red", "color=(missing)"};
  e.label = "kind";
  e.missing_mean = true;
  return e;
}
inline const std::vector<std::string> kTableLabels = {"ant", "bee", "cat"};

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
  // Registers version 1 of model "table": the tiny model of seed `seed` trained on a table of
  // table_encoding(), its classes kTableLabels, its features normalized.
  void add_table_model(uint64_t seed = 7) {
    registry::RegisterOptions options;
    options.preprocessing.table = table_encoding();
    options.preprocessing.class_labels = kTableLabels;
    options.preprocessing.feature_mean = {1.0f, 0.5f, 0.5f, 0.0f};
    options.preprocessing.feature_stddev = {2.0f, 0.5f, 0.5f, 1.0f};
    registry::Registry::open(dir(), false)
        .register_version("table", registry::testing::tiny_checkpoint(seed), {}, options);
  }
  std::filesystem::path dir() const { return scratch_.path() / "registry"; }
  std::string ref(const std::string& suffix) const { return (dir() / suffix).string(); }
  void move_champion(int version) {
    registry::Registry::open(dir(), false).set_alias("tiny", version, "champion");
  }
  // Version v's outputs for `inputs`, computed by a model of its own.
  std::vector<float> expected(int version, const std::vector<float>& inputs,
                              const std::string& name = "tiny") const {
    auto model = registry::ServedModel::load(dir() / name / std::to_string(version));
    std::vector<float> x = inputs;
    model.preprocess(x);
    return model.forward(x);
  }

 private:
  registry::testing::ScratchDir scratch_;
};

}  // namespace tuner::serving::testing

#endif  // TUNER_SERVING_TEST_SUPPORT_H_
