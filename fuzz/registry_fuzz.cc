// libFuzzer target for the files of a model registry that tuner reads back from disk
// (registry/registry.h, registry/mlflow_model.h): DIR/tuner-registry.json (the marker),
// DIR/MODEL/registry.json (a model's versions, aliases, tags and promotion decisions) and a
// version's engine/preprocessing.json.
//
// The input is NAME, then "\xff\xfe", then the file's text (fuzz_input.h's split_parts): NAME is
// "tuner-registry.json", "registry.json" or "preprocessing.json", which the text is read as; a
// digit after a preprocessing.json's name picks the model's shapes it is read for (kShapes).
// Properties checked on every input:
//   1. reading returns or throws tuner::Error, nothing else (ASan/UBSan catch memory errors);
//   2. what is read holds: a model's versions ascend, none past last_version, each alias naming
//      a number; a preprocessing's divisor and stddevs are finite and > 0 and its means finite,
//      one per channel, its labels one per output, its table or image the model's input.
// Build and run: scripts/fuzz (docs/testing.md).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "registry/mlflow_model.h"
#include "registry/registry.h"
#include "trials/error.h"

namespace {

namespace fs = std::filesystem;
using tuner::training::Shape;

// The models a preprocessing.json is read for: a table's, a grayscale and an RGB image's, a
// regression's.
struct Shapes {
  Shape input, output;
};
const Shapes kShapes[] = {{Shape{4}, Shape{3}},
                          {Shape{1, 28, 28}, Shape{10}},
                          {Shape{3, 8, 8}, Shape{2}},
                          {Shape{5}, Shape{1}}};

[[noreturn]] void broken(const std::string& what, const std::string& text) {
  std::fprintf(stderr, "%s\n%s\n", what.c_str(), text.c_str());
  std::abort();
}

bool positive(float v) { return std::isfinite(v) && v > 0; }

void check(const tuner::registry::Preprocessing& p, const Shapes& shapes, const std::string& text) {
  if (!positive(p.divisor)) broken("a divisor that is not finite and > 0", text);
  if (p.mean.has_value() != p.stddev.has_value()) broken("a mean without a stddev", text);
  if (p.mean && (!std::isfinite(*p.mean) || !positive(*p.stddev))) {
    broken("a mean that is not finite or a stddev that is not finite and > 0", text);
  }
  if (p.feature_mean.size() != p.feature_stddev.size() ||
      (!p.feature_mean.empty() &&
       static_cast<int64_t>(p.feature_mean.size()) != shapes.input.dims()[0])) {
    broken("per-channel normalization that does not fit the input's channels", text);
  }
  for (size_t i = 0; i < p.feature_mean.size(); ++i) {
    if (!std::isfinite(p.feature_mean[i]) || !positive(p.feature_stddev[i])) {
      broken("a channel's mean not finite or stddev not finite and > 0", text);
    }
  }
  if (!p.class_labels.empty() &&
      static_cast<int64_t>(p.class_labels.size()) != shapes.output.numel()) {
    broken("labels that are not one per output", text);
  }
  if (p.table && static_cast<int64_t>(p.table->features.size()) != shapes.input.numel()) {
    broken("a table that does not encode the model's input", text);
  }
  if (p.image && (Shape{p.image->channels(), p.image->height, p.image->width} != shapes.input)) {
    broken("an image that is not the model's input", text);
  }
}

void check(const tuner::registry::RegisteredModel& m, const std::string& text) {
  for (size_t i = 0; i < m.versions.size(); ++i) {
    if ((i > 0 && m.versions[i - 1].version > m.versions[i].version) ||
        m.versions[i].version > m.last_version) {
      broken("versions out of order or past last_version", text);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> parts = tuner::fuzz::split_parts(data, size);
  if (parts.size() != 2) return 0;
  const std::string& name = parts[0];
  const std::string& text = parts[1];
  try {
    if (name.starts_with("preprocessing.json")) {
      const char digit = name.size() > 18 ? name[18] : '0';
      const Shapes& shapes = kShapes[static_cast<unsigned char>(digit) % std::size(kShapes)];
      check(tuner::registry::read_preprocessing(text, "preprocessing.json", shapes.input,
                                                shapes.output),
            shapes, text);
    } else if (name == "tuner-registry.json") {
      const fs::path dir =
          fs::path(tuner::fuzz::write_file("tuner-registry.json", text)).parent_path();
      tuner::registry::Registry::open(dir, /*create=*/false).model_names();
    } else if (name == "registry.json") {
      const fs::path dir =
          fs::path(tuner::fuzz::write_file("tuner-registry.json",
                                           R"({"format": "tuner-registry", "format_version": 1})"))
              .parent_path();
      fs::create_directories(dir / "m");
      tuner::fuzz::write_file("m/registry.json", text);
      check(tuner::registry::Registry::open(dir, /*create=*/false).model("m"), text);
    }
  } catch (const tuner::Error&) {
  }
  return 0;
}
