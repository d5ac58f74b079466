#include "drift/read_samples.h"

#include "drift/csv_samples.h"
#include "drift/request_log.h"
#include "trials/error.h"

namespace tuner::drift {

namespace fs = std::filesystem;

SourceKind source_kind(const fs::path& path) {
  const std::string ext = path.extension().string();
  if (fs::is_directory(path) || ext == ".jsonl" || ext == ".json") return SourceKind::kRequestLog;
  if (ext == ".csv" || ext == ".CSV") return SourceKind::kCsv;
  return SourceKind::kIdx;
}

Samples read_samples(const fs::path& path, const ReadOptions& options) {
  if (!fs::exists(path)) {
    throw Error(ErrorCode::kNotFound, path.string() + ": no such file or directory");
  }
  switch (source_kind(path)) {
    case SourceKind::kRequestLog:
      return read_request_log(path, {.skip_bad = options.skip_bad, .limit = options.limit});
    case SourceKind::kCsv:
      return read_csv_samples(path, options.limit);
    case SourceKind::kIdx:
      break;
  }
  fs::path labels = options.labels.empty() ? idx_labels_beside(path) : options.labels;
  if (labels.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                path.string() +
                    ": idx images need their labels file (its name with labels-idx1 "
                    "for images-idx3, beside it) or one given");
  }
  return read_idx_samples(path, labels, options.limit, options.units);
}

}  // namespace tuner::drift
