// RAII wrappers of the SQLite C API: Connection owns a sqlite3*, it caches prepared statements
// (each one a sqlite3_stmt* owned by a unique_ptr), Statement borrows one for a single use,
// Transaction is a scoped BEGIN ... COMMIT that rolls back unless committed, and Batch is a
// scoped transaction that the Transactions opened while it lives join as savepoints (group
// commit).
//
// Internal to storage/. Every failure becomes a tuner::Error whose message names the database
// file; SQLite result codes map to error codes so that callers know how to react:
//   SQLITE_BUSY, SQLITE_LOCKED, SQLITE_IOERR         -> kUnavailable (retry the call)
//   SQLITE_READONLY, SQLITE_FULL, SQLITE_CANTOPEN,
//   SQLITE_PERM                                       -> kFailedPrecondition (fix the file first)
//   SQLITE_NOTADB, SQLITE_CORRUPT                     -> kDataLoss
//   anything else                                     -> kInternal
//
// Thread safety: none. The owner serializes every use of a Connection and of its Statements.
#ifndef TUNER_STORAGE_SQLITE_CONNECTION_H_
#define TUNER_STORAGE_SQLITE_CONNECTION_H_

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tuner::sqlite {

struct DbDeleter {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtDeleter {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using DbHandle = std::unique_ptr<sqlite3, DbDeleter>;
using StmtHandle = std::unique_ptr<sqlite3_stmt, StmtDeleter>;

class Connection;

// One use of a prepared statement: bind, step, read columns. Resets the statement and clears its
// bindings when destroyed, so the cached statement is ready for the next use. Columns and
// parameters are 0-based (parameters are shifted to SQLite's 1-based numbering here).
class Statement {
 public:
  Statement(Connection& connection, sqlite3_stmt* stmt) : connection_(&connection), stmt_(stmt) {}
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const std::string& value) {
    return bind(index, std::string_view(value));
  }
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind_null(int index);
  Statement& bind(int index, const std::optional<double>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }

  // Advances to the next row: true when there is one, false when done.
  bool step();
  // Steps to the end, for statements that return no rows.
  void run();

  bool is_null(int column) const;
  int64_t int64(int column) const;
  double real(int column) const;
  std::string text(int column) const;
  // The column's text without a copy; valid until the next step() or the Statement's end.
  std::string_view text_view(int column) const;
  std::optional<std::string> optional_text(int column) const;

 private:
  Connection* connection_;
  sqlite3_stmt* stmt_;  // owned by connection_'s cache
};

class Connection {
 public:
  // Opens `path` for reading and writing, creating it when missing, or (read_only) for reading
  // only. Nothing is written to the file by opening it. Throws Error naming the file.
  explicit Connection(std::string path, bool read_only = false);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const std::string& path() const { return path_; }
  sqlite3* get() const { return db_.get(); }

  // Waits up to `timeout` for a lock held by another connection before failing with SQLITE_BUSY.
  // The wait polls the lock in short, growing sleeps (50 us up to 1 ms, on the steady clock), so
  // that writers of several processes take turns without idling; SQLite's own handler sleeps at
  // least 1 ms, then 2, 5, 10 ms, longer than a whole write transaction here.
  void set_busy_timeout(std::chrono::milliseconds timeout);
  std::chrono::milliseconds busy_timeout() const { return busy_timeout_; }
  // Runs one or more statements that return no rows.
  void exec(std::string_view sql);
  // The cached prepared statement for `sql` (prepared on first use). The lookup allocates
  // nothing once the statement is cached.
  Statement query(std::string_view sql);

  // A Batch is open on this connection.
  bool in_batch() const { return in_batch_; }
  // Write transactions (and savepoints) committed, and batches rolled back, on this connection.
  uint64_t changes() const { return changes_; }

  // Throws the Error for SQLite result code `rc` (see the file comment), saying `what` failed.
  [[noreturn]] void fail(int rc, std::string_view what) const;

 private:
  friend class Transaction;
  friend class Batch;
  struct SqlHash {
    using is_transparent = void;
    size_t operator()(std::string_view sql) const { return std::hash<std::string_view>{}(sql); }
  };
  static int busy_wait(void* connection, int attempt);
  // The cached prepared statement for `sql` (prepared on first use).
  sqlite3_stmt* prepare(std::string_view sql);

  std::string path_;
  DbHandle db_;
  std::unordered_map<std::string, StmtHandle, SqlHash, std::equal_to<>> statements_;
  // BEGIN IMMEDIATE, BEGIN, COMMIT: prepared once (owned by statements_), used by Transaction.
  sqlite3_stmt* begin_write_ = nullptr;
  sqlite3_stmt* begin_read_ = nullptr;
  sqlite3_stmt* commit_ = nullptr;
  // A Batch is open: Transactions become savepoints of it.
  bool in_batch_ = false;
  uint64_t changes_ = 0;
  // The busy handler's budget and the deadline of the wait in progress.
  std::chrono::milliseconds busy_timeout_{0};
  std::chrono::steady_clock::time_point busy_deadline_;
};

// BEGIN IMMEDIATE (write: takes the database's write lock now, waiting up to the busy timeout)
// or BEGIN (read: a consistent snapshot). Rolls back when destroyed uncommitted. Inside a Batch
// it is a SAVEPOINT of the batch instead: commit() releases it (durable only when the batch
// commits) and an uncommitted end rolls back its own changes only. Throws Error(kUnavailable)
// when the batch's transaction is gone (SQLite rolls a transaction back by itself after some
// errors, e.g. SQLITE_FULL), so that nothing is written outside the batch.
class Transaction {
 public:
  enum class Kind { kRead, kWrite };
  Transaction(Connection& connection, Kind kind);
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();
  void commit();

 private:
  Connection& connection_;
  const bool write_;
  bool open_ = false;
  bool savepoint_ = false;
};

// Group commit: BEGIN IMMEDIATE now (the write lock, for as long as it lives); the Transactions
// opened meanwhile are its savepoints; commit() makes all of them durable in one COMMIT. Rolls
// everything back when destroyed uncommitted. REQUIRES: no Batch or Transaction is open on the
// connection.
class Batch {
 public:
  explicit Batch(Connection& connection);
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  ~Batch();
  // Throws Error(kUnavailable) when SQLite rolled the transaction back after an error inside
  // it (nothing of the batch is stored then), or the COMMIT's own error.
  void commit();

 private:
  Connection& connection_;
  bool open_ = false;
};

}  // namespace tuner::sqlite

#endif  // TUNER_STORAGE_SQLITE_CONNECTION_H_
