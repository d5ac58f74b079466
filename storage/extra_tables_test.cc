#include "storage/extra_tables.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "storage/sqlite/connection.h"
#include "storage/sqlite_storage.h"
#include "trials/error.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

class ExtraTablesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() / ("tuner_extra_tables_test_" + std::to_string(::getpid()) +
                                        "_" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = (dir_ / "study.db").string();
    SqliteStorage storage(db_);
    storage.create_study("s", {StudyDirection::kMinimize});
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The rows of `sql`, each as its columns' text ("NULL" for NULL) joined by '|'.
  std::vector<std::string> rows(const std::string& sql) const {
    sqlite::Connection conn(db_, /*read_only=*/true);
    auto q = conn.query(sql);
    std::vector<std::string> out;
    while (q.step()) {
      std::string row;
      for (int c = 0; c < 4; ++c) {
        row += (c ? "|" : "") + q.optional_text(c).value_or("NULL");
      }
      out.push_back(row);
    }
    return out;
  }

  Error error_of(const std::string& path) const {
    try {
      ExtraTablesTransaction tx(path, 100ms);
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << "expected an error for " << path;
    return Error(ErrorCode::kInternal, "");
  }

  fs::path dir_;
  std::string db_;
};

constexpr char kTable[] =
    "CREATE TABLE IF NOT EXISTS tuner_test_rows (a TEXT, b INTEGER, c FLOAT, d TEXT)";

TEST_F(ExtraTablesTest, WritesTheModulesRowsWithEveryKindOfValue) {
  ExtraTablesTransaction tx(db_, 1000ms);
  tx.exec(kTable);
  tx.run("INSERT INTO tuner_test_rows VALUES (?, ?, ?, ?)",
         {"text", 7, 0.5, std::optional<double>()});
  tx.run("INSERT INTO tuner_test_rows VALUES (?, ?, ?, ?)",
         {std::string("more"), int64_t{1} << 40, std::optional<double>(2.0), std::nullopt});
  EXPECT_EQ(tx.text("SELECT a FROM tuner_test_rows WHERE b = ?", {7}), "text");
  EXPECT_EQ(tx.text("SELECT d FROM tuner_test_rows WHERE b = ?", {7}), std::nullopt);
  EXPECT_EQ(tx.text("SELECT a FROM tuner_test_rows WHERE b = ?", {8}), std::nullopt);
  tx.commit();
  EXPECT_EQ(rows("SELECT a, b, c, d FROM tuner_test_rows ORDER BY b"),
            (std::vector<std::string>{"text|7|0.5|NULL", "more|1099511627776|2.0|NULL"}));
  // The study database still opens as one, its study untouched.
  SqliteStorage reopened(db_);
  EXPECT_TRUE(reopened.find_study("s"));
}

TEST_F(ExtraTablesTest, AnUncommittedTransactionLeavesNothing) {
  {
    ExtraTablesTransaction tx(db_, 1000ms);
    tx.exec(kTable);
    tx.run("INSERT INTO tuner_test_rows VALUES (?, ?, ?, ?)", {"x", 1, 1.0, "y"});
  }
  EXPECT_TRUE(
      rows("SELECT name, 0, 0, 0 FROM sqlite_master WHERE name = 'tuner_test_rows'").empty());
}

TEST_F(ExtraTablesTest, RefusesAMissingFileWithoutCreatingIt) {
  const std::string missing = (dir_ / "missing.db").string();
  const Error e = error_of(missing);
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_THAT(e.what(), HasSubstr("no study database at '" + missing + "'"));
  EXPECT_FALSE(fs::exists(missing));
}

TEST_F(ExtraTablesTest, RefusesADatabaseWithoutAStudy) {
  const std::string other = (dir_ / "other.db").string();
  {
    sqlite::Connection conn(other);
    conn.exec("CREATE TABLE t (x INTEGER)");
  }
  const Error e = error_of(other);
  EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(e.what(), HasSubstr("'" + other + "' is not a study database"));
}

TEST_F(ExtraTablesTest, ALockHeldPastTheBusyTimeoutIsUnavailable) {
  sqlite::Connection holder(db_);
  sqlite::Transaction lock(holder, sqlite::Transaction::Kind::kWrite);
  const Error e = error_of(db_);
  EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
  EXPECT_THAT(e.what(), HasSubstr(db_));
}

}  // namespace
}  // namespace tuner
