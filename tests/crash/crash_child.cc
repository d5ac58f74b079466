// The child of the crash test (crash_test.cc): runs the study "crash" on a SQLite file until it
// has `target` COMPLETE trials and no WAITING one, resuming whatever is there. After each tell()
// returns, it appends the trial's number, params and value to the journal and fsyncs it, so a
// journal line is a promise that the trial is finished in the file.
//
//   crash_child DB JOURNAL TARGET
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "search/samplers/random_sampler.h"
#include "storage/sqlite_storage.h"
#include "trials/error.h"
#include "tuner/study.h"

namespace {

using namespace tuner;

// Options the parent relies on (it waits out the grace period before the final run).
constexpr auto kHeartbeatInterval = std::chrono::milliseconds(50);
constexpr auto kGracePeriod = std::chrono::milliseconds(150);
constexpr int kMaxRetries = 3;

void append(int fd, const std::string& line) {
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()) ||
      ::fsync(fd) != 0) {
    std::perror("crash_child: journal");
    std::exit(2);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: crash_child DB JOURNAL TARGET\n";
    return 2;
  }
  const std::string db = argv[1];
  const int target = std::atoi(argv[3]);
  int journal = ::open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (journal < 0) {
    std::perror("crash_child: open journal");
    return 2;
  }
  try {
    StudyOptions options;
    options.name = "crash";
    options.storage = std::make_shared<SqliteStorage>(db);
    options.sampler = std::make_shared<RandomSampler>();
    options.seed = 7;
    options.load_if_exists = true;
    options.heartbeat_interval = kHeartbeatInterval;
    options.grace_period = kGracePeriod;
    options.stale_trial_policy = StaleTrialPolicy::kRetry;
    options.max_retries = kMaxRetries;
    Study study = Study::create(options);
    TrialFilter complete;
    complete.states = std::vector<TrialState>{TrialState::kComplete};
    TrialFilter waiting;
    waiting.states = std::vector<TrialState>{TrialState::kWaiting};
    while (static_cast<int>(study.trials(complete).size()) < target ||
           !study.trials(waiting).empty()) {
      Trial t = study.ask();
      double x = t.suggest_float("x", -1, 1);
      int64_t k = t.suggest_int("k", 0, 9);
      auto c = t.suggest_categorical<std::string>("c", {"a", "b", "c"});
      double value = x * x + static_cast<double>(k) + (c == "a" ? 0.5 : 0.0);
      for (int step = 0; step < 3; ++step) {
        t.report(step, value + step);
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
      FrozenTrial done = study.tell(t, value);
      char line[256];
      std::snprintf(line, sizeof line, "%d %.17g %lld %s %.17g\n", done.number, x,
                    static_cast<long long>(k), c.c_str(), value);
      append(journal, line);
    }
  } catch (const Error& e) {
    std::cerr << "crash_child: " << e.what() << "\n";
    return 1;
  }
  ::close(journal);
  return 0;
}
