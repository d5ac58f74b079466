#include "storage/extra_tables.h"

#include <filesystem>

#include "storage/sqlite/connection.h"
#include "trials/error.h"
#include "trials/overloaded.h"

namespace tuner {

namespace {

void bind_all(sqlite::Statement& statement, std::initializer_list<SqlValue> params) {
  int index = 0;
  for (const SqlValue& param : params) {
    std::visit(Overloaded{[&](std::monostate) { statement.bind_null(index); },
                          [&](const auto& value) { statement.bind(index, value); }},
               param.value());
    ++index;
  }
}

}  // namespace

struct ExtraTablesTransaction::Impl {
  explicit Impl(const std::string& path) : connection(path) {}

  sqlite::Connection connection;
  std::optional<sqlite::Transaction> transaction;  // opened after the connection, closed before
};

ExtraTablesTransaction::ExtraTablesTransaction(const std::string& path,
                                               std::chrono::milliseconds busy_timeout) {
  if (!std::filesystem::is_regular_file(path)) {
    throw Error(ErrorCode::kNotFound, "no study database at '" + path + "'");
  }
  impl_ = std::make_unique<Impl>(path);
  impl_->connection.set_busy_timeout(busy_timeout);
  impl_->transaction.emplace(impl_->connection, sqlite::Transaction::Kind::kWrite);
  if (!text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'studies'")) {
    throw Error(ErrorCode::kFailedPrecondition, "'" + path +
                                                    "' is not a study database (no table "
                                                    "'studies'); nothing was written to it");
  }
}

ExtraTablesTransaction::~ExtraTablesTransaction() = default;

void ExtraTablesTransaction::exec(std::string_view sql) { impl_->connection.exec(sql); }

void ExtraTablesTransaction::run(std::string_view sql, std::initializer_list<SqlValue> params) {
  sqlite::Statement statement = impl_->connection.query(sql);
  bind_all(statement, params);
  statement.run();
}

std::optional<std::string> ExtraTablesTransaction::text(std::string_view sql,
                                                        std::initializer_list<SqlValue> params) {
  sqlite::Statement statement = impl_->connection.query(sql);
  bind_all(statement, params);
  if (!statement.step()) return std::nullopt;
  return statement.optional_text(0);
}

void ExtraTablesTransaction::commit() { impl_->transaction->commit(); }

}  // namespace tuner
