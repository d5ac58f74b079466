// tuner export --study NAME --storage PATH [--trial N] --registry DIR --name MODEL
//   [--promote-if-better] [--alias A[,B...]] [--metric M] [--direction D] [--checkpoint FILE]
//   [--description TEXT]: a trial's model to the model registry (docs/registry.md).
#include <iostream>
#include <sstream>

#include "cli/command.h"
#include "service/model_export.h"
#include "trials/error.h"

namespace tuner::cli {

namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string format_number(std::optional<double> v) {
  if (!v) return "none";
  std::ostringstream s;
  s.precision(6);
  s << *v;
  return s.str();
}

}  // namespace

int run_export(const std::vector<std::string>& args) {
  Flags flags(args,
              {"--study", "--storage", "--trial", "--registry", "--name", "--alias", "--metric",
               "--direction", "--checkpoint", "--description"},
              {"--promote-if-better"}, "export");
  ExportRequest request;
  request.storage = flags.require("--storage", "the study database, a SQLite file");
  request.study = flags.require("--study", "the study's name; 'tuner status' lists them");
  request.registry_dir = flags.require("--registry", "the registry directory (created when new)");
  request.model_name = flags.get("--name", request.study);
  if (flags.has("--trial")) {
    const int trial = flags.get_int("--trial", -1);
    if (trial < 0) throw UsageError("tuner export: --trial must be a trial number >= 0");
    request.trial = trial;
  }
  request.metric = flags.get("--metric");
  if (flags.has("--direction")) {
    const std::string d = flags.get("--direction");
    if (d != "maximize" && d != "minimize") {
      throw UsageError("tuner export: --direction must be maximize or minimize, not '" + d + "'");
    }
    request.maximize = d == "maximize";
  }
  request.promote_if_better = flags.has("--promote-if-better");
  request.aliases = split_commas(flags.get("--alias"));
  request.checkpoint = flags.get("--checkpoint");
  request.description = flags.get("--description");

  registry::RegistryOptions options;
  options.warn = [](const std::string& message) { std::cerr << "warning: " << message << "\n"; };
  const ExportResult result = export_trial(request, options);
  const registry::ModelVersion& v = result.version;
  std::cout << "exported trial " << v.lineage.trial << " of study '" << v.lineage.study << "' as "
            << result.model_name << "/" << v.version << " (" << v.metric << " "
            << format_number(v.metric_value) << ") at " << result.dir.string() << "\n";
  if (const auto& p = v.promotion) {
    std::cout << (p->promoted ? "promoted to champion: " : "not promoted: ") << p->reason << "\n";
  }
  if (!result.alias_summary.empty()) std::cout << "aliases: " << result.alias_summary << "\n";
  return kExitOk;
}

}  // namespace tuner::cli
