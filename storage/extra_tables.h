// ExtraTablesTransaction: one write transaction on a study database (SqliteStorage's file) for
// the tables another module keeps there, named tuner_<module>_* (Optuna and SqliteStorage ignore
// them; registry/registry_tables.cc keeps the model registry's rows in tuner_registry_*). The
// module creates its tables itself (CREATE TABLE IF NOT EXISTS) and keeps their version; this
// class checks the file, takes the write lock and runs the module's statements, without making
// SQLite's handles part of storage's public face.
//
// Errors are tuner::Error naming the file, SQLite's result codes mapped as for SqliteStorage
// (kUnavailable: the lock was held past the busy timeout, retry; kFailedPrecondition: a read-only
// or full file; kDataLoss: not a SQLite file).
//
// Thread safety: none; one owner uses it on one thread. Other connections (a SqliteStorage, other
// processes) may use the file meanwhile: they wait for this transaction's lock, or it for theirs.
#ifndef TUNER_STORAGE_EXTRA_TABLES_H_
#define TUNER_STORAGE_EXTRA_TABLES_H_

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tuner {

// A statement's parameter: NULL (std::nullopt, or an empty optional), an integer, a double or
// text.
class SqlValue {
 public:
  using Variant = std::variant<std::monostate, int64_t, double, std::string>;
  SqlValue(std::nullopt_t) {}
  SqlValue(int64_t value) : value_(value) {}
  SqlValue(int value) : value_(int64_t{value}) {}
  SqlValue(double value) : value_(value) {}
  SqlValue(std::string value) : value_(std::move(value)) {}
  SqlValue(const char* value) : value_(std::string(value)) {}
  template <class T>
  SqlValue(const std::optional<T>& value)
      : SqlValue(value ? SqlValue(*value) : SqlValue(std::nullopt)) {}

  const Variant& value() const { return value_; }

 private:
  Variant value_;
};

class ExtraTablesTransaction {
 public:
  // Opens the study database at `path` and begins a write transaction (BEGIN IMMEDIATE), waiting
  // up to `busy_timeout` for a lock that another connection holds. Throws Error(kNotFound) when
  // there is no file at `path` (none is created) and Error(kFailedPrecondition) when the file
  // holds no study database (no table 'studies').
  ExtraTablesTransaction(const std::string& path, std::chrono::milliseconds busy_timeout);
  ExtraTablesTransaction(const ExtraTablesTransaction&) = delete;
  ExtraTablesTransaction& operator=(const ExtraTablesTransaction&) = delete;
  // Rolls back unless committed.
  ~ExtraTablesTransaction();

  // Runs statements without parameters that return no rows (the module's CREATE TABLEs).
  void exec(std::string_view sql);
  // Runs one statement that returns no rows, with its parameters (?) bound in order.
  void run(std::string_view sql, std::initializer_list<SqlValue> params = {});
  // The first column of the first row of `sql` as text; nullopt when there is no row or it is
  // NULL.
  std::optional<std::string> text(std::string_view sql,
                                  std::initializer_list<SqlValue> params = {});
  // Makes every change durable at once. REQUIRES: not committed yet.
  void commit();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tuner

#endif  // TUNER_STORAGE_EXTRA_TABLES_H_
