// HeldJob: one trial this executor holds, from its TRIAL until its outcome is handed to the loop:
// the trial, its parsed job, how to stop it, and (a node of a multi-node trial) its store relay.
//
// Thread safety: the loop thread owns a HeldJob and may stop it from any point; the job's own
// thread reads `trial`, `trial_job` and `node_store` (set before it starts, constant after),
// `decision` (atomic) and stop_reason() (locked), and writes `files` (and `checkpoint`) before its
// last event, after which the loop reads it.
#ifndef TUNER_EXECUTOR_HELD_JOB_H_
#define TUNER_EXECUTOR_HELD_JOB_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include "executor/node_store_relay.h"
#include "executor/trial_files.h"
#include "executor/trial_job.h"
#include "wire/protocol.h"

namespace tuner {

class HeldJob {
 public:
  // Constant once the job is started.
  TrialMessage trial;
  std::shared_ptr<const TrialJob> trial_job;
  // A node of a multi-node trial (trial.nodes > 1): its store; else null. Loop thread only,
  // apart from its path.
  std::unique_ptr<NodeStoreRelay> node_store;
  // An executor that sends its trials' files (ExecutorOptions::send_files): what to send once
  // the job has ended, written by the job's thread before its last event.
  TrialFilesPlan files;
  // The job's checkpoint path on this host (absolute; empty: none) and its files' stamps before
  // the job ran (after any fetch or copy), written by the job's thread before the job starts;
  // the loop reads them once the job's thread is done with it (a stopped executor sends the
  // files the job wrote).
  std::string checkpoint;
  CheckpointStamps checkpoint_before;

  // The coordinator's last DECISION: set by the loop, read by the job thread's report callback.
  std::atomic<JobDecision> decision{JobDecision::kContinue};
  // Requested when the job must end (a DECISION to stop or pause, or stop()).
  std::stop_source stop_source;
  // The step of the report the job was answered pause at (TRIAL's pause_at_step, or a DECISION
  // pause it saw); -1 while none. Written by the job thread's report callback.
  std::atomic<int64_t> paused_at_step{-1};

  // A DECISION from the coordinator: anything but kContinue is remembered and stops the job (a
  // kContinue, answering an earlier report, changes nothing).
  void decide(JobDecision d);
  // The executor stops the job itself (lease given up, shutdown), for `reason`: the first
  // reason given is kept.
  void stop(const std::string& reason);
  // The reason given to stop(); empty when the executor did not stop the job.
  std::string stop_reason() const;

  // Waits at most `timeout` for the job to be stopped (stop(), or a DECISION); true when it is.
  bool wait_for_stop(std::chrono::milliseconds timeout);
  // The coordinator's answers to the job's CHECKPOINT_GETs: the loop delivers each, the job's
  // thread takes them in order. take_checkpoint_data waits at most `timeout` for one; nullopt
  // when none came or the job is stopped.
  void deliver(CheckpointDataMessage data);
  std::optional<CheckpointDataMessage> take_checkpoint_data(std::chrono::milliseconds timeout);

 private:
  mutable std::mutex mutex_;
  std::condition_variable_any delivered_cv_;
  // State below is protected by mutex_.
  std::string stop_reason_;
  std::deque<CheckpointDataMessage> delivered_;
};

}  // namespace tuner

#endif  // TUNER_EXECUTOR_HELD_JOB_H_
