// The IDX format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/), read directly
// from the .gz files (or uncompressed ones).
#ifndef TUNER_TRAINING_DATA_IDX_H_
#define TUNER_TRAINING_DATA_IDX_H_

#include <cstdint>
#include <string>

#include "training/data/dataset.h"

namespace tuner::training {

// Reads an image file (magic 0x00000803: unsigned bytes, 3 dims N, H, W) and a label file
// (magic 0x00000801: N unsigned bytes) into a Dataset of samples [1, H, W] with values scaled to
// [0, 1] and num_classes = 1 + the largest label (10 for MNIST). Only the first `limit` samples
// are decompressed and read when limit >= 0 (a slice for tests).
// Throws DataError naming the file: unreadable, a bad magic number, a truncated body, or image and
// label counts that differ.
Dataset read_idx(const std::string& images_path, const std::string& labels_path,
                 int64_t limit = -1);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DATA_IDX_H_
