// Samples from a CSV file: one sample per row, each column a feature. A first row that is not
// all numbers is a header naming the columns; there, a column named "label" holds each sample's
// true class and one named "predicted" its predicted class (integers >= 0), and neither is a
// feature. Thread safety: a pure function over a file.
#ifndef TUNER_DRIFT_CSV_SAMPLES_H_
#define TUNER_DRIFT_CSV_SAMPLES_H_

#include <cstdint>
#include <filesystem>

#include "drift/samples.h"

namespace tuner::drift {

// Reads every non-empty row (LF or CRLF), the first `limit` when limit >= 0. Throws
// Error(kNotFound) for an unreadable file, Error(kInvalidArgument) naming the file, line and
// column of a row with another number of columns than the first, a field that is not a finite
// number (a feature: of float32's range), a class that is not an integer >= 0, a header with two
// "label" or two "predicted" columns, or a file without rows.
Samples read_csv_samples(const std::filesystem::path& path, int64_t limit = -1);

}  // namespace tuner::drift

#endif  // TUNER_DRIFT_CSV_SAMPLES_H_
