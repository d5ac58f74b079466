// ExecutorService: the worker side of the protocol (wire/protocol.h; docs/protocol.md).
//
// Connects a DEALER to the coordinator, says HELLO with its resources (CPU slots; GPUs), READY,
// and runs each TRIAL's job on a thread of its own, at most `slots` at once (a TRIAL that finds
// every slot taken waits in a queue). While a job runs, its reports go to the coordinator as
// REPORT; a DECISION to stop (or pause) stops the job (docs/command_jobs.md, "How it ends").
// When a job ends, RESULT or FAIL goes to the coordinator and is sent again (after a reconnect,
// and every `coordinator_timeout`) until the coordinator ACKs it.
//
// Time limit: a job with "timeout_s" (executor/trial_job.h) still running that long after it
// started is stopped (SIGTERM to its process group, SIGKILL after the job's "stop_grace_s", else
// `stop_grace`) and its trial is sent as FAIL "timed out after 30 s (the job's timeout_s); killed
// by signal 15 (SIGTERM)". The lease stays in the heartbeats meanwhile, so the coordinator stores
// the FAIL and does not run the trial again.
//
// Heartbeats: every `heartbeat_interval` the service sends HEARTBEAT with the leases it holds
// (running, queued, or finished but not yet ACKed). A coordinator HEARTBEAT that no longer lists a
// running lease means the coordinator gave it up (it expired): the job is stopped and its outcome
// sent anyway, for the coordinator to refuse.
//
// The coordinator going away: when nothing has come from it for `coordinator_timeout`, or it said
// BYE, the service opens a new connection and says HELLO again (same executor_id), re-sends what
// is not ACKed and carries on; running jobs are not disturbed. An ERROR from the coordinator
// (e.g. a restarted coordinator that does not know this executor) is logged and answered with a
// new HELLO at the next heartbeat.
//
// Command jobs run as they are; an engine job (executor/engine_job.h) runs as the command job
// `TUNER_PATH trial --engine-job JSON` (engine_job_command()), with TUNER_GPUS naming the trial's
// GPUs; a job of "ranks": N runs its N ranks under that one process (executor/engine_launcher.h),
// which holds one slot, and a CUDA job of N ranks needs exactly N GPUs from the coordinator. A
// job that cannot be parsed or started is answered with FAIL naming the problem.
// ExecutorOptions::job_runner, when set, runs every trial in-process instead (benchmarks,
// embedding).
//
// A TRIAL for one node of a multi-node engine trial (TrialMessage::nodes > 1; docs/engine_jobs.md,
// "Nodes") runs `tuner trial` for that node's ranks with a fresh store directory of its own
// (executor/node_store.h; TUNER_NODE, TUNER_NODE_STORE, TUNER_RANK_HOST). The service bridges
// that directory and the coordinator's store: keys the ranks write there go out as STORE_SET
// (again after a reconnect), and STORE_KEYS from the coordinator are written there. A node other
// than 0 sends RESULT without metrics when its part ends well (exit code 0), FAIL otherwise.
//
// Trial files (ExecutorOptions::send_files; docs/protocol.md, "Trial files"): when a job ends, its
// log and its artifacts folder, kept on this host under files_dir, go to the coordinator as FILE
// chunks before the trial's RESULT or FAIL, within max_trial_files_bytes per trial (FILES_LEFT
// names the rest). The trial holds no slot meanwhile; its lease stays in the heartbeats.
//
// Thread safety: run() drives the service on the calling thread (which owns the socket); jobs run
// on threads of their own. Only one run() at a time; `stop` may be requested from any thread.
#ifndef TUNER_EXECUTOR_EXECUTOR_SERVICE_H_
#define TUNER_EXECUTOR_EXECUTOR_SERVICE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "executor/command_job.h"
#include "executor/gpu_memory.h"
#include "executor/trial_files.h"
#include "trials/clock.h"
#include "wire/curve_keys.h"

namespace tuner {

// Runs one trial in-process, with the contract of CommandJob::run: reports go to `on_report` in
// order (its answer kStop or kPause means: end now), `stop` is requested when the trial must end
// (a DECISION to stop, a lease given up, shutdown), and the returned outcome becomes RESULT or
// FAIL as a command's would (success: exit_code 0, not stopped, and the objective metric in
// final_metrics or the last report). An exception becomes FAIL ("the job could not start: ...").
// Called on the job's own thread, up to `slots` runs at once: it must be thread-safe.
using JobRunner = std::function<CommandOutcome(
    const CommandTrial& trial, const ReportCallback& on_report, std::stop_token stop)>;

struct ExecutorOptions {
  // The coordinator's endpoint, e.g. "tcp://10.0.0.5:5555" or "ipc:///tmp/tuner.sock". Required.
  std::string coordinator;
  // CURVE (wire/curve_keys.h): this executor's key pair and the coordinator's
  // public key; the connection is encrypted and only that coordinator is talked to. The
  // coordinator must have been given curve_keys->public_key. Default: none.
  std::optional<CurveKeyPair> curve_keys;
  std::string coordinator_key;
  // Stable across reconnects of this process. Default: "<hostname>-<pid>".
  std::string executor_id;
  // CPU slots: trials that run at once. Default 1. REQUIRES: >= 1.
  int slots = 1;
  // Trials taken ahead, beyond the free slots (READY offers them): each waits on this executor
  // (leased, RUNNING in storage, in its heartbeats) and the first job thread that frees starts
  // it, with no round trip to the coordinator between one trial and the next. Costs: such a
  // trial is sampled before the trials running now have finished, and near a study's end it may
  // wait here while another executor idles. Default 0. REQUIRES: 0 <= prefetch <= slots (the
  // coordinator leases at most twice an executor's slots to it).
  int prefetch = 0;
  // GPU indices offered to the coordinator. Default: every GPU the training engine finds
  // (training/device/gpu_inventory.h); an empty list offers none. Each must be among those
  // found, unless none is found (a build without CUDA, no driver, CUDA_VISIBLE_DEVICES=""): then
  // the list is offered as declared, for command jobs ("gpus_per_trial"), which only pass the
  // ids on to their programs as CUDA_VISIBLE_DEVICES.
  std::optional<std::vector<int>> gpus;
  // Measures the peak GPU memory of each trial given GPUs (executor/gpu_memory.h), reported with
  // its outcome. Default: NVML's, unless `gpus` offers none, when the driver has it; else none.
  std::shared_ptr<GpuMemoryProbe> gpu_memory;
  // How often a HEARTBEAT goes to the coordinator. Default 1 s. A TRIAL that asks for a shorter
  // interval (heartbeat_interval_ms) shortens it.
  std::chrono::milliseconds heartbeat_interval = kDefaultHeartbeatInterval;
  // Nothing from the coordinator for this long: reconnect. Default 5 s.
  // REQUIRES: > the coordinator's heartbeat interval.
  std::chrono::milliseconds coordinator_timeout{5000};
  // Nothing from the coordinator for this long, reconnects and all: stop the jobs and give up
  // (run() throws Error(kUnavailable)), as an executor a cluster started for a sweep that is gone
  // should. Zero (the default): reconnect for ever.
  std::chrono::milliseconds give_up_after{0};
  // Per-trial logs go to LOG_DIR/trial-<number>-lease-<lease>.log. Default: empty, no log files
  // (the tail that FAIL carries is kept either way), unless send_files.
  std::string log_dir;
  // Send each trial's files to the coordinator before its RESULT or FAIL (docs/protocol.md,
  // "Trial files"), for an executor whose host does not share a file system with the
  // coordinator's: the attempt's log, and the files of its artifacts folder (a job's
  // artifacts_dir/trial-<number>; a node other than 0 of a multi-node trial sends its log only).
  // The coordinator writes them where its own executors would have. Default: false (`tuner
  // executor` sets it unless --keep-files).
  bool send_files = false;
  // With send_files: where this host keeps the trials' files: a job's artifacts_dir becomes
  // FILES_DIR/<study name>/ for the trials run here (a checkpoint path under it moves along; not
  // for a multi-node trial, whose nodes share the job's folder), and logs go to FILES_DIR/logs/
  // when log_dir is empty. Files are kept there after they are sent.
  // Default: a new folder "tuner-executor-XXXXXX" in the system's temporary folder.
  std::string files_dir;
  // With send_files: the most bytes of one trial's files that are sent, its log first; the files
  // past it stay in files_dir, named in the trial's log and in the coordinator's. Default 1 GiB.
  uint64_t max_trial_files_bytes = kDefaultMaxTrialFilesBytes;
  // A stopped job's grace between SIGTERM and SIGKILL, unless the job states its own
  // ("stop_grace_s"). A stopped executor (run() ending) takes at most the longest grace of this
  // and its running jobs' from the stop to its BYE, the sending of their checkpoints included
  // (with send_files). Default 10 s.
  std::chrono::milliseconds stop_grace{10'000};
  // The address the ranks of this executor's multi-node trials listen on for the other nodes'
  // ranks (Gloo over TCP): a name or IP address of this host that the other executors' hosts can
  // reach. Default: $TUNER_RANK_HOST, else loopback (127.0.0.1), right when every executor of a
  // trial runs on one host.
  std::string rank_host;
  // The `tuner` binary that runs engine jobs (`tuner trial`). Default: this process's own
  // executable (/proc/self/exe, resolved at construction), which is right for `tuner executor`;
  // a test that embeds the service passes the built binary.
  std::string tuner_path;
  // Heartbeat and reconnect timing. Default: the system clock. (Waits for network input are real
  // time: a FakeClock only shifts the deadlines.)
  std::shared_ptr<Clock> clock;
  // Where log lines go ("executor ID: ..."). Default: standard error. Called on run()'s thread.
  std::function<void(const std::string&)> log;
  // For benchmarks and for programs that embed the service: runs each trial in this process
  // instead of its job's command (JobRunner, above). The job JSON is still parsed and its
  // objective_metric still judges the outcome; nothing is spawned and no log file is written,
  // and the job's timeout_s is not enforced (the runner has the stop token).
  // Default: empty, every job runs as its kind says.
  JobRunner job_runner;
};

// Counts since construction, for tests and status lines. Read them after run() returned.
struct ExecutorStats {
  int64_t trials_received = 0;
  int64_t results_sent = 0;  // RESULT messages, first sends only
  int64_t fails_sent = 0;    // FAIL messages, first sends only
  int64_t acks_refused = 0;  // ACKs with accepted = false
  int64_t connections = 0;   // connections opened (1 + reconnects)
  int64_t files_sent = 0;    // trial files whose every chunk the coordinator accepted
  int64_t file_bytes_sent = 0;
};

// What an executor with options `o` offers in HELLO: o.slots, and the GPUs found that `o.gpus`
// names (all found without it). When none is found (a build without CUDA, no driver,
// CUDA_VISIBLE_DEVICES hiding them), the GPUs `o.gpus` names are offered as declared: the
// user's programs may see GPUs the engine cannot. Throws Error(kInvalidArgument) for a GPU named
// and not among those found.
Resources offered_resources(const ExecutorOptions& o);

class ExecutorService {
 public:
  // Throws Error(kInvalidArgument) for options that break a REQUIRES above.
  explicit ExecutorService(ExecutorOptions options);
  ~ExecutorService();
  ExecutorService(const ExecutorService&) = delete;
  ExecutorService& operator=(const ExecutorService&) = delete;

  // Serves the coordinator until `stop` is requested (SIGTERM to `tuner executor`: a Slurm
  // preemption or time limit, a spot instance's notice); then stops the running jobs with their
  // grace (an engine job keeps its last epoch's checkpoint, a command job's program may save one
  // at TUNER_CHECKPOINT_PATH on SIGTERM), says BYE listing the leases of the stopped and queued
  // trials as preempted, with whether a checkpoint is at each one's checkpoint path (the
  // coordinator re-runs them at once, the attempt not counted; docs/protocol.md, "Preemption"),
  // and returns.
  // Throws Error only for what makes serving impossible (no ZeroMQ context, a malformed
  // endpoint), Error(kFailedPrecondition) after stopping when the coordinator has refused
  // this executor for over 2 x coordinator_timeout (its id is in use by another live executor),
  // and Error(kUnavailable) after stopping when nothing came from it for give_up_after.
  void run(std::stop_token stop);

  const ExecutorOptions& options() const;
  ExecutorStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tuner

#endif  // TUNER_EXECUTOR_EXECUTOR_SERVICE_H_
