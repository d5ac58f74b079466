// The jobs file of a Slurm launcher: what it last saw of its jobs, in its work directory
// ("jobs.json"), for `tuner status` to show while the sweep runs.
//
//   {"version": 1, "pid": 4242, "job_name": "tuner-mlp-q3x9ab", "endpoint": "tcp://login1:41234",
//    "jobs": [{"id": "81234", "state": "RUNNING", "reason": "None"}, ...]}
//
// Thread safety: pure functions on files; the file is replaced whole (written beside, renamed).
#ifndef TUNER_LAUNCH_SLURM_JOBS_FILE_H_
#define TUNER_LAUNCH_SLURM_JOBS_FILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tuner {

inline constexpr int kSlurmJobsFileVersion = 1;

// A job as the launcher's last look at the queue saw it: its id, Slurm's state ("PENDING",
// "RUNNING") and the reason Slurm gives (a pending job's).
struct SlurmJobStatus {
  std::string id;
  std::string state;
  std::string reason;
  bool operator==(const SlurmJobStatus&) const = default;
};

struct SlurmJobsRecord {
  int64_t pid = 0;  // the process that runs the launcher
  std::string job_name;
  std::string endpoint;  // where the executors connect
  std::vector<SlurmJobStatus> jobs;
  bool operator==(const SlurmJobsRecord&) const = default;
};

// Where the Slurm files of `study` in the SQLite file `storage_path` go:
// "<storage_path>.slurm/<study>".
std::string slurm_work_dir(const std::string& storage_path, const std::string& study);

// Replaces work_dir/jobs.json. Throws Error(kUnavailable) when it cannot be written.
void write_slurm_jobs_file(const std::string& work_dir, const SlurmJobsRecord& record);
// Removes it; no error when there is none.
void remove_slurm_jobs_file(const std::string& work_dir);
// The record in work_dir/jobs.json; nullopt when there is none, it is not one of this version,
// or its process no longer runs.
std::optional<SlurmJobsRecord> read_slurm_jobs_file(const std::string& work_dir);

}  // namespace tuner

#endif  // TUNER_LAUNCH_SLURM_JOBS_FILE_H_
