// libFuzzer target for parse_scoring_request() (serving/scoring_protocol.h): the bodies
// `tuner serve-model` takes on POST /invocations, JSON in each of MLflow's forms and CSV, for a
// tensor model and for a table's model (columns by name).
//
// The first input byte picks the content type (JSON or CSV), the model (a flat [4] input, an
// image-like [1, 2, 2] one, or a table of a numeric and a categorical column) and small JSON
// limits or the defaults; the rest is the body. Properties checked on every input:
//   1. parsing returns or throws ScoringError, nothing else (ASan/UBSan catch memory errors);
//   2. what it returns is whole: rows times the input's elements values.
// Build and run: scripts/fuzz (docs/testing.md).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "fuzz/table_model.h"
#include "serving/scoring_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t pick = data[0];
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string_view content_type = (pick & 1) ? "text/csv" : "application/json";
  const int model = (pick >> 1) % 3;  // 0: [4]; 1: [1, 2, 2]; 2: a table of 4 features
  const tuner::training::Shape input =
      model == 1 ? tuner::training::Shape{1, 2, 2} : tuner::training::Shape{4};
  tuner::serving::JsonLimits limits;
  if (pick & 8) limits = {.max_depth = 4, .max_object_keys = 8, .max_values = 64};
  tuner::serving::ScoringInput parsed;
  try {
    parsed =
        tuner::serving::parse_scoring_request(content_type, body, input, "input", limits,
                                              model == 2 ? &tuner::fuzz::table_model() : nullptr);
  } catch (const tuner::serving::ScoringError&) {
    return 0;
  }
  if (parsed.rows < 0 || parsed.values.size() != static_cast<size_t>(parsed.rows * input.numel())) {
    std::fprintf(stderr, "%lld rows but %zu values\n", static_cast<long long>(parsed.rows),
                 parsed.values.size());
    std::abort();
  }
  return 0;
}
