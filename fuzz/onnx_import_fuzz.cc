// libFuzzer target for import_onnx_bytes() (training/export/onnx_import.h), which reads the
// .onnx file an engine job's training.init_from names: the engine's own export or another
// program's.
//
// Properties checked on every input:
//   1. importing returns or throws OnnxImportError, nothing else (ASan/UBSan catch memory
//      errors);
//   2. an imported model's spec parses, and its weights fill the arena layout of that spec: the
//      parameters end where the last layer with weights ends, every buffer slot is filled.
// Build and run: scripts/fuzz (docs/testing.md).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "training/checkpoint.h"
#include "training/export/onnx_import.h"
#include "training/init_from.h"
#include "training/model_spec.h"

namespace {

[[noreturn]] void broken(const std::string& what, const tuner::training::Checkpoint& c) {
  std::fprintf(stderr, "%s\n%s\n", what.c_str(), c.model_spec.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tuner::training;
  Checkpoint c;
  try {
    c = import_onnx_bytes(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const OnnxImportError&) {
    return 0;
  }
  ModelSpec spec;
  try {
    spec = parse_model_spec(c.model_spec);
  } catch (const SpecError& e) {
    broken(std::string("an imported model's spec does not parse: ") + e.what(), c);
  }
  int64_t params_end = 0, buffers = 0;
  for (const WeightedLayer& l : weighted_layers(spec)) {
    params_end = l.end;
    for (const WeightSlot& s : l.slots) {
      if (s.buffer) buffers += s.shape.numel();
    }
  }
  if (static_cast<int64_t>(c.parameters.size()) != params_end) {
    broken("the parameters do not end where the last layer's do", c);
  }
  if (static_cast<int64_t>(c.buffers.size()) < buffers) broken("buffers are missing", c);
  return 0;
}
