// libFuzzer target for decode() (wire/protocol.h).
//
// The input is split into frames at each "\xff\xfe" pair (so frame counts other than two are
// explored too). Properties checked on every input:
//   1. decode() returns or throws ProtocolError, nothing else (ASan/UBSan catch memory errors);
//   2. a decoded message re-encodes, and decoding that encoding gives the same frames again
//      (encode(decode(x)) is a fixed point), so nothing decoded is unencodable or lossy.
// Build and run: scripts/fuzz (docs/testing.md).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "wire/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> frames = tuner::fuzz::split_parts(data, size);
  tuner::Message message;
  try {
    message = tuner::decode(frames);
  } catch (const tuner::ProtocolError&) {
    return 0;
  }
  std::vector<std::string> once = tuner::encode(message);  // must not throw for small inputs
  std::vector<std::string> twice = tuner::encode(tuner::decode(once));
  if (once != twice) {
    std::fprintf(stderr, "re-encoding is not stable:\n%s\n%s\n", once[1].c_str(), twice[1].c_str());
    std::abort();
  }
  return 0;
}
