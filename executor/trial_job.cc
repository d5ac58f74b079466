#include "executor/trial_job.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "executor/argv_template.h"
#include "executor/job_json.h"
#include "trials/error.h"
#include "trials/json_reader.h"
#include "util/strings.h"

namespace tuner {

namespace fs = std::filesystem;

namespace {

using job_json::fail;

std::string string_of(const nlohmann::json& v, const std::string& path) {
  return read_string(Json(v), path);
}

// A member in seconds, in (0, high] when `positive`, else in [0, high], as milliseconds
// (rounded; at least 1 ms when positive). nullopt when absent.
std::optional<std::chrono::milliseconds> seconds_member(const nlohmann::json& root, const char* key,
                                                        const std::string& where, bool positive,
                                                        double high) {
  auto it = root.find(key);
  if (it == root.end()) return std::nullopt;
  const std::string path = where + "." + key;
  const std::string range =
      std::string(positive ? "(0, " : "[0, ") + std::to_string(static_cast<int64_t>(high)) + "]";
  if (!it->is_number()) {
    fail(path, "expected a number of seconds in " + range + ", got " + it->type_name() +
                   (it->is_string() ? " " + it->dump() : std::string()));
  }
  const double seconds = it->get<double>();
  if (!std::isfinite(seconds) || seconds < 0 || (positive && seconds == 0) || seconds > high) {
    fail(path, "expected a number of seconds in " + range + ", got " + it->dump());
  }
  auto ms = std::chrono::milliseconds(std::llround(seconds * 1000));
  if (positive && ms.count() < 1) ms = std::chrono::milliseconds(1);
  return ms;
}

// The names of the engine placeholders under `value`, in order of first appearance.
void engine_placeholder_names(const nlohmann::json& value, std::vector<std::string>& names) {
  if (value.is_string()) {
    const std::optional<std::string> name = engine_placeholder(value.get_ref<const std::string&>());
    if (name && std::find(names.begin(), names.end(), *name) == names.end()) names.push_back(*name);
  } else if (value.is_structured()) {
    for (const nlohmann::json& child : value) engine_placeholder_names(child, names);
  }
}

// A trial's folder in a study's artifacts_dir: artifacts_dir/trial-N.
std::string trial_folder(const std::string& artifacts_dir, int64_t number) {
  return artifacts_dir + "/trial-" + std::to_string(number);
}

// A command job's spec, objective metric, artifacts_dir and GPUs per trial.
struct ParsedCommandJob {
  CommandSpec spec;
  std::string objective_metric;
  std::string artifacts_dir;
  double gpus_per_trial = 0;
  uint64_t gpu_memory_bytes = 0;
};

// "gpus_per_trial": 0, a share of one GPU in (0, 1), or a whole number of GPUs.
double gpus_per_trial_member(const nlohmann::json& value, const std::string& path) {
  const std::string expected =
      "expected a whole number of GPUs (1, 2, ...), a share of one GPU "
      "in (0, 1) such as 0.5, or 0 for none";
  if (!value.is_number()) {
    fail(path, expected + ", got " + value.type_name() +
                   (value.is_string() ? " " + value.dump() : std::string()));
  }
  const double gpus = value.get<double>();
  if (!std::isfinite(gpus) || gpus < 0 || (gpus > 1 && gpus != std::floor(gpus))) {
    fail(path, expected + ", got " + value.dump());
  }
  if (gpus > kMaxGpusPerTrial) {
    fail(path, "at most " + std::to_string(kMaxGpusPerTrial) + " GPUs, got " + value.dump());
  }
  return gpus;
}

// "0,1,3".
std::string gpu_list(const std::vector<int>& gpus) {
  std::string text;
  for (int g : gpus) {
    if (!text.empty()) text += ',';
    text += std::to_string(g);
  }
  return text;
}

ParsedCommandJob parse_command_job(const nlohmann::json& root, const std::string& where) {
  for (const auto& [key, value] : root.items()) {
    if (std::find(kCommandJobMembers.begin(), kCommandJobMembers.end(), key) ==
        kCommandJobMembers.end()) {
      fail(where + "." + key,
           "unknown member (a command job has kind, argv, env, working_dir, objective_metric, "
           "timeout_s, stop_grace_s, artifacts_dir, gpus_per_trial, gpu_memory_per_trial)");
    }
  }
  auto member = [&](const char* key) -> const nlohmann::json& {
    auto it = root.find(key);
    if (it == root.end()) fail(where + "." + key, "missing");
    return *it;
  };

  std::string kind = string_of(member("kind"), where + ".kind");
  if (kind != "command") {
    fail(where + ".kind", "expected \"command\" or \"engine\", got \"" + kind + "\"");
  }

  CommandSpec spec;
  const std::string argv_path = where + ".argv";
  const nlohmann::json& argv = member("argv");
  if (!argv.is_array()) fail(argv_path, std::string("expected an array, got ") + argv.type_name());
  if (argv.empty()) fail(argv_path, "must name a program (it is empty)");
  for (size_t i = 0; i < argv.size(); ++i) {
    spec.argv.push_back(string_of(argv[i], argv_path + "[" + std::to_string(i) + "]"));
    try {
      argv_placeholders(spec.argv.back(), i);  // a broken template fails at load
    } catch (const Error& e) {
      throw Error(ErrorCode::kInvalidArgument, where + "." + e.what());
    }
  }
  if (spec.argv.front().empty()) fail(argv_path + "[0]", "the program name is empty");

  if (auto it = root.find("env"); it != root.end()) {
    const std::string env_path = where + ".env";
    if (!it->is_object()) expect_object(Json(*it), env_path);
    for (const auto& [name, value] : it->items()) {
      if (name.empty() || name.find('=') != std::string::npos) {
        fail(env_path + "." + name, "not a valid environment variable name");
      }
      spec.env[name] = string_of(value, env_path + "." + name);
    }
  }
  if (auto it = root.find("working_dir"); it != root.end()) {
    spec.working_dir = string_of(*it, where + ".working_dir");
  }
  std::string metric = string_of(member("objective_metric"), where + ".objective_metric");
  if (metric.empty()) fail(where + ".objective_metric", "must not be empty");
  std::string artifacts_dir;
  if (auto it = root.find("artifacts_dir"); it != root.end()) {
    artifacts_dir = string_of(*it, where + ".artifacts_dir");
  }
  double gpus = 0;
  if (auto it = root.find("gpus_per_trial"); it != root.end()) {
    gpus = gpus_per_trial_member(*it, where + ".gpus_per_trial");
  }
  uint64_t gpu_memory = 0;
  if (auto it = root.find("gpu_memory_per_trial"); it != root.end()) {
    const std::string path = where + ".gpu_memory_per_trial";
    std::optional<uint64_t> bytes;
    if (it->is_string()) bytes = parse_memory_size(it->get<std::string>());
    if (!bytes || *bytes == 0) {
      fail(path, "expected a memory size such as \"20G\" or \"512M\", got " + it->dump());
    }
    if (gpus == 0) fail(path, "is the memory of a trial's GPUs: the job needs gpus_per_trial");
    gpu_memory = *bytes;
  }
  return {std::move(spec), std::move(metric), std::move(artifacts_dir), gpus, gpu_memory};
}

}  // namespace

// --- Every kind ---------------------------------------------------------------------------------

std::string TrialJob::checkpoint_path(int64_t first_number) const {
  if (artifacts_dir().empty()) return {};
  return trial_dir(first_number) + "/resume.ckpt";
}

std::optional<std::string> TrialJob::failure_reason(std::string_view) const { return std::nullopt; }

void TrialJob::check_probe(const Params&, const std::string&) const {}

std::string TrialJob::scalars_dir(int64_t) const { return {}; }

const std::string& TrialJob::artifacts_dir() const {
  static const std::string kNone;
  return kNone;
}

std::string TrialJob::trial_dir(int64_t number) const {
  if (artifacts_dir().empty()) return {};
  return trial_folder(artifacts_dir(), number);
}

// --- Command jobs -------------------------------------------------------------------------------

TrialNeeds CommandTrialJob::needs() const {
  if (gpus_per_trial_ >= 1) {
    return TrialNeeds{.gpus_per_node = static_cast<int>(gpus_per_trial_),
                      .gpu_memory_bytes = gpu_memory_bytes_};
  }
  return TrialNeeds{.gpu_fraction = gpus_per_trial_, .gpu_memory_bytes = gpu_memory_bytes_};
}

CommandSpec CommandTrialJob::command(const TrialPlacement& placement) const {
  CommandSpec command = spec_;
  if (!artifacts_dir_.empty()) {
    // The program may run in another working directory: it gets the folder's absolute path.
    std::error_code ec;
    fs::path dir = fs::absolute(trial_dir(placement.number), ec).lexically_normal();
    if (!ec) fs::create_directories(dir, ec);
    if (ec) {
      throw Error(ErrorCode::kUnavailable, "trial " + std::to_string(placement.number) +
                                               ": cannot create its artifacts folder " +
                                               dir.string() +
                                               " (the job's artifacts_dir): " + ec.message());
    }
    command.env[kArtifactsDirVariable] = dir.string();
  }
  if (gpus_per_trial_ == 0) return command;  // the environment's own CUDA_VISIBLE_DEVICES stays
  const std::string trial = "trial " + std::to_string(placement.number) + ": job";
  const size_t wanted = gpus_per_trial_ >= 1 ? static_cast<size_t>(gpus_per_trial_) : 1;
  if (placement.gpus.size() != wanted) {
    throw Error(ErrorCode::kInvalidArgument,
                trial + ".gpus_per_trial is " + nlohmann::json(gpus_per_trial_).dump() +
                    ", but the trial was given " + std::to_string(placement.gpus.size()) +
                    " GPU(s) (" + (placement.gpus.empty() ? "none" : gpu_list(placement.gpus)) +
                    ")");
  }
  const std::string gpus = gpu_list(placement.gpus);
  command.env["CUDA_VISIBLE_DEVICES"] = gpus;
  command.env["TUNER_GPUS"] = gpus;
  if (gpu_memory_bytes_ > 0) command.env[kGpuMemoryVariable] = std::to_string(gpu_memory_bytes_);
  return command;
}

std::string CommandTrialJob::scalars_dir(int64_t number) const { return trial_dir(number); }

std::string CommandTrialJob::to_json() const {
  nlohmann::json json = {
      {"kind", "command"}, {"argv", spec_.argv}, {"objective_metric", objective_metric_}};
  if (!spec_.env.empty()) json["env"] = spec_.env;
  if (!spec_.working_dir.empty()) json["working_dir"] = spec_.working_dir;
  if (timeout_) json["timeout_s"] = static_cast<double>(timeout_->count()) / 1000;
  if (stop_grace_) json["stop_grace_s"] = static_cast<double>(stop_grace_->count()) / 1000;
  if (!artifacts_dir_.empty()) json["artifacts_dir"] = artifacts_dir_;
  if (gpus_per_trial_ >= 1) {
    json["gpus_per_trial"] = static_cast<int>(gpus_per_trial_);
  } else if (gpus_per_trial_ > 0) {
    json["gpus_per_trial"] = gpus_per_trial_;
  }
  if (gpu_memory_bytes_ > 0) json["gpu_memory_per_trial"] = std::to_string(gpu_memory_bytes_);
  return json.dump();
}

// --- Engine jobs --------------------------------------------------------------------------------

TrialNeeds EngineTrialJob::needs() const {
  return TrialNeeds{.nodes = spec_.nodes,
                    .gpus_per_node = spec_.backend == "cuda" ? spec_.ranks / spec_.nodes : 0};
}

CommandSpec EngineTrialJob::command(const TrialPlacement& placement) const {
  // A CUDA job of N ranks needs N GPUs: fail before starting anything when the trial was given
  // another number (the launcher in `tuner trial` checks it again).
  engine_rank_gpus(spec_, placement.gpus, "trial " + std::to_string(placement.number) + ": job");
  CommandSpec command = engine_job_command(spec_, placement.tuner_path);
  if (!placement.gpus.empty()) command.env["TUNER_GPUS"] = gpu_list(placement.gpus);
  if (!placement.node_store_dir.empty()) {
    command.env["TUNER_NODE"] = std::to_string(placement.node);
    command.env["TUNER_NODE_STORE"] = placement.node_store_dir;
    command.env["TUNER_RANK_HOST"] = placement.rank_host;
  }
  return command;
}

std::optional<std::string> EngineTrialJob::failure_reason(std::string_view log_tail) const {
  return engine_trial_error(log_tail);
}

std::vector<std::string> EngineTrialJob::probed_params() const {
  std::vector<std::string> names;
  const nlohmann::json root = nlohmann::json::parse(spec_.json);
  if (auto model = root.find("model"); model != root.end()) engine_placeholder_names(*model, names);
  return names;
}

void EngineTrialJob::check_probe(const Params& params, const std::string& where) const {
  check_engine_model(spec_, params, where);
}

std::string seconds_text(std::chrono::milliseconds duration) {
  const int64_t ms = duration.count();
  std::string text = std::to_string(ms / 1000);
  if (int64_t frac = ms % 1000; frac != 0) {
    std::string digits = std::to_string(frac);
    digits.insert(0, 3 - digits.size(), '0');
    while (digits.back() == '0') digits.pop_back();
    text += "." + digits;
  }
  return text + " s";
}

std::unique_ptr<TrialJob> parse_trial_job(std::string_view json, const std::string& where) {
  nlohmann::json root = job_json::parse_object(json, where);
  std::unique_ptr<TrialJob> job;
  if (auto kind = root.find("kind"); kind != root.end() && *kind == "engine") {
    auto engine = std::make_unique<EngineTrialJob>(parse_engine_job(json, where));
    engine->objective_metric_ = engine->spec().objective_metric;
    job = std::move(engine);
  } else {
    ParsedCommandJob command = parse_command_job(root, where);
    job =
        std::make_unique<CommandTrialJob>(std::move(command.spec), std::move(command.artifacts_dir),
                                          command.gpus_per_trial, command.gpu_memory_bytes);
    job->objective_metric_ = std::move(command.objective_metric);
  }
  // The members both kinds share: the time limit and the stop grace.
  job->timeout_ = seconds_member(root, "timeout_s", where, true, kMaxJobTimeoutSeconds);
  job->stop_grace_ = seconds_member(root, "stop_grace_s", where, false, kMaxJobStopGraceSeconds);
  return job;
}

}  // namespace tuner
