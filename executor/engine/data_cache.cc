#include "executor/engine/data_cache.h"

#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "executor/engine/image_folder_loader.h"
#include "training/data/dataset_cache.h"
#include "training/data/dataset_file.h"
#include "training/data/fashion_mnist.h"

namespace tuner::engine {

namespace {

namespace fs = std::filesystem;

constexpr int64_t kDefaultBudget = int64_t{4} << 30;
constexpr double kDefaultWaitSeconds = 600;

std::string resolve(const EngineJobSpec& spec, const std::string& folder) {
  if (spec.data_dir.empty() || fs::path(folder).is_absolute()) return folder;
  return (fs::path(spec.data_dir) / folder).string();
}

// The folders' listings (training, validation, test; absent ones empty) and the key's text: the
// options, then every image file of each folder with its size and mtime.
struct Keyed {
  std::optional<ImageFolderListing> listings[3];
  std::string key;
};
Keyed cache_key(const EngineJobSpec& spec, const std::string& path) {
  Keyed out;
  const EngineDataFiles& f = spec.files;
  std::ostringstream k;
  k.precision(17);
  k << "image_folder v2\nsize " << f.image_height << " " << f.image_width << "\ncolor "
    << (f.grayscale ? "grayscale" : "rgb") << "\nvalidation_fraction "
    << (f.validation.empty() ? f.validation_fraction : 0.0) << "\ntest_fraction "
    << (f.test.empty() ? f.test_fraction : 0.0) << "\nsplit_seed " << f.split_seed << "\n";
  const std::string folders[] = {f.path.empty() ? f.train : f.path, f.validation, f.test};
  const char* roles[] = {"train", "validation", "test"};
  for (int r = 0; r < 3; ++r) {
    if (folders[r].empty()) continue;
    out.listings[r] = list_image_folder(resolve(spec, folders[r]), path);
    const ImageFolderListing& l = *out.listings[r];
    std::error_code ec;
    k << roles[r] << " " << fs::absolute(l.root, ec).lexically_normal().string() << "\n";
    for (const std::string& c : l.classes) k << "class " << c << "\n";
    for (const std::string& file : l.files) {
      struct stat st {};  // one stat a file: a folder holds tens of thousands
      if (::stat(file.c_str(), &st) != 0) st = {};
      k << file << " " << st.st_size << " " << st.st_mtim.tv_sec << "." << st.st_mtim.tv_nsec
        << "\n";
    }
  }
  out.key = k.str();
  return out;
}

// The key of a file the splits are read from: its absolute path, size and contents' checksum.
void key_file(std::ostringstream& k, const std::string& role, const std::string& file) {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  const std::optional<uint64_t> sum = training::file_checksum(file);
  k << role << " " << fs::absolute(file, ec).lexically_normal().string() << " " << size << " "
    << (sum ? std::to_string(*sum) : "unreadable") << "\n";
}

// The key of a csv or npy job's files and the members that shape its splits.
std::string files_key(const EngineJobSpec& spec) {
  const EngineDataFiles& f = spec.files;
  std::ostringstream k;
  k.precision(17);
  k << spec.format << " v1\n";
  if (spec.format == "csv") {
    k << "delimiter " << static_cast<int>(f.delimiter) << "\nlabel " << f.label.size() << " "
      << f.label << "\nmissing_mean " << f.missing_mean << "\n";
    for (const std::string& c : f.columns) k << "column " << c.size() << " " << c << "\n";
    for (const std::string& c : f.categorical) k << "categorical " << c.size() << " " << c << "\n";
    for (const auto& [c, dim] : f.embedding) {
      k << "embedding " << c.size() << " " << c << " " << dim << "\n";
    }
    if (f.embedding_all > 0) k << "embedding_all " << f.embedding_all << "\n";
    if (!f.path.empty()) key_file(k, "path", resolve(spec, f.path));
    if (!f.train.empty()) key_file(k, "train", resolve(spec, f.train));
    if (!f.test.empty()) key_file(k, "test", resolve(spec, f.test));
  } else {  // npy: .npy files, or members of the .npz `path`
    if (!f.path.empty()) key_file(k, "npz", resolve(spec, f.path));
    for (const auto& [role, name] : {std::pair<std::string, std::string>{"x", f.x},
                                     {"y", f.y},
                                     {"test_x", f.test_x},
                                     {"test_y", f.test_y}}) {
      if (name.empty()) continue;
      if (f.path.empty()) {
        key_file(k, role, resolve(spec, name));
      } else {
        k << role << " " << name.size() << " " << name << "\n";
      }
    }
  }
  k << "validation_fraction " << f.validation_fraction << "\ntest_fraction " << f.test_fraction
    << "\nsplit_seed " << f.split_seed << "\n";
  return k.str();
}

// The key of fashion-mnist's IDX files (those the sizes read: the test files only with a test
// split) and the sample counts taken from them.
std::string idx_key(const EngineJobSpec& spec, const EngineTrialConfig& config) {
  std::string dir = spec.data_dir.empty() ? training::fashion_mnist_dir() : spec.data_dir;
  if (dir.back() != '/') dir += '/';
  std::ostringstream k;
  k << "idx v1\ndataset " << spec.dataset << "\ntrain " << config.train << "\nvalidation "
    << config.validation << "\ntest " << config.test << "\n";
  key_file(k, "train_images", dir + "train-images-idx3-ubyte.gz");
  key_file(k, "train_labels", dir + "train-labels-idx1-ubyte.gz");
  if (config.test > 0) {
    key_file(k, "test_images", dir + "t10k-images-idx3-ubyte.gz");
    key_file(k, "test_labels", dir + "t10k-labels-idx1-ubyte.gz");
  }
  return k.str();
}

// --- The metadata stored beside the splits: the Splits' names and the normalization ----------

std::string metadata_of(const Splits& s, const std::vector<float>& mean,
                        const std::vector<float>& stddev) {
  nlohmann::json j = {{"name", s.name},
                      {"class_names", s.class_names},
                      {"target_names", s.target_names},
                      {"features", s.features},
                      {"mean", mean},
                      {"stddev", stddev}};
  nlohmann::json columns = nlohmann::json::array();
  for (const FeatureColumn& c : s.columns) {
    columns.push_back({{"name", c.name},
                       {"categorical", c.categorical},
                       {"fill", c.fill},
                       {"categories", c.categories},
                       {"missing_slot", c.missing_slot},
                       {"embedding", c.embedding}});
  }
  j["columns"] = std::move(columns);
  return j.dump();
}

// The splits of a cache file: its datasets (train, validation, test) and metadata; nullopt when
// the metadata is not what metadata_of writes.
std::optional<NormalizedSplits> splits_of(training::CachedDatasets c) {
  if (c.datasets.size() != 3) return std::nullopt;
  NormalizedSplits out;
  Splits& s = out.splits;
  try {
    const nlohmann::json j = nlohmann::json::parse(c.metadata);
    s.name = j.at("name").get<std::string>();
    s.class_names = j.at("class_names").get<std::vector<std::string>>();
    s.target_names = j.at("target_names").get<std::vector<std::string>>();
    s.features = j.at("features").get<std::vector<std::string>>();
    out.mean = j.at("mean").get<std::vector<float>>();
    out.stddev = j.at("stddev").get<std::vector<float>>();
    for (const nlohmann::json& col : j.at("columns")) {
      s.columns.push_back(
          FeatureColumn{.name = col.at("name").get<std::string>(),
                        .categorical = col.at("categorical").get<bool>(),
                        .fill = col.at("fill").get<float>(),
                        .categories = col.at("categories").get<std::vector<std::string>>(),
                        .missing_slot = col.at("missing_slot").get<bool>(),
                        .embedding = col.value("embedding", int64_t{0})});
    }
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  s.train = std::move(c.datasets[0]);
  s.validation = std::move(c.datasets[1]);
  s.test = std::move(c.datasets[2]);
  return out;
}

training::BuiltDatasets built(Splits s, const std::vector<float>& mean,
                              const std::vector<float>& stddev) {
  training::BuiltDatasets b;
  b.metadata = metadata_of(s, mean, stddev);
  b.datasets.push_back(std::move(s.train));
  b.datasets.push_back(std::move(s.validation));
  b.datasets.push_back(std::move(s.test));
  return b;
}

// Says on standard error why a cache file there was not used.
void note_rebuilt(const training::CachedDatasets& c, const std::string& path) {
  if (c.rebuilt_because.empty()) return;
  std::cerr << path << ": the cache file " << (c.file.empty() ? "" : c.file + " ")
            << "was not used (" << c.rebuilt_because << "): built again" << std::endl;
}

// The trial's log says why it has not started yet.
void note_waiting(const std::string& file) {
  std::cerr << file << ": waiting for another trial of this machine, which is building it (at most "
            << data_cache_wait().count() / 1000.0 << " s, TUNER_DATA_CACHE_WAIT_SECONDS)"
            << std::endl;
}

// The trial's log says why it loaded its own copy.
void note_waited_out(const training::CachedDatasets& c, const std::string& file,
                     const std::string& path) {
  if (!c.waited_out) return;
  std::cerr << path << ": another trial of this machine has been building " << file
            << " for more than " << data_cache_wait().count() / 1000.0
            << " s (TUNER_DATA_CACHE_WAIT_SECONDS): loaded without the cache" << std::endl;
}

training::DatasetCache cache_of(const std::string& dir, int64_t budget) {
  return training::DatasetCache(dir, budget, note_waiting, data_cache_wait());
}

}  // namespace

int64_t data_cache_budget() {
  const char* v = std::getenv("TUNER_DATA_CACHE_BYTES");
  if (v == nullptr || *v == '\0') return kDefaultBudget;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  return end != v && *end == '\0' && n >= 0 ? n : kDefaultBudget;
}

std::chrono::milliseconds data_cache_wait() {
  const char* v = std::getenv("TUNER_DATA_CACHE_WAIT_SECONDS");
  double seconds = kDefaultWaitSeconds;
  if (v != nullptr && *v != '\0') {
    char* end = nullptr;
    const double n = std::strtod(v, &end);
    if (end != v && *end == '\0' && std::isfinite(n) && n >= 0 && n <= 1e9) seconds = n;
  }
  return std::chrono::milliseconds(std::llround(seconds * 1000));
}

std::string data_cache_dir() {
  const auto set = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? v : nullptr;
  };
  if (const char* dir = set("TUNER_DATA_CACHE_DIR")) return dir;
  if (const char* xdg = set("XDG_CACHE_HOME")) return (fs::path(xdg) / "tuner" / "data").string();
  if (const char* home = set("HOME"))
    return (fs::path(home) / ".cache" / "tuner" / "data").string();
  return "";
}

Splits load_image_folder_cached(const EngineJobSpec& spec, const SplitSizes& sizes,
                                const std::string& path) {
  const int64_t budget = data_cache_budget();
  const std::string dir = data_cache_dir();
  if (budget == 0 || dir.empty()) return load_image_folder(spec, sizes, path);
  const Keyed keyed = cache_key(spec, path);  // lists the folders: their errors first
  const training::DatasetCache cache = cache_of(dir, budget);
  training::CachedDatasets c =
      cache.get(keyed.key, [&] { return built(load_image_folder(spec, sizes, path), {}, {}); });
  note_rebuilt(c, path);
  note_waited_out(c, cache.file_of(keyed.key), path);
  const bool read = !c.built;
  const std::string file = c.file;
  std::optional<NormalizedSplits> s = splits_of(std::move(c));
  if (!s) return load_image_folder(spec, sizes, path);  // not what this version writes
  if (read) {
    const auto& l = keyed.listings;
    note_skipped_files({l[0] ? &*l[0] : nullptr, l[1] ? &*l[1] : nullptr, l[2] ? &*l[2] : nullptr},
                       path);  // as decoding says it
    std::cerr << path << ": decoded images read from " << file << std::endl;
  }
  return std::move(s->splits);
}

std::optional<NormalizedSplits> load_normalized_cached(const EngineJobSpec& spec,
                                                       const EngineTrialConfig& config,
                                                       const std::string& where) {
  if (spec.format != "image_folder" && spec.format != "csv" && spec.format != "npy" &&
      spec.format != "idx") {
    return std::nullopt;
  }
  const std::string path = where + ".data";
  const auto build = [&] {
    // An image folder decoded here, not through load_image_folder_cached: one file written per
    // data set (writing is a good part of a build's time).
    Splits s = spec.format == "image_folder"
                   ? load_image_folder(spec,
                                       SplitSizes{.train = config.train,
                                                  .validation = config.validation,
                                                  .test = config.test},
                                       path)
                   : load_raw_data(spec, config, where);
    const training::Normalizer norm = fit_normalizer(spec, s.train, s.columns);
    norm.apply(s.train);
    if (!s.validation.empty()) norm.apply(s.validation);
    if (!s.test.empty()) norm.apply(s.test);
    return built(std::move(s), {norm.mean().begin(), norm.mean().end()},
                 {norm.stddev().begin(), norm.stddev().end()});
  };
  const int64_t budget = data_cache_budget();
  const std::string dir = data_cache_dir();
  std::optional<Keyed> keyed;
  std::ostringstream key;
  key << "normalized v1\nnormalize " << spec.normalize << "\ntask " << static_cast<int>(spec.task)
      << "\n";
  if (budget > 0 && !dir.empty()) {
    if (spec.format == "image_folder") {
      keyed = cache_key(spec, path);  // lists the folders: their errors first
      key << keyed->key;
    } else if (spec.format == "idx") {
      key << idx_key(spec, config);
    } else {
      key << files_key(spec);
    }
  }
  const training::DatasetCache cache = cache_of(dir, budget);
  training::CachedDatasets c = cache.get(key.str(), build);
  note_rebuilt(c, path);
  note_waited_out(c, cache.file_of(key.str()), path);
  const bool read = !c.built;
  const std::string file = c.file;
  std::optional<NormalizedSplits> s = splits_of(std::move(c));
  if (!s) {  // not what this version writes
    training::BuiltDatasets b = build();
    s = splits_of(training::CachedDatasets{.datasets = std::move(b.datasets),
                                           .metadata = std::move(b.metadata)});
  }
  if (read) {
    if (keyed) {
      const auto& l = keyed->listings;
      note_skipped_files(
          {l[0] ? &*l[0] : nullptr, l[1] ? &*l[1] : nullptr, l[2] ? &*l[2] : nullptr}, path);
      std::cerr << path << ": decoded images read from " << file << std::endl;
    } else {
      const char* what = spec.format == "csv"   ? "parsed table"
                         : spec.format == "idx" ? "decompressed images"
                                                : "arrays";
      std::cerr << path << ": " << what << " read from " << file << std::endl;
    }
  }
  return s;
}

}  // namespace tuner::engine
