// tuner trial --engine-job FILE_OR_JSON: run one engine trial (executor/engine_job.h) in this
// process, speaking the command-job metrics protocol (docs/command_jobs.md) on stdout. This is what
// an executor runs for an engine job; it also runs by hand:
//   TUNER_PARAMS='{"width": 64}' tuner trial --engine-job job.json
// A job with "ranks": N > 1 makes this process rank 0 and the launcher of ranks 1..N-1
// (executor/engine_launcher.h), which run as
//   tuner trial --engine-job JSON --rank R --world N [--rendezvous DIR | --node-store DIR]
// print nothing on stdout and write no files. A job of "nodes": K > 1 runs here one node's part,
// as the executor says in TUNER_NODE (its index), TUNER_NODE_STORE (its copy of the trial's
// rendezvous store) and TUNER_RANK_HOST (the address its ranks listen on); a node other than 0
// prints no metrics (node 0's rank 0 reports for the trial).
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/command.h"
#include "cli/stop_signals.h"
#include "executor/engine_job.h"
#include "executor/engine_launcher.h"
#include "training/backends/cpu/cpu_kernels.h"
#include "trials/error.h"
#include "trials/params_json.h"

namespace tuner::cli {
namespace {

// --rank and the flags after it are what the launcher (rank 0) passes to ranks 1..N-1.
constexpr Flag kFlags[] = {
    {"--engine-job", "FILE_OR_JSON", "a job file or its JSON text", kRequired},
    {"--rank", "R", "run as rank R of a data-parallel trial (the launcher's)"},
    {"--world", "N", "the trial's number of ranks (the launcher's)"},
    {"--rendezvous", "DIR", "the ranks' rendezvous directory (the launcher's)"},
    {"--node-store", "DIR", "the node's rendezvous store (the launcher's)"},
};

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
    if (is_integer_engine_metric(name) && value == std::trunc(value) && std::abs(value) <= 0x1p53) {
      line[name] = static_cast<int64_t>(value);
    } else if (std::isfinite(value)) {
      line[name] = value;
    } else {
      line[name] = std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf";
    }
  }
  return line.dump();
}

// TUNER_GPUS: the trial's GPU indices, comma-separated.
std::vector<int> env_gpus() {
  const std::string text = env_or("TUNER_GPUS", "");
  std::vector<int> gpus;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    try {
      size_t used = 0;
      gpus.push_back(std::stoi(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw Error(ErrorCode::kInvalidArgument, "TUNER_GPUS: '" + text + "' is not a GPU list");
    }
    at = end + 1;
  }
  return gpus;
}

// Test-only fault injection: TUNER_TEST_RANK_EXIT="R:E" makes rank R (> 0) exit with code 3 after
// epoch E, as a rank that crashes would (on a node other than 0, its first rank is the launcher:
// the whole node then dies at once).
void maybe_fail_for_test(int rank, int64_t epoch) {
  const std::string spec = env_or("TUNER_TEST_RANK_EXIT", "");
  if (spec.empty() || rank == 0) return;
  if (spec == std::to_string(rank) + ":" + std::to_string(epoch)) {
    std::cerr << "tuner trial: rank " << rank
              << ": TUNER_TEST_RANK_EXIT: exiting with code 3 after epoch " << epoch << std::endl;
    ::_exit(3);
  }
}

// Ranks 1..N-1 of a data-parallel trial: the launcher (rank 0) started this process and kills it
// when the trial ends early; it must not outlive the launcher either.
int run_rank(const EngineJobSpec& spec, EngineTrial trial, const Flags& flags,
             const std::string& where) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (const int launcher = env_int("TUNER_LAUNCHER_PID", -1);
      launcher > 0 && ::getppid() != launcher) {
    throw Error(ErrorCode::kUnavailable, "tuner trial: rank " + flags.get("--rank") +
                                             ": the launcher (pid " + std::to_string(launcher) +
                                             ") is gone");
  }
  trial.rank = flags.get_int("--rank", 0);
  trial.world = flags.get_int("--world", 0);
  trial.rendezvous_dir = flags.get("--rendezvous");
  trial.node_store_dir = flags.get("--node-store");
  trial.rank_host = env_or("TUNER_RANK_HOST", "");
  trial.nccl_id = env_or("TUNER_NCCL_ID", "");
  if (trial.world != spec.ranks || trial.rank < 1 || trial.rank >= trial.world) {
    throw UsageError("tuner trial: --rank " + flags.get("--rank") + " --world " +
                     flags.get("--world") + " do not fit the job's ranks (" +
                     std::to_string(spec.ranks) + "); the launcher passes them");
  }
  if (spec.backend == "cuda") {
    // The node's GPUs, one per rank of the node.
    trial.gpu = engine_rank_gpus(
        spec, env_gpus(), where)[static_cast<size_t>(trial.rank % (spec.ranks / spec.nodes))];
  }
  const int rank = trial.rank;
  auto on_report = [rank](const EngineReport& report) {
    maybe_fail_for_test(rank, report.step);
    return JobDecision::kContinue;  // rank 0's decision counts
  };
  const EngineOutcome outcome = run_engine_trial(spec, trial, on_report);
  std::cerr << "tuner trial: rank " << rank << ": " << outcome.end_reason << " after "
            << outcome.epochs_completed << " epoch(s)\n";
  return kExitOk;
}

int run_trial_job(const std::vector<std::string>& args);

// `message` on one line: the executor reads a failed trial's reason from its last stderr line.
std::string one_line(std::string message) {
  for (char& c : message) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return message;
}

}  // namespace

// A failure ends with exit code 1 and one last stderr line "error: MESSAGE" (cli/main.cc prints
// it), which the executor takes as the trial's FAIL reason (executor/engine_job.h,
// engine_trial_error).
int run_trial(const std::vector<std::string>& args) {
  try {
    return run_trial_job(args);
  } catch (const Error& e) {
    throw Error(e.code(), one_line(e.what()));
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kInternal, one_line(std::string("tuner trial: ") + e.what()));
  }
}

namespace {

int run_trial_job(const std::vector<std::string>& args) {
  Flags flags(args, kFlags, "trial");
  const std::string job_arg = flags.require("--engine-job");
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
  if (flags.has("--rank")) {
    try {
      return run_rank(spec, trial, flags, where);
    } catch (const Error&) {
      throw;
    } catch (const UsageError&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(ErrorCode::kInternal, where + ": rank " + flags.get("--rank") + ": " + e.what());
    }
  }

  // Before any thread starts (the CPU backend's pool, the ranks' monitor): SIGTERM and SIGINT
  // become a stop request. Ranks 1..N-1 leave them at their default: the launcher kills them.
  StopSignals signals;
  // Into the trial's log: the kernels its GEMMs run on (chosen here, before the first one).
  if (spec.backend == "cpu")
    std::cerr << "tuner trial: " << training::describe_cpu_kernels() << "\n";
  EngineLaunchOptions launch;
  launch.gpus = env_gpus();
  launch.node = env_int("TUNER_NODE", 0);
  launch.node_store_dir = env_or("TUNER_NODE_STORE", "");
  launch.rank_host = env_or("TUNER_RANK_HOST", "");
  const bool reports = launch.node == 0;
  const int own_rank = launch.node * (spec.ranks / spec.nodes);
  // A PBT segment stops by itself after its last epoch, as a paused run (its checkpoint saved, its
  // final and test metrics measured), before SIGTERM could cut the next epoch short.
  const int pause_at = env_int("TUNER_PAUSE_AT_STEP", -1);
  auto on_report = [reports, own_rank, pause_at](const EngineReport& report) {
    if (reports) {
      std::cout << metrics_line(report.metrics, report.step) << std::endl;  // flushed
    } else {
      maybe_fail_for_test(own_rank, report.step);
    }
    if (pause_at >= 0 && report.step >= pause_at) return JobDecision::kPause;
    return JobDecision::kContinue;  // the executor stops the process (SIGTERM) to prune it
  };
  EngineOutcome outcome;
  try {
    outcome = launch_engine_trial(spec, trial, launch, on_report, signals.first());
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kInternal, where + ": " + e.what());
  }
  if (reports && !outcome.final_metrics.empty()) {
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

}  // namespace

extern const Command kTrialCommand = {
    .name = "trial",
    .synopsis = "trial --engine-job FILE_OR_JSON",
    .description =
        "run one engine trial (docs/engine_jobs.md) with the\n"
        "params in TUNER_PARAMS, printing its metrics as JSON\n"
        "lines (what an executor runs for an engine job)",
    .flags = kFlags,
    .run = &run_trial,
};

}  // namespace tuner::cli
