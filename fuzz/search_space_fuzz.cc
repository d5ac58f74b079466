// libFuzzer target for parse_search_space() (search/space/search_space_json.h), which reads
// users' space files. Properties checked on every input:
//   1. parsing returns or throws tuner::Error, nothing else (ASan/UBSan catch memory errors);
//   2. a parsed space is written back by to_json() as text that parses to the same space.
// Build and run: scripts/fuzz (docs/testing.md).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "search/space/search_space_json.h"
#include "trials/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  tuner::SearchSpace space;
  try {
    space = tuner::parse_search_space(text, "space.json");
  } catch (const tuner::Error&) {
    return 0;
  }
  const std::string written = tuner::to_json(space);
  try {
    if (!(tuner::parse_search_space(written, "written") == space)) {
      std::fprintf(stderr, "to_json() does not round-trip:\n%s\n", written.c_str());
      std::abort();
    }
  } catch (const tuner::Error& e) {
    std::fprintf(stderr, "to_json() wrote a space that does not parse: %s\n%s\n", e.what(),
                 written.c_str());
    std::abort();
  }
  return 0;
}
