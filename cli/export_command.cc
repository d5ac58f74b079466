// tuner export --study NAME --storage PATH [--trial N] --registry DIR --name MODEL
//   [--promote-if-better] [--alias A[,B...]] [--metric M] [--direction D]
//   [--limit METRIC<=X[,METRIC>=Y...]] [--checkpoint FILE | --artifact PATH]
//   [--description TEXT] [--mlflow-uri URI [--mlflow-experiment NAME]]: a trial's model (an
//   engine trial's checkpoint, or the model a command trial's program saved) to the model
//   registry (docs/registry.md), and to MLflow's with --mlflow-uri (docs/tracking.md).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>

#include "cli/command.h"
#include "sweep/model_export.h"
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

// "latency_ms<=2,num_params<=1e6" -> the limits; UsageError naming a malformed one.
std::vector<MetricConstraint> parse_limits(const std::string& text) {
  std::vector<MetricConstraint> limits;
  for (const std::string& item : split_commas(text)) {
    auto bad = [&](const std::string& why) {
      return UsageError("tuner export: --limit '" + item + "': " + why +
                        "; write METRIC<=X or METRIC>=X, several separated by commas "
                        "(--limit latency_ms<=2,num_params<=1e6)");
    };
    const size_t le = item.find("<="), ge = item.find(">=");
    if ((le == std::string::npos) == (ge == std::string::npos)) {
      throw bad("expected one of '<=' and '>='");
    }
    const size_t at = le != std::string::npos ? le : ge;
    MetricConstraint c;
    c.metric = item.substr(0, at);
    c.bound =
        le != std::string::npos ? MetricConstraint::Bound::kMax : MetricConstraint::Bound::kMin;
    if (c.metric.empty()) throw bad("no metric before the bound");
    const std::string number = item.substr(at + 2);
    try {
      size_t used = 0;
      c.limit = std::stod(number, &used);
      if (used != number.size() || !std::isfinite(c.limit)) throw std::invalid_argument(number);
    } catch (const std::exception&) {
      throw bad("'" + number + "' is not a finite number");
    }
    for (const MetricConstraint& earlier : limits) {
      if (earlier.metric == c.metric && earlier.bound == c.bound) {
        throw bad("bounds " + c.metric + " as an earlier limit does (" + to_string(earlier) + ")");
      }
    }
    limits.push_back(std::move(c));
  }
  return limits;
}

constexpr Flag kFlags[] = {
    kStudyFlag,
    kStorageFlag,
    {"--trial", "N", "the trial to export (default: the best; see above)"},
    {"--registry", "DIR", "the registry directory (created when new)", kRequired},
    {"--name", "MODEL", "the registered model's name (default: the study's)"},
    {"--promote-if-better", "", "make it champion if it meets the limits and beats it"},
    {"--alias", "A,...", "aliases to point at the new version"},
    {"--metric", "M", "the metric that picks the best trial and compares versions"},
    {"--direction", "D", "maximize or minimize M"},
    {"--limit", "METRIC<=X,...", "limits a version must meet (METRIC<=X, METRIC>=Y)"},
    {"--checkpoint", "FILE", "an engine checkpoint to export (default: the engine trial's)"},
    {"--artifact", "PATH",
     "the trial's saved model: MLflow dir or .onnx (default: the one in its folder)"},
    {"--description", "TEXT", "the version's description"},
    {"--mlflow-uri", "URI", "also register it in that MLflow server's model registry"},
    {"--mlflow-experiment", "NAME", "the MLflow experiment of the study's runs"},
};

}  // namespace

int run_export(const std::vector<std::string>& args) {
  Flags flags(args, kFlags, "export");
  ExportRequest request;
  request.storage = flags.require("--storage");
  request.study = flags.require("--study");
  request.registry_dir = flags.require("--registry");
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
  // Flags keeps a flag's last value: a second --limit would drop the first without a word.
  if (std::count(args.begin(), args.end(), "--limit") > 1) {
    throw UsageError(
        "tuner export: --limit given more than once; give the limits in one, "
        "separated by commas (--limit latency_ms<=2,num_params<=1e6)");
  }
  request.limits = parse_limits(flags.get("--limit"));
  request.promote_if_better = flags.has("--promote-if-better");
  request.aliases = split_commas(flags.get("--alias"));
  request.checkpoint = flags.get("--checkpoint");
  request.artifact = flags.get("--artifact");
  if (!request.checkpoint.empty() && !request.artifact.empty()) {
    throw UsageError(
        "tuner export: --checkpoint (an engine checkpoint) and --artifact (the trial's own "
        "saved model) exclude each other");
  }
  request.description = flags.get("--description");
  request.mlflow_uri = flags.get("--mlflow-uri");
  request.mlflow_experiment = flags.get("--mlflow-experiment");
  if (flags.has("--mlflow-experiment") && request.mlflow_uri.empty()) {
    throw UsageError("tuner export: --mlflow-experiment needs --mlflow-uri");
  }

  registry::RegistryOptions options;
  options.warn = [](const std::string& message) { std::cerr << "warning: " << message << "\n"; };
  const ExportResult result = export_trial(request, options);
  const registry::ModelVersion& v = result.version;
  std::cout << "exported trial " << v.lineage.trial << " of study '" << v.lineage.study << "' as "
            << result.model_name << "/" << v.version << " (" << v.metric << " "
            << format_number(v.metric_value) << ") at " << result.dir.string() << "\n";
  if (v.user_model) {
    std::string flavors;
    for (const std::string& f : v.flavors) flavors += (flavors.empty() ? "" : ", ") + f;
    std::cout << (*v.user_model == registry::UserModelFormat::kOnnx
                      ? "the trial's ONNX file, as an MLflow model of flavors "
                      : "the trial's MLflow model, as it is, of flavors ")
              << (flavors.empty() ? "(none named)" : flavors) << ", from " << v.source
              << " (MLflow serves it: tuner predict and serve-model run engine models only)\n";
  }
  if (const auto& p = v.promotion) {
    std::cout << (p->promoted ? "promoted to champion: " : "not promoted: ") << p->reason << "\n";
  }
  if (!result.alias_summary.empty()) std::cout << "aliases: " << result.alias_summary << "\n";
  if (const auto& m = result.mlflow) {
    std::cout << "MLflow: " << m->model_name << " version " << m->version
              << (m->created ? "" : " (registered before)") << " from run " << m->run_id << " at "
              << m->tracking_uri << ", source " << m->source;
    for (size_t i = 0; i < m->aliases.size(); ++i)
      std::cout << (i ? ", @" : "; @") << m->aliases[i];
    std::cout << "\n";
  }
  if (!result.mlflow_error.empty()) {
    std::cerr << "error: MLflow: " << result.mlflow_error
              << "; the version is in the file registry as " << result.model_name << "/"
              << v.version << "; to register it in MLflow later: tuner "
              << "sync-mlflow --study " << request.study << " --storage " << request.storage
              << " --tracking-uri " << request.mlflow_uri << " --registry " << request.registry_dir
              << "\n";
    return kExitInvalidInput;
  }
  return kExitOk;
}

extern const Command kExportCommand = {
    .name = "export",
    .synopsis =
        "export --study NAME --storage PATH [--trial N] --registry DIR [--name MODEL]\n"
        "       [--promote-if-better] [--alias A,...] [--metric M --direction D]\n"
        "       [--limit METRIC<=X,METRIC>=Y,...] [--checkpoint FILE | --artifact PATH]\n"
        "       [--description TEXT] [--mlflow-uri URI [--mlflow-experiment NAME]]",
    .description =
        "a trial's model (default: the best on M within the\n"
        "limits, of several objectives from the Pareto front) as\n"
        "a new version of MODEL in the registry DIR: an engine\n"
        "trial's as an MLflow model with ONNX inside, a command\n"
        "trial's as the MLflow model or .onnx file its program\n"
        "saved in $TUNER_ARTIFACTS_DIR (docs/registry.md); with\n"
        "--mlflow-uri also in MLflow's registry (docs/tracking.md)",
    .flags = kFlags,
    .run = &run_export,
};

}  // namespace tuner::cli
