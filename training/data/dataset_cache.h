// A folder of dataset files (dataset_file.h), one per key (what the datasets were made from: the
// source files' identities and the options that shape them): the first process of a machine to
// ask for a key builds the datasets and writes the file; every later one maps it, so that the
// processes of a machine (an executor's trials) read and decode a data set once and share one copy
// of it in memory, the page cache's, instead of each holding its own.
//
// - Files: <dir>/<hash of the key>.data, each holding its key in full (a hash collision is told
//   apart), written atomically (dataset_file.h): a reader never maps a half-written file, and a
//   truncated or damaged one is built again, not read.
// - Build once: a process that finds no usable file takes the key's lock file, <dir>/<hash>.lock
//   (flock), looks again, and builds only when the file is still missing: processes asking at once
//   wait for the first one's build and map its file. The kernel releases the lock when its holder
//   exits, crashed or not, so a dead builder never blocks the others; what it left half-written
//   (<hash>.data.tmp<pid>.<n>) is never read and is removed an hour later.
// - Waiting is bounded: a builder that is alive but makes no progress (hung) holds the lock for
//   as long as it lives, so a waiter waits at most `max_wait`; then it builds the datasets
//   itself, in its own memory, without writing the file (CachedDatasets::waited_out). A waiter
//   tries the lock at intervals growing from 10 ms to 200 ms, so it takes a released lock within
//   200 ms.
// - The builder maps the file it wrote without reading it back (dataset_file.h,
//   write_and_map_dataset_file); every other process checks the file's checksum when it maps it.
// - Bounded: after a write, the folder's files, least recently used (mapped) first, are removed
//   while they hold more than the budget; datasets larger than the budget are not written. A
//   removed file stays readable by the processes that have it mapped until they unmap it.
//
// Thread safety: a DatasetCache is immutable; get() is safe from any thread and any process.
#ifndef TUNER_TRAINING_DATA_DATASET_CACHE_H_
#define TUNER_TRAINING_DATA_DATASET_CACHE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "training/data/dataset.h"

namespace tuner::training {

// What a build makes: the datasets (some may be empty) and a metadata text stored with them.
struct BuiltDatasets {
  std::vector<Dataset> datasets;
  std::string metadata;
};

// What DatasetCache::get gives.
struct CachedDatasets {
  // Views of the mapped file (Dataset::is_view) when `file` is set; else the build's own.
  std::vector<Dataset> datasets;
  std::string metadata;
  std::string file;    // the cache file they are mapped from; empty: not cached
  bool built = false;  // this call built them (else another process or call did)
  // Why a file that was there was not used ("damaged: the checksum of its contents"); empty when
  // there was none or it was used.
  std::string rebuilt_because;
  // Another process or call held the key's lock for longer than the cache's max_wait (a hung or
  // very slow build): this call built the datasets itself, not cached (`file` empty).
  bool waited_out = false;
};

class DatasetCache {
 public:
  // `dir`: the cache folder, created when missing (empty: no cache). `budget_bytes`: the most its
  // files may hold together (0: no cache). `on_wait`, when set, is called with the cache file's
  // path before get() waits for another process's build of it. `max_wait`: the longest get()
  // waits for another build before it builds the datasets itself (default: no bound).
  DatasetCache(std::string dir, int64_t budget_bytes,
               std::function<void(const std::string& file)> on_wait = {},
               std::chrono::milliseconds max_wait = std::chrono::milliseconds::max());

  // The datasets of `key`: mapped from its file when the folder holds a usable one; else built by
  // `build` (at most once per machine for callers asking at once), written, and mapped. Without a
  // usable folder (none, not writable, a budget of 0), when the build is larger than the budget,
  // or when another build of the key held the lock for longer than `max_wait`, the build's
  // datasets themselves. Errors are `build`'s (the lock released); a file that cannot
  // be written is left out.
  // REQUIRES: `build` makes the same datasets each time for the same key.
  CachedDatasets get(std::string_view key, const std::function<BuiltDatasets()>& build) const;

  // The file of `key` in the folder (whether or not it exists).
  std::string file_of(std::string_view key) const;

 private:
  const std::string dir_;
  const int64_t budget_;
  const std::function<void(const std::string&)> on_wait_;
  const std::chrono::milliseconds max_wait_;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DATA_DATASET_CACHE_H_
