// The CSV (and TSV) loader of the data-set catalogue (datasets.h; internal to executor/): a
// header row, a label column and feature columns, numeric or categorical (one-hot), split into
// training, validation and test samples (docs/engine_jobs.md, "data" of format csv).
//
// Thread safety: reads files, shares no state; safe from any thread.
#ifndef TUNER_EXECUTOR_ENGINE_CSV_LOADER_H_
#define TUNER_EXECUTOR_ENGINE_CSV_LOADER_H_

#include <string>

#include "executor/engine/datasets.h"

namespace tuner::engine {

// A DatasetLoader for spec.files (format csv); `sizes` is unused. The label column gives the
// classes (spec.task classification or binary, the latter exactly 2), or with spec.task
// regression the one target, every value a number. Samples are [F] floats, F the
// encoded features (a numeric column is one, a categorical one a slot per category of the
// training split, plus one for a missing value with data.missing "mean"). Errors name `path` and
// the file, line and column: Error(kNotFound) for a missing file; kDataLoss for a row with
// another number of fields than the header, a missing value without data.missing "mean", a
// missing label, a regression's label that is not a number, or a file without rows;
// kInvalidArgument for a label or column the header lacks, a binary label column without 2
// classes, or a classification's label column of more than 20 distinct numbers, not all
// integers (set data.task to "regression" to predict them).
Splits load_csv(const EngineJobSpec& spec, const SplitSizes& sizes, const std::string& path);

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_CSV_LOADER_H_
