#include "executor/engine/npy_loader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "executor/engine/data_split.h"
#include "training/data/dataset.h"
#include "training/data/npy.h"
#include "trials/error.h"

namespace tuner::engine {

namespace {

using training::NpyArray;

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::kDataLoss, path + ": " + what);
}

std::string resolve(const EngineJobSpec& spec, const std::string& file) {
  if (spec.data_dir.empty() || std::filesystem::path(file).is_absolute()) return file;
  return (std::filesystem::path(spec.data_dir) / file).string();
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// The array `name`: an .npy file, or a member of the .npz spec.files.path.
NpyArray open_array(const EngineJobSpec& spec, const std::string& name, const std::string& path) {
  const std::string file = resolve(spec, spec.files.path.empty() ? name : spec.files.path);
  if (!std::filesystem::exists(file)) {
    throw Error(ErrorCode::kNotFound, path + ": " + file + " does not exist");
  }
  try {
    return spec.files.path.empty() ? NpyArray::open(file) : NpyArray::open_npz(file, name);
  } catch (const training::DataError& e) {
    bad(path, e.what());
  }
}

// The features and labels of one pair of arrays, checked.
struct Pair {
  NpyArray x, y;
  int64_t n = 0;
  training::Shape sample;
  int32_t classes = 0;  // 1 + the largest label
  int64_t targets = 0;  // regression: the values of y per sample
};

Pair open_pair(const EngineJobSpec& spec, const std::string& x_name, const std::string& y_name,
               const std::string& path) {
  Pair p{.x = open_array(spec, x_name, path), .y = open_array(spec, y_name, path)};
  const bool regression = spec.task == training::Task::kRegression;
  if (p.x.kind() == 'b') {
    bad(path, p.x.name() + ": element type " + p.x.dtype() +
                  " (features are float32, float64, uint8 or another integer type)");
  }
  if (regression && p.y.kind() != 'i' && p.y.kind() != 'u' && p.y.kind() != 'f') {
    bad(path, p.y.name() + ": element type " + p.y.dtype() +
                  " (the targets of data.task \"regression\" are numbers: np.float32, "
                  "np.float64 or an integer type)");
  }
  if (!regression && p.y.kind() != 'i' && p.y.kind() != 'u') {
    bad(path,
        p.y.name() + ": element type " + p.y.dtype() +
            " (labels are an integer type: np.int64, np.int32, np.uint8, ...)" +
            (p.y.kind() == 'f' ? "; to predict the values, set data.task to \"regression\"" : ""));
  }
  const std::vector<int64_t>& xs = p.x.shape();
  const std::vector<int64_t>& ys = p.y.shape();
  if (xs.empty()) bad(path, p.x.name() + ": a scalar (features are [N, sample...])");
  if (regression && (ys.empty() || ys.size() > 2 || (ys.size() == 2 && ys[1] < 1))) {
    bad(path, p.y.name() + ": shape " + shape_text(ys) + " (targets are [N] or [N, T])");
  }
  if (!regression && (ys.empty() || ys.size() > 2 || (ys.size() == 2 && ys[1] != 1))) {
    bad(path, p.y.name() + ": shape " + shape_text(ys) + " (labels are [N] or [N, 1])");
  }
  p.n = xs[0];
  if (ys[0] != p.n) {
    bad(path, p.y.name() + ": " + std::to_string(ys[0]) + " labels, but " + p.x.name() + " has " +
                  std::to_string(p.n) + " samples (shape " + shape_text(xs) + ")");
  }
  if (p.n == 0) bad(path, p.x.name() + ": no samples");
  std::vector<int64_t> sample(xs.begin() + 1, xs.end());
  if (sample.empty()) sample.push_back(1);
  if (static_cast<int>(sample.size()) >= training::kMaxRank) {
    bad(path, p.x.name() + ": shape " + shape_text(xs) + " (a sample has at most " +
                  std::to_string(training::kMaxRank - 1) + " dimensions)");
  }
  p.sample = training::Shape::from(sample);
  if (regression) {
    p.targets = ys.size() == 2 ? ys[1] : 1;
    return p;
  }
  int64_t top = -1;
  for (int64_t i = 0; i < p.n; ++i) {
    const int64_t v = p.y.integer(i);
    if (v < 0 || v > (int64_t{1} << 30)) {
      bad(path, p.y.name() + ": label " + std::to_string(v) + " at index " + std::to_string(i) +
                    " (labels are class indices >= 0)");
    }
    top = std::max(top, v);
  }
  p.classes = static_cast<int32_t>(top + 1);
  if (spec.task == training::Task::kBinary && top > 1) {
    bad(path, p.y.name() + ": data.task is \"binary\", but the largest label is " +
                  std::to_string(top) + " (a binary task's labels are 0 and 1)");
  }
  if (spec.task == training::Task::kBinary) p.classes = 2;
  return p;
}

// The samples `indices` of `p` (all when `indices` is nullptr), with `classes` classes.
training::Dataset gather(const Pair& p, const std::vector<int64_t>* indices, int32_t classes) {
  const int64_t numel = p.sample.numel();
  const int64_t count = indices ? static_cast<int64_t>(indices->size()) : p.n;
  std::vector<float> x(static_cast<size_t>(count * numel));
  if (p.targets > 0) {
    const int64_t t = p.targets;
    std::vector<float> y(static_cast<size_t>(count * t));
    for (int64_t k = 0; k < count; ++k) {
      const int64_t i = indices ? (*indices)[static_cast<size_t>(k)] : k;
      p.x.read_floats(i * numel, numel, x.data() + k * numel);
      p.y.read_floats(i * t, t, y.data() + k * t);
    }
    return training::Dataset::regression(p.sample, std::move(x), std::move(y), t);
  }
  std::vector<int32_t> y(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) {
    const int64_t i = indices ? (*indices)[static_cast<size_t>(k)] : k;
    p.x.read_floats(i * numel, numel, x.data() + k * numel);
    y[static_cast<size_t>(k)] = static_cast<int32_t>(p.y.integer(i));
  }
  return training::Dataset(p.sample, std::move(x), std::move(y), classes);
}

}  // namespace

Splits load_npy(const EngineJobSpec& spec, const SplitSizes& /*sizes*/, const std::string& path) {
  const EngineDataFiles& f = spec.files;
  const Pair train = open_pair(spec, f.x, f.y, path);
  std::optional<Pair> test;
  if (!f.test_x.empty()) {
    test = open_pair(spec, f.test_x, f.test_y, path);
    if (!(test->sample == train.sample)) {
      bad(path, test->x.name() + ": samples of shape " + test->sample.to_string() + ", but " +
                    train.x.name() + "'s are " + train.sample.to_string());
    }
  }
  const int32_t classes = std::max(train.classes, test ? test->classes : 0);
  if (test && test->targets != train.targets) {
    bad(path, test->y.name() + ": " + std::to_string(test->targets) + " targets per sample, but " +
                  train.y.name() + " has " + std::to_string(train.targets));
  }
  const SplitIndices split = split_indices(train.n, f.validation_fraction,
                                           test ? 0.0 : f.test_fraction, f.split_seed, path);
  Splits s;
  s.name = std::filesystem::path(f.path.empty() ? f.x : f.path).filename().string();
  s.train = gather(train, &split.train, classes);
  if (!split.validation.empty()) s.validation = gather(train, &split.validation, classes);
  if (test) {
    s.test = gather(*test, nullptr, classes);
  } else if (!split.test.empty()) {
    s.test = gather(train, &split.test, classes);
  }
  return s;
}

std::optional<DataShape> read_npy_shape(const EngineJobSpec& spec, const std::string& path) {
  const EngineDataFiles& f = spec.files;
  std::vector<std::string> names;
  if (!f.path.empty()) {
    names.push_back(f.path);
  } else {
    names = {f.x, f.y};
    if (!f.test_x.empty()) names.insert(names.end(), {f.test_x, f.test_y});
  }
  for (const std::string& name : names) {
    const std::string file = resolve(spec, name);
    std::error_code ec;
    if (!std::filesystem::path(file).is_absolute() || !std::filesystem::is_regular_file(file, ec) ||
        !std::ifstream(file, std::ios::binary)) {
      return std::nullopt;
    }
  }
  const Pair train = open_pair(spec, f.x, f.y, path);
  DataShape shape{.name = std::filesystem::path(f.path.empty() ? f.x : f.path).filename().string(),
                  .sample = train.sample,
                  .classes = train.classes,
                  .targets = train.targets,
                  .task = spec.task};
  if (!f.test_x.empty()) {
    const Pair test = open_pair(spec, f.test_x, f.test_y, path);
    if (!(test.sample == train.sample)) {
      bad(path, test.x.name() + ": samples of shape " + test.sample.to_string() + ", but " +
                    train.x.name() + "'s are " + train.sample.to_string());
    }
    if (test.targets != train.targets) {
      bad(path, test.y.name() + ": " + std::to_string(test.targets) + " targets per sample, but " +
                    train.y.name() + " has " + std::to_string(train.targets));
    }
    shape.classes = std::max(shape.classes, test.classes);
  }
  return shape;
}

}  // namespace tuner::engine
