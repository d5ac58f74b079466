// The decoded-image cache of data.format "image_folder" (internal to executor/): a folder's images
// are decoded and resized once per machine, not once per trial. Engine trials are processes of
// their own (`tuner trial`, engine_job.h), so the trials of an executor cannot share memory: the
// decoded splits are kept in a file of the cache folder, data_cache_dir()/<key>.data, which later
// trials read instead of decoding (docs/engine_jobs.md, "Decoded-image cache"). Nothing is written
// into the data's own folders (other tools, torchvision's ImageFolder among them, would take a
// folder there for a class).
//
// The key is everything the decoded splits depend on: each folder's path and, for each image
// file the listing takes, its path, size and modification time; data.size, data.color,
// validation_fraction, test_fraction and split_seed. The file holds the key's full text, so a
// file of another key (a hash collision) is never taken. A changed, added or removed image makes a
// new key; the stale file ages out.
//
// Bounded: the cache folder's files, least recently used first, are removed while they hold more
// than TUNER_DATA_CACHE_BYTES (default 4 GiB; 0 turns the cache off); splits larger than the
// budget are not cached. A cache folder that cannot be written is left out: the images are decoded
// each time, as without the cache.
//
// Thread safety: safe from any thread and any process: a lock file per key (flock) makes a second
// trial asking for the same key wait for the first one's decoding and then read its file.
#ifndef TUNER_EXECUTOR_ENGINE_DATA_CACHE_H_
#define TUNER_EXECUTOR_ENGINE_DATA_CACHE_H_

#include <cstdint>
#include <string>

#include "executor/engine/datasets.h"

namespace tuner::engine {

// The byte budget of the cache folder: $TUNER_DATA_CACHE_BYTES, else 4 GiB.
int64_t data_cache_budget();

// The cache folder: $TUNER_DATA_CACHE_DIR, else $XDG_CACHE_HOME/tuner/images, else
// $HOME/.cache/tuner/images; empty (no cache) when none of them is set.
std::string data_cache_dir();

// A DatasetLoader: load_image_folder's splits, from the cache when it holds them, else decoded
// and then written to it. Errors as load_image_folder's; a cache file that cannot be read or
// written is ignored (the images are decoded). Says on standard error (the trial's log) when the
// splits came from the cache: "trial 3: job.data: decoded images read from
// /root/.cache/tuner/images/K.data".
Splits load_image_folder_cached(const EngineJobSpec& spec, const SplitSizes& sizes,
                                const std::string& path);

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_DATA_CACHE_H_
