// A table's rows (a CSV or TSV file with a header row) encoded as the input of a model trained
// on a table (an engine job's csv file, Preprocessing::table), as the engine's csv loader encoded
// its training data: what `tuner predict` runs such a model on (docs/registry.md).
//
// Thread safety: reads a file, shares no state; safe from any thread.
#ifndef TUNER_REGISTRY_TABLE_INPUT_H_
#define TUNER_REGISTRY_TABLE_INPUT_H_

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "registry/mlflow_model.h"

namespace tuner::registry {

struct TableInput {
  std::vector<float> features;  // [count, F], encoded as `encoding` says, not normalized
  // Each row's value of the encoding's label column, as written; empty when the file has no
  // such column.
  std::vector<std::string> labels;
  std::vector<int64_t> lines;  // each row's line in the file, 1-based
  int64_t count = 0;
};

// Reads `file`: a header row naming the columns, then one sample per row (blank lines skipped),
// fields separated by `delimiter` (0: '\t' for a .tsv or .tab file, else ','), a field in double
// quotes may hold the delimiter and "" for a quote. The feature columns are found by their names
// in any order; other columns are ignored. `limit` >= 0 reads only the first `limit` rows.
// Throws Error: kNotFound when `file` does not exist; kInvalidArgument naming the file, and the
// line and column where there is one, for a header without a feature column, a row with another
// number of fields than the header, a missing value that the encoding refuses, a numeric
// column's value that is not a number, or a file without rows.
TableInput read_table_input(const std::filesystem::path& file, const TableEncoding& encoding,
                            int64_t limit = -1, char delimiter = 0);

// F: the number of features a row encodes to under `encoding` (a numeric column one, a
// categorical column its categories and its missing slot, an embedded one one).
int64_t encoded_width(const TableEncoding& encoding);

// Encodes one row into `out` [F], as read_table_input encodes a row of a file and the engine's
// csv loader encoded its training data: `cells[k]` is the value of encoding.columns[k] as a
// table writes it ("3.5", "red", "" or "NA" for a missing value). `where` prefixes a message
// ("rows.csv:4", "dataframe_records[2]"). Throws Error(kInvalidArgument) naming `where` and the
// column for a missing value that the encoding refuses or a numeric column's value that is not a
// number. REQUIRES: cells.size() == encoding.columns.size(); out.size() == encoded_width().
void encode_table_row(const TableEncoding& encoding, std::span<const std::string_view> cells,
                      std::span<float> out, const std::string& where);

// The index of `label` (as a table writes it) in `class_labels`: the same text, or the same
// integer ("+3" is "3"); -1 when it is none of them.
int64_t class_index(const std::vector<std::string>& class_labels, std::string_view label);

}  // namespace tuner::registry

#endif  // TUNER_REGISTRY_TABLE_INPUT_H_
