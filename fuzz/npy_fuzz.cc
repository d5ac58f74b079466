// libFuzzer target for the NumPy readers (training/data/npy.h): a .npy file, and a .npz archive
// (stored or deflated members) when the input is a zip file.
//
// Properties checked on every input:
//   1. opening returns or throws DataError, nothing else (ASan/UBSan catch memory errors);
//   2. an opened array's shape multiplies out to its size, and every element reads (as a float,
//      and as an integer for integer and bool arrays) without touching memory past the data.
// Build and run: scripts/fuzz (docs/testing.md).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "training/data/dataset.h"
#include "training/data/npy.h"

namespace {

// Reads every element of `array` (at most a bounded number, so that a header claiming a large
// array of a small file is refused by open(), and a large real one does not slow the fuzzer).
void read_all(const tuner::training::NpyArray& array) {
  // The product, or 0 when a dimension is 0 (whatever the others); overflow is a failure.
  const auto& shape = array.shape();
  uint64_t product = std::find(shape.begin(), shape.end(), 0) == shape.end() ? 1 : 0;
  bool overflow = false;
  for (size_t i = 0; i < shape.size() && product != 0 && !overflow; ++i) {
    overflow = __builtin_mul_overflow(product, static_cast<uint64_t>(shape[i]), &product);
  }
  if (overflow || product != static_cast<uint64_t>(array.size())) {
    std::fprintf(stderr, "%s: shape does not multiply out to size %lld\n", array.name().c_str(),
                 static_cast<long long>(array.size()));
    std::abort();
  }
  const int64_t n = std::min<int64_t>(array.size(), 1 << 16);
  std::vector<float> values(static_cast<size_t>(n));
  if (n > 0) array.read_floats(0, n, values.data());
  if (array.kind() == 'i' || array.kind() == 'u' || array.kind() == 'b') {
    for (int64_t i = 0; i < n; ++i) (void)array.integer(i);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const bool zip = bytes.starts_with("PK");
  const std::string path = tuner::fuzz::write_file(zip ? "input.npz" : "input.npy", bytes);
  try {
    if (zip) {
      read_all(tuner::training::NpyArray::open_npz(path, "x"));
    } else {
      read_all(tuner::training::NpyArray::open(path));
    }
  } catch (const tuner::training::DataError&) {
  }
  return 0;
}
