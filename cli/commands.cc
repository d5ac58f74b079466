// The table of the `tuner` command's subcommands: one line each, in help order.
#include "cli/command.h"

namespace tuner::cli {

int run_space(const std::vector<std::string>& args);
int run_executor(const std::vector<std::string>& args);
int run_gpus(const std::vector<std::string>& args);
int run_trial(const std::vector<std::string>& args);
int run_sweep_command(const std::vector<std::string>& args);
int run_resume_command(const std::vector<std::string>& args);
int run_status(const std::vector<std::string>& args);
int run_trials(const std::vector<std::string>& args);
int run_best(const std::vector<std::string>& args);
int run_report(const std::vector<std::string>& args);
// (new commands: declare here)

std::span<const Command> commands() {
  static const Command kCommands[] = {
      {"sweep",
       "sweep FILE [--study NAME] [--storage PATH] [--executors N] [--trials N]\n"
       "      [--endpoint ENDPOINT] [--verbose]\n"
       "                                 run the study a sweep file describes (docs/sweep_file.md)\n"
       "                                 with N local executor slots (0: only executors that\n"
       "                                 connect to ENDPOINT); continues the study when it exists.\n"
       "                                 Ctrl-C: finish the running trials and stop; twice: stop now",
       &run_sweep_command},
      {"resume",
       "resume --study NAME --storage PATH [--rerun-failed] [--executors N] [--trials N]\n"
       "                                 continue a sweep's study from its SQLite file alone;\n"
       "                                 --rerun-failed runs every FAIL trial again with its params",
       &run_resume_command},
      {"status",
       "status --storage PATH [--study NAME]\n"
       "                                 the studies in a database: trials by state, the best",
       &run_status},
      {"trials",
       "trials --storage PATH --study NAME [--state S,...] [--json | --csv]\n"
       "                                 the trials of a study as a table, JSON lines or CSV",
       &run_trials},
      {"best",
       "best --storage PATH --study NAME [--json]\n"
       "                                 the best COMPLETE trial and its parameters",
       &run_best},
      {"space",
       "space check FILE                 validate a search-space JSON file and print it back\n"
       "space import --from FORMAT FILE  convert an NNI/Hyperopt search_space.json (FORMAT nni) or\n"
       "                                 the parameters of a W&B sweep (FORMAT wandb) to tuner's\n"
       "                                 JSON form",
       &run_space},
      {"executor",
       "executor --connect ENDPOINT [--slots N] [--gpus LIST] [--id ID] [--log-dir DIR]\n"
       "         [--heartbeat-ms N] [--timeout-ms N] [--stop-grace-ms N]\n"
       "                                 serve a coordinator (tcp://HOST:PORT or ipc://PATH): run\n"
       "                                 its trials on N slots (default 1), offering the GPUs in\n"
       "                                 LIST (comma-separated indices, \"none\"; default: all\n"
       "                                 found), until SIGTERM or SIGINT; reconnects when the\n"
       "                                 coordinator goes away",
       &run_executor},
      {"gpus", "gpus                             list the GPUs this build can use", &run_gpus},
      {"trial",
       "trial --engine-job FILE_OR_JSON  run one engine trial (docs/engine_jobs.md) with the\n"
       "                                 params in TUNER_PARAMS, printing its metrics as JSON\n"
       "                                 lines (what an executor runs for an engine job)",
       &run_trial},
      {"report",
       "report --study NAME --storage PATH [--out FILE] [--seed N]\n"
       "                                 write the study's report, one self-contained HTML file\n"
       "                                 (history, intermediate values, parallel coordinates,\n"
       "                                 slices, fANOVA importances, trials); default FILE:\n"
       "                                 NAME-report.html here (docs/report.md)",
       &run_report},
      // (new commands: add their entry here)
  };
  return kCommands;
}

}  // namespace tuner::cli
