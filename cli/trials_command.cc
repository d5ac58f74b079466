// tuner trials --study NAME --storage PATH [--state S,...] [--json | --csv | --lineage N]: the
// trials of a study as an aligned table, JSON lines or CSV; a JSON line also lists the files the
// trial left in its folder (cli/artifacts_view.h). --lineage prints a PBT segment's schedule.
#include <algorithm>
#include <iostream>
#include <sstream>

#include "cli/artifacts_view.h"
#include "cli/command.h"
#include "cli/study_view.h"
#include "sweep/trial_folder.h"
#include "trials/error.h"

namespace tuner::cli {
namespace {

std::vector<TrialState> parse_states(const std::string& text) {
  std::vector<TrialState> states;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    std::string upper = item;
    std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
    std::optional<TrialState> s = parse_trial_state(upper);
    if (!s) {
      throw UsageError("tuner trials: --state: unknown state '" + item +
                       "' (RUNNING, WAITING, COMPLETE, PRUNED, FAIL)");
    }
    states.push_back(*s);
  }
  return states;
}

std::string csv_cell(const std::string& cell) {
  if (cell.find_first_of(",\"\n") == std::string::npos) return cell;
  std::string quoted = "\"";
  for (char c : cell) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

constexpr Flag kFlags[] = {
    kStorageFlag,
    kStudyFlag,
    {"--state", "S,...", "only trials in these states (RUNNING, COMPLETE, ...)"},
    {"--json", "", "one JSON object a line, with the trial's files"},
    {"--csv", "", "CSV with exact values (not with --json)"},
    {"--lineage", "N", "the PBT schedule of trial N: the segments it continues, first first"},
};

}  // namespace

int run_trials(const std::vector<std::string>& args) {
  Flags flags(args, kFlags, "trials");
  const std::string path = flags.require("--storage");
  const std::string name = flags.require("--study");
  if (flags.has("--json") && flags.has("--csv")) {
    throw UsageError("tuner trials: --json and --csv exclude each other");
  }
  std::unique_ptr<Storage> storage = open_read_only(path);
  const StudyRecord study = find_study(*storage, name, path);
  TrialFilter filter;
  if (flags.has("--state")) filter.states = parse_states(flags.get("--state"));
  const std::vector<FrozenTrial> trials = storage->get_trials(study.study_id, filter);
  if (flags.has("--lineage")) {
    const int number = flags.get_int("--lineage", 0);
    const std::vector<std::string> schedule =
        pbt_schedule(storage->get_trials(study.study_id), number);
    if (schedule.empty()) {
      throw Error(ErrorCode::kNotFound,
                  "study '" + name + "' has no PBT segment numbered " + std::to_string(number));
    }
    for (const std::string& line : schedule) std::cout << line << "\n";
    return kExitOk;
  }
  // Several objectives: which trials are on the Pareto front (of all the study's trials).
  std::optional<std::set<int>> front;
  if (study.directions.size() > 1) front = front_numbers(*storage, study);
  if (flags.has("--json")) {
    const std::map<int64_t, std::vector<StepMetrics>> steps =
        storage->get_step_metrics(study.study_id);
    const std::optional<SweepFile> sweep = stored_sweep_of(study, path);
    for (const FrozenTrial& t : trials) {
      auto it = steps.find(t.trial_id);
      std::string line =
          trial_json(t, front ? &*front : nullptr, it == steps.end() ? nullptr : &it->second);
      // The files it left, when its folder has any, as members added to the object.
      if (const auto folder = sweep ? trial_folder(*sweep, t.number) : std::nullopt) {
        const ArtifactListing listing = list_artifact_files(*folder, kMaxListedArtifacts);
        if (!listing.files.empty() && line.ends_with('}')) {
          line.pop_back();
          line += "," + artifacts_members(*folder, listing) + "}";
        }
      }
      std::cout << line << "\n";
    }
    return kExitOk;
  }
  const std::vector<std::string> names = param_names(trials);
  // Constrained studies: whether each trial is feasible, and its constraint values; and the
  // sampler each trial came from, when recorded.
  TrialColumns columns = trial_columns(trials);
  columns.front = front;
  std::vector<std::vector<std::string>> rows = {trial_header(names, columns)};
  const Cells cells = flags.has("--csv") ? Cells::kExact : Cells::kForPeople;
  for (const FrozenTrial& t : trials) rows.push_back(trial_row(t, names, cells, columns));
  if (flags.has("--csv")) {
    for (const auto& row : rows) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i) line += (i ? "," : "") + csv_cell(row[i]);
      std::cout << line << "\n";
    }
  } else {
    print_table(rows);
  }
  return kExitOk;
}

extern const Command kTrialsCommand = {
    .name = "trials",
    .synopsis = "trials --storage PATH --study NAME [--state S,...] [--json | --csv | --lineage N]",
    .description = "the trials of a study as a table, JSON lines or CSV",
    .flags = kFlags,
    .run = &run_trials,
};

}  // namespace tuner::cli
