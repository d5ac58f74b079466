// tuner trial --engine-job FILE_OR_JSON: run one engine trial (executor/engine_job.h) in this
// process, speaking the command-job metrics protocol (docs/command_jobs.md) on stdout. This is what
// an executor runs for an engine job; it also runs by hand:
//   TUNER_PARAMS='{"width": 64}' tuner trial --engine-job job.json
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/command.h"
#include "cli/stop_signals.h"
#include "executor/engine_job.h"
#include "trials/error.h"
#include "trials/params_json.h"

namespace tuner::cli {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

int env_int(const char* name, int fallback) {
  const std::string text = env_or(name, "");
  if (text.empty()) return fallback;
  try {
    size_t used = 0;
    int value = std::stoi(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw Error(ErrorCode::kInvalidArgument,
              std::string(name) + ": expected an integer, got '" + text + "'");
}

// One metrics line: numbers as JSON numbers, NaN and the infinities as the strings the protocol
// reads ("nan", "inf", "-inf"; JSON has no such numbers).
std::string metrics_line(const Metrics& metrics, std::optional<int64_t> step) {
  nlohmann::json line = nlohmann::json::object();
  if (step) line["step"] = *step;
  for (const auto& [name, value] : metrics) {
    if (std::isfinite(value)) {
      line[name] = value;
    } else {
      line[name] = std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf";
    }
  }
  return line.dump();
}

}  // namespace

int run_trial(const std::vector<std::string>& args) {
  // Before any thread starts (the CPU backend's pool): SIGTERM and SIGINT become a stop request.
  StopSignals signals;
  Flags flags(args, {"--engine-job"}, {}, "trial");
  const std::string job_arg = flags.require("--engine-job", "a job file or its JSON text");
  std::string text = job_arg, where = "job";
  if (job_arg.find_first_not_of(" \t\r\n") == std::string::npos ||
      job_arg[job_arg.find_first_not_of(" \t\r\n")] != '{') {
    std::ifstream in(job_arg);
    if (!in) throw Error(ErrorCode::kNotFound, job_arg + ": cannot read the engine job file");
    std::stringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
    where = job_arg + ": job";
  }
  const EngineJobSpec spec = parse_engine_job(text, where);

  EngineTrial trial;
  trial.number = env_int("TUNER_TRIAL_NUMBER", -1);
  const std::string params = env_or("TUNER_PARAMS", "");
  if (!params.empty()) trial.params = params_from_json(params, "TUNER_PARAMS");
  if (std::string path = env_or("TUNER_CHECKPOINT_PATH", ""); !path.empty()) {
    trial.checkpoint_path = path;
  }
  if (std::string gpus = env_or("TUNER_GPUS", ""); !gpus.empty()) {
    // The trial's GPUs, comma-separated; the engine trains on one: the first.
    const std::string first = gpus.substr(0, gpus.find(','));
    try {
      trial.gpu = std::stoi(first);
    } catch (const std::exception&) {
      throw Error(ErrorCode::kInvalidArgument, "TUNER_GPUS: '" + gpus + "' is not a GPU list");
    }
  }

  auto on_report = [](const EngineReport& report) {
    std::cout << metrics_line(report.metrics, report.step) << std::endl;  // flushed
    return JobDecision::kContinue;  // the executor stops the process (SIGTERM) to prune it
  };
  EngineOutcome outcome;
  try {
    outcome = run_engine_trial(spec, trial, on_report, signals.first());
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kInternal, where + ": " + e.what());
  }
  if (!outcome.final_metrics.empty()) {
    std::cout << metrics_line(outcome.final_metrics, std::nullopt) << std::endl;
  }
  std::cerr << "tuner trial: " << outcome.end_reason << " after " << outcome.epochs_completed
            << " epoch(s)"
            << (outcome.resumed_from > 0
                    ? " (resumed from epoch " + std::to_string(outcome.resumed_from) + ")"
                    : std::string())
            << "\n";
  return kExitOk;
}

}  // namespace tuner::cli
