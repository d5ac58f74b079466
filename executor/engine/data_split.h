// The splits of one data file (internal to executor/): the samples of a CSV or NPY training file
// shuffled with a seed and cut into test, validation and training samples by fractions.
//
// Thread safety: pure functions; safe from any thread.
#ifndef TUNER_EXECUTOR_ENGINE_DATA_SPLIT_H_
#define TUNER_EXECUTOR_ENGINE_DATA_SPLIT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace tuner::engine {

// Sample indices of each split, each in ascending (file) order.
struct SplitIndices {
  std::vector<int64_t> train, validation, test;
};

// Shuffles [0, n) with training::Rng(seed) and takes round(test_fraction * n) samples for the
// test split, then round(validation_fraction * n) for the validation split (each at least 1 when
// its fraction is > 0), the rest for training. The same arguments give the same split.
// Error(kInvalidArgument) naming `path` (the job's data) when no training sample is left.
// REQUIRES: both fractions in [0, 1).
SplitIndices split_indices(int64_t n, double validation_fraction, double test_fraction,
                           uint64_t seed, const std::string& path);

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_DATA_SPLIT_H_
