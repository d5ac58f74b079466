// The cells of a CSV/TSV table, read alike by the engine's table loader
// (executor/engine/csv_loader.h) and by the prediction of a table model (registry/table_input.h),
// so that a row is encoded for a prediction exactly as it was for training.
//
// Thread safety: pure functions.
#ifndef TUNER_TRAINING_DATA_CSV_CELLS_H_
#define TUNER_TRAINING_DATA_CSV_CELLS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tuner::training {

// The fields of one line: `delim`-separated, with spaces and a CR around a field left out; a
// field in double quotes may hold the delimiter, and "" in it is a quote. nullopt when a quoted
// field is not closed on its line.
std::optional<std::vector<std::string>> split_csv_line(std::string_view line, char delim);

// A missing value: an empty field, NA, N/A or NaN (in any case).
bool is_missing_cell(std::string_view cell);

// The cell as a finite number ("+1.5", "2e3"); nullopt otherwise.
std::optional<double> number_cell(std::string_view cell);

// The cell as an integer ("+3", "-7"); nullopt otherwise.
std::optional<int64_t> integer_cell(std::string_view cell);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DATA_CSV_CELLS_H_
