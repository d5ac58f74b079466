// EngineJob: a trial that trains one of the project's own models (training/) instead of running a
// user's program (the `engine` job kind; docs/engine_jobs.md is the contract).
//
// The job's JSON form, its placeholders and the spec types are in executor/engine/job_spec.h,
// which this header includes.
//
// Three steps: parse_engine_job() validates a job once (the coordinator and the executor do, with
// no trial at hand: placeholders are only checked for syntax); resolve_engine_job() substitutes a
// trial's parameters and checks every value; run_engine_trial() trains it epoch by epoch. An
// executor runs an engine trial as a command job (engine_job_command()): `tuner trial` in a
// process of its own, which prints the metrics protocol of docs/command_jobs.md.
//
// Data parallelism: a job with "ranks": N > 1 trains each trial on N ranks (N CPU processes over
// Gloo, or one process per GPU over NCCL). run_engine_trial() runs one rank; `tuner trial` runs
// rank 0 and launches the others (executor/engine_launcher.h). With "nodes": K > 1 the ranks are
// spread over K executors, each running `tuner trial` for its N / K ranks.
//
// The parts of run_engine_trial live in executor/engine/ (internal): the data-set catalogue
// (datasets.h), the factories of its training objects (factories.h), the checkpoint's history
// (history_file.h), the artifacts folder (trial_artifacts.h) and the latency figures (latency.h).
//
// Thread safety: pure functions, except run_engine_trial, which reads and writes files (data,
// checkpoint, artifacts); concurrent runs need distinct checkpoint paths and trial numbers.
#ifndef TUNER_EXECUTOR_ENGINE_JOB_H_
#define TUNER_EXECUTOR_ENGINE_JOB_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "executor/command_job.h"
#include "executor/engine/datasets.h"
#include "executor/engine/job_spec.h"
#include "trials/param_value.h"
#include "wire/protocol.h"

namespace tuner {

// Why a failed engine trial failed, from its output: `tuner trial` ends a failure with exit code
// 1 and one line "error: MESSAGE" on stderr (the message on a single line), which is the last
// line it writes. Returns the MESSAGE of the last such line of `log_tail` (a CommandOutcome's
// log tail), or nullopt when there is none (the process crashed or was killed). The executor
// makes it the FAIL reason (docs/engine_jobs.md, "When a trial fails").
std::optional<std::string> engine_trial_error(std::string_view log_tail);

// How the engine turns a value of the dataset's files into a model input: the loader's scaling
// (float(raw) / divisor), then the normalization with the statistics of the trial's training
// split, (x - mean) * (1 / stddev). An exported model does the same at its input
// (docs/registry.md, "Preprocessing"), so that it takes the dataset's own values.
//
// A csv file's model normalizes each encoded feature on its own, an RGB image folder's model each
// channel: `feature_mean` and `feature_stddev` then hold one value per element of the sample's
// first dimension (mean 0, stddev 1 unused), and for a csv file `columns` says how a row of the
// file becomes those features.
struct EngineInputPipeline {
  std::string dataset;  // "fashion-mnist", "csv", "npy"
  bool uint8 = false;   // the raw values are uint8 (fashion-mnist: pixels 0..255)
  float divisor = 1.0f;
  float mean = 0.0f;
  float stddev = 1.0f;  // > 0
  // csv: [F] statistics of the training split's encoded features; an RGB image folder: [C] of its
  // channels (else empty). stddev > 0.
  std::vector<float> feature_mean, feature_stddev;
  std::vector<engine::FeatureColumn> columns;  // the feature columns, in file order
  std::vector<std::string> features;           // [F] names ("age", "color=red")
  std::string label;                           // the label column's name
  bool missing_mean = false;                   // data.missing "mean" (else a missing value fails)
  std::vector<std::string> class_labels;       // the label of each output, in output order
  // data.task: a regression's outputs are the predicted values (class_labels empty), which the
  // model learns standardized by target_scaling (the training split's mean and standard
  // deviation of each target; empty otherwise).
  training::Task task = training::Task::kClassification;
  training::TargetScaling target_scaling;
};

// The pipeline of a trial of `spec` with `config` (resolve_engine_job's), its statistics
// computed from the training split as run_engine_trial computes them. Reads the data: throws
// Error naming the file, kNotFound when missing, kDataLoss when unreadable.
EngineInputPipeline engine_input_pipeline(const EngineJobSpec& spec,
                                          const EngineTrialConfig& config);

// The trial an engine run is for.
struct EngineTrial {
  int number = -1;  // names the artifacts folder; REQUIRES: >= 0 when the job has artifacts_dir
  Params params;
  // Saved after every epoch, and restored from when it exists at the start (a paused or
  // preempted trial resumes). Beside it, PATH.history.json keeps the epochs' metrics.
  std::optional<std::string> checkpoint_path;
  int gpu = 0;  // the CUDA device of backend "cuda" (this rank's)
  // Data parallelism: this run is rank `rank` of `world`. REQUIRES: world == the job's ranks,
  // 0 <= rank < world. Rank 0 alone writes the checkpoint, its history and the artifacts; every
  // rank restores the checkpoint when it exists.
  int rank = 0;
  int world = 1;
  // world > 1, backend cpu: the Gloo rendezvous directory every rank sees, fresh for this run.
  std::string rendezvous_dir;
  // world > 1 on several nodes (the job's nodes > 1), backend cpu, instead of rendezvous_dir:
  // this node's copy of the trial's store (executor/node_store.h), and the address this rank
  // listens on for the others (reachable from the other nodes; empty: loopback).
  std::string node_store_dir;
  std::string rank_host;
  // world > 1, backend cuda: the run's NCCL id (training::nccl_new_unique_id() in rank 0's
  // process, which must stay up while the others join).
  std::string nccl_id;
};

// What the report callback gets after each epoch: step = the epoch (1-based), and the metrics
// train_loss, val_loss, the task's (val_accuracy; binary: and val_auc; regression: val_rmse and
// val_mae instead), lr (the epoch's last), epoch_seconds, the system's: samples_per_second (the
// training split's samples over epoch_seconds, evaluation included) and peak_rss_mb (the peak
// resident memory of rank 0's process so far, MiB), and the model's figures (EngineOutcome), so
// that a scheduler can judge them as objectives: num_params, train_flops_per_sample,
// checkpoint_bytes, and on rank 0 latency_ms and latency_ms_per_sample, measured once per trial
// (after its first epoch, or kept from a resumed checkpoint's history) and the same every epoch.
struct EngineReport {
  int64_t step = 0;
  Metrics metrics;
};
// Called after each epoch (its checkpoint saved); kStop and kPause end the run. With world > 1 it
// is called on every rank and rank 0's decision is the one every rank follows (it is broadcast).
using EngineReportCallback = std::function<JobDecision(const EngineReport&)>;

// The final metrics an engine trial reports (EngineOutcome::final_metrics), those of the best
// epoch first: what a sweep's objectives and constraints on an engine job may name. test_loss and
// the task's test_accuracy, test_auc or test_rmse and test_mae only with data.test > 0 and when the
// run was not interrupted; the latencies from rank 0.
inline const std::vector<std::string>& engine_final_metrics() {
  static const std::vector<std::string> kMetrics = {"train_loss",
                                                    "val_loss",
                                                    "val_accuracy",
                                                    "val_auc",
                                                    "val_rmse",
                                                    "val_mae",
                                                    "lr",
                                                    "epoch_seconds",
                                                    "samples_per_second",
                                                    "peak_rss_mb",
                                                    "best_epoch",
                                                    "num_params",
                                                    "train_flops_per_sample",
                                                    "checkpoint_bytes",
                                                    "latency_ms",
                                                    "latency_ms_per_sample",
                                                    "test_loss",
                                                    "test_accuracy",
                                                    "test_auc",
                                                    "test_rmse",
                                                    "test_mae"};
  return kMetrics;
}

// The engine's metrics that count (an epoch number): written as JSON integers, so that they are
// stored as integers (docs/command_jobs.md).
inline bool is_integer_engine_metric(std::string_view name) {
  return name == "best_epoch" || name == "num_params" || name == "train_flops_per_sample" ||
         name == "checkpoint_bytes";
}

struct EngineOutcome {
  // The best epoch's metrics by the objective (NaN epochs never win unless all are NaN; ties go
  // to the earlier epoch), plus "best_epoch" and the model's figures, which a sweep may trade
  // accuracy against (objectives or constraints): "num_params" (its parameter count),
  // "train_flops_per_sample" (3 x the forward pass's, 2 per multiply-add:
  // training::Sequential::forward_flops), "checkpoint_bytes" (the model's checkpoint: spec,
  // weights and buffers, as the registry's export reads it), and, measured once per trial on rank
  // 0 in eval mode with the job's threads (EngineReport), "latency_ms" (one forward pass of one
  // sample, the median of repeated calls) and "latency_ms_per_sample" (of a batch of
  // latency_batch, divided by it). When the run was not interrupted: test_loss and the task's
  // test metrics when data.test > 0. Empty when no epoch completed.
  Metrics final_metrics;
  int64_t epochs_completed = 0;  // restored ones included
  int64_t resumed_from = 0;      // the checkpoint's epoch; 0 for a fresh start
  // "completed", "callback" (kStop or kPause), "interrupted" (the stop token; the epoch under way
  // was abandoned) or "diverged" (a non-finite training loss).
  std::string end_reason;
};

// Trains the trial (see the file comment and docs/engine_jobs.md). A stop requested on `stop`
// abandons the current epoch within one batch; the checkpoint then stays at the last completed
// epoch. Deterministic: the same job, params, seed, threads and ranks give the same metrics and
// weights, with or without a resume from a checkpoint in between; N ranks give those of one to
// float tolerance (without dropout or batch norm, which see each rank's rows alone).
//
// With world > 1 this is one rank: every rank must run it with the same spec and params. A stop
// requested on one rank abandons that rank's epoch only, so the other ranks' next collective
// fails: stop one rank only when the others are being killed (as `tuner trial` does); a
// collective that fails after this rank's stop was requested ends the run as "interrupted".
// A collective that fails otherwise (a peer died, the timeout passed) throws
// Error(kUnavailable) naming this rank ("trial 3: job: rank 0 of 2: gloo ...").
// Throws Error naming the JSON path or file: kInvalidArgument for values that do not fit (a model
// whose input is not the data's, a batch larger than the training split), kNotFound or kDataLoss
// for data files, kDataLoss for a corrupt checkpoint, kFailedPrecondition for a checkpoint of
// another model (other parameters), kUnavailable for a CUDA backend or communicator that cannot
// be made or a file that cannot be written; kInvalidArgument for a rank, world, rendezvous
// directory or NCCL id that does not fit the job. training.init_from's (a source that is missing,
// unreadable or does not fit the model) are engine/init_source.h's.
EngineOutcome run_engine_trial(const EngineJobSpec& spec, const EngineTrial& trial,
                               const EngineReportCallback& on_report = {},
                               std::stop_token stop = {});

// The CUDA device of each rank of one node of a trial given `trial_gpus` (TUNER_GPUS, the node's
// GPUs): backend cuda with ranks > 1 needs exactly one GPU per rank of the node (ranks / nodes;
// the node's i-th rank trains on trial_gpus[i]); ranks 1 trains on the first GPU, or device 0
// when none was given. Empty for backend cpu. Throws Error(kInvalidArgument) naming `where`.ranks
// and the GPUs when they do not fit.
std::vector<int> engine_rank_gpus(const EngineJobSpec& spec, const std::vector<int>& trial_gpus,
                                  const std::string& where = "job");

// The command an executor runs for an engine trial: [tuner_path, "trial", "--engine-job", JSON],
// the JSON's braces doubled for the argv template (executor/argv_template.h).
CommandSpec engine_job_command(const EngineJobSpec& spec, const std::string& tuner_path);

}  // namespace tuner

#endif  // TUNER_EXECUTOR_ENGINE_JOB_H_
