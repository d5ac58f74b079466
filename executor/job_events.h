// JobEvents: what job threads hand to the executor's loop (a trial's REPORT, its outcome, a line
// for the log), and the eventfd that wakes the loop's wait when one is posted.
//
// Thread safety: post() and wake() from any thread; take(), drain() and clear() from the loop's
// thread.
#ifndef TUNER_EXECUTOR_JOB_EVENTS_H_
#define TUNER_EXECUTOR_JOB_EVENTS_H_

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

#include "executor/unique_fd.h"
#include "wire/protocol.h"

namespace tuner {

// One thing a job thread hands to the loop: a report, a request for a chunk of a checkpoint (the
// answer goes to HeldJob::deliver), the job's outcome (its last event), or else a note for the
// executor's log and nothing more.
struct JobEvent {
  uint64_t lease_id = 0;
  std::optional<ReportMessage> report;
  std::optional<CheckpointGetMessage> checkpoint_get;
  std::optional<Message> outcome;  // RESULT or FAIL; the job's last event
  std::string note;
};

class JobEvents {
 public:
  // Throws Error(kUnavailable) when no eventfd can be made.
  JobEvents();

  // Queues `event` and wakes the loop.
  void post(JobEvent event);
  // Wakes the loop without an event (a stop request).
  void wake();

  // The events posted since the last take, in order.
  std::deque<JobEvent> take();
  // Drops the events posted and not taken.
  void clear();

  // Readable after a post or a wake until drain(): for the loop's poll.
  int fd() const { return fd_.get(); }
  void drain();

 private:
  // Constant after construction.
  UniqueFd fd_;

  // State below is protected by mutex_.
  std::mutex mutex_;
  std::deque<JobEvent> events_;
};

}  // namespace tuner

#endif  // TUNER_EXECUTOR_JOB_EVENTS_H_
