// The files a trial left in its folder (TrialJob::trial_dir: artifacts_dir/trial-<number>), as
// `tuner trials --json` and `tuner artifacts` list them, and as Optuna's artifact records.
//
// Optuna records an artifact of a trial as the trial system attribute "artifacts:<artifact_id>"
// whose value is the JSON text {"artifact_id", "filename", "mimetype", "encoding"}
// (optuna.artifacts.upload_artifact), and optuna.artifacts.FileSystemArtifactStore(base_path)
// reads it at base_path/<artifact_id>. The records made here take as artifact_id the file's path
// relative to the job's artifacts_dir ("trial-3/model/MLmodel"), so that
// FileSystemArtifactStore(artifacts_dir) reads the files where they are, uncopied.
//
// Thread safety: pure functions over the file system.
#ifndef TUNER_EXECUTOR_ARTIFACT_FILES_H_
#define TUNER_EXECUTOR_ARTIFACT_FILES_H_

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace tuner {

class TrialJob;

// The prefix of Optuna's artifact records among a trial's system attributes.
inline constexpr char kOptunaArtifactPrefix[] = "artifacts:";
// The most files of one trial recorded as Optuna artifacts when it ends.
inline constexpr size_t kMaxRecordedArtifacts = 100;

struct ArtifactFile {
  std::string path;   // relative to the trial's folder, '/'-separated: "model/MLmodel"
  uint64_t size = 0;  // bytes
  bool operator==(const ArtifactFile&) const = default;
};

struct ArtifactListing {
  std::vector<ArtifactFile> files;  // sorted by path
  bool truncated = false;           // the folder holds more files than were listed
};

// The regular files below `dir` (symbolic links to files included, linked directories not
// entered), at most `max_files` of them (then `truncated`), sorted by path. A missing folder
// lists nothing; entries that cannot be read are left out. Never throws.
ArtifactListing list_artifact_files(const std::filesystem::path& dir, size_t max_files = 10'000);

// The MIME type and content encoding of a file name, as Python's mimetypes.guess_type gives them
// for common extensions ("a.csv.gz": "text/csv", "gzip"); "application/octet-stream" and "" when
// unknown.
struct MimeGuess {
  std::string mimetype;
  std::string encoding;  // empty: none (JSON null)
};
MimeGuess guess_mime_type(const std::string& filename);

// Optuna's record of each file of trial `number`'s folder: "artifacts:trial-<number>/<path>" ->
// the JSON string literal of its meta (a system attribute's stored JSON, as Optuna writes it).
std::map<std::string, std::string> optuna_artifact_attrs(int64_t number,
                                                         const std::vector<ArtifactFile>& files);

// The records of what trial `number` of `job` left in its folder, at most kMaxRecordedArtifacts
// files (the first by path); none when the job has no artifacts_dir or the folder is not on this
// host. Never throws.
std::map<std::string, std::string> trial_artifact_attrs(const TrialJob& job, int64_t number);

}  // namespace tuner

#endif  // TUNER_EXECUTOR_ARTIFACT_FILES_H_
