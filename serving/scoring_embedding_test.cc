// Data frames for a table's model with an embedded column: each row's category becomes its
// index (-1 for one the training split lacked, the last for a missing value), by column name,
// in dataframe_split and dataframe_records alike.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "registry/mlflow_model.h"
#include "registry/table_input.h"
#include "serving/scoring_protocol.h"

namespace tuner::serving {
namespace {

// A numeric column "a" (missing: 1.5), "store" embedded (s1, s2 and a missing index) and
// "color" one-hot (blue, red): 4 features.
registry::TableEncoding embedded_table() {
  registry::TableEncoding e;
  e.columns = {
      registry::TableColumn{.name = "a", .fill = 1.5f},
      registry::TableColumn{.name = "store",
                            .categorical = true,
                            .categories = {"s1", "s2"},
                            .missing_slot = true,
                            .embedding = 4},
      registry::TableColumn{.name = "color", .categorical = true, .categories = {"blue", "red"}}};
  e.features = {"a", "store", "color=blue", "color=red"};
  e.label = "kind";
  e.missing_mean = true;
  return e;
}

TEST(ScoringEmbeddingTest, DataFramesGiveAnEmbeddedColumnsIndexByName) {
  const registry::TableEncoding table = embedded_table();
  ASSERT_EQ(registry::encoded_width(table), 4);
  const std::vector<float> want = {2,    1,  0, 1,   // s2, red
                                   0.5f, -1, 1, 0,   // an unknown store, blue
                                   1.5f, 2,  0, 0};  // missing a and store, an unknown color
  const ScoringInput split =
      parse_scoring_request("application/json",
                            R"({"dataframe_split": {"columns": ["color", "store", "a"],
          "data": [["red", "s2", 2], ["blue", "s9", 0.5], ["green", null, null]]}})",
                            training::Shape{4}, "input", {}, &table);
  ASSERT_EQ(split.rows, 3);
  EXPECT_EQ(split.values, want);
  const ScoringInput records =
      parse_scoring_request("application/json",
                            R"({"dataframe_records": [{"a": 2, "store": "s2", "color": "red"},
          {"store": "s9", "color": "blue", "a": 0.5},
          {"a": null, "store": null, "color": "green"}]})",
                            training::Shape{4}, "input", {}, &table);
  EXPECT_EQ(records.values, want);
}

TEST(ScoringEmbeddingTest, AMissingValueWithoutAMissingIndexIsAnUnknownCategory) {
  // A category the training split lacked, a missing value without a missing index: -1 both.
  registry::TableEncoding table = embedded_table();
  table.columns[1].missing_slot = false;
  std::vector<float> out(4);
  const std::vector<std::string_view> cells = {"1", "", "red"};
  registry::encode_table_row(table, cells, out, "row 1");
  EXPECT_EQ(out, (std::vector<float>{1, -1, 0, 1}));
}

}  // namespace
}  // namespace tuner::serving
