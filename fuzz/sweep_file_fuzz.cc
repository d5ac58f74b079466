// libFuzzer target for parse_sweep_file() (sweep/sweep_file.h), which reads users' sweep files.
// Properties checked on every input:
//   1. parsing returns or throws tuner::Error, nothing else (ASan/UBSan catch memory errors);
//   2. a parsed sweep is written back by to_json() as text that parses to the same sweep.
// Build and run: scripts/fuzz (docs/testing.md).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sweep/sweep_file.h"
#include "trials/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string path = "/fuzz/sweep.json";
  tuner::SweepFile sweep;
  try {
    sweep = tuner::parse_sweep_file(text, path);
  } catch (const tuner::Error&) {
    return 0;
  }
  const std::string written = tuner::to_json(sweep);
  tuner::SweepFile again;
  try {
    again = tuner::parse_sweep_file(written, path);
  } catch (const tuner::Error& e) {
    std::fprintf(stderr, "to_json() wrote a sweep file that does not parse: %s\n%s\n", e.what(),
                 written.c_str());
    std::abort();
  }
  if (!(again == sweep)) {
    std::fprintf(stderr, "to_json() does not round-trip:\n%s\n%s\n", written.c_str(),
                 tuner::to_json(again).c_str());
    std::abort();
  }
  return 0;
}
