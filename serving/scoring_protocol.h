// MLflow's scoring protocol (what `mlflow models serve` speaks on POST /invocations), for a model
// with one tensor input and one tensor output (docs/serving.md, "Requests and responses"):
//   application/json  {"inputs": ...} or {"instances": ...}   a batch of tensors, each of the
//                       input's shape or flattened; or {"input": batch} by the input's name;
//                       or, for instances, [{"input": sample}, ...]
//                     {"dataframe_split": {"columns": [...], "data": [[row], ...]}}
//                     {"dataframe_records": [{"column": value, ...}, ...]}
//                       a row per sample, its values the sample's flattened tensor
//                     "params" may be present and must be empty: the model takes none
//   text/csv          a row per sample; a first row that is not all numbers, or is 0, 1, ...,
//                       n-1 (pandas' default column names), is the header
// The answer to tensor inputs is MLflow's for its ONNX flavor: {"predictions": {"logits":
// [[...], ...]}}; to a data frame or CSV, a record per row: {"predictions": [{"logits": [...]},
// ...]}.
// A model trained on a table (registry::TableEncoding) takes a data frame's columns by name
// instead, its raw values encoded as `tuner predict` encodes a table's rows
// (registry/table_input.h), and answers each row's class label and probabilities as well.
//
// Thread safety: pure functions.
#ifndef TUNER_SERVING_SCORING_PROTOCOL_H_
#define TUNER_SERVING_SCORING_PROTOCOL_H_

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "registry/mlflow_model.h"
#include "serving/bounded_json.h"
#include "training/tensor.h"

namespace tuner::serving {

// A request the protocol refuses: the HTTP status (400 for a bad payload, 413 for one past a
// limit, 415 for an unknown content type) and a message naming the field and the shape it
// expected, or the limit.
class ScoringError : public std::runtime_error {
 public:
  ScoringError(int status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

// Which of the protocol's forms a request used.
enum class PayloadForm { kInputs, kInstances, kDataframeSplit, kDataframeRecords, kCsv };
const char* to_string(PayloadForm form);

struct ScoringInput {
  PayloadForm form = PayloadForm::kInputs;
  int64_t rows = 0;           // samples
  std::vector<float> values;  // [rows, input numel], row-major: the model's raw inputs
};

// Parses a request body for a model whose sample is `input` (without the batch dimension; its
// ONNX input is named `input_name`), in time linear in the body's length. A JSON body is held to
// `limits` (serving/bounded_json.h: nesting, keys per object, values), as a CSV body is to
// limits.max_values numbers; a tensor payload of plain numbers, read straight into floats, is
// bounded by its size alone. With `table` (a table's model, whose input is its F encoded
// features), dataframe_split and dataframe_records name the table's columns: each row is encoded
// by registry::encode_table_row, the feature columns found by name in any order, other columns
// ignored, null a missing value; the tensor forms and CSV take the encoded features as before.
// Throws ScoringError.
ScoringInput parse_scoring_request(std::string_view content_type, std::string_view body,
                                   const training::Shape& input, std::string_view input_name,
                                   const JsonLimits& limits = {},
                                   const registry::TableEncoding* table = nullptr);

// The response body for `outputs`, [rows, output numel] row-major, of a request of `form`.
// With `class_labels` (one per output: a table's model's classes), a data frame's record also
// holds the softmax of its logits and the label of the largest:
// {"logits": [...], "probabilities": [...], "label": "setosa"}. With `values` (a regression's
// model, whose outputs are the predicted values), a data frame's prediction is the value itself,
// or the list of a row's values when it has several: {"predictions": [436.6, 393.4]}, as
// MLflow's pyfunc answers for a regressor.
std::string format_predictions(PayloadForm form, std::span<const float> outputs, int64_t rows,
                               std::string_view output_name,
                               std::span<const std::string> class_labels = {}, bool values = false);

// MLflow's error body: {"error_code": "BAD_REQUEST", "message": ...}.
std::string format_error(std::string_view error_code, std::string_view message);

}  // namespace tuner::serving

#endif  // TUNER_SERVING_SCORING_PROTOCOL_H_
