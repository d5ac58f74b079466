// tuner report --study NAME --storage PATH [--out FILE] [--seed N]: write the study's HTML
// report (docs/report.md).
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/command.h"
#include "cli/study_view.h"
#include "coordinator/metric_constraint.h"
#include "report/html_report.h"
#include "sweep/model_export.h"
#include "sweep/sweep_runner.h"
#include "trials/error.h"

namespace tuner::cli {

namespace {

// The study name as a file name: characters a shell or a file system may mind become '_'.
std::string file_name_for(const std::string& study) {
  std::string name;
  for (char c : study) {
    bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '_' || c == '.';
    name += safe ? c : '_';
  }
  if (name.empty() || name.front() == '.') name.insert(name.begin(), '_');
  return name + "-report.html";
}

std::string now_utc() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%d %H:%M UTC", &utc);
  return buffer;
}

// Writes beside `path` and renames, so that a reader never sees half a report.
void write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::path partial = path;
  partial += ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      throw Error(ErrorCode::kInvalidArgument, "cannot write the report to " + partial.string() +
                                                   ": " + std::strerror(errno) +
                                                   " (choose another --out)");
    }
  }
  std::error_code error;
  std::filesystem::rename(partial, path, error);
  if (error) {
    std::filesystem::remove(partial, error);
    throw Error(ErrorCode::kInvalidArgument,
                "cannot write the report to " + path.string() + ": " + error.message());
  }
}

// The trial the export section of the sweep that made the study picks, chosen as `tuner sweep`
// chose it when it ended; nullopt for a study that no sweep file made, or whose sweep has no
// export section.
std::optional<report::ExportPick> export_pick(const StudyRecord& study, const std::string& path) {
  if (!study.system_attrs.contains(kSweepAttr)) return std::nullopt;
  report::ExportPick pick;
  std::optional<ExportRequest> request;
  try {
    request = sweep_export_request(stored_sweep(study.name, path));
  } catch (const Error& e) {
    pick.rule = "unknown";
    pick.why_none = e.what();  // the stored sweep cannot be read: say so, render the rest
    return pick;
  }
  if (!request) return std::nullopt;
  request->storage = path;  // where the study is now, which the sweep may not have named
  pick.rule = std::string(*request->maximize ? "the highest " : "the lowest ") + request->metric;
  for (size_t i = 0; i < request->limits.size(); ++i) {
    pick.rule += (i == 0 ? " with " : ", ") + to_string(request->limits[i]);
  }
  try {
    pick.trial = choose_export_trial(*request).trial.number;
  } catch (const Error& e) {
    pick.why_none = e.what();
  }
  return pick;
}

constexpr Flag kFlags[] = {
    kStudyFlag,
    kStorageFlag,
    {"--out", "FILE", "where to write it (default: NAME-report.html here)"},
    {"--seed", "N", "the seed of the fANOVA importances (default 0)"},
};

}  // namespace

int run_report(const std::vector<std::string>& args) {
  Flags flags(args, kFlags, "report");
  const std::string path = flags.require("--storage");
  const std::string name = flags.require("--study");
  const int seed = flags.get_int("--seed", 0);
  if (seed < 0) throw UsageError("tuner report: --seed must be >= 0");
  const std::filesystem::path out = flags.get("--out", file_name_for(name));

  std::unique_ptr<Storage> storage = open_read_only(path);
  report::ReportInput input;
  input.study = find_study(*storage, name, path);
  input.trials = storage->get_trials(input.study.study_id);
  input.step_metrics = storage->get_step_metrics(input.study.study_id);
  input.export_pick = export_pick(input.study, path);
  input.generated_at = now_utc();
  input.options.importance.seed = static_cast<uint64_t>(seed);
  write_file(out, report::render_report(input));
  std::cout << "report of study '" << name << "' (" << input.trials.size() << " trials) written to "
            << out.string() << "\n";
  return kExitOk;
}

extern const Command kReportCommand = {
    .name = "report",
    .synopsis = "report --study NAME --storage PATH [--out FILE] [--seed N]",
    .description =
        "write the study's report, one self-contained HTML file\n"
        "(history, intermediate values, parallel coordinates,\n"
        "slices, fANOVA importances, trials; docs/report.md)",
    .flags = kFlags,
    .run = &run_report,
};

}  // namespace tuner::cli
