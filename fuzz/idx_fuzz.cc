// libFuzzer target for the IDX reader of MNIST-style data (training/data/idx.h), plain or
// gzip-compressed: the input is cut at the first "\xff\xfe" into the images file and the labels
// file.
//
// Properties checked on every input:
//   1. reading returns or throws DataError, nothing else (ASan/UBSan catch memory errors);
//   2. what it returns is whole: one label and one image of the header's size per sample, each
//      label below the class count.
// Build and run: scripts/fuzz (docs/testing.md).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "training/data/dataset.h"
#include "training/data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> parts = tuner::fuzz::split_parts(data, size);
  parts.resize(2);
  const std::string images = tuner::fuzz::write_file("images.idx", parts[0]);
  const std::string labels = tuner::fuzz::write_file("labels.idx", parts[1]);
  try {
    const tuner::training::Dataset set = tuner::training::read_idx(images, labels, /*limit=*/64);
    bool whole = set.features().size() == static_cast<size_t>(set.size() * set.sample_numel());
    for (int32_t label : set.labels()) whole = whole && label >= 0 && label < set.num_classes();
    if (!whole) {
      std::fprintf(stderr, "read_idx returned a data set that is not whole\n");
      std::abort();
    }
  } catch (const tuner::training::DataError&) {
  }
  return 0;
}
