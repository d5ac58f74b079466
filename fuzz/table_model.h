// The table a fuzzed table reader encodes its rows for: a numeric column "age" (missing: 30)
// and a categorical column "color" (red, blue, and a slot for a missing value), 4 features.
#ifndef TUNER_FUZZ_TABLE_MODEL_H_
#define TUNER_FUZZ_TABLE_MODEL_H_

#include "registry/mlflow_model.h"

namespace tuner::fuzz {

inline const registry::TableEncoding& table_model() {
  static const registry::TableEncoding encoding = [] {
    registry::TableEncoding e;
    e.columns = {{.name = "age", .categorical = false, .fill = 30.0f},
                 {.name = "color",
                  .categorical = true,
                  .categories = {"red", "blue"},
                  .missing_slot = true}};
    e.features = {"age", "color=red", "color=blue", "color=(missing)"};
    e.label = "label";
    e.missing_mean = true;
    return e;
  }();
  return encoding;
}

}  // namespace tuner::fuzz

#endif  // TUNER_FUZZ_TABLE_MODEL_H_
