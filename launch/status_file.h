// A launcher's status file (the Slurm jobs', the Ray executors'), which `tuner status` reads: one
// JSON document with a "version" and the writer's "pid", replaced whole (written as PATH.next and
// renamed), read back only while its writer lives.
//
// Thread safety: free functions without state; one writer per file.
#ifndef TUNER_LAUNCH_STATUS_FILE_H_
#define TUNER_LAUNCH_STATUS_FILE_H_

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

namespace tuner {

// Writes `doc` to `path`, making its folder. Throws Error(kUnavailable) naming the path when it
// cannot be written.
void write_status_file(const std::filesystem::path& path, const nlohmann::json& doc);

// The document at `path`; nullopt when there is none, it is not JSON, its "version" is not
// `version`, or the process its "pid" names is gone.
std::optional<nlohmann::json> read_status_file(const std::filesystem::path& path, int version);

}  // namespace tuner

#endif  // TUNER_LAUNCH_STATUS_FILE_H_
