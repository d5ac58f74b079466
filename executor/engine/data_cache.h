// The data cache of engine jobs (internal to executor/): a data set (data.format "image_folder",
// "csv", "npy", or "idx": fashion-mnist) is read, decoded or parsed, and normalized once per
// machine, not once per trial. Engine trials are processes of their own (`tuner trial`,
// engine_job.h); the splits are kept in files of the cache folder, data_cache_dir()/<key>.data
// (training/data/dataset_cache.h), which every trial maps read-only: the trials of an executor
// share one copy of the data in memory, the page cache's, instead of each holding its own
// (docs/engine_jobs.md, "The data cache"). Nothing is written into the data's own folders (other
// tools, torchvision's ImageFolder among them, would take a folder there for a class).
//
// Two kinds of file:
// - normalized splits (load_normalized_cached): the splits a trial trains on, normalized with the
//   training split's statistics, with those statistics and the data set's names (classes,
//   features, columns); image_folder, csv, npy and idx. What trials and `tuner export` map.
// - decoded images (load_image_folder_cached): an image folder's splits as decoded and resized,
//   values in [0, 1], for load_raw_data's callers.
//
// The key is everything the splits depend on: each file's or folder's absolute path; a csv, npy or
// IDX file's size and a checksum of its contents (read once per trial, a fraction of parsing it);
// each image's path, size and modification time; the data members that shape the splits (size,
// color, label, columns, categorical, missing, delimiter, fractions, split_seed, fashion-mnist's
// train, validation and test counts, task, normalize). The file holds the key's full text, so a
// file of another key (a hash collision) is never taken. A changed, added or removed file makes a
// new key; the stale file ages out.
//
// Bounded: the cache folder's files, least recently used first, are removed while they hold more
// than TUNER_DATA_CACHE_BYTES (default 4 GiB; 0 turns the cache off); splits larger than the
// budget are not cached. A cache folder that cannot be written is left out: the data is read each
// time, as without the cache.
//
// Thread safety: safe from any thread and any process: a lock file per key (flock) makes a second
// trial asking for the same key wait for the first one's build and then map its file; at most
// TUNER_DATA_CACHE_WAIT_SECONDS (default 600): a trial that waited that long (a builder that hangs)
// loads its own copy, without the cache, and says so on standard error.
#ifndef TUNER_EXECUTOR_ENGINE_DATA_CACHE_H_
#define TUNER_EXECUTOR_ENGINE_DATA_CACHE_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "executor/engine/datasets.h"

namespace tuner::engine {

// The byte budget of the cache folder: $TUNER_DATA_CACHE_BYTES, else 4 GiB.
int64_t data_cache_budget();

// The longest a trial waits for another trial's build of the same splits:
// $TUNER_DATA_CACHE_WAIT_SECONDS (a decimal number, >= 0), else 600 s.
std::chrono::milliseconds data_cache_wait();

// The cache folder: $TUNER_DATA_CACHE_DIR, else $XDG_CACHE_HOME/tuner/data, else
// $HOME/.cache/tuner/data; empty (no cache) when none of them is set.
std::string data_cache_dir();

// A DatasetLoader: load_image_folder's splits, from the cache when it holds them, else decoded
// and then written to it. Errors as load_image_folder's; a cache file that cannot be read or
// written is ignored (the images are decoded). Says on standard error (the trial's log) when the
// splits came from the cache: "trial 3: job.data: decoded images read from
// /root/.cache/tuner/data/K.data".
Splits load_image_folder_cached(const EngineJobSpec& spec, const SplitSizes& sizes,
                                const std::string& path);

// For data.format image_folder, csv, npy and idx: load_raw_data's splits normalized as load_data
// normalizes them (fit_normalizer), mapped from the cache when it holds them, else loaded,
// normalized and written to it (the values the same, bit for bit). nullopt for other data sets.
// `where` is the job's path ("trial 3: job"). Errors as load_raw_data's. Says on standard error
// when the splits came from the cache: "trial 3: job.data: decoded images read from F" (image
// folders), "... parsed table read from F" (csv), "... arrays read from F" (npy), "...
// decompressed images read from F" (idx); and when it waited longer than data_cache_wait() for
// another trial's build and loaded its own copy: "trial 3: job.data: another trial of this machine
// has been building F for more than 600 s (TUNER_DATA_CACHE_WAIT_SECONDS): loaded without the
// cache".
std::optional<NormalizedSplits> load_normalized_cached(const EngineJobSpec& spec,
                                                       const EngineTrialConfig& config,
                                                       const std::string& where);

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_DATA_CACHE_H_
