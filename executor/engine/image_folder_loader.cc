#include "executor/engine/image_folder_loader.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "executor/engine/data_split.h"
#include "executor/job_json.h"
#include "training/data/image_codec.h"
#include "training/data/image_resize.h"
#include "trials/error.h"
#include "util/strings.h"

namespace tuner::engine {

namespace {

namespace fs = std::filesystem;

using job_json::fail;

constexpr int64_t kMaxSide = 16384;

const std::vector<std::string_view> kImageFolderMembers = {
    "format",        "dir",        "path",
    "train",         "validation", "test",
    "size",          "color",      "validation_fraction",
    "test_fraction", "split_seed", "augment",
    "normalize",     "prefetch"};

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::kDataLoss, path + ": " + what);
}

std::string resolve(const EngineJobSpec& spec, const std::string& folder) {
  if (spec.data_dir.empty() || fs::path(folder).is_absolute()) return folder;
  return (fs::path(spec.data_dir) / folder).string();
}

bool hidden(const fs::path& p) { return p.filename().string().starts_with("."); }

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

// The samples `indices` of `folder` (all when nullptr), decoded and resized on `threads`
// threads: [C, H, W] each. An undecodable file fails the whole: the first in order, so the
// message does not depend on the threads.
training::Dataset decode(const ImageFolderListing& folder, const std::vector<int64_t>* indices,
                         const EngineDataFiles& f, int threads, const std::string& path) {
  const training::ImageColor color =
      f.grayscale ? training::ImageColor::kGrayscale : training::ImageColor::kRgb;
  const int64_t channels = training::image_channels(color);
  const training::Shape sample{channels, f.image_height, f.image_width};
  const int64_t numel = sample.numel();
  const auto count = static_cast<int64_t>(indices ? indices->size() : folder.files.size());
  std::vector<float> x(static_cast<size_t>(count * numel));
  std::vector<int32_t> y(static_cast<size_t>(count));
  const auto file_of = [&](int64_t k) { return indices ? (*indices)[static_cast<size_t>(k)] : k; };

  const int64_t workers = std::clamp<int64_t>(threads, 1, std::max<int64_t>(count, 1));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(workers));  // each worker's first
  {
    std::vector<std::jthread> pool;
    for (int64_t w = 0; w < workers; ++w) {
      pool.emplace_back([&, w] {
        const int64_t begin = count * w / workers, end = count * (w + 1) / workers;
        for (int64_t k = begin; k < end; ++k) {
          const auto i = static_cast<size_t>(file_of(k));
          try {
            const training::Image image = training::resize_bilinear(
                training::read_image_file(folder.files[i], color), f.image_height, f.image_width);
            std::copy(image.pixels.begin(), image.pixels.end(), x.begin() + k * numel);
            y[static_cast<size_t>(k)] = folder.labels[i];
          } catch (...) {
            errors[static_cast<size_t>(w)] = std::current_exception();
            return;
          }
        }
      });
    }
  }
  for (const std::exception_ptr& e : errors) {
    if (!e) continue;  // the first worker's error is the first in order
    try {
      std::rethrow_exception(e);
    } catch (const training::DataError& d) {
      bad(path, d.what());
    }
  }
  return training::Dataset(sample, std::move(x), std::move(y),
                           static_cast<int32_t>(folder.classes.size()));
}

// Refuses a validation or test folder whose classes are not the training folder's.
void check_same_classes(const ImageFolderListing& train, const ImageFolderListing& other,
                        const std::string& path) {
  if (other.classes == train.classes) return;
  std::vector<std::string> missing, extra;
  std::set_difference(train.classes.begin(), train.classes.end(), other.classes.begin(),
                      other.classes.end(), std::back_inserter(missing));
  std::set_difference(other.classes.begin(), other.classes.end(), train.classes.begin(),
                      train.classes.end(), std::back_inserter(extra));
  std::string why = missing.empty() ? "" : "it lacks " + join(missing);
  if (!extra.empty()) {
    why +=
        (why.empty() ? "it has " : "; it has ") + join(extra) + ", which " + train.root + " lacks";
  }
  bad(path, other.root + ": its class folders (" + join(other.classes) +
                ") are not those of the training folder " + train.root + " (" +
                join(train.classes) + "): " + why);
}

std::string folder_name(const std::string& root) {
  fs::path p(root);
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

}  // namespace

ImageFolderListing list_image_folder(const std::string& root, const std::string& path) {
  std::error_code ec;
  if (!fs::exists(root, ec)) {
    throw Error(ErrorCode::kNotFound, path + ": " + root + " does not exist");
  }
  if (!fs::is_directory(root, ec)) {
    bad(path, root + ": not a folder (image_folder takes a folder of one sub-folder per class)");
  }
  ImageFolderListing out;
  out.root = root;
  try {
    for (const fs::directory_entry& e : fs::directory_iterator(root)) {
      if (e.is_directory() && !hidden(e.path()))
        out.classes.push_back(e.path().filename().string());
    }
    std::sort(out.classes.begin(), out.classes.end());
    if (out.classes.empty()) {
      bad(path, root +
                    ": no class sub-folders (image_folder takes one sub-folder per class, "
                    "holding its PNG and JPEG files)");
    }
    std::vector<std::string> skipped;
    for (size_t c = 0; c < out.classes.size(); ++c) {
      const fs::path class_dir = fs::path(root) / out.classes[c];
      std::vector<std::string> files;
      for (auto it = fs::recursive_directory_iterator(
               class_dir, fs::directory_options::follow_directory_symlink);
           it != fs::recursive_directory_iterator(); ++it) {
        if (hidden(it->path())) {
          if (it->is_directory()) it.disable_recursion_pending();
          continue;
        }
        if (!it->is_regular_file()) continue;
        (is_image_name(it->path()) ? files : skipped).push_back(it->path().string());
      }
      if (files.empty()) {
        bad(path, class_dir.string() + ": class folder \"" + out.classes[c] +
                      "\" has no PNG or JPEG files (.png, .jpg, .jpeg)");
      }
      std::sort(files.begin(), files.end());
      out.files.insert(out.files.end(), files.begin(), files.end());
      out.labels.insert(out.labels.end(), files.size(), static_cast<int32_t>(c));
    }
    out.skipped = static_cast<int64_t>(skipped.size());
    if (!skipped.empty()) out.skipped_example = *std::min_element(skipped.begin(), skipped.end());
  } catch (const fs::filesystem_error& e) {
    bad(path, root + ": cannot be listed (" + e.code().message() + ": " + e.path1().string() + ")");
  }
  return out;
}

void note_skipped_files(std::initializer_list<const ImageFolderListing*> listings,
                        const std::string& path) {
  int64_t skipped = 0;
  std::string example;
  for (const ImageFolderListing* l : listings) {
    if (!l || l->skipped == 0) continue;
    skipped += l->skipped;
    if (example.empty()) example = l->skipped_example;
  }
  if (skipped > 0) {
    std::cerr << path << ": skipped " << skipped << " file" << (skipped == 1 ? "" : "s") << " that "
              << (skipped == 1 ? "is" : "are") << " not .png, .jpg or .jpeg (e.g. " << example
              << ")" << std::endl;
  }
}

Splits load_image_folder(const EngineJobSpec& spec, const SplitSizes& /*sizes*/,
                         const std::string& path) {
  const EngineDataFiles& f = spec.files;
  const ImageFolderListing train =
      list_image_folder(resolve(spec, f.path.empty() ? f.train : f.path), path);
  std::optional<ImageFolderListing> validation, test;
  if (!f.validation.empty()) {
    validation = list_image_folder(resolve(spec, f.validation), path);
    check_same_classes(train, *validation, path);
  }
  if (!f.test.empty()) {
    test = list_image_folder(resolve(spec, f.test), path);
    check_same_classes(train, *test, path);
  }
  note_skipped_files({&train, validation ? &*validation : nullptr, test ? &*test : nullptr}, path);

  const auto n = static_cast<int64_t>(train.files.size());
  const SplitIndices split = split_indices(n, validation ? 0.0 : f.validation_fraction,
                                           test ? 0.0 : f.test_fraction, f.split_seed, path);
  Splits s;
  s.name = folder_name(train.root);
  s.class_names = train.classes;
  s.train = decode(train, &split.train, f, spec.threads, path);
  if (validation) {
    s.validation = decode(*validation, nullptr, f, spec.threads, path);
  } else if (!split.validation.empty()) {
    s.validation = decode(train, &split.validation, f, spec.threads, path);
  }
  if (test) {
    s.test = decode(*test, nullptr, f, spec.threads, path);
  } else if (!split.test.empty()) {
    s.test = decode(train, &split.test, f, spec.threads, path);
  }
  return s;
}

void read_image_folder_members(const nlohmann::json& object, const MemberReader& data,
                               const std::string& data_path, EngineJobSpec& spec) {
  data.only(kImageFolderMembers, "data of format image_folder");
  EngineDataFiles& f = spec.files;
  if (auto v = data.string("train")) f.train = *v;
  if (auto v = data.string("validation")) f.validation = *v;
  if (auto v = data.string("test")) f.test = *v;
  if (f.path.empty() == f.train.empty()) {
    fail(data_path + ".path", f.path.empty()
                                  ? "missing (the folder of one sub-folder per class; or \"train\")"
                                  : "give \"path\" or \"train\", not both");
  }
  auto size = object.find("size");
  if (size == object.end()) {
    fail(data_path + ".size", "missing (the [H, W] every image is resized to)");
  }
  const auto side = [](const nlohmann::json& v) {
    return v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= kMaxSide;
  };
  if (!size->is_array() || size->size() != 2 || !side((*size)[0]) || !side((*size)[1])) {
    fail(data_path + ".size", "expected [H, W], two integers in [1, " + std::to_string(kMaxSide) +
                                  "], got " + size->dump());
  }
  f.image_height = (*size)[0].get<int64_t>();
  f.image_width = (*size)[1].get<int64_t>();
  if (auto v = data.choice("color", {"grayscale", "rgb"}, false)) f.grayscale = *v == "grayscale";
  if (!f.validation.empty() && object.contains("validation_fraction")) {
    fail(data_path + ".validation_fraction",
         "not with a validation folder (the validation split is the folder)");
  }
}

}  // namespace tuner::engine
