// libFuzzer target for parse_model_spec() (training/model_spec.h), which reads the model specs
// of engine jobs and of exported models (engine/model_spec.json). Properties checked on every
// input:
//   1. parsing returns or throws SpecError, nothing else (ASan/UBSan catch memory errors);
//   2. a parsed spec's canonical JSON (ModelSpec::json) parses to the same spec: the same JSON,
//      shapes, layers and parameter count.
// Build and run: scripts/fuzz (docs/testing.md).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "training/model_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tuner::training::ModelSpec;
  using tuner::training::SpecError;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ModelSpec spec;
  try {
    spec = tuner::training::parse_model_spec(text);
  } catch (const SpecError&) {
    return 0;
  }
  ModelSpec again;
  try {
    again = tuner::training::parse_model_spec(spec.json);
  } catch (const SpecError& e) {
    std::fprintf(stderr, "the canonical JSON of a spec does not parse: %s\n%s\n", e.what(),
                 spec.json.c_str());
    std::abort();
  }
  if (again.json != spec.json || again.input != spec.input || again.output != spec.output ||
      again.layers.size() != spec.layers.size() || again.num_parameters != spec.num_parameters) {
    std::fprintf(stderr, "the canonical JSON of a spec parses to another spec:\n%s\n%s\n",
                 spec.json.c_str(), again.json.c_str());
    std::abort();
  }
  return 0;
}
