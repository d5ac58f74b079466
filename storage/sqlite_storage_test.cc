#include "storage/sqlite_storage.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "storage/optuna_schema.h"
#include "storage/sqlite/checkpointer.h"
#include "storage/sqlite/connection.h"
#include "storage/storage_fault.h"
#include "storage/storage_test_suite.h"
#include "trials/error.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test (and per factory call), removed at exit.
fs::path make_temp_dir() {
  static std::atomic<int> counter{0};
  fs::path dir = fs::temp_directory_path() / ("tuner_sqlite_test_" + std::to_string(::getpid()) +
                                              "_" + std::to_string(counter++));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Removes this process's temp directories when the tests end.
class RemoveTempDirs : public testing::Environment {
 public:
  void TearDown() override {
    std::string prefix = "tuner_sqlite_test_" + std::to_string(::getpid()) + "_";
    for (const auto& entry : fs::directory_iterator(fs::temp_directory_path())) {
      if (entry.path().filename().string().starts_with(prefix)) fs::remove_all(entry.path());
    }
  }
};
const auto* const kRemoveTempDirs = testing::AddGlobalTestEnvironment(new RemoveTempDirs);

// The shared suite, on a fresh file per storage, for both schema revisions this backend writes.
INSTANTIATE_TEST_SUITE_P(Sqlite, StorageSuite, testing::Values(StorageFactory{[] {
                           return std::make_shared<SqliteStorage>(
                               (make_temp_dir() / "suite.db").string());
                         }}));

INSTANTIATE_TEST_SUITE_P(SqliteV300d, StorageSuite, testing::Values(StorageFactory{[] {
                           SqliteStorageOptions options;
                           options.revision = OptunaRevision::kV3_0_0_d;
                           return std::make_shared<SqliteStorage>(
                               (make_temp_dir() / "suite.db").string(), options);
                         }}));

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class SqliteStorageTest : public testing::Test {
 protected:
  void SetUp() override { dir_ = make_temp_dir(); }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name = "study.db") const { return (dir_ / name).string(); }

  // Runs `sql` on its own connection and returns the first column of every row, as text.
  std::vector<std::string> column(const std::string& file, const std::string& sql) {
    sqlite::Connection conn(file);
    auto q = conn.query(sql);
    std::vector<std::string> out;
    while (q.step()) out.push_back(q.is_null(0) ? "NULL" : q.text(0));
    return out;
  }

  Error error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << "no error";
    return Error(ErrorCode::kInternal, "");
  }

  fs::path dir_;
};

TEST_F(SqliteStorageTest, WritesOptunaSchemaHead) {
  { SqliteStorage storage(path()); }
  EXPECT_EQ(column(path(), "SELECT version_num FROM alembic_version"),
            std::vector<std::string>{"v3.2.0.a"});
  EXPECT_EQ(column(path(), "SELECT schema_version FROM version_info"),
            std::vector<std::string>{"12"});
  EXPECT_EQ(
      column(path(), "SELECT name FROM sqlite_master WHERE name = 'trials_study_id_key'").size(),
      1u);
  EXPECT_EQ(column(path(), "PRAGMA journal_mode"), std::vector<std::string>{"wal"});
  for (std::string_view t : optuna_schema::required_tables()) {
    EXPECT_EQ(column(path(), "SELECT name FROM sqlite_master WHERE name = '" + std::string(t) + "'")
                  .size(),
              1u)
        << t;
  }
}

TEST_F(SqliteStorageTest, WritesV300dOnRequest) {
  SqliteStorageOptions options;
  options.revision = OptunaRevision::kV3_0_0_d;
  { SqliteStorage storage(path(), options); }
  EXPECT_EQ(column(path(), "SELECT version_num FROM alembic_version"),
            std::vector<std::string>{"v3.0.0.d"});
  EXPECT_TRUE(
      column(path(), "SELECT name FROM sqlite_master WHERE name = 'trials_study_id_key'").empty());
  // Reopening with the default keeps the file's revision.
  { SqliteStorage storage(path()); }
  EXPECT_EQ(column(path(), "SELECT version_num FROM alembic_version"),
            std::vector<std::string>{"v3.0.0.d"});
}

TEST_F(SqliteStorageTest, StoresOptunaColumnValues) {
  SqliteStorage storage(path());
  StudyRecord s = storage.create_study("s", {StudyDirection::kMaximize});
  FrozenTrial t = storage.create_trial(s.study_id);
  storage.set_trial_param(t.trial_id, "opt",
                          CategoricalDistribution{{std::string("sgd"), std::string("adam")}},
                          std::string("adam"));
  storage.set_trial_param(t.trial_id, "layers", IntDistribution{1, 8, false, 1}, int64_t{3});
  storage.set_trial_param(t.trial_id, "lr", FloatDistribution{1e-5, 0.1, true, {}}, 0.001);
  storage.set_trial_intermediate_value(t.trial_id, 0, INFINITY);
  storage.set_trial_intermediate_value(t.trial_id, 1, -INFINITY);
  storage.set_trial_intermediate_value(t.trial_id, 2, 0.5);
  storage.finish_trial(t.trial_id, TrialState::kPruned, {-INFINITY});

  EXPECT_EQ(column(path(), "SELECT direction FROM study_directions"),
            std::vector<std::string>{"MAXIMIZE"});
  EXPECT_EQ(column(path(), "SELECT state FROM trials"), std::vector<std::string>{"PRUNED"});
  EXPECT_EQ(column(path(), "SELECT param_value FROM trial_params WHERE param_name = 'opt'"),
            std::vector<std::string>{"1.0"});
  EXPECT_EQ(column(path(), "SELECT param_value FROM trial_params WHERE param_name = 'layers'"),
            std::vector<std::string>{"3.0"});
  EXPECT_EQ(column(path(), "SELECT distribution_json FROM trial_params WHERE param_name = 'opt'"),
            std::vector<std::string>{
                R"({"name":"CategoricalDistribution","attributes":{"choices":["sgd","adam"]}})"});
  EXPECT_EQ(column(path(),
                   "SELECT intermediate_value_type || ':' || coalesce(intermediate_value, 'NULL') "
                   "FROM trial_intermediate_values ORDER BY step"),
            (std::vector<std::string>{"INF_POS:NULL", "INF_NEG:NULL", "FINITE:0.5"}));
  EXPECT_EQ(column(path(), "SELECT value_type || ':' || coalesce(value, 'NULL') FROM trial_values"),
            std::vector<std::string>{"INF_NEG:NULL"});
  auto start = column(path(), "SELECT datetime_start FROM trials");
  ASSERT_EQ(start.size(), 1u);
  EXPECT_EQ(start[0].size(), 26u) << start[0];  // "YYYY-MM-DD HH:MM:SS.ffffff"

  FrozenTrial got = storage.get_trial(t.trial_id);
  EXPECT_EQ(got.params.at("opt"), ParamValue(std::string("adam")));
  EXPECT_EQ(got.params.at("layers"), ParamValue(int64_t{3}));
  EXPECT_EQ(got.values, std::vector<double>{-INFINITY});
  EXPECT_EQ(got.intermediate_values.at(0), INFINITY);
}

TEST_F(SqliteStorageTest, RoundTripsEveryField) {
  SqliteStorage storage(path());
  StudyRecord s = storage.create_study("s", {StudyDirection::kMinimize, StudyDirection::kMaximize});
  storage.set_study_user_attr(s.study_id, "k", "[1,2]");
  FrozenTrial t = storage.create_trial(s.study_id);
  Distribution cat = CategoricalDistribution{{std::string("a"), int64_t{1}, 1.0, true, 2.5}};
  storage.set_trial_param(t.trial_id, "c", cat, 1.0);
  storage.set_trial_param(t.trial_id, "f", FloatDistribution{0, 1, false, 0.25}, 0.75);
  storage.set_trial_param(t.trial_id, "n", NormalDistribution{1.0, 2.0, false, {}}, 0.123456789);
  storage.set_trial_param(t.trial_id, "i", IntDistribution{2, 10, false, 2}, int64_t{6});
  storage.set_trial_user_attr(t.trial_id, "u", "{\"a\":1}");
  storage.set_trial_system_attr(t.trial_id, "sys", "\"x\"");
  storage.finish_trial(t.trial_id, TrialState::kComplete, {0.1, 1e300});

  SqliteStorage reopened(path());
  FrozenTrial got = reopened.get_trial(t.trial_id);
  FrozenTrial expected = storage.get_trial(t.trial_id);
  got.validate(2);
  EXPECT_EQ(got.params, expected.params);
  EXPECT_EQ(got.params.at("c"), ParamValue(1.0));  // the float choice, not the integer 1
  EXPECT_EQ(got.distributions.at("c"), cat);
  EXPECT_EQ(got.distributions.at("n"), (Distribution{NormalDistribution{1.0, 2.0, false, {}}}));
  EXPECT_EQ(got.params.at("n"), ParamValue(0.123456789));
  EXPECT_EQ(got.values, (std::vector<double>{0.1, 1e300}));
  EXPECT_EQ(got.user_attrs.at("u"), "{\"a\":1}");
  EXPECT_EQ(got.system_attrs, (std::map<std::string, std::string, std::less<>>{{"sys", "\"x\""}}));
  EXPECT_EQ(got.datetime_start, expected.datetime_start);
  EXPECT_EQ(got.datetime_complete, expected.datetime_complete);
  EXPECT_EQ(reopened.find_study("s")->user_attrs.at("k"), "[1,2]");
  // The normal param is not in Optuna's table, but mirrored for Optuna's users.
  EXPECT_TRUE(column(path(), "SELECT 1 FROM trial_params WHERE param_name = 'n'").empty());
  EXPECT_EQ(column(path(),
                   "SELECT value_json FROM trial_system_attributes WHERE key = "
                   "'tuner:param:n'"),
            std::vector<std::string>{"0.123456789"});
}

TEST_F(SqliteStorageTest, ReadsLegacyDistributionJson) {
  using optuna_schema::from_json;
  EXPECT_EQ(
      from_json(R"({"name": "UniformDistribution", "attributes": {"low": 0, "high": 2}})", "p"),
      (Distribution{FloatDistribution{0, 2, false, {}}}));
  EXPECT_EQ(
      from_json(R"({"name": "LogUniformDistribution", "attributes": {"low": 1e-3, "high": 1}})",
                "p"),
      (Distribution{FloatDistribution{1e-3, 1, true, {}}}));
  EXPECT_EQ(from_json(R"({"name": "DiscreteUniformDistribution", "attributes": {"low": 0,
                         "high": 1, "q": 0.5}})",
                      "p"),
            (Distribution{FloatDistribution{0, 1, false, 0.5}}));
  EXPECT_EQ(from_json(R"({"name": "IntUniformDistribution", "attributes": {"low": 0,
                         "high": 9, "step": 3}})",
                      "p"),
            (Distribution{IntDistribution{0, 9, false, 3}}));
  EXPECT_EQ(from_json(R"({"name": "IntLogUniformDistribution", "attributes": {"low": 1,
                         "high": 9, "step": 1}})",
                      "p"),
            (Distribution{IntDistribution{1, 9, true, 1}}));
  EXPECT_EQ(from_json(R"({"type": "int", "low": 1, "high": 3})", "p"),
            (Distribution{IntDistribution{1, 3, false, 1}}));
  EXPECT_EQ(error_of([&] {
              from_json(R"({"name": "CategoricalDistribution", "attributes": {"choices": [null]}})",
                        "trial 3 param 'x'");
            }).code(),
            ErrorCode::kDataLoss);
}

TEST_F(SqliteStorageTest, RefusesANonDatabaseFileUntouched) {
  {
    std::ofstream out(path("notes.db"), std::ios::binary);
    out << "these are my notes, not a database\n" << std::string(5000, 'x');
  }
  const std::string before = read_bytes(path("notes.db"));
  Error e = error_of([&] { SqliteStorage storage(path("notes.db")); });
  EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
  EXPECT_NE(std::string(e.what()).find(path("notes.db")), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("not a SQLite database"), std::string::npos) << e.what();
  EXPECT_EQ(read_bytes(path("notes.db")), before);
}

TEST_F(SqliteStorageTest, AFileInADirectoryThatDoesNotExistOrIsAFileNamesTheDirectory) {
  const std::string missing = path("no-such-dir") + "/study.db";
  Error e = error_of([&] { SqliteStorage storage(missing); });
  EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  EXPECT_NE(
      std::string(e.what()).find("its directory '" + path("no-such-dir") + "' does not exist"),
      std::string::npos)
      << e.what();
  EXPECT_FALSE(fs::exists(path("no-such-dir")));
  std::ofstream(path("a-file")) << "not a directory\n";
  Error under_a_file = error_of([&] { SqliteStorage storage(path("a-file") + "/study.db"); });
  EXPECT_NE(std::string(under_a_file.what()).find("'" + path("a-file") + "' is not a directory"),
            std::string::npos)
      << under_a_file.what();
}

TEST_F(SqliteStorageTest, RefusesAForeignDatabaseUntouched) {
  {
    sqlite::Connection conn(path("foreign.db"));
    conn.exec("CREATE TABLE foo (x INTEGER); INSERT INTO foo VALUES (1)");
  }
  const std::string before = read_bytes(path("foreign.db"));
  Error e = error_of([&] { SqliteStorage storage(path("foreign.db")); });
  EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
  EXPECT_NE(std::string(e.what()).find(path("foreign.db")), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("foo"), std::string::npos) << e.what();
  EXPECT_EQ(read_bytes(path("foreign.db")), before);
  EXPECT_EQ(column(path("foreign.db"), "SELECT name FROM sqlite_master"),
            std::vector<std::string>{"foo"});
}

TEST_F(SqliteStorageTest, RefusesNewerSchemasUntouched) {
  int index = 0;
  for (const char* sql : {"UPDATE alembic_version SET version_num = 'v9.9.9.z'",
                          "UPDATE tuner_meta SET value = '99' WHERE key = 'schema_version'",
                          "UPDATE alembic_version SET version_num = 'v2.6.0.a'"}) {
    const std::string file = path("newer" + std::to_string(index++) + ".db");
    {
      SqliteStorage storage(file);
      storage.create_study("s", {StudyDirection::kMinimize});
    }
    {
      sqlite::Connection conn(file);
      conn.exec(sql);
      conn.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    }
    const std::string before = read_bytes(file);
    Error e = error_of([&] { SqliteStorage storage(file); });
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition) << sql;
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
    EXPECT_EQ(read_bytes(file), before) << sql;
  }
}

// A file of the project's first schema (no tuner_trial_step_metrics) is read as it is when read
// only, and gets the table when opened for writing.
TEST_F(SqliteStorageTest, AFileWithoutStepMetricsGetsThemWhenOpenedForWriting) {
  const std::string file = path("v1.db");
  int64_t trial_id = -1;
  {
    SqliteStorage storage(file);
    StudyRecord s = storage.create_study("s", {StudyDirection::kMinimize});
    trial_id = storage.create_trial(s.study_id).trial_id;
  }
  {
    sqlite::Connection conn(file);
    conn.exec("DROP TABLE tuner_trial_step_metrics");
    conn.exec("UPDATE tuner_meta SET value = '1' WHERE key = 'schema_version'");
    conn.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  {
    SqliteStorage read_only(file, SqliteStorageOptions{.read_only = true});
    EXPECT_TRUE(read_only.get_step_metrics(read_only.find_study("s")->study_id).empty());
  }
  EXPECT_EQ(column(file, "SELECT value FROM tuner_meta WHERE key = 'schema_version'"),
            std::vector<std::string>{"1"});
  SqliteStorage storage(file);
  storage.set_trial_step_metrics(trial_id, 1, {{"train_loss", 0.5}});
  EXPECT_EQ(storage.get_step_metrics(storage.find_study("s")->study_id).size(), 1u);
  EXPECT_EQ(column(file, "SELECT value FROM tuner_meta WHERE key = 'schema_version'"),
            std::vector<std::string>{"2"});
}

TEST_F(SqliteStorageTest, TwoStoragesOnOneFileSeeEachOthersWrites) {
  SqliteStorage a(path());
  SqliteStorage b(path());
  StudyRecord s = a.create_study("shared", {StudyDirection::kMinimize});
  ASSERT_TRUE(b.find_study("shared"));
  FrozenTrial t = b.create_trial(s.study_id);
  a.set_trial_param(t.trial_id, "x", FloatDistribution{0, 1}, 0.5);
  b.finish_trial(t.trial_id, TrialState::kComplete, {1.5});
  EXPECT_EQ(a.get_trial(t.trial_id).values, std::vector<double>{1.5});
  EXPECT_EQ(a.create_trial(s.study_id).number, 1);
  EXPECT_EQ(b.get_trials(s.study_id).size(), 2u);
  // A write through one refused because the other finished the trial.
  EXPECT_EQ(error_of([&] { a.set_trial_user_attr(t.trial_id, "k", "1"); }).code(),
            ErrorCode::kFailedPrecondition);
}

TEST_F(SqliteStorageTest, LockedDatabaseIsUnavailableAndLosesNothing) {
  SqliteStorageOptions options;
  options.busy_timeout = std::chrono::milliseconds(100);
  SqliteStorage storage(path(), options);
  StudyRecord s = storage.create_study("s", {StudyDirection::kMinimize});
  FrozenTrial t = storage.create_trial(s.study_id);
  storage.set_trial_intermediate_value(t.trial_id, 1, 0.5);

  sqlite::Connection other(path());
  other.exec("BEGIN IMMEDIATE");
  auto started = std::chrono::steady_clock::now();
  Error e = error_of([&] { storage.set_trial_intermediate_value(t.trial_id, 2, 0.25); });
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(90));
  EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
  EXPECT_NE(std::string(e.what()).find(path()), std::string::npos) << e.what();
  EXPECT_EQ(error_of([&] { storage.finish_trial(t.trial_id, TrialState::kComplete, {1}); }).code(),
            ErrorCode::kUnavailable);
  // Readers are not blocked by a writer in WAL mode.
  EXPECT_EQ(storage.get_trial(t.trial_id).intermediate_values.size(), 1u);
  other.exec("ROLLBACK");

  storage.set_trial_intermediate_value(t.trial_id, 2, 0.25);
  storage.finish_trial(t.trial_id, TrialState::kComplete, {1});
  FrozenTrial got = storage.get_trial(t.trial_id);
  EXPECT_EQ(got.intermediate_values.size(), 2u);
  EXPECT_EQ(got.state, TrialState::kComplete);
}

TEST_F(SqliteStorageTest, ALockHeldPastTheBusyTimeoutInABatchIsAStorageFault) {
  SqliteStorageOptions options;
  options.busy_timeout = std::chrono::milliseconds(50);
  SqliteStorage storage(path(), options);
  StudyRecord s = storage.create_study("s", {StudyDirection::kMinimize});
  FrozenTrial t = storage.create_trial(s.study_id);

  sqlite::Connection other(path());
  other.exec("BEGIN IMMEDIATE");
  // The batch cannot take the lock, nor can its write: the file's fault, not the call's, so
  // that the caller counts it with the other failures of the file and does not retry for ever.
  try {
    storage.run_batch([&] { storage.finish_trial(t.trial_id, TrialState::kComplete, {1}); });
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(is_storage_fault(e)) << e.what();
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_NE(std::string(e.what()).find("busy timeout"), std::string::npos) << e.what();
  }
  other.exec("ROLLBACK");
  storage.run_batch([&] { storage.finish_trial(t.trial_id, TrialState::kComplete, {1}); });
  EXPECT_EQ(storage.get_trial(t.trial_id).state, TrialState::kComplete);
}

TEST_F(SqliteStorageTest, ConcurrentCreationOfANewFile) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      try {
        SqliteStorage storage(path());
        storage.create_study("s" + std::to_string(i), {StudyDirection::kMinimize});
      } catch (const Error& e) {
        ADD_FAILURE() << e.what();
        ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(SqliteStorage(path()).list_studies().size(), 4u);
}

TEST_F(SqliteStorageTest, HeartbeatsAreOptunasTrialHeartbeatsRows) {
  SqliteStorage storage(path());
  StudyRecord s = storage.create_study("s", {StudyDirection::kMinimize});
  FrozenTrial t = storage.create_trial(s.study_id);
  auto at = optuna_schema::parse_datetime("2026-03-01 10:00:00.250000");
  storage.record_heartbeat(t.trial_id, *at);
  storage.record_heartbeat(t.trial_id, *at + std::chrono::seconds(60));
  EXPECT_EQ(column(path(), "SELECT trial_id || ' ' || heartbeat FROM trial_heartbeats"),
            std::vector<std::string>{std::to_string(t.trial_id) + " 2026-03-01 10:01:00.250000"});
  // A heartbeat Optuna wrote (CURRENT_TIMESTAMP: no fraction) is read too.
  {
    sqlite::Connection conn(path());
    conn.exec("UPDATE trial_heartbeats SET heartbeat = '2026-03-01 09:00:00'");
  }
  auto stale =
      storage.get_stale_trials(s.study_id, *optuna_schema::parse_datetime("2026-03-01 09:00:01"));
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_TRUE(
      storage.get_stale_trials(s.study_id, *optuna_schema::parse_datetime("2026-03-01 08:59:59"))
          .empty());
  // Deleting the study deletes its heartbeats.
  storage.delete_study(s.study_id);
  EXPECT_TRUE(column(path(), "SELECT trial_id FROM trial_heartbeats").empty());
}

// create_trial numbers a trial from the last trial its connection created (not by counting the
// whole study); the number must still be Optuna's count of the study's earlier trials when other
// connections wrote in between, and after the study was deleted and its id taken again.
TEST_F(SqliteStorageTest, TrialNumbersCountOtherWritersAndReusedIds) {
  SqliteStorage a(path());
  SqliteStorage b(path());
  StudyRecord s = a.create_study("s", {StudyDirection::kMinimize});
  EXPECT_EQ(a.create_trial(s.study_id).number, 0);
  EXPECT_EQ(b.create_trial(s.study_id).number, 1);
  EXPECT_EQ(b.create_trial(s.study_id, TrialState::kWaiting).number, 2);
  EXPECT_EQ(a.create_trial(s.study_id).number, 3);
  EXPECT_EQ(a.create_trial(s.study_id).number, 4);

  // The study and its trials go; a new study gets the same id (SQLite reuses the largest).
  a.delete_study(s.study_id);
  StudyRecord again = b.create_study("again", {StudyDirection::kMinimize});
  ASSERT_EQ(again.study_id, s.study_id);
  EXPECT_EQ(b.create_trial(again.study_id).number, 0);  // may take the id of a's last trial
  EXPECT_EQ(a.create_trial(again.study_id).number, 1);
  EXPECT_EQ(a.create_trial(again.study_id).number, 2);
  EXPECT_EQ(error_of([&] { a.create_trial(424242); }).code(), ErrorCode::kNotFound);
  std::vector<int> numbers;
  for (const FrozenTrial& t : a.get_trials(again.study_id)) numbers.push_back(t.number);
  EXPECT_EQ(numbers, (std::vector<int>{0, 1, 2}));
}

// Regression: with writers on two connections at once, SQLite's automatic checkpoint never
// found the log free to start over, and it grew by every page written (hundreds of MB in the
// storage benchmark with 4 processes). The Checkpointer restarts it at about kCatchUpFrames.
TEST_F(SqliteStorageTest, WriteAheadLogStaysBoundedWithTwoWriters) {
  SqliteStorage a(path());
  SqliteStorage b(path());
  StudyRecord s = a.create_study("s", {StudyDirection::kMinimize});
  const fs::path wal = path() + "-wal";
  std::atomic<uintmax_t> largest{0};
  auto write = [&](SqliteStorage& storage) {
    FrozenTrial t = storage.create_trial(s.study_id);
    for (int step = 0; step < 12000; ++step) {
      storage.set_trial_intermediate_value(t.trial_id, step, step * 0.5);
      std::error_code ec;
      const uintmax_t size = fs::file_size(wal, ec);
      if (!ec && size > largest) largest = size;
    }
    storage.finish_trial(t.trial_id, TrialState::kComplete, {1.0});
  };
  std::thread other([&] { write(b); });
  write(a);
  other.join();
  const int page = std::stoi(column(path(), "PRAGMA page_size").front());
  EXPECT_EQ(page, 1024);  // a new file's pages
  // 48,000 pages were written in all (two per value), which an unbounded log would hold; the
  // Checkpointer keeps it to about 8,000, a few thousand more when the other writer's thread is
  // descheduled at the wrong moment (busy cores: 2.2 times kCatchUpFrames seen).
  const uintmax_t bound = 3 * sqlite::Checkpointer::kCatchUpFrames * uintmax_t(page + 24);
  EXPECT_LE(largest.load(), bound);
  EXPECT_EQ(a.get_trials(s.study_id).size(), 2u);
  EXPECT_EQ(column(path(), "PRAGMA integrity_check"), std::vector<std::string>{"ok"});
}

// While another connection holds a read transaction, the log cannot start over; the commits that
// find it past kCatchUpFrames must not each wait kCatchUpWait for that reader.
TEST_F(SqliteStorageTest, ALongReaderDoesNotSlowEveryCommit) {
  SqliteStorage storage(path());
  StudyRecord s = storage.create_study("s", {StudyDirection::kMinimize});
  FrozenTrial t = storage.create_trial(s.study_id);
  sqlite::Connection reader(path());
  reader.exec("BEGIN");
  {
    auto q = reader.query("SELECT COUNT(*) FROM trials");
    q.step();
  }
  const auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < 8000; ++step) {  // 16,000 pages, 4,000 of them past kCatchUpFrames
    storage.set_trial_intermediate_value(t.trial_id, step, 1.0);
  }
  // Each of the ~2,000 late commits waiting 50 ms would take 100 s; with retries every 1000
  // pages, a handful wait.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  reader.exec("COMMIT");
  storage.set_trial_intermediate_value(t.trial_id, 8000, 1.0);
  EXPECT_EQ(storage.get_trial(t.trial_id).intermediate_values.size(), 8001u);
}

// A file that Optuna (or an older tuner) created keeps its page size.
TEST_F(SqliteStorageTest, AnExistingFileKeepsItsPageSize) {
  {
    sqlite::Connection conn(path());
    conn.exec("PRAGMA page_size=4096");
    for (const std::string& sql :
         optuna_schema::create_statements(optuna_schema::Revision::kV3_2_0_a, "optuna 4.0.0")) {
      conn.exec(sql);
    }
  }
  SqliteStorage storage(path());
  StudyRecord s = storage.create_study("s", {StudyDirection::kMinimize});
  storage.finish_trial(storage.create_trial(s.study_id).trial_id, TrialState::kComplete, {1.0});
  EXPECT_EQ(column(path(), "PRAGMA page_size"), std::vector<std::string>{"4096"});
}

TEST_F(SqliteStorageTest, ABatchWhoseBodyThrowsIsRolledBack) {
  SqliteStorage storage(path());
  StudyRecord s = storage.create_study("s", {StudyDirection::kMinimize});
  EXPECT_THROW(storage.run_batch([&] {
    storage.create_trial(s.study_id);
    throw std::runtime_error("the caller gives up");
  }),
               std::runtime_error);
  EXPECT_TRUE(storage.get_trials(s.study_id).empty());
  // Another connection to the file sees a batch only once it is committed.
  SqliteStorage other(path());
  storage.run_batch([&] {
    storage.create_trial(s.study_id);
    EXPECT_TRUE(other.get_trials(s.study_id).empty());
  });
  EXPECT_EQ(other.get_trials(s.study_id).size(), 1u);
  // The other connection's write moves this one's change count.
  const std::optional<uint64_t> changes = storage.change_count();
  other.create_trial(s.study_id);
  EXPECT_NE(storage.change_count(), changes);
}

TEST(OptunaDatetime, FormatsAndParsesOptunasText) {
  using namespace std::chrono;
  const TimePoint t = sys_days(year_month_day(year(2026), month(3), day(1))) + hours(9) +
                      minutes(5) + seconds(7) + microseconds(42) + nanoseconds(999);
  EXPECT_EQ(optuna_schema::format_datetime(t), "2026-03-01 09:05:07.000042");
  EXPECT_EQ(optuna_schema::format_datetime(TimePoint{}), "1970-01-01 00:00:00.000000");
  EXPECT_EQ(optuna_schema::parse_datetime("2026-03-01 09:05:07.000042"),
            time_point_cast<TimePoint::duration>(t - nanoseconds(999)));
  EXPECT_EQ(optuna_schema::parse_datetime("2026-03-01T09:05:07.5"),
            sys_days(year_month_day(year(2026), month(3), day(1))) + hours(9) + minutes(5) +
                seconds(7) + milliseconds(500));
  EXPECT_EQ(
      optuna_schema::parse_datetime("2026-03-01 09:05:07"),
      sys_days(year_month_day(year(2026), month(3), day(1))) + hours(9) + minutes(5) + seconds(7));
  EXPECT_FALSE(optuna_schema::parse_datetime("2026-02-30 09:05:07"));
  EXPECT_FALSE(optuna_schema::parse_datetime("yesterday"));
}

TEST_F(SqliteStorageTest, UnknownIdsNameTheFile) {
  SqliteStorage storage(path());
  Error e = error_of([&] { storage.get_trials(42); });
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_NE(std::string(e.what()).find(path()), std::string::npos);
}

TEST_F(SqliteStorageTest, ADeletedStudyFileIsNoticedAndItsOpenCopyIsSaved) {
  SqliteStorage storage(path());
  const StudyRecord study = storage.create_study("s", {StudyDirection::kMinimize});
  const FrozenTrial first = storage.create_trial(study.study_id);
  storage.finish_trial(first.trial_id, TrialState::kComplete, {1.5});
  EXPECT_FALSE(storage.file_replaced());

  fs::remove(path());
  const std::optional<std::string> gone = storage.file_replaced();
  ASSERT_TRUE(gone);
  EXPECT_NE(gone->find(path()), std::string::npos) << *gone;
  EXPECT_NE(gone->find("deleted"), std::string::npos) << *gone;
  // Writes go on to the open (unlinked) file; its copy keeps them all.
  storage.create_trial(study.study_id);
  storage.backup_to(path("recovered.db"));
  EXPECT_FALSE(fs::exists(path()));
  SqliteStorage copy(path("recovered.db"));
  const std::vector<FrozenTrial> trials = copy.get_trials(copy.find_study("s")->study_id);
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].state, TrialState::kComplete);
  EXPECT_EQ(trials[1].state, TrialState::kRunning);
  EXPECT_THROW(storage.backup_to(path("recovered.db")), Error);  // never overwritten
}

TEST_F(SqliteStorageTest, AStudyFileReplacedByAnotherIsNoticed) {
  SqliteStorage storage(path());
  storage.create_study("s", {StudyDirection::kMinimize});
  { SqliteStorage other(path("other.db")); }
  fs::rename(path("other.db"), path());
  const std::optional<std::string> replaced = storage.file_replaced();
  ASSERT_TRUE(replaced);
  EXPECT_NE(replaced->find("replaced"), std::string::npos) << *replaced;
}

// The indexes this storage adds to Optuna's tables.
const std::vector<std::string> kTunerIndexNames = {"tuner_trials_study_number",
                                                   "tuner_trials_study_state_number",
                                                   "tuner_trial_values_objective_value"};

// One trial as an Optuna-written file may hold it, for the tests of get_best_trial.
struct StoredTrial {
  int64_t trial_id = 0;
  int number = 0;
  std::string state;
  std::optional<double> value;  // objective 0; infinities as Optuna stores them
};

// Inserts trials of `study_id` with these numbers, states and objective-0 values through its own
// connection, as Optuna writes them (an infinity as value NULL and its type); every trial with a
// value also gets an objective-1 value of -1e9, better than any when minimizing. Returns them
// with their ids.
std::vector<StoredTrial> insert_trials(const std::string& file, int64_t study_id,
                                       std::vector<StoredTrial> trials) {
  sqlite::Connection conn(file);
  conn.exec("BEGIN IMMEDIATE");
  for (StoredTrial& t : trials) {
    conn.query("INSERT INTO trials (number, study_id, state) VALUES (?, ?, ?)")
        .bind(0, t.number)
        .bind(1, study_id)
        .bind(2, t.state)
        .run();
    t.trial_id = sqlite3_last_insert_rowid(conn.get());
    if (!t.value) continue;
    for (int objective : {0, 1}) {
      const double v = objective == 0 ? *t.value : -1e9;
      auto q = conn.query(
          "INSERT INTO trial_values (trial_id, objective, value, value_type) VALUES (?, ?, ?, ?)");
      q.bind(0, t.trial_id).bind(1, objective);
      if (std::isfinite(v)) {
        q.bind(2, v);
      } else {
        q.bind_null(2);
      }
      q.bind(3, optuna_schema::value_type(v));
      q.run();
    }
  }
  conn.exec("COMMIT");
  return trials;
}

// The best trial's id by the definition: the COMPLETE trial with the best objective-0 value
// (the best infinity, then the finite values, then the other infinity) and the lowest number.
std::optional<int64_t> expected_best(const std::vector<StoredTrial>& trials, bool minimize) {
  const StoredTrial* best = nullptr;
  auto key = [minimize](const StoredTrial& t) {
    const double v = *t.value;
    const int rank = std::isfinite(v) ? 1 : ((v < 0) == minimize ? 0 : 2);
    return std::tuple(rank, std::isfinite(v) ? (minimize ? v : -v) : 0.0, t.number);
  };
  for (const StoredTrial& t : trials) {
    if (t.state != "COMPLETE" || !t.value) continue;
    if (!best || key(t) < key(*best)) best = &t;
  }
  return best ? std::optional<int64_t>(best->trial_id) : std::nullopt;
}

std::optional<int64_t> id_of(const std::optional<FrozenTrial>& trial) {
  return trial ? std::optional<int64_t>(trial->trial_id) : std::nullopt;
}

// Optuna stores infinite values of COMPLETE trials (tuner refuses them): -inf is the best a
// minimized study can reach and +inf the worst (the other way around when maximizing); a study
// with only the worst infinity still has a best trial. With the value index and without it.
TEST_F(SqliteStorageTest, BestTrialRanksOptunasInfiniteValuesAroundTheFiniteOnes) {
  const double inf = std::numeric_limits<double>::infinity();
  SqliteStorage storage(path());
  struct Case {
    std::string name;
    StudyDirection direction;
    std::vector<double> values;
    int best_number;
  };
  const std::vector<Case> cases = {
      {"min", StudyDirection::kMinimize, {inf, 3.0, -inf, 1.0, -inf}, 2},
      {"max", StudyDirection::kMaximize, {-inf, 3.0, inf, 4.0, inf}, 2},
      {"finite", StudyDirection::kMinimize, {inf, 3.0, inf, -2.0}, 3},
      {"worst", StudyDirection::kMinimize, {inf, inf}, 0},
      {"worst_max", StudyDirection::kMaximize, {-inf, -inf}, 0},
  };
  std::vector<int64_t> ids;
  for (const Case& c : cases) {
    StudyRecord s = storage.create_study(c.name, {c.direction});
    std::vector<StoredTrial> trials;
    for (size_t i = 0; i < c.values.size(); ++i) {
      trials.push_back({.number = static_cast<int>(i), .state = "COMPLETE", .value = c.values[i]});
    }
    insert_trials(path(), s.study_id, trials);
    ids.push_back(s.study_id);
  }
  for (bool with_index : {true, false}) {
    if (!with_index) {
      sqlite::Connection(path()).exec("DROP INDEX tuner_trial_values_objective_value");
    }
    for (size_t i = 0; i < cases.size(); ++i) {
      auto best = storage.get_best_trial(ids[i]);
      ASSERT_TRUE(best) << cases[i].name;
      EXPECT_EQ(best->number, cases[i].best_number) << cases[i].name << " index " << with_index;
      EXPECT_EQ(best->values[0], cases[i].values[cases[i].best_number]) << cases[i].name;
    }
  }
}

// Studies in one file whose values interleave, rank before one another's, tie (more than the
// walk of the value index reads, and finished in reverse number order), hold infinities,
// -0.0 and 0.0, values of trials that are not COMPLETE and better values of a second
// objective: the best trial is the same with the value index, without it, and by definition.
TEST_F(SqliteStorageTest, BestTrialIsTheSameWithAndWithoutTheValueIndex) {
  const double inf = std::numeric_limits<double>::infinity();
  SqliteStorage storage(path());
  std::mt19937 rng(7);
  const std::vector<double> mixed = {-inf, inf, -1.0, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0};
  const std::vector<std::string> states = {"COMPLETE", "COMPLETE", "COMPLETE", "PRUNED",
                                           "FAIL",     "RUNNING",  "WAITING"};
  auto pick = [&rng](const auto& from) { return from[rng() % from.size()]; };
  struct Study {
    std::string name;
    bool minimize;
    std::vector<StoredTrial> trials;
  };
  std::vector<Study> studies;
  auto mixed_trials = [&](int n, bool with_infinities) {
    std::vector<StoredTrial> out;
    for (int i = 0; i < n; ++i) {
      StoredTrial t{.number = i, .state = pick(states)};
      double v = pick(mixed);
      if (!with_infinities && !std::isfinite(v)) v = 4.0;
      if (t.state == "COMPLETE" || (t.state == "PRUNED" && rng() % 2)) t.value = v;
      out.push_back(t);
    }
    return out;
  };
  for (bool minimize : {true, false}) {
    const std::string dir = minimize ? "min" : "max";
    studies.push_back({"mixed_" + dir, minimize, mixed_trials(300, true)});
    studies.push_back({"finite_" + dir, minimize, mixed_trials(300, false)});
    // 1200 values better than any other study's, then a study ranked after all of them.
    std::vector<StoredTrial> early, late, ties, few_ties;
    for (int i = 0; i < 1200; ++i) {
      early.push_back({.number = i, .state = "COMPLETE", .value = (minimize ? -1 : 1) * (1e4 + i)});
    }
    for (int i = 0; i < 50; ++i) {
      late.push_back({.number = i, .state = "COMPLETE", .value = (minimize ? 1 : -1) * (1e4 + i)});
    }
    // Ties stored in reverse number order: more of them than the walk reads, and a few ranked
    // first of all.
    for (int i = 1099; i >= 0; --i) {
      ties.push_back({.number = i, .state = "COMPLETE", .value = minimize ? -5e3 : 5e3});
    }
    for (int i = 19; i >= 0; --i) {
      few_ties.push_back(
          {.number = i, .state = i % 3 ? "COMPLETE" : "PRUNED", .value = minimize ? -2e4 : 2e4});
    }
    studies.push_back({"early_" + dir, minimize, early});
    studies.push_back({"late_" + dir, minimize, late});
    studies.push_back({"ties_" + dir, minimize, ties});
    studies.push_back({"few_ties_" + dir, minimize, few_ties});
    studies.push_back({"none_complete_" + dir, minimize, {}});
    for (int i = 0; i < 20; ++i) {
      studies.back().trials.push_back(
          {.number = i, .state = i % 2 ? "PRUNED" : "RUNNING", .value = -inf});
      if (studies.back().trials.back().state == "RUNNING") {
        studies.back().trials.back().value.reset();
      }
    }
  }
  std::vector<int64_t> ids;
  for (Study& s : studies) {
    const StudyDirection d = s.minimize ? StudyDirection::kMinimize : StudyDirection::kMaximize;
    const StudyDirection other = s.minimize ? StudyDirection::kMaximize : StudyDirection::kMinimize;
    ids.push_back(storage.create_study(s.name, {d, other}).study_id);
    s.trials = insert_trials(path(), ids.back(), s.trials);
  }
  std::vector<std::optional<int64_t>> walked;
  for (size_t i = 0; i < studies.size(); ++i) {
    walked.push_back(id_of(storage.get_best_trial(ids[i])));
    EXPECT_EQ(walked.back(), expected_best(studies[i].trials, studies[i].minimize))
        << studies[i].name;
  }
  sqlite::Connection(path()).exec("DROP INDEX tuner_trial_values_objective_value");
  for (size_t i = 0; i < studies.size(); ++i) {
    EXPECT_EQ(id_of(storage.get_best_trial(ids[i])), walked[i]) << studies[i].name;
  }
}

// A file without this storage's indexes (an older tuner's, Optuna's) is read as it is when
// opened read-only, and gets them when opened for writing; the reads agree either way.
TEST_F(SqliteStorageTest, AFileWithoutTheIndexesGetsThemWhenOpenedForWriting) {
  int64_t study_id = -1;
  {
    SqliteStorage storage(path());
    study_id = storage.create_study("s", {StudyDirection::kMaximize}).study_id;
    for (double v : {1.0, 3.0, 2.0, 3.0}) {
      FrozenTrial t = storage.create_trial(study_id);
      storage.finish_trial(t.trial_id, TrialState::kComplete, {v});
    }
    storage.create_trial(study_id);
  }
  const std::string tuner_indexes =
      "SELECT name FROM sqlite_master WHERE name LIKE 'tuner_%' AND type = "
      "'index'";
  {
    sqlite::Connection conn(path());
    for (const std::string& name : kTunerIndexNames) conn.exec("DROP INDEX " + name);
    conn.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  ASSERT_TRUE(column(path(), tuner_indexes).empty());
  TrialFilter running;
  running.states = std::vector<TrialState>{TrialState::kRunning};
  {
    SqliteStorage read_only(path(), SqliteStorageOptions{.read_only = true});
    EXPECT_EQ(read_only.get_best_trial(study_id)->number, 1);
    ASSERT_EQ(read_only.get_trials(study_id, running).size(), 1u);
    EXPECT_EQ(read_only.get_trials(study_id, running)[0].number, 4);
  }
  EXPECT_TRUE(column(path(), tuner_indexes).empty());
  SqliteStorage storage(path());
  std::vector<std::string> names = column(path(), tuner_indexes);
  std::sort(names.begin(), names.end());
  std::vector<std::string> expected = kTunerIndexNames;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(names, expected);
  EXPECT_EQ(storage.get_best_trial(study_id)->number, 1);
  EXPECT_EQ(storage.get_trials(study_id, running)[0].number, 4);
}

// An index that cannot be created when the file is opened (here: another connection holds the
// write lock past the busy timeout) does not fail the open: the reads scan, and a later open
// adds it.
TEST_F(SqliteStorageTest, AnIndexThatCannotBeCreatedLeavesTheOpenToScans) {
  int64_t study_id = -1;
  {
    SqliteStorage storage(path());
    study_id = storage.create_study("s", {StudyDirection::kMinimize}).study_id;
    for (double v : {2.0, 1.0, 1.0}) {
      FrozenTrial t = storage.create_trial(study_id);
      storage.finish_trial(t.trial_id, TrialState::kComplete, {v});
    }
    storage.create_trial(study_id);
  }
  sqlite::Connection other(path());
  for (const std::string& name : kTunerIndexNames) other.exec("DROP INDEX " + name);
  other.exec("BEGIN IMMEDIATE");
  SqliteStorageOptions options;
  options.busy_timeout = std::chrono::milliseconds(20);
  {
    SqliteStorage storage(path(), options);
    EXPECT_EQ(storage.get_best_trial(study_id)->number, 1);
    TrialFilter running;
    running.states = std::vector<TrialState>{TrialState::kRunning};
    ASSERT_EQ(storage.get_trials(study_id, running).size(), 1u);
    EXPECT_EQ(storage.get_trials(study_id, running)[0].number, 3);
  }
  other.exec("ROLLBACK");
  EXPECT_TRUE(column(path(),
                     "SELECT name FROM sqlite_master WHERE name = "
                     "'tuner_trial_values_objective_value'")
                  .empty());
  SqliteStorage storage(path(), options);
  EXPECT_EQ(column(path(),
                   "SELECT name FROM sqlite_master WHERE name = "
                   "'tuner_trial_values_objective_value'")
                .size(),
            1u);
  EXPECT_EQ(storage.get_best_trial(study_id)->number, 1);
}

}  // namespace
}  // namespace tuner
