// Where a sweep's trial keeps its files: the folder its job gives it
// (executor/trial_job.h, TrialJob::trial_dir), found from the sweep file stored with its study.
//
// Thread safety: pure functions.
#ifndef TUNER_SWEEP_TRIAL_FOLDER_H_
#define TUNER_SWEEP_TRIAL_FOLDER_H_

#include <filesystem>
#include <optional>
#include <string>

#include "sweep/sweep_file.h"

namespace tuner {

// The job's artifacts_dir; empty when it names none.
std::string job_artifacts_dir(const SweepFile& sweep);

// The job's artifacts_dir/trial-<number> (a stored sweep's artifacts_dir is absolute: by
// default "<storage path>.artifacts/<study name>"); nullopt when the job has no artifacts_dir.
// The folder need not exist (a trial that left nothing, or ran on a host without the shared
// file system).
std::optional<std::filesystem::path> trial_folder(const SweepFile& sweep, int number);

}  // namespace tuner

#endif  // TUNER_SWEEP_TRIAL_FOLDER_H_
