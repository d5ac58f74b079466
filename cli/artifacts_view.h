// The files a stored study's trials left in their folders (sweep/trial_folder.h), for the
// commands that list them (tuner trials --json, tuner artifacts).
#ifndef TUNER_CLI_ARTIFACTS_VIEW_H_
#define TUNER_CLI_ARTIFACTS_VIEW_H_

#include <filesystem>
#include <optional>
#include <string>

#include "executor/artifact_files.h"
#include "storage/storage.h"
#include "sweep/sweep_file.h"

namespace tuner::cli {

// The most files of one trial listed.
inline constexpr size_t kMaxListedArtifacts = 1000;

// The sweep stored with `study` (kSweepAttr), or nullopt when there is none or it cannot be read
// back (a listing then has no folders; it never fails for that).
std::optional<SweepFile> stored_sweep_of(const StudyRecord& study, const std::string& storage_path);

// `"artifacts_dir":"/runs/s/trial-3","artifacts":[{"path":"model/MLmodel","size":123},...]`
// and, when the listing was cut, `,"artifacts_truncated":true`: members to add to a trial's JSON
// object.
std::string artifacts_members(const std::filesystem::path& folder, const ArtifactListing& listing);

}  // namespace tuner::cli

#endif  // TUNER_CLI_ARTIFACTS_VIEW_H_
