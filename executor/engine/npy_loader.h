// The NPY loader of the data-set catalogue (datasets.h; internal to executor/): features and
// integer labels from .npy files or an .npz archive (training/data/npy.h, memory-mapped), split
// into training, validation and test samples (docs/engine_jobs.md, "data" of format npy).
//
// Thread safety: reads files, shares no state; safe from any thread.
#ifndef TUNER_EXECUTOR_ENGINE_NPY_LOADER_H_
#define TUNER_EXECUTOR_ENGINE_NPY_LOADER_H_

#include <optional>
#include <string>

#include "executor/engine/datasets.h"

namespace tuner::engine {

// A DatasetLoader for spec.files (format npy); `sizes` is unused. x is [N, sample...] of float32,
// float64, uint8 or another integer type, taken as float32 values; y is [N] (or [N, 1]) of an
// integer type, labels >= 0, classes 1 + the largest (spec.task binary: 0 and 1); with spec.task
// regression, y is [N] or [N, T] of a float or integer type, the targets. Errors name `path` and
// the file:
// Error(kNotFound) for a missing file; kDataLoss for one that is not an .npy / .npz, truncated,
// of another element type or shape than expected, or with a negative label.
Splits load_npy(const EngineJobSpec& spec, const SplitSizes& sizes, const std::string& path);

// What load_npy's splits would be shaped like, from the arrays' headers (dtype and shape) and the
// labels y (x's values are not read; a compressed .npz member is inflated to be read): name, the
// sample shape, classes (1 + the largest label; binary: 2) or targets. nullopt, nothing read, when
// a file is not named by an absolute path (nor under data.dir) or cannot be opened on this host.
// Errors as load_npy's.
std::optional<DataShape> read_npy_shape(const EngineJobSpec& spec, const std::string& path);

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_NPY_LOADER_H_
