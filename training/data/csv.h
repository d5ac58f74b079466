// Labelled samples from a CSV file: one label column and feature columns.
#ifndef TUNER_TRAINING_DATA_CSV_H_
#define TUNER_TRAINING_DATA_CSV_H_

#include <string>

#include "training/data/dataset.h"
#include "training/tensor.h"

namespace tuner::training {

struct CsvOptions {
  // The column holding the class label, an integer >= 0; negative counts from the end (-1 is
  // the last column). Default: the first column.
  int label_column = 0;
  char delimiter = ',';
  // kAuto skips the first row when its label field is not a number (a header line).
  enum class Header { kAuto, kYes, kNo } header = Header::kAuto;
  // The sample shape of the features (e.g. [1, 28, 28] for a pixel CSV); rank 0 (the default)
  // means flat [F] with F the number of feature columns.
  Shape sample_shape;
  // Classes; 0 (the default) means 1 + the largest label seen.
  int32_t num_classes = 0;
};

// Reads every non-empty row (LF or CRLF line ends). Throws DataError naming the file and line:
// unreadable file, a row whose column count differs from the first row's, a field that is not a
// number, a label that is not an integer in [0, num_classes), a sample shape that does not hold
// the feature columns, or a file without rows.
Dataset read_csv(const std::string& path, const CsvOptions& options = {});

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DATA_CSV_H_
