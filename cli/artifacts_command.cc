// tuner artifacts --study NAME --storage PATH [--trial N]: the files the study's trials left in
// their folders (a command trial's $TUNER_ARTIFACTS_DIR), per trial, or one trial's files with
// their sizes, and the model `tuner export` would take from it.
#include <iostream>

#include "cli/artifacts_view.h"
#include "cli/command.h"
#include "cli/study_view.h"
#include "registry/user_model.h"
#include "sweep/trial_folder.h"
#include "trials/error.h"
#include "util/strings.h"

namespace tuner::cli {
namespace {

namespace fs = std::filesystem;

constexpr Flag kFlags[] = {
    kStorageFlag,
    kStudyFlag,
    {"--trial", "N", "list this trial's files, with their sizes"},
};

// "model (MLflow: python_function, sklearn)", "net.onnx (ONNX)", "2 models", "-".
std::string model_cell(const fs::path& folder) {
  const std::vector<registry::UserModel> models = registry::find_user_models(folder);
  if (models.empty()) return "-";
  if (models.size() > 1) return std::to_string(models.size()) + " models";
  const registry::UserModel& m = models.front();
  std::error_code ec;
  std::string text = fs::relative(m.path, folder, ec).generic_string();
  if (ec || text.empty()) text = m.path.string();
  if (m.format == registry::UserModelFormat::kOnnx) return text + " (ONNX)";
  std::string flavors;
  for (const std::string& f : m.flavors) flavors += (flavors.empty() ? "" : ", ") + f;
  return text + " (MLflow" + (flavors.empty() ? "" : ": " + flavors) + ")";
}

uint64_t total_size(const ArtifactListing& listing) {
  uint64_t total = 0;
  for (const ArtifactFile& f : listing.files) total += f.size;
  return total;
}

}  // namespace

int run_artifacts(const std::vector<std::string>& args) {
  Flags flags(args, kFlags, "artifacts");
  const std::string path = flags.require("--storage");
  const std::string name = flags.require("--study");
  std::optional<int> number;
  if (flags.has("--trial")) {
    number = flags.get_int("--trial", -1);
    if (*number < 0) throw UsageError("tuner artifacts: --trial must be a trial number >= 0");
  }
  std::unique_ptr<Storage> storage = open_read_only(path);
  const StudyRecord study = find_study(*storage, name, path);
  const std::optional<SweepFile> sweep = stored_sweep_of(study, path);
  const std::optional<fs::path> first = sweep ? trial_folder(*sweep, 0) : std::nullopt;
  if (!first) {
    throw Error(ErrorCode::kNotFound,
                "study '" + name + "' in " + path +
                    " has no folder per trial: only a study run by a sweep file keeps one "
                    "(the job's artifacts_dir)");
  }
  const fs::path base = first->parent_path();

  if (number) {
    const std::vector<FrozenTrial> trials =
        storage->get_trials(study.study_id, {.min_number = *number});
    if (trials.empty() || trials.front().number != *number) {
      throw Error(ErrorCode::kNotFound, "study '" + name + "' in " + path + " has no trial " +
                                            std::to_string(*number) + " ('tuner trials --study " +
                                            name + " --storage " + path + "' lists them)");
    }
    const fs::path folder = *trial_folder(*sweep, *number);
    const ArtifactListing listing = list_artifact_files(folder, kMaxListedArtifacts);
    if (listing.files.empty()) {
      throw Error(ErrorCode::kNotFound,
                  "trial " + std::to_string(*number) + " of study '" + name +
                      "' left no files in " + folder.string() +
                      " (a command trial's program writes them to $TUNER_ARTIFACTS_DIR; a trial "
                      "run on another host keeps them there unless artifacts_dir is shared)");
    }
    std::cout << "trial " << *number << " (" << to_string(trials.front().state)
              << "): " << folder.string() << "\n";
    std::vector<std::vector<std::string>> rows;
    for (const ArtifactFile& f : listing.files)
      rows.push_back({"  " + byte_size_text(f.size), f.path});
    // Sizes right-aligned.
    size_t width = 0;
    for (const auto& row : rows) width = std::max(width, row[0].size());
    for (auto& row : rows) row[0].insert(0, width - row[0].size(), ' ');
    print_table(rows);
    if (listing.truncated) std::cout << "  ... (the first " << listing.files.size() << " only)\n";
    const std::string model = model_cell(folder);
    if (model != "-") {
      std::cout << "model: " << model << "; to register it: tuner export --study " << name
                << " --storage " << path << " --trial " << *number << " --registry DIR\n";
    }
    return kExitOk;
  }

  std::vector<std::vector<std::string>> rows = {{"trial", "state", "files", "size", "model"}};
  for (const FrozenTrial& t : storage->get_trials(study.study_id)) {
    const fs::path folder = *trial_folder(*sweep, t.number);
    const ArtifactListing listing = list_artifact_files(folder, kMaxListedArtifacts);
    if (listing.files.empty()) continue;
    rows.push_back({std::to_string(t.number), std::string(to_string(t.state)),
                    std::to_string(listing.files.size()) + (listing.truncated ? "+" : ""),
                    byte_size_text(total_size(listing)), model_cell(folder)});
  }
  if (rows.size() == 1) {
    std::cout << "no trial of study '" << name << "' left files in " << base.string() << "\n";
    return kExitOk;
  }
  std::cout
      << "files of study '" << name << "' in " << base.string()
      << "/trial-<N> (optuna.artifacts.FileSystemArtifactStore(base_path) reads them there)\n";
  print_table(rows);
  return kExitOk;
}

extern const Command kArtifactsCommand = {
    .name = "artifacts",
    .synopsis = "artifacts --storage PATH --study NAME [--trial N]",
    .description =
        "the files each trial left in its folder (a command\n"
        "trial's $TUNER_ARTIFACTS_DIR) and the model in it; with\n"
        "--trial, that trial's files and their sizes",
    .flags = kFlags,
    .run = &run_artifacts,
};

}  // namespace tuner::cli
