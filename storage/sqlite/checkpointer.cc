#include "storage/sqlite/checkpointer.h"

#include <algorithm>
#include <optional>
#include <system_error>

#include "trials/error.h"

namespace tuner::sqlite {

namespace {

// A PASSIVE checkpoint of `db`: copies what it can of the log without waiting for any lock.
// Failures (another process checkpointing, a full disk) leave the log as it was; the next pass
// tries again, as SQLite's automatic checkpoint does.
void checkpoint(sqlite3* db) {
  sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
}

}  // namespace

Checkpointer::Checkpointer(Connection& connection, std::string synchronous_pragma)
    : connection_(connection), synchronous_pragma_(std::move(synchronous_pragma)) {
  sqlite3_wal_hook(connection_.get(), &Checkpointer::on_commit, this);
}

Checkpointer::~Checkpointer() {
  sqlite3_wal_autocheckpoint(connection_.get(), kWakeFrames);  // removes the hook
  {
    std::lock_guard lock(mutex_);
    if (thread_.joinable()) thread_.request_stop();
  }
  if (thread_.joinable()) thread_.join();
}

int Checkpointer::on_commit(void* checkpointer, sqlite3*, const char*, int frames) {
  auto* self = static_cast<Checkpointer*>(checkpointer);
  try {
    self->after_commit(frames);
  } catch (...) {
    // A failed checkpoint changes nothing; the next commit tries again.
  }
  return SQLITE_OK;  // the commit stands whatever the checkpoint did
}

void Checkpointer::after_commit(int frames) {
  if (frames < woken_at_) woken_at_ = restart_after_ = 0;  // the log started over
  if (frames < kWakeFrames) return;
  if (frames >= kCatchUpFrames && frames >= restart_after_) {
    // Should another connection keep the log (a long read), try again only after another
    // kWakeFrames pages, so that its readers do not cost every commit kCatchUpWait.
    restart_after_ = restart_log() ? 0 : frames + kWakeFrames;
    return;
  }
  bool foreground;
  {
    std::lock_guard lock(mutex_);
    foreground = foreground_;
  }
  if (foreground) {
    checkpoint(connection_.get());
  } else if (frames >= woken_at_ + kWakeFrames) {
    // One pass per kWakeFrames pages written, as often as SQLite's automatic checkpoint.
    woken_at_ = frames;
    wake();
  }
}

bool Checkpointer::restart_log() {
  // RESTART takes the write lock, copies the rest of the log, and waits until no reader uses
  // the log, so that the next write starts it over. Waiting is bounded by kCatchUpWait, not by
  // the connection's busy timeout: a long reader elsewhere must not hold up this commit.
  const std::chrono::milliseconds saved = connection_.busy_timeout();
  connection_.set_busy_timeout(std::min(saved, kCatchUpWait));
  const int rc = sqlite3_wal_checkpoint_v2(connection_.get(), "main", SQLITE_CHECKPOINT_RESTART,
                                           nullptr, nullptr);
  connection_.set_busy_timeout(saved);
  return rc == SQLITE_OK;
}

void Checkpointer::wake() {
  std::lock_guard lock(mutex_);
  pending_ = true;
  if (thread_.joinable()) {
    pending_cv_.notify_one();
    return;
  }
  try {
    thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
  } catch (const std::system_error&) {
    foreground_ = true;  // no thread: checkpoint as SQLite would, in the committing call
  }
}

void Checkpointer::run(std::stop_token stop) {
  std::optional<Connection> conn;
  try {
    conn.emplace(connection_.path());
    conn->exec(synchronous_pragma_);
  } catch (const Error&) {
    std::lock_guard lock(mutex_);
    foreground_ = true;
    return;
  }
  std::unique_lock lock(mutex_);
  for (;;) {
    pending_cv_.wait(lock, stop, [this] { return pending_; });
    if (stop.stop_requested()) return;
    pending_ = false;
    lock.unlock();
    checkpoint(conn->get());
    lock.lock();
  }
}

}  // namespace tuner::sqlite
