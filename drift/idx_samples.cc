#include "drift/idx_samples.h"

#include <cmath>

#include "training/data/dataset.h"
#include "training/data/idx.h"
#include "trials/error.h"

namespace tuner::drift {

namespace fs = std::filesystem;

fs::path idx_labels_beside(const fs::path& images) {
  std::string name = images.filename().string();
  const size_t at = name.find("images-idx3");
  if (at == std::string::npos) return {};
  name.replace(at, 11, "labels-idx1");
  const fs::path labels = images.parent_path() / name;
  return fs::exists(labels) ? labels : fs::path();
}

Samples read_idx_samples(const fs::path& images, const fs::path& labels, int64_t limit,
                         IdxUnits units) {
  for (const fs::path& p : {images, labels}) {
    if (!fs::is_regular_file(p)) throw Error(ErrorCode::kNotFound, p.string() + ": no such file");
  }
  training::Dataset data;
  try {
    data = training::read_idx(images.string(), labels.string(), limit);
  } catch (const training::DataError& e) {
    throw Error(ErrorCode::kInvalidArgument, e.what());
  }
  Samples out;
  out.source.kind = "idx";
  out.source.path = images.string();
  out.count = data.size();
  out.input_width = data.sample_numel();
  out.input_shape = data.sample_shape();
  out.inputs.assign(data.features().begin(), data.features().end());
  // read_idx scales the bytes to [0, 1] (bytes / 255); times 255, rounded, gives them back exactly.
  if (units == IdxUnits::kBytes) {
    for (float& v : out.inputs) v = std::round(v * 255.0f);
  }
  out.labels.assign(data.labels().begin(), data.labels().end());
  if (out.count == 0) throw Error(ErrorCode::kInvalidArgument, images.string() + ": no images");
  return out;
}

}  // namespace tuner::drift
