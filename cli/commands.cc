// The table of the `tuner` command's subcommands: one line each, in help order.
#include "cli/command.h"

namespace tuner::cli {

int run_space(const std::vector<std::string>& args);
int run_executor(const std::vector<std::string>& args);
int run_gpus(const std::vector<std::string>& args);
int run_devices(const std::vector<std::string>& args);
int run_trial(const std::vector<std::string>& args);
int run_sweep_command(const std::vector<std::string>& args);
int run_resume_command(const std::vector<std::string>& args);
int run_status(const std::vector<std::string>& args);
int run_trials(const std::vector<std::string>& args);
int run_best(const std::vector<std::string>& args);
int run_report(const std::vector<std::string>& args);
int run_export(const std::vector<std::string>& args);
int run_registry(const std::vector<std::string>& args);
int run_predict(const std::vector<std::string>& args);
int run_keygen(const std::vector<std::string>& args);
int run_serve_command(const std::vector<std::string>& args);
int run_stop(const std::vector<std::string>& args);
int run_pause(const std::vector<std::string>& args);
int run_unpause(const std::vector<std::string>& args);
int run_drift(const std::vector<std::string>& args);
int run_sync_mlflow(const std::vector<std::string>& args);
int run_serve_model(const std::vector<std::string>& args);
// (new commands: declare here)

std::span<const Command> commands() {
  static const Command kCommands[] = {
      {"sweep",
       "sweep FILE [--study NAME] [--storage PATH] [--executors N] [--trials N]\n"
       "      [--registry DIR] [--endpoint ENDPOINT] [--key FILE --executor-keys PATH]\n"
       "      [--insecure] [--verbose] [--submit] [--busy-timeout MS] [--tracking-uri URI]\n"
       "                                 run the study a sweep file describes (docs/sweep_file.md)\n"
       "                                 with N local executor slots (0: only executors that\n"
       "                                 connect to ENDPOINT); continues the study when it exists.\n"
       "                                 ENDPOINT other hosts can reach needs CURVE: --key is the\n"
       "                                 coordinator's .key file, --executor-keys a file of public\n"
       "                                 keys or a folder of .pub files (or --insecure: plain TCP).\n"
       "                                 --submit: hand it to the tuner serve running on its\n"
       "                                 storage and follow it (Ctrl-C leaves it running there).\n"
       "                                 Ctrl-C: finish the running trials and stop; twice: stop now.\n"
       "                                 With an \"export\" section, the best model goes to the\n"
       "                                 registry (--registry DIR overrides where). --busy-timeout:\n"
       "                                 how long a write waits for another process's database\n"
       "                                 lock (default 5000 ms). --tracking-uri: log the study to\n"
       "                                 that MLflow server as it runs (docs/tracking.md)",
       &run_sweep_command},
      {"resume",
       "resume --study NAME --storage PATH [--rerun-failed] [--executors N] [--trials N]\n"
       "       [--endpoint ENDPOINT] [--key FILE --executor-keys PATH] [--insecure]\n"
       "       [--busy-timeout MS] [--tracking-uri URI]\n"
       "                                 continue a sweep's study from its SQLite file alone;\n"
       "                                 --rerun-failed runs every FAIL trial again with its params",
       &run_resume_command},
      {"serve",
       "serve --storage PATH --endpoint ENDPOINT [--executors N] [--key FILE --executor-keys PATH]\n"
       "      [--insecure] [--verbose] [--busy-timeout MS]\n"
       "                                 one coordinator for every study of PATH that is submitted\n"
       "                                 to it (tuner sweep FILE --submit), shared fairly by the\n"
       "                                 executors that connect to ENDPOINT (and N local slots);\n"
       "                                 Ctrl-C: finish the running trials and stop; twice: now",
       &run_serve_command},
      {"stop",
       "stop --study NAME --storage PATH\n"
       "                                 a study on tuner serve starts no new trials and leaves it\n"
       "                                 when its running trials have finished",
       &run_stop},
      {"pause",
       "pause --study NAME --storage PATH\n"
       "                                 a study on tuner serve starts no new trials until unpause;\n"
       "                                 its running trials go on",
       &run_pause},
      {"unpause",
       "unpause --study NAME --storage PATH\n"
       "                                 a paused (or stopped) study on tuner serve goes on",
       &run_unpause},
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
       "                                 the best COMPLETE trial and its parameters (with\n"
       "                                 constraints: the best feasible one)",
       &run_best},
      {"space",
       "space check FILE                 validate a search-space JSON file and print it back\n"
       "space import --from FORMAT FILE  convert an NNI/Hyperopt search_space.json (FORMAT nni) or\n"
       "                                 the parameters of a W&B sweep (FORMAT wandb) to tuner's\n"
       "                                 JSON form",
       &run_space},
      {"executor",
       "executor --connect ENDPOINT [--slots N] [--prefetch P] [--gpus LIST] [--id ID]\n"
       "         [--log-dir DIR] [--heartbeat-ms N] [--timeout-ms N] [--stop-grace-ms N]\n"
       "         [--key FILE --coordinator-key FILE] [--rank-host HOST]\n"
       "                                 serve a coordinator (tcp://HOST:PORT or ipc://PATH): run\n"
       "                                 its trials on N slots (default 1), offering the GPUs in\n"
       "                                 LIST (comma-separated indices, \"none\"; default: all\n"
       "                                 found), until SIGTERM or SIGINT; reconnects when the\n"
       "                                 coordinator goes away. --prefetch takes P trials (at most\n"
       "                                 N; default 0) ahead, to start the moment a slot frees: for\n"
       "                                 trials of a second or less. With CURVE: --key is this\n"
       "                                 executor's .key file, --coordinator-key the coordinator's\n"
       "                                 .pub file. --rank-host: the address of this host that the\n"
       "                                 ranks of multi-node trials listen on (default\n"
       "                                 $TUNER_RANK_HOST, else 127.0.0.1)",
       &run_executor},
      {"keygen",
       "keygen --out NAME [--force]      write a CURVE key pair: NAME.key (secret, mode 0600) and\n"
       "                                 NAME.pub (give it to the other side; docs/protocol.md)",
       &run_keygen},
      {"gpus", "gpus                             list the GPUs this build can use", &run_gpus},
      {"devices",
       "devices                          the CPU (its vector ISA) and the GEMM kernels the engine\n"
       "                                 runs on it, then the GPUs",
       &run_devices},
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
      {"export",
       "export --study NAME --storage PATH [--trial N] --registry DIR [--name MODEL]\n"
       "       [--promote-if-better] [--alias A,...] [--metric M --direction D]\n"
       "       [--limit METRIC<=X,METRIC>=Y,...] [--checkpoint FILE] [--description TEXT]\n"
       "       [--mlflow-uri URI [--mlflow-experiment NAME]]\n"
       "                                 a trial's model (default: the best on M within the\n"
       "                                 limits, of several objectives from the Pareto front) as\n"
       "                                 a new version of MODEL in the registry DIR, an MLflow\n"
       "                                 model with ONNX inside; --promote-if-better makes it\n"
       "                                 champion only when it meets the limits and its metric\n"
       "                                 beats the champion's (docs/registry.md). --mlflow-uri:\n"
       "                                 also in that MLflow server's model registry, with the\n"
       "                                 trial's run and the aliases (docs/tracking.md)",
       &run_export},
      {"sync-mlflow",
       "sync-mlflow --study NAME --storage PATH --tracking-uri URI [--experiment NAME]\n"
       "            [--registry DIR]\n"
       "                                 log a study to MLflow tracking (a run for the study, one\n"
       "                                 per trial) or catch up what a sweep could not send; sends\n"
       "                                 only what is missing. --registry: also register the\n"
       "                                 study's versions of DIR in MLflow's model registry",
       &run_sync_mlflow},
      {"registry",
       "registry list | show MODEL[@ALIAS|/VERSION] | alias MODEL VERSION ALIAS |\n"
       "         tag MODEL VERSION KEY VALUE | delete MODEL[/VERSION]  --registry DIR\n"
       "                                 the registered models, their versions and aliases",
       &run_registry},
      {"predict",
       "predict --model DIR/MODEL[@ALIAS|/VERSION] --input FILE [--labels FILE] [--limit N]\n"
       "        [--output FILE]\n"
       "                                 batch inference with the engine: idx images (.gz, labels\n"
       "                                 found beside them) or a CSV of the model's raw inputs\n"
       "                                 (pixels 0..255 for a Fashion-MNIST model); writes class\n"
       "                                 probabilities as CSV and prints the accuracy",
       &run_predict},
      {"serve-model",
       "serve-model --model DIR/MODEL[@ALIAS|/VERSION] [--host H] [--port P] [--threads N]\n"
       "            [--model-threads N] [--max-batch N] [--max-wait-ms MS] [--reload-seconds S]\n"
       "            [--log-dir DIR [--log-sample F] [--log-max-mb MB] [--log-keep N]]\n"
       "            [--max-body-mb MB] [--grace-seconds S]\n"
       "                                 serve a model over HTTP with MLflow's scoring protocol\n"
       "                                 (POST /invocations: inputs, instances, dataframe_split,\n"
       "                                 dataframe_records, CSV; GET /ping, /health, /version,\n"
       "                                 /metrics), micro-batching concurrent requests; an alias\n"
       "                                 that moves is followed within --reload-seconds (default\n"
       "                                 2); --log-dir logs requests for tuner drift. Defaults:\n"
       "                                 127.0.0.1:5000, 2 threads, batches of 64. SIGTERM stops\n"
       "                                 it after the requests in flight (docs/serving.md)",
       &run_serve_model},
      {"drift",
       "drift --reference DATA --current LOG [--model DIR/MODEL[@ALIAS|/VERSION]]\n"
       "      [--reference-labels FILE] [--reference-limit N] [--current-limit N]\n"
       "      [--image-shape [Cx]HxW] [--bins N] [--psi-max X] [--p-min P] [--no-correction]\n"
       "      [--ks-max D] [--skip-bad N] [--json]\n"
       "                                 compare what tuner serve-model logged (a directory of\n"
       "                                 requests-*.jsonl, one such file, or a CSV) with reference\n"
       "                                 data (idx images, a CSV or another log): per feature\n"
       "                                 (per-image summaries of images, each column of a table,\n"
       "                                 the model's logits) PSI and two-sample Kolmogorov-\n"
       "                                 Smirnov, and the predicted class distribution (PSI,\n"
       "                                 chi-square). --model computes the outputs of a side that\n"
       "                                 has none. Exit 3 when any is past its threshold (default\n"
       "                                 PSI > 0.2, p-value < 0.05 / tests) (docs/drift.md)",
       &run_drift},
      // (new commands: add their entry here)
  };
  return kCommands;
}

}  // namespace tuner::cli
