// BackgroundSync: MlflowSync's passes on a thread of their own, every `interval`, so that
// tracking never waits on the caller's thread (a sweep's coordinator, a Study's optimize loop).
//
// A server that is down or slow: a failed pass is reported once through `warn` (not once per
// pass or trial), the next ones are tried with doubling waits up to `max_backoff`, and the one
// that succeeds reports that tracking caught up. finish() ends the thread and runs a last pass
// (the study's final state) bounded by a deadline; it never throws: a server still down leaves
// tracking behind, says so, and `tuner sync-mlflow` catches up later.
//
// Thread safety: nudge() and finish() may be called from any thread; the MlflowSync must not be
// used by others until finish() returns.
#ifndef TUNER_TRACKING_BACKGROUND_SYNC_H_
#define TUNER_TRACKING_BACKGROUND_SYNC_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "tracking/mlflow_sync.h"
#include "trials/clock.h"

namespace tuner::tracking {

struct BackgroundSyncOptions {
  // Between passes while the server answers. Default 5 s.
  std::chrono::milliseconds interval{5000};
  // The longest wait between tries while it does not. Default 60 s.
  std::chrono::milliseconds max_backoff{60000};
  // The last pass's time limit (finish()). Default 60 s.
  std::chrono::milliseconds final_pass_limit{60000};
  // The outage and recovery lines, and MlflowSync's own warnings. Default: ignored.
  std::function<void(const std::string&)> warn;
  // What the outage line suggests for catching up later, e.g. "tuner sync-mlflow --study S
  // --storage DB --tracking-uri URI". Default: none.
  std::string catch_up_hint;
  // Waits and deadlines. Default: the system clock.
  std::shared_ptr<Clock> clock;
};

class BackgroundSync {
 public:
  // Starts the thread; its first pass runs at once. `sync` is borrowed until finish().
  explicit BackgroundSync(MlflowSync& sync, BackgroundSyncOptions options = {});
  // finish() without the last pass, when it was not called.
  ~BackgroundSync();
  BackgroundSync(const BackgroundSync&) = delete;
  BackgroundSync& operator=(const BackgroundSync&) = delete;

  // A pass soon (a trial finished), unless one is under way or the server is backed off from.
  void nudge();

  // Stops the thread (a pass under way ends at its next call) and runs the last pass with the
  // study's run set to `parent_status`, within final_pass_limit. True when everything the study
  // holds is in MLflow. Idempotent: later calls return the first call's answer.
  bool finish(std::optional<RunStatus> parent_status = std::nullopt);

  // Passes that succeeded and failed so far.
  int passes() const;
  int failures() const;

 private:
  void loop(std::stop_token stop);
  // One pass; false when it failed (reported once per outage).
  bool pass(const SyncPass& pass);

  // Constant after construction.
  MlflowSync& sync_;
  const BackgroundSyncOptions options_;

  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  // State below is protected by mutex_.
  bool nudged_ = false;
  bool down_ = false;  // the last pass failed: its warning was given
  int passes_ = 0, failures_ = 0;
  std::optional<bool> finished_;

  std::jthread thread_;  // last: started once the rest is constructed
};

}  // namespace tuner::tracking

#endif  // TUNER_TRACKING_BACKGROUND_SYNC_H_
