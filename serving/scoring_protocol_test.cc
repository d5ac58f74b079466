#include "serving/scoring_protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

namespace tuner::serving {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const training::Shape kImage{1, 2, 2};  // 4 values a sample
const training::Shape kVector{3};

ScoringInput parse_json(const std::string& body, const training::Shape& shape = kImage) {
  return parse_scoring_request("application/json", body, shape, "input");
}

// The message of the ScoringError a body raises (and its status).
std::string refusal(const std::string& body, int want_status = 400,
                    const std::string& type = "application/json",
                    const training::Shape& shape = kImage) {
  try {
    parse_scoring_request(type, body, shape, "input");
  } catch (const ScoringError& e) {
    EXPECT_EQ(e.status(), want_status) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << body;
  return "";
}

TEST(ScoringProtocolTest, InputsTakeNestedOrFlatSamples) {
  const ScoringInput nested = parse_json(R"({"inputs": [[[[1, 2], [3, 4]]], [[[5, 6], [7, 8]]]]})");
  EXPECT_EQ(nested.form, PayloadForm::kInputs);
  EXPECT_EQ(nested.rows, 2);
  EXPECT_THAT(nested.values, ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  const ScoringInput flat = parse_json(R"({"inputs": [[1, 2, 3, 4]]})");
  EXPECT_EQ(flat.rows, 1);
  EXPECT_THAT(flat.values, ElementsAre(1, 2, 3, 4));
}

TEST(ScoringProtocolTest, NamedTensorsAndInstanceRecords) {
  EXPECT_THAT(parse_json(R"({"inputs": {"input": [[1, 2, 3, 4]]}})").values,
              ElementsAre(1, 2, 3, 4));
  const ScoringInput rows =
      parse_json(R"({"instances": [{"input": [1, 2, 3, 4]}, {"input": [5, 6, 7, 8]}]})");
  EXPECT_EQ(rows.form, PayloadForm::kInstances);
  EXPECT_EQ(rows.rows, 2);
  EXPECT_THAT(rows.values, ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
}

TEST(ScoringProtocolTest, DataFramesTakeARowPerSample) {
  const ScoringInput split = parse_json(
      R"({"dataframe_split": {"columns": ["a", "b", "c"], "data": [[1, 2, 3], [4, 5, 6]]}})",
      kVector);
  EXPECT_EQ(split.form, PayloadForm::kDataframeSplit);
  EXPECT_EQ(split.rows, 2);
  EXPECT_THAT(split.values, ElementsAre(1, 2, 3, 4, 5, 6));
  // Records: the first record's column order holds for every record.
  const ScoringInput records = parse_json(
      R"({"dataframe_records": [{"b": 2, "a": 1, "c": 3}, {"a": 4, "c": 6, "b": 5}]})", kVector);
  EXPECT_EQ(records.form, PayloadForm::kDataframeRecords);
  EXPECT_THAT(records.values, ElementsAre(2, 1, 3, 5, 4, 6));
}

TEST(ScoringProtocolTest, CsvWithOrWithoutAHeader) {
  const ScoringInput with =
      parse_scoring_request("text/csv", "a,b,c\n1,2,3\r\n4, 5 ,6\n", kVector, "input");
  EXPECT_EQ(with.form, PayloadForm::kCsv);
  EXPECT_EQ(with.rows, 2);
  EXPECT_THAT(with.values, ElementsAre(1, 2, 3, 4, 5, 6));
  const ScoringInput without =
      parse_scoring_request("text/csv; charset=utf-8", "1,2,3", kVector, "input");
  EXPECT_THAT(without.values, ElementsAre(1, 2, 3));
  // pandas' default header of a frame made from arrays.
  const ScoringInput pandas = parse_scoring_request("text/csv", "0,1,2\n7,8,9\n", kVector, "input");
  EXPECT_THAT(pandas.values, ElementsAre(7, 8, 9));
}

TEST(ScoringProtocolTest, EmptyParamsAreAccepted) {
  EXPECT_EQ(parse_json(R"({"inputs": [[1, 2, 3, 4]], "params": {}})").rows, 1);
  EXPECT_THAT(refusal(R"({"inputs": [[1, 2, 3, 4]], "params": {"temperature": 2}})"),
              HasSubstr("params: this model takes no parameters"));
}

TEST(ScoringProtocolTest, BadPayloadsNameTheFieldAndTheExpectedShape) {
  EXPECT_THAT(refusal(R"({"inputs": [[1, 2, 3]]})"), HasSubstr("inputs[0]"));
  EXPECT_THAT(refusal(R"({"inputs": [[1, 2, 3]]})"), HasSubstr("[1, 2, 2]"));
  EXPECT_THAT(refusal(R"({"inputs": [[1, "x", 3, 4]]})"),
              HasSubstr("inputs[0][1]: a string, expected a number"));
  EXPECT_THAT(refusal(R"({"inputs": []})"), HasSubstr("inputs: no samples"));
  EXPECT_THAT(refusal(R"({"inputs": {"x": [[1, 2, 3, 4]]}})"), HasSubstr("{\"input\": [...]}"));
  EXPECT_THAT(
      refusal(R"({"dataframe_split": {"data": [[1, 2]]}})", 400, "application/json", kVector),
      HasSubstr("dataframe_split.data[0]: 2 values, expected a row of 3 numbers"));
  EXPECT_THAT(
      refusal(R"({"dataframe_records": [{"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 2, "d": 3}]})", 400,
              "application/json", kVector),
      HasSubstr("dataframe_records[1]: no column 'c'"));
  EXPECT_THAT(refusal("1,2\n", 400, "text/csv", kVector),
              HasSubstr("csv line 1: 2 values, expected 3"));
  EXPECT_THAT(refusal("a,b,c\n1,2,x\n", 400, "text/csv", kVector),
              HasSubstr("csv line 2, column 3: 'x' is not a number"));
  EXPECT_THAT(refusal("{\"inputs\": [[1, 2, 3, 4]], \"instances\": [[1, 2, 3, 4]]}"),
              HasSubstr("both"));
  EXPECT_THAT(refusal(R"({"data": [[1, 2, 3, 4]]})"), HasSubstr("unknown field 'data'"));
  EXPECT_THAT(refusal("{}"), HasSubstr("no input"));
  EXPECT_THAT(refusal("[1, 2"), HasSubstr("not JSON"));
  EXPECT_THAT(refusal(R"({"inputs": [[1e39, 2, 3, 4]]})"), HasSubstr("out of float32's range"));
  EXPECT_THAT(refusal(std::string(100, '[') + std::string(100, ']')), HasSubstr("deeper than 64"));
}

// A hostile body costs the server what it reads up to the first key that cannot be right, not
// the whole body: a record wider than the model's input, an object of unknown fields.
TEST(ScoringProtocolTest, ABodyOfManyKeysIsRefusedAtTheFirstKeyThatCannotBeRight) {
  std::string record = "{";
  for (int i = 0; i < 100000; ++i) {
    record += (i > 0 ? ",\"c" : "\"c") + std::to_string(i) + "\":1";
  }
  record += "}";
  const std::string body = R"({"dataframe_records": [)" + record + "]}";
  EXPECT_THAT(refusal(body, 400, "application/json", kVector),
              HasSubstr("dataframe_records[0]: an object of more than 11 keys, which no request "
                        "to this model has (a record has the 3 values of its input [3])"));
  // Unknown top-level fields: refused at the first.
  EXPECT_THAT(refusal("{\"k0\": 0, " + record.substr(1)),
              HasSubstr("unknown field 'k0': the body holds exactly one of"));
  // Past the configured limit, where the model's records are wider than it: 413.
  JsonLimits limits;
  limits.max_object_keys = 1000;
  try {
    parse_scoring_request("application/json", body, training::Shape{5000}, "input", limits);
    ADD_FAILURE() << "accepted";
  } catch (const ScoringError& e) {
    EXPECT_EQ(e.status(), 413);
    EXPECT_THAT(e.what(), HasSubstr("more than 1000 keys"));
  }
}

TEST(ScoringProtocolTest, RecordsOfManyColumnsInAnyOrderAreReadByColumnName) {
  const training::Shape wide{3000};
  std::string first = "{", second = "{";
  for (int i = 0; i < 3000; ++i) {
    first += (i > 0 ? ",\"c" : "\"c") + std::to_string(i) + "\":" + std::to_string(i % 7);
    const int j = 2999 - i;  // the second record lists its columns backwards
    second += (i > 0 ? ",\"c" : "\"c") + std::to_string(j) + "\":" + std::to_string(j % 5);
  }
  const ScoringInput in =
      parse_json(R"({"dataframe_records": [)" + first + "}, " + second + "}]}", wide);
  ASSERT_EQ(in.rows, 2);
  for (int i = 0; i < 3000; ++i) {
    ASSERT_EQ(in.values[static_cast<size_t>(i)], i % 7);
    ASSERT_EQ(in.values[static_cast<size_t>(3000 + i)], i % 5);
  }
  EXPECT_THAT(refusal(R"({"dataframe_records": [{"a": 1, "a": 2, "b": 3}]})", 400,
                      "application/json", kVector),
              HasSubstr("dataframe_records[0]: column 'a' twice"));
  EXPECT_THAT(
      refusal(R"({"dataframe_records": [{"a": 1, "b": 2, "c": 3}, {"a": 1, "a": 2, "b": 3}]})", 400,
              "application/json", kVector),
      HasSubstr("dataframe_records[1]: no column 'c'"));
}

TEST(ScoringProtocolTest, ANumberPastADoublesRangeIsRefusedAsOutOfRangeNotAsNotJson) {
  EXPECT_THAT(refusal(R"({"inputs": [[1, 1e400, 3, 4]]})"),
              HasSubstr("inputs[0][1]: the number 1e400 is out of range"));
  EXPECT_THAT(refusal(R"({"dataframe_split": {"data": [[1, 2, )" + std::string(401, '7') + "]]}}",
                      400, "application/json", kVector),
              HasSubstr("dataframe_split.data[0][2]: the number 777"));
}

TEST(ScoringProtocolTest, CsvPastTheValueLimitIs413) {
  JsonLimits limits;
  limits.max_values = 5;
  try {
    parse_scoring_request("text/csv", "1,2,3\n4,5,6\n", kVector, "input", limits);
    ADD_FAILURE() << "accepted";
  } catch (const ScoringError& e) {
    EXPECT_EQ(e.status(), 413);
    EXPECT_THAT(e.what(), HasSubstr("csv line 2: more than 5 values"));
  }
}

TEST(ScoringProtocolTest, AnUnknownContentTypeIs415) {
  EXPECT_THAT(refusal("1,2,3,4", 415, "application/octet-stream"),
              HasSubstr("send application/json or text/csv"));
}

// A table's data frame by column name: the same features as registry::encode_table_row makes.
TEST(ScoringProtocolTest, ATablesDataFrameIsEncodedByColumnName) {
  registry::TableEncoding table;
  table.columns = {registry::TableColumn{.name = "a", .fill = 1.5f},
                   registry::TableColumn{.name = "color",
                                         .categorical = true,
                                         .categories = {"blue", "red"},
                                         .missing_slot = true}};
  table.missing_mean = true;
  const training::Shape input{4};
  const ScoringInput split = parse_scoring_request(
      "application/json",
      R"({"dataframe_split": {"columns": ["color", "x", "a"], "data": [["red", 0, 2], [null, 0, "1e1"]]}})",
      input, "input", {}, &table);
  EXPECT_EQ(split.rows, 2);
  EXPECT_THAT(split.values, ElementsAre(2, 0, 1, 0, 10, 0, 0, 1));
  const ScoringInput records = parse_scoring_request(
      "application/json", R"({"dataframe_records": [{"a": null, "color": "blue"}]})", input,
      "input", {}, &table);
  EXPECT_THAT(records.values, ElementsAre(1.5, 1, 0, 0));
  table.missing_mean = false;
  try {
    parse_scoring_request(
        "application/json",
        R"({"dataframe_records": [{"a": 1, "color": "red"}, {"a": "NA", "color": "red"}]})", input,
        "input", {}, &table);
    ADD_FAILURE() << "a missing value accepted";
  } catch (const ScoringError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_THAT(e.what(), HasSubstr("dataframe_records[1]: column \"a\" has no value"));
  }
}

TEST(ScoringProtocolTest, AnswersInMlflowsShapes) {
  const std::vector<float> outputs = {1.5f, -2, 0.25f, 3};
  EXPECT_EQ(format_predictions(PayloadForm::kInputs, outputs, 2, "logits"),
            R"({"predictions": {"logits": [[1.5, -2], [0.25, 3]]}})");
  EXPECT_EQ(format_predictions(PayloadForm::kDataframeSplit, outputs, 2, "logits"),
            R"({"predictions": [{"logits": [1.5, -2]}, {"logits": [0.25, 3]}]})");
  // A table's model: each record's probabilities and label too; tensor answers as before.
  const std::vector<std::string> labels = {"no", "yes"};
  EXPECT_EQ(format_predictions(PayloadForm::kDataframeRecords, std::vector<float>{0, 0}, 1,
                               "logits", labels),
            R"({"predictions": [{"logits": [0, 0], "probabilities": [0.5, 0.5], "label": "no"}]})");
  EXPECT_EQ(format_predictions(PayloadForm::kInputs, outputs, 2, "logits", labels),
            R"({"predictions": {"logits": [[1.5, -2], [0.25, 3]]}})");
  // A regression's model: a data frame's predictions are the values (a list per row of several).
  EXPECT_EQ(format_predictions(PayloadForm::kDataframeSplit, outputs, 4, "logits", {}, true),
            R"({"predictions": [1.5, -2, 0.25, 3]})");
  EXPECT_EQ(format_predictions(PayloadForm::kDataframeRecords, outputs, 2, "logits", {}, true),
            R"({"predictions": [[1.5, -2], [0.25, 3]]})");
  EXPECT_EQ(format_predictions(PayloadForm::kInputs, outputs, 4, "logits", {}, true),
            R"({"predictions": {"logits": [[1.5], [-2], [0.25], [3]]}})");
  EXPECT_EQ(format_error("BAD_REQUEST", "inputs: \"x\""),
            R"({"error_code": "BAD_REQUEST", "message": "inputs: \"x\""})");
}

}  // namespace
}  // namespace tuner::serving
