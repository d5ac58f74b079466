// libFuzzer target for the readers of `tuner drift`'s own formats (drift/read_samples.h): the
// model server's request log (drift/request_log.h) and a CSV of samples (drift/csv_samples.h).
// (Its idx images are read by training/data/idx.h, which the idx target covers.)
//
// The input's first byte picks the reader (even: a request log file, odd: a CSV) and how bad
// lines are taken (its bits 1 and 2: skip_bad 0 to 3); the rest is the file. Properties checked
// on every input:
//   1. reading returns or throws tuner::Error, nothing else (ASan/UBSan catch memory errors);
//   2. the samples are whole: N >= 1, N x F inputs (F may be 0: a CSV of only a label column),
//      N x K outputs (or none), N predicted classes and N labels (or none), F names (or none),
//      classes >= 0.
// Build and run: scripts/fuzz (docs/testing.md).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "drift/read_samples.h"
#include "drift/samples.h"
#include "fuzz/fuzz_input.h"
#include "trials/error.h"

namespace {

[[noreturn]] void broken(const char* what, std::string_view text) {
  std::fprintf(stderr, "%s\n%.*s\n", what, static_cast<int>(text.size()), text.data());
  std::abort();
}

bool whole(const std::vector<int32_t>& classes, int64_t n) {
  return (classes.empty() || static_cast<int64_t>(classes.size()) == n) &&
         std::all_of(classes.begin(), classes.end(), [](int32_t c) { return c >= 0; });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool csv = (data[0] & 1) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string path =
      tuner::fuzz::write_file(csv ? "samples.csv" : "requests-20261202T110000-1.jsonl", text);
  tuner::drift::Samples s;
  try {
    s = tuner::drift::read_samples(path, {.skip_bad = (data[0] >> 1) & 3});
  } catch (const tuner::Error&) {
    return 0;
  }
  if (s.count < 1 || s.input_width < 0 ||
      static_cast<int64_t>(s.inputs.size()) != s.count * s.input_width) {
    broken("inputs that are not N x F", text);
  }
  if (static_cast<int64_t>(s.outputs.size()) != s.count * s.output_width) {
    broken("outputs that are not N x K", text);
  }
  if (!whole(s.predicted, s.count) || !whole(s.labels, s.count)) {
    broken("classes that are not one per sample, or below 0", text);
  }
  if (!s.input_names.empty() && static_cast<int64_t>(s.input_names.size()) != s.input_width) {
    broken("input names that are not one per input", text);
  }
  return 0;
}
