#include "storage/sqlite/connection.h"

#include <algorithm>
#include <filesystem>
#include <thread>

#include "storage/storage_fault.h"
#include "trials/error.h"

namespace tuner::sqlite {

namespace {

ErrorCode code_for(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
      return ErrorCode::kUnavailable;
    case SQLITE_READONLY:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
      return ErrorCode::kFailedPrecondition;
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return ErrorCode::kDataLoss;
    default:
      return ErrorCode::kInternal;
  }
}

std::string advice_for(int rc, const std::string& path) {
  switch (rc & 0xff) {
    case SQLITE_CANTOPEN: {
      const std::filesystem::path dir = std::filesystem::path(path).parent_path();
      std::error_code ec;
      if (dir.empty() || std::filesystem::is_directory(dir, ec)) return "";
      if (std::filesystem::exists(dir, ec)) return "; '" + dir.string() + "' is not a directory";
      return "; its directory '" + dir.string() + "' does not exist: create it first";
    }
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "; another process holds the database lock longer than the busy timeout: retry, or "
             "raise the busy timeout (--busy-timeout MS on tuner sweep, resume and serve; "
             "SqliteStorageOptions::busy_timeout in C++)";
    case SQLITE_READONLY:
      return "; the file (or its directory, or this connection) is read-only: make it writable "
             "or open a writable copy";
    case SQLITE_FULL:
      return "; the disk is full: free space and retry";
    case SQLITE_NOTADB:
      return "; the file is not a SQLite database";
    case SQLITE_CONSTRAINT:
      return "; the transaction was rolled back, nothing of it was written";
    default:
      return "";
  }
}

}  // namespace

Statement::~Statement() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

Statement& Statement::bind(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index + 1, value);
  if (rc != SQLITE_OK) connection_->fail(rc, "binding a parameter");
  return *this;
}

Statement& Statement::bind(int index, double value) {
  int rc = sqlite3_bind_double(stmt_, index + 1, value);
  if (rc != SQLITE_OK) connection_->fail(rc, "binding a parameter");
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  int rc = sqlite3_bind_text64(stmt_, index + 1, value.data(), value.size(), SQLITE_TRANSIENT,
                               SQLITE_UTF8);
  if (rc != SQLITE_OK) connection_->fail(rc, "binding a parameter");
  return *this;
}

Statement& Statement::bind_null(int index) {
  int rc = sqlite3_bind_null(stmt_, index + 1);
  if (rc != SQLITE_OK) connection_->fail(rc, "binding a parameter");
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  connection_->fail(rc, std::string("running '") + sqlite3_sql(stmt_) + "'");
}

void Statement::run() {
  while (step()) {
  }
}

bool Statement::is_null(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}
int64_t Statement::int64(int column) const { return sqlite3_column_int64(stmt_, column); }
double Statement::real(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Statement::text(int column) const {
  const unsigned char* p = sqlite3_column_text(stmt_, column);
  int n = sqlite3_column_bytes(stmt_, column);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}

std::string_view Statement::text_view(int column) const {
  const unsigned char* p = sqlite3_column_text(stmt_, column);
  int n = sqlite3_column_bytes(stmt_, column);
  return p ? std::string_view(reinterpret_cast<const char*>(p), static_cast<size_t>(n))
           : std::string_view();
}

std::optional<std::string> Statement::optional_text(int column) const {
  if (is_null(column)) return std::nullopt;
  return text(column);
}

Connection::Connection(std::string path, bool read_only) : path_(std::move(path)) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      path_.c_str(), &db,
      (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
          SQLITE_OPEN_NOMUTEX,
      nullptr);
  db_.reset(db);  // owned even when opening failed, as sqlite3_open_v2 asks
  if (rc != SQLITE_OK) fail(rc, "opening the database");
  sqlite3_extended_result_codes(db, 1);
}

void Connection::set_busy_timeout(std::chrono::milliseconds timeout) {
  busy_timeout_ = std::max(timeout, std::chrono::milliseconds(0));
  int rc = sqlite3_busy_handler(db_.get(), &Connection::busy_wait, this);
  if (rc != SQLITE_OK) fail(rc, "setting the busy timeout");
}

int Connection::busy_wait(void* connection, int attempt) {
  using namespace std::chrono;
  auto* self = static_cast<Connection*>(connection);
  const steady_clock::time_point now = steady_clock::now();
  if (attempt == 0) self->busy_deadline_ = now + self->busy_timeout_;
  if (now >= self->busy_deadline_) return 0;  // SQLITE_BUSY to the caller
  const microseconds pause = std::min<microseconds>(
      {microseconds(50 << std::min(attempt, 5)), milliseconds(1),
       duration_cast<microseconds>(self->busy_deadline_ - now) + microseconds(1)});
  std::this_thread::sleep_for(pause);
  return 1;  // try again
}

void Connection::exec(std::string_view sql) {
  std::string text(sql);
  int rc = sqlite3_exec(db_.get(), text.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(rc, "running '" + text.substr(0, 60) + "'");
}

Statement Connection::query(std::string_view sql) { return Statement(*this, prepare(sql)); }

sqlite3_stmt* Connection::prepare(std::string_view sql) {
  auto it = statements_.find(sql);
  if (it == statements_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_.get(), sql.data(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    StmtHandle handle(stmt);
    if (rc != SQLITE_OK) fail(rc, "preparing '" + std::string(sql) + "'");
    it = statements_.emplace(std::string(sql), std::move(handle)).first;
  }
  return it->second.get();
}

void Connection::fail(int rc, std::string_view what) const {
  std::string detail = db_ ? sqlite3_errmsg(db_.get()) : sqlite3_errstr(rc);
  std::string message = "SQLite database '" + path_ + "': " + std::string(what) +
                        " failed: " + detail + advice_for(rc, path_);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_FULL:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_IOERR:
      throw StorageFault(code_for(rc), message);
    default:
      throw Error(code_for(rc), message);
  }
}

Transaction::Transaction(Connection& connection, Kind kind)
    : connection_(connection), write_(kind == Kind::kWrite) {
  if (connection_.in_batch_) {
    if (sqlite3_get_autocommit(connection_.get())) {
      throw Error(ErrorCode::kUnavailable,
                  "SQLite database '" + connection_.path() +
                      "': the batch's transaction was rolled back after an earlier error; "
                      "nothing more is written until the batch ends");
    }
    Statement(connection_, connection_.prepare("SAVEPOINT tuner_call")).run();
    open_ = savepoint_ = true;
    return;
  }
  sqlite3_stmt*& begin = kind == Kind::kWrite ? connection_.begin_write_ : connection_.begin_read_;
  if (!begin) begin = connection_.prepare(kind == Kind::kWrite ? "BEGIN IMMEDIATE" : "BEGIN");
  Statement(connection_, begin).run();
  open_ = true;
}

Transaction::~Transaction() {
  if (!open_) return;
  if (savepoint_) {
    // After an error that rolled the whole transaction back there is no savepoint left: the
    // batch's commit reports it.
    if (!sqlite3_get_autocommit(connection_.get())) {
      sqlite3_exec(connection_.get(), "ROLLBACK TO tuner_call; RELEASE tuner_call", nullptr,
                   nullptr, nullptr);
    }
    return;
  }
  sqlite3_exec(connection_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  if (savepoint_) {
    Statement(connection_, connection_.prepare("RELEASE tuner_call")).run();
  } else {
    if (!connection_.commit_) connection_.commit_ = connection_.prepare("COMMIT");
    Statement(connection_, connection_.commit_).run();
  }
  open_ = false;
  if (write_) ++connection_.changes_;
}

Batch::Batch(Connection& connection) : connection_(connection) {
  if (!connection_.begin_write_) connection_.begin_write_ = connection_.prepare("BEGIN IMMEDIATE");
  Statement(connection_, connection_.begin_write_).run();
  open_ = true;
  connection_.in_batch_ = true;
}

Batch::~Batch() {
  connection_.in_batch_ = false;
  if (!open_) return;
  ++connection_.changes_;  // what the batch's calls counted is undone
  if (!sqlite3_get_autocommit(connection_.get())) {
    sqlite3_exec(connection_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

void Batch::commit() {
  connection_.in_batch_ = false;
  open_ = false;
  if (sqlite3_get_autocommit(connection_.get())) {
    ++connection_.changes_;
    throw Error(ErrorCode::kUnavailable,
                "SQLite database '" + connection_.path() +
                    "': the batch was rolled back after an error inside it; nothing of it is "
                    "stored");
  }
  if (!connection_.commit_) connection_.commit_ = connection_.prepare("COMMIT");
  try {
    Statement(connection_, connection_.commit_).run();
  } catch (...) {
    ++connection_.changes_;
    // A failed COMMIT may leave the transaction open (SQLITE_BUSY): end it, storing nothing.
    if (!sqlite3_get_autocommit(connection_.get())) {
      sqlite3_exec(connection_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    }
    throw;
  }
}

}  // namespace tuner::sqlite
