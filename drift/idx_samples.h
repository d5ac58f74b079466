// Samples from an IDX image file (MNIST, Fashion-MNIST; training/data/idx.h) and its labels.
// Thread safety: a pure function over files.
#ifndef TUNER_DRIFT_IDX_SAMPLES_H_
#define TUNER_DRIFT_IDX_SAMPLES_H_

#include <cstdint>
#include <filesystem>

#include "drift/samples.h"

namespace tuner::drift {

// The units of the inputs read from an idx file.
enum class IdxUnits {
  kBytes,  // the files' own bytes 0..255: what a uint8 model (and its server's log) takes
  kUnit,   // bytes / 255, the data loader's [0, 1] (format-version-1 models took these)
};

// Reads the first `limit` images (all when limit < 0) of `images` ([1, H, W] each) and their
// labels from `labels`. Throws Error(kInvalidArgument) naming the file for a file that is not IDX
// or is truncated, Error(kNotFound) for a missing one.
Samples read_idx_samples(const std::filesystem::path& images, const std::filesystem::path& labels,
                         int64_t limit = -1, IdxUnits units = IdxUnits::kBytes);

// "train-images-idx3-ubyte.gz" -> "train-labels-idx1-ubyte.gz" beside it when it exists, else "".
std::filesystem::path idx_labels_beside(const std::filesystem::path& images);

}  // namespace tuner::drift

#endif  // TUNER_DRIFT_IDX_SAMPLES_H_
