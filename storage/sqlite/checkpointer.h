// Checkpointer: keeps the write-ahead log of a WAL database short without making the writer
// wait for the disk.
//
// SQLite's automatic checkpoint runs inside the COMMIT that pushes the log past 1000 pages: that
// commit copies the log into the database and waits for two fsyncs (log, then database). Here a
// commit only wakes a thread, which does the same checkpoint (PASSIVE: it never blocks writers or
// readers) on a connection of its own. Nothing about durability changes: with synchronous=NORMAL
// a commit was never synced at COMMIT; the log is synced when it is checkpointed, as often as
// before (a pass starts whenever the log holds kWakeFrames pages or more).
//
// While writes never pause, the log cannot start over from its beginning: SQLite restarts it
// only when a writer finds it completely copied and no reader in it, which a PASSIVE checkpoint
// running beside writers (of this or other processes) cannot arrange. So once the log holds
// kCatchUpFrames pages, the commit that sees it also runs a RESTART checkpoint in the foreground
// (it holds off other writers while it copies the rest and waits, at most kCatchUpWait, for
// readers to leave the log), and the next write starts the log over. That bounds the log at
// about kCatchUpFrames pages, also with several processes writing at once, where SQLite's
// automatic checkpoint lets it grow without bound. When a reader keeps the log longer (a long
// read elsewhere), the restart is tried again only every kWakeFrames pages.
//
// Internal to storage/. Thread safety: the constructor, destructor and commits of the connection
// are serialized by the connection's owner; the thread only touches its own connection and
// state protected by mutex_.
#ifndef TUNER_STORAGE_SQLITE_CHECKPOINTER_H_
#define TUNER_STORAGE_SQLITE_CHECKPOINTER_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "storage/sqlite/connection.h"

namespace tuner::sqlite {

class Checkpointer {
 public:
  // Log size (pages) from which a commit wakes the thread: SQLite's wal_autocheckpoint default.
  static constexpr int kWakeFrames = 1000;
  // Log size (pages) from which a commit also checkpoints in the foreground and restarts the log.
  static constexpr int kCatchUpFrames = 8000;
  // How long that foreground checkpoint waits for other connections' locks.
  static constexpr std::chrono::milliseconds kCatchUpWait{50};

  // Takes over `connection`'s automatic checkpoints (its WAL hook). The thread starts at the
  // first checkpoint, with a connection to the same file and `synchronous_pragma` (e.g.
  // "PRAGMA synchronous=NORMAL"), so that it syncs as the writer's connection would.
  // REQUIRES: the file is in WAL mode; `connection` outlives this object.
  Checkpointer(Connection& connection, std::string synchronous_pragma);
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;
  // Stops the thread (a pass in progress finishes first) and gives `connection` back SQLite's
  // automatic checkpoint.
  ~Checkpointer();

 private:
  // SQLite's WAL hook: called after each commit of connection_ with the log's size in pages.
  static int on_commit(void* checkpointer, sqlite3* db, const char* schema, int frames);
  void after_commit(int frames);
  // Runs the RESTART checkpoint; false when it could not finish (locks held too long).
  bool restart_log();
  void wake();
  void run(std::stop_token stop);

  // Constant after construction.
  Connection& connection_;
  const std::string synchronous_pragma_;

  // Used only by commits of connection_ (serialized by its owner).
  int woken_at_ = 0;       // the log's size (pages) at the last wake(); 0 after it started over
  int restart_after_ = 0;  // after a failed restart_log(): the log's size for the next try

  // State below is protected by mutex_.
  std::mutex mutex_;
  std::condition_variable_any pending_cv_;
  bool pending_ = false;     // a pass is asked for
  bool foreground_ = false;  // the thread could not start or open its connection
  std::jthread thread_;      // started by the first wake()
};

}  // namespace tuner::sqlite

#endif  // TUNER_STORAGE_SQLITE_CHECKPOINTER_H_
