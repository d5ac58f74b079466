// tuner logs --study NAME --storage PATH --trial N [--log-dir DIR]: a trial's whole log, every
// attempt, from the log dir of the sweep's local executor (sweep/trial_logs.h).
#include <fstream>
#include <iostream>

#include "cli/command.h"
#include "cli/study_view.h"
#include "sweep/trial_logs.h"
#include "trials/error.h"

namespace tuner::cli {
namespace {

constexpr Flag kFlags[] = {
    kStorageFlag,
    kStudyFlag,
    {"--trial", "N", "the trial's number ('tuner trials' lists them)", kRequired},
    {"--log-dir", "DIR", "where the logs are (default: the storage's PATH.logs)"},
};

}  // namespace

int run_logs(const std::vector<std::string>& args) {
  Flags flags(args, kFlags, "logs");
  const std::string path = flags.require("--storage");
  const std::string name = flags.require("--study");
  flags.require("--trial");
  const int number = flags.get_int("--trial", -1);
  if (number < 0) throw UsageError("tuner logs: --trial must be a trial number >= 0");
  std::unique_ptr<Storage> storage = open_read_only(path);
  const StudyRecord study = find_study(*storage, name, path);
  const std::vector<FrozenTrial> trials =
      storage->get_trials(study.study_id, {.min_number = number});
  if (trials.empty() || trials.front().number != number) {
    throw Error(ErrorCode::kNotFound, "study '" + name + "' in " + path + " has no trial " +
                                          std::to_string(number) + " ('tuner trials --study " +
                                          name + " --storage " + path + "' lists them)");
  }
  const std::string dir = flags.get("--log-dir", default_log_dir(path));
  const std::vector<TrialLogFile> files = trial_log_files(dir, number);
  if (files.empty()) {
    throw Error(ErrorCode::kNotFound,
                "no log of trial " + std::to_string(number) + " in " + dir + " (trial-" +
                    std::to_string(number) +
                    "-lease-*.log): its executor ran elsewhere and keeps it in its own "
                    "--log-dir, or the trial has not started");
  }
  for (const TrialLogFile& file : files) {
    std::cout << "==> trial " << number << ", lease " << file.lease_id << ": " << file.path.string()
              << " <==\n";
    std::ifstream in(file.path, std::ios::binary);
    if (!in) throw Error(ErrorCode::kUnavailable, "cannot read " + file.path.string());
    std::cout << in.rdbuf();
    std::cout.flush();
  }
  return kExitOk;
}

extern const Command kLogsCommand = {
    .name = "logs",
    .synopsis = "logs --storage PATH --study NAME --trial N [--log-dir DIR]",
    .description =
        "a trial's whole log (its program's stderr and\n"
        "tuner's notes), every attempt in the order they ran",
    .flags = kFlags,
    .run = &run_logs,
};

}  // namespace tuner::cli
