// launch_engine_trial: one engine trial on the job's `ranks` data-parallel ranks, launched from
// rank 0's process (docs/engine_jobs.md, "Ranks").
//
// Ranks 1..N-1 are child processes of the caller, each in a process group of its own:
//   TUNER_PATH trial --engine-job JSON --rank R --world N [--rendezvous DIR | --node-store DIR]
// with the trial's environment (TUNER_PARAMS, TUNER_TRIAL_NUMBER, TUNER_CHECKPOINT_PATH,
// TUNER_GPUS), plus TUNER_NCCL_ID (backend cuda: the run's NCCL id, made here, in rank 0's
// process) and TUNER_LAUNCHER_PID (a rank dies with its launcher). Rank 0 runs on the calling
// thread (run_engine_trial) and alone reports, writes checkpoints and artifacts. The ranks'
// standard output and error come back a line at a time, prefixed "rank R: ".
//
// Ending:
// - every rank completes: rank 0's outcome is returned once every other rank has exited 0;
// - a rank exits with another code or is killed: the others are killed (SIGKILL), rank 0 stops
//   within a batch (or at its next collective, which fails at once on the dead peer, or at worst
//   after the job's collective_timeout_s), and Error(kUnavailable) names the rank and its status,
//   e.g. "trial 3: job: rank 1 of 2 exited with code 3; the other ranks were stopped";
// - a stop requested on `stop` (the executor's SIGTERM): ranks 1..N-1 are killed at once and
//   rank 0 stops as a one-rank trial does (its epoch abandoned, the checkpoint at the last
//   completed epoch): the outcome is "interrupted". Ranks 1..N-1 write nothing, so killing them
//   loses nothing.
//
// Nodes: a job of "nodes": K > 1 spreads its N ranks over K executors (docs/engine_jobs.md,
// "Nodes"); each runs this on its node n with the node's copy of the trial's store
// (executor/node_store.h) and runs ranks [n * N / K, (n + 1) * N / K): the first in this process,
// the others as children as above (--node-store DIR instead of --rendezvous). Gloo ranks exchange
// their addresses through the store and listen on options.rank_host; for NCCL, node 0 makes the
// id and writes it to the store, and the other nodes wait for it there (up to the job's
// collective_timeout_s). Only node 0 holds rank 0; a node's own failure (a rank of it that
// fails) ends it as above, and the failure of another node reaches it as a failed collective.
//
// Thread safety: one call per process at a time (children and a monitor thread of its own).
#ifndef TUNER_EXECUTOR_ENGINE_LAUNCHER_H_
#define TUNER_EXECUTOR_ENGINE_LAUNCHER_H_

#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "executor/engine_job.h"

namespace tuner {

struct EngineLaunchOptions {
  // The `tuner` binary that runs ranks 1..N-1. Default: this process's executable
  // (/proc/self/exe), which is right inside `tuner trial`.
  std::string tuner_path;
  // The trial's GPUs on this node (TUNER_GPUS). Backend cuda: one per rank of the node, its
  // i-th rank on gpus[i] (engine_rank_gpus); ranks 1 uses the first (device 0 when empty).
  std::vector<int> gpus;
  // Where the run's rendezvous directory (backend cpu) is made: a fresh one per launch, removed
  // at the end. Default: the system's temporary directory.
  std::string rendezvous_parent;
  // The base environment of ranks 1..N-1 ("NAME=value" each); the trial's variables above
  // replace their namesakes. Default: this process's environment.
  std::optional<std::vector<std::string>> env;
  // A job of nodes > 1: this process's node in [0, nodes), and the node's store directory
  // (made and bridged to the coordinator by the executor; TUNER_NODE_STORE). Required then.
  int node = 0;
  std::string node_store_dir;
  // The address this node's CPU ranks listen on, reachable from the other nodes
  // (TUNER_RANK_HOST). Default: loopback, right when every node is on one host.
  std::string rank_host;
  // Lines written by ranks 1..N-1, "rank R: ...". Called on the launcher's monitor thread.
  // Default: standard error.
  std::function<void(const std::string&)> log;
};

// Runs `trial` (its number, params and checkpoint_path; the rank fields are set here) on
// spec.ranks ranks as the file comment says (on spec.ranks / spec.nodes of them: this node's);
// on_report and stop as run_engine_trial's, on this process's rank (rank 0 on node 0).
// With spec.ranks == 1 it is run_engine_trial on this thread alone. Throws what run_engine_trial
// throws (rank 0's errors), Error(kInvalidArgument) when the GPUs do not fit the ranks, and
// Error(kUnavailable) when a rank fails or cannot be started, or the NCCL id cannot be made (or,
// on a node other than 0, does not come within the collective timeout).
EngineOutcome launch_engine_trial(const EngineJobSpec& spec, const EngineTrial& trial,
                                  const EngineLaunchOptions& options,
                                  const EngineReportCallback& on_report = {},
                                  std::stop_token stop = {});

}  // namespace tuner

#endif  // TUNER_EXECUTOR_ENGINE_LAUNCHER_H_
