// The crash test: a child process (crash_child.cc) runs a study on a SQLite file and is
// killed with SIGKILL at random moments (seeded), many times over, resuming each time; then one
// last run finishes it. Afterwards:
// - every trial the child's journal promises is in the file, COMPLETE, with the same values;
// - trial numbers run 0..n-1 without gaps or repeats; PRAGMA integrity_check is ok;
// - no trial is left RUNNING or WAITING: each killed trial is FAIL with a "stale" reason, and was
//   re-run (its retry names it in retry_history) unless its chain used up its retries.
//
//   crash_test CHILD WORKDIR [KILLS] [SEED]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "storage/sqlite/connection.h"
#include "storage/sqlite_storage.h"
#include "trials/error.h"

namespace {

using namespace tuner;
namespace fs = std::filesystem;

constexpr int kTarget = 400;    // COMPLETE trials the study ends with
constexpr int kMaxRetries = 3;  // as crash_child
constexpr auto kGrace = std::chrono::milliseconds(150);

int failures = 0;
void check(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::cerr << "FAIL: " << what << "\n";
  }
}

pid_t spawn(const std::string& child, const std::string& db, const std::string& journal) {
  pid_t pid = ::fork();
  if (pid == 0) {
    std::string target = std::to_string(kTarget);
    ::execl(child.c_str(), child.c_str(), db.c_str(), journal.c_str(), target.c_str(), nullptr);
    std::perror("exec");
    ::_exit(127);
  }
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: crash_test CHILD WORKDIR [KILLS] [SEED]\n";
    return 2;
  }
  const std::string child = argv[1];
  const fs::path dir = fs::path(argv[2]) / ("crash_" + std::to_string(::getpid()));
  const int kills = argc > 3 ? std::atoi(argv[3]) : 30;
  const unsigned seed = argc > 4 ? static_cast<unsigned>(std::atoi(argv[4])) : 20261129;
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "study.db").string();
  const std::string journal = (dir / "journal.txt").string();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> delay_us(2000, 120000);

  int killed = 0;
  for (int i = 0; i < kills; ++i) {
    pid_t pid = spawn(child, db, journal);
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
    if (::kill(pid, SIGKILL) == 0) ++killed;
    int status = wait_for(pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
      std::cerr << "crash_test: the child failed (exit " << WEXITSTATUS(status) << ")\n";
      return 1;
    }
    if (WIFEXITED(status)) break;  // it finished before the kill
  }
  // The last run: after the grace period, so that it finds every killed trial stale.
  std::this_thread::sleep_for(kGrace + std::chrono::milliseconds(50));
  int status = wait_for(spawn(child, db, journal));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::cerr << "crash_test: the final run failed\n";
    return 1;
  }

  {
    sqlite::Connection conn(db);
    auto q = conn.query("PRAGMA integrity_check");
    check(q.step() && q.text(0) == "ok", "PRAGMA integrity_check is ok");
  }
  SqliteStorage storage(db);
  auto study = storage.find_study("crash");
  check(study.has_value(), "the study exists");
  if (!study) return 1;
  std::vector<FrozenTrial> trials = storage.get_trials(study->study_id);
  std::map<int, const FrozenTrial*> by_number;
  int complete = 0, failed = 0, retries = 0;
  for (size_t i = 0; i < trials.size(); ++i) {
    const FrozenTrial& t = trials[i];
    check(t.number == static_cast<int>(i), "trial numbers have no gaps: position " +
                                               std::to_string(i) + " holds " +
                                               std::to_string(t.number));
    by_number[t.number] = &t;
    check(is_finished(t.state), "trial " + std::to_string(t.number) + " is finished, not " +
                                    std::string(to_string(t.state)));
    if (t.state == TrialState::kComplete) ++complete;
    if (t.state == TrialState::kFail) {
      ++failed;
      auto it = t.system_attrs.find("fail_reason");
      check(it != t.system_attrs.end() && it->second.starts_with("\"stale:"),
            "FAIL trial " + std::to_string(t.number) + " failed as stale");
    }
    if (t.system_attrs.contains("failed_trial")) ++retries;
  }
  check(complete >= kTarget, "the study reached its target");

  // The policy: every stale FAIL trial was retried once, unless its chain was used up.
  std::map<int, int> retried;  // failed number -> retries that name it last in retry_history
  for (const FrozenTrial& t : trials) {
    auto it = t.system_attrs.find("retry_history");
    if (it == t.system_attrs.end()) continue;
    auto history = nlohmann::json::parse(it->second);
    int last = history.back().get<int>();
    ++retried[last];
    check(by_number.contains(last) && by_number[last]->state == TrialState::kFail,
          "retry " + std::to_string(t.number) + " re-runs a FAIL trial");
    check(
        by_number.contains(last) && by_number[last]->params.size() <= t.params.size(),
        "retry " + std::to_string(t.number) + " keeps the params of trial " + std::to_string(last));
    for (const auto& [name, value] : by_number[last]->params) {
      check(t.params.contains(name) && t.params.at(name) == value,
            "retry " + std::to_string(t.number) + " has param " + name + " of " +
                std::to_string(last));
    }
  }
  for (const FrozenTrial& t : trials) {
    if (t.state != TrialState::kFail) continue;
    size_t attempts = 1;
    if (auto it = t.system_attrs.find("retry_history"); it != t.system_attrs.end()) {
      attempts += nlohmann::json::parse(it->second).size();
    }
    int expected = attempts <= static_cast<size_t>(kMaxRetries) ? 1 : 0;
    check(retried[t.number] == expected, "FAIL trial " + std::to_string(t.number) + " has " +
                                             std::to_string(retried[t.number]) +
                                             " retries, expected " + std::to_string(expected));
  }

  // The journal: every promised trial is there, COMPLETE, with its values; none twice.
  std::ifstream in(journal);
  std::string line;
  std::set<int> seen;
  int entries = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    int number;
    double x, value;
    long long k;
    std::string c;
    if (!(fields >> number >> x >> k >> c >> value)) {
      check(false, "journal line '" + line + "' is whole");
      continue;
    }
    ++entries;
    check(seen.insert(number).second, "trial " + std::to_string(number) + " journaled once");
    auto it = by_number.find(number);
    if (it == by_number.end()) {
      check(false, "journaled trial " + std::to_string(number) + " is in the file");
      continue;
    }
    const FrozenTrial& t = *it->second;
    check(t.state == TrialState::kComplete && t.values == std::vector<double>{value} &&
              t.params.at("x") == ParamValue(x) && t.params.at("k") == ParamValue(int64_t{k}) &&
              t.params.at("c") == ParamValue(c),
          "journaled trial " + std::to_string(number) + " is COMPLETE with its values");
  }
  check(entries == complete || entries <= complete,
        "the journal holds no more trials than the file");

  std::cout << "crash_test: " << killed << " kills (seed " << seed << "), " << trials.size()
            << " trials: " << complete << " COMPLETE, " << failed << " FAIL (stale), " << retries
            << " retries; " << entries << " journaled; " << failures << " failures\n";
  if (failures == 0) fs::remove_all(dir);
  return failures == 0 ? 0 : 1;
}
