// Storage throughput: trials per second through the full life of a trial on a SQLite
// file, and reads on a large study. Its Python peer, optuna_storage_throughput.py, does the same
// with Optuna's RDBStorage; run_storage_benchmarks runs both on the same disk and prints ratios.
//
//   storage_throughput life DB N [PROCS] [--full]
//       PROCS processes (default 1) each run N trials on one file, one study: create, set 10
//       params, report 10 intermediate values, finish (COMPLETE). Every call is one committed
//       transaction. --full: synchronous=FULL. Prints a JSON line.
//   storage_throughput reads DB N
//       Builds a study of N COMPLETE trials (10 params, 10 intermediate values each) in DB in
//       bulk, then times: listing all trials, the best trial, one trial's intermediate values,
//       and listing only the RUNNING trials. Prints a JSON line.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "storage/sqlite/connection.h"
#include "storage/sqlite_storage.h"
#include "trials/error.h"

namespace {

using namespace tuner;
using Seconds = std::chrono::duration<double>;

constexpr int kParams = 10;
constexpr int kSteps = 10;

double now_s() { return Seconds(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void run_trials(const std::string& db, int n, bool full, int64_t study_id) {
  SqliteStorageOptions options;
  options.synchronous_full = full;
  options.busy_timeout = std::chrono::milliseconds(60000);
  SqliteStorage storage(db, options);
  const FloatDistribution dist{0.0, 1.0};
  for (int i = 0; i < n; ++i) {
    FrozenTrial t = storage.create_trial(study_id);
    for (int p = 0; p < kParams; ++p) {
      storage.set_trial_param(t.trial_id, "p" + std::to_string(p), dist, (i + p) % 97 / 97.0);
    }
    for (int s = 0; s < kSteps; ++s) storage.set_trial_intermediate_value(t.trial_id, s, s * 0.1);
    storage.finish_trial(t.trial_id, TrialState::kComplete, {i * 0.001});
  }
}

int life(const std::string& db, int n, int procs, bool full) {
  int64_t study_id;
  {
    SqliteStorage storage(db);
    study_id = storage.create_study("life", {StudyDirection::kMinimize}).study_id;
  }
  const double start = now_s();
  if (procs == 1) {
    run_trials(db, n, full, study_id);
  } else {
    std::vector<pid_t> pids;
    for (int p = 0; p < procs; ++p) {
      pid_t pid = ::fork();
      if (pid == 0) {
        try {
          run_trials(db, n, full, study_id);
        } catch (const Error& e) {
          std::cerr << e.what() << "\n";
          ::_exit(1);
        }
        ::_exit(0);
      }
      pids.push_back(pid);
    }
    for (pid_t pid : pids) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    }
  }
  const double elapsed = now_s() - start;
  SqliteStorage storage(db);
  const size_t total = storage.get_trials(study_id).size();
  std::printf(
      "{\"impl\": \"tuner\", \"mode\": \"life\", \"procs\": %d, \"trials\": %zu, "
      "\"synchronous\": \"%s\", \"seconds\": %.4f, \"trials_per_s\": %.1f}\n",
      procs, total, full ? "FULL" : "NORMAL", elapsed, total / elapsed);
  return total == static_cast<size_t>(n) * procs ? 0 : 1;
}

// Writes `n` COMPLETE trials into a new study in one transaction, in Optuna's tables.
int64_t bulk_study(const std::string& db, int n) {
  int64_t study_id;
  {
    SqliteStorage storage(db);
    study_id = storage.create_study("reads", {StudyDirection::kMinimize}).study_id;
  }
  sqlite::Connection conn(db);
  conn.exec("BEGIN IMMEDIATE");
  const std::string dist = R"({"name": "FloatDistribution", "attributes": {"step": null, )"
                           R"("low": 0.0, "high": 1.0, "log": false}})";
  for (int i = 0; i < n; ++i) {
    conn.query(
            "INSERT INTO trials (number, study_id, state, datetime_start, datetime_complete) "
            "VALUES (?, ?, 'COMPLETE', '2026-01-01 00:00:00.000000', "
            "'2026-01-01 00:00:01.000000')")
        .bind(0, i)
        .bind(1, study_id)
        .run();
    const int64_t trial_id = sqlite3_last_insert_rowid(conn.get());
    for (int p = 0; p < kParams; ++p) {
      conn.query(
              "INSERT INTO trial_params (trial_id, param_name, param_value, distribution_json) "
              "VALUES (?, ?, ?, ?)")
          .bind(0, trial_id)
          .bind(1, "p" + std::to_string(p))
          .bind(2, ((i * 7 + p) % 1000) / 1000.0)
          .bind(3, dist)
          .run();
    }
    for (int s = 0; s < kSteps; ++s) {
      conn.query(
              "INSERT INTO trial_intermediate_values (trial_id, step, intermediate_value, "
              "intermediate_value_type) VALUES (?, ?, ?, 'FINITE')")
          .bind(0, trial_id)
          .bind(1, s)
          .bind(2, s * 0.5 + i)
          .run();
    }
    conn.query(
            "INSERT INTO trial_values (trial_id, objective, value, value_type) "
            "VALUES (?, 0, ?, 'FINITE')")
        .bind(0, trial_id)
        .bind(1, static_cast<double>((i * 7919) % n))
        .run();
  }
  conn.exec("COMMIT");
  return study_id;
}

template <class F>
double best_of(int reps, F f) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const double start = now_s();
    f();
    best = std::min(best, now_s() - start);
  }
  return best;
}

int reads(const std::string& db, int n) {
  const double build_start = now_s();
  const int64_t study_id = bulk_study(db, n);
  const double build = now_s() - build_start;
  SqliteStorage storage(db);
  size_t listed = 0;
  const double list_all = best_of(3, [&] { listed = storage.get_trials(study_id).size(); });
  FrozenTrial best;
  const double best_trial = best_of(3, [&] {
    auto b = storage.get_best_trial(study_id);
    if (b) best = *b;
  });
  const int64_t some_id =
      storage.get_trials(study_id, {.states = {}, .min_number = n / 2}).front().trial_id;
  size_t steps = 0;
  const double one_trial =
      best_of(20, [&] { steps = storage.get_trial(some_id).intermediate_values.size(); });
  TrialFilter running;
  running.states = std::vector<TrialState>{TrialState::kRunning};
  const double list_running = best_of(5, [&] { storage.get_trials(study_id, running); });
  std::printf(
      "{\"impl\": \"tuner\", \"mode\": \"reads\", \"trials\": %zu, \"build_s\": %.3f, "
      "\"list_all_s\": %.5f, \"best_trial_s\": %.6f, \"best_value\": %g, "
      "\"one_trial_intermediate_s\": %.6f, \"steps\": %zu, \"list_running_s\": %.6f}\n",
      listed, build, list_all, best_trial, best.values.empty() ? -1 : best.values[0], one_trial,
      steps, list_running);
  return listed == static_cast<size_t>(n) && steps == kSteps ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: storage_throughput life DB N [PROCS] [--full] | reads DB N\n";
    return 2;
  }
  const std::string mode = argv[1], db = argv[2];
  const int n = std::atoi(argv[3]);
  try {
    if (mode == "life") {
      int procs = 1;
      bool full = false;
      for (int i = 4; i < argc; ++i) {
        if (std::strcmp(argv[i], "--full") == 0) {
          full = true;
        } else {
          procs = std::atoi(argv[i]);
        }
      }
      return life(db, n, procs, full);
    }
    if (mode == "reads") return reads(db, n);
  } catch (const Error& e) {
    std::cerr << "storage_throughput: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "unknown mode " << mode << "\n";
  return 2;
}
