// The CSV (and TSV) loader of the data-set catalogue (datasets.h; internal to executor/): a
// header row, a label column and feature columns, numeric or categorical (one-hot, or a category
// index for a learned embedding), split into training, validation and test samples
// (docs/engine_jobs.md, "data" of format csv).
//
// Thread safety: reads files, shares no state; safe from any thread.
#ifndef TUNER_EXECUTOR_ENGINE_CSV_LOADER_H_
#define TUNER_EXECUTOR_ENGINE_CSV_LOADER_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "executor/engine/datasets.h"

namespace tuner::engine {

// A DatasetLoader for spec.files (format csv); `sizes` is unused. The label column gives the
// classes (spec.task classification or binary, the latter exactly 2), or with spec.task
// regression the one target, every value a number. Samples are [F] floats, F the
// encoded features (a numeric column is one, a categorical one a slot per category of the
// training split, plus one for a missing value with data.missing "mean"; an embedded column one,
// its category's index in that order, -1 for a category the training split lacks). Errors name
// `path` and the file, line and column: Error(kNotFound) for a missing file; kDataLoss for a row
// with another number of fields than the header, a missing value without data.missing "mean", a
// missing label, a regression's label that is not a number, or a file without rows;
// kInvalidArgument for a label or column the header lacks, a binary label column without 2
// classes, or a classification's label column of more than 20 distinct numbers, not all
// integers (set data.task to "regression" to predict them), or a data.embedding that names a
// column which is not a feature column.
Splits load_csv(const EngineJobSpec& spec, const SplitSizes& sizes, const std::string& path);

// What load_csv's splits would be shaped like, from one pass over the files' cells that builds no
// sample: name the training file's; classes (classification, binary) the label column's distinct
// values, as load_csv counts them; targets 1 (regression); sample [F], F the feature columns,
// when every one is numeric (a categorical column's slots depend on the training split: sample
// left unknown, rank 0). nullopt, nothing read, when a file is not named by an absolute path (nor
// under data.dir) or cannot be opened on this host. Errors as load_csv's for what it reads: the
// label or a column the header lacks, a malformed row, a missing label, a regression's label that
// is not a number, a binary label column without 2 classes, or a classification's of more than
// 20 distinct numbers, not all integers.
std::optional<DataShape> read_csv_shape(const EngineJobSpec& spec, const std::string& path);

// Reads data.embedding (format csv) at `path` into f.embedding and f.embedding_all: an integer
// >= 1, the dimension of every categorical column's embedding, or an object of column names to
// integers >= 1, with "*" for every categorical column not named. Throws Error(kInvalidArgument)
// naming the member: `job.data.embedding.site: expected an integer >= 1 (the dimension of the
// column's embedding), got 0`.
void read_csv_embedding(const nlohmann::json& value, const std::string& path, EngineDataFiles& f);

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_CSV_LOADER_H_
