// The coordinator's cost per REPORT against the steps its trial already reported (it once grew
// with them, and a chatty trial got a healthy one failed).
//
// One Study on a SqliteStorage file with a scheduler, a Coordinator on ipc:// and, in this
// thread, two fake executors (DEALER sockets): A holds one trial and sends REPORTs for steps
// 0, 1, 2, ... in rounds of --round (waiting for every DECISION of a round before the next), and
// B holds another trial and only heartbeats. Before the run, --complete trials are stored
// COMPLETE with a value at every step up to the largest size (so that the median and the rungs
// have something to compare with), and A's values are better than theirs (nothing is pruned).
//
// Measured: the time spent inside Coordinator::poll_once (this thread's CPU time; the fake
// executors' socket calls are outside it) while A's reports reach each of --sizes. Printed, for
// each scheduler, one JSON line per size: the coordinator CPU seconds for all reports so far,
// the microseconds per report in the last window (e.g. reports 4,000 to 8,000) and, as the
// ratio, that per-report cost over the first window's (reports 0 to the first size): the anchor,
// measured in the same run. A cost per report that does not grow with the history gives ratios
// near 1; a cost that grows linearly, ratios near the size ratio. Also whether B's lease
// survived (its heartbeats were never starved).
//
//   report_cost [--schedulers median,asha,hyperband,patience,none] [--sizes 1000,2000,4000,8000]
//               [--round 100] [--complete 5] [--work DIR] [--table]
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "coordinator/coordinator.h"
#include "search/samplers/random_sampler.h"
#include "search/schedulers/asha.h"
#include "search/schedulers/hyperband.h"
#include "search/schedulers/median_stopping.h"
#include "search/schedulers/patience.h"
#include "storage/sqlite_storage.h"
#include "tuner/study.h"
#include "wire/message_socket.h"
#include "wire/protocol.h"

namespace {

using namespace tuner;
using std::chrono::milliseconds;

struct Flags {
  std::vector<std::string> schedulers = {"median", "asha", "hyperband", "patience", "none"};
  std::vector<int> sizes = {1000, 2000, 4000, 8000};
  int round = 100;
  int complete = 5;
  std::string work;
  bool table = false;
};

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

Flags parse_flags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << arg << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--schedulers") {
      flags.schedulers = split(value());
    } else if (arg == "--sizes") {
      flags.sizes.clear();
      for (const std::string& s : split(value())) flags.sizes.push_back(std::stoi(s));
    } else if (arg == "--round") {
      flags.round = std::stoi(value());
    } else if (arg == "--complete") {
      flags.complete = std::stoi(value());
    } else if (arg == "--work") {
      flags.work = value();
    } else if (arg == "--table") {
      flags.table = true;
    } else {
      std::cerr << "unknown flag " << arg
                << " (see the comment at the top of bench/coordinator/report_cost.cc)\n";
      std::exit(2);
    }
  }
  if (flags.sizes.empty() || flags.round < 1) {
    std::cerr << "--sizes must not be empty and --round must be >= 1\n";
    std::exit(2);
  }
  return flags;
}

std::shared_ptr<Scheduler> make_scheduler(const std::string& name, int64_t max_step) {
  if (name == "median") return std::make_shared<MedianStopping>();
  if (name == "asha") return std::make_shared<AshaScheduler>();
  if (name == "hyperband") {
    return std::make_shared<HyperbandScheduler>(HyperbandOptions{.max_resource = max_step + 1});
  }
  if (name == "patience") {
    return std::make_shared<PatienceStopping>(PatienceOptions{.patience = 1000000});
  }
  if (name == "none") return nullptr;
  std::cerr << "unknown scheduler '" << name
            << "': expected median, asha, hyperband, patience or none\n";
  std::exit(2);
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

constexpr char kJob[] =
    R"({"kind": "command", "argv": ["true", "{x}"], "objective_metric": "loss"})";

class Run {
 public:
  Run(const Flags& flags, const std::string& scheduler_name, const std::filesystem::path& dir)
      : flags_(flags), name_(scheduler_name) {
    const int max_step = flags.sizes.back();
    auto storage = std::make_shared<SqliteStorage>((dir / (scheduler_name + ".db")).string());
    StudyOptions o;
    o.name = "report-cost";
    o.sampler = std::make_shared<RandomSampler>();
    o.scheduler = make_scheduler(scheduler_name, max_step);
    o.seed = 1;
    o.storage = storage;
    o.heartbeat_interval = std::nullopt;
    SearchSpace space;
    space.add_float("x", 0.0, 1.0);
    o.space = space;
    study_.emplace(Study::create(o));
    // The trials to compare with: COMPLETE, with loss 1 at every step.
    study_->run_batch([&] {
      for (int c = 0; c < flags.complete; ++c) {
        Trial t = study_->ask();
        for (int step = 0; step < max_step; ++step) t.report(step, 1.0);
        study_->tell(t, 1.0);
      }
    });
    CoordinatorOptions co;
    co.endpoint = "ipc://" + (dir / (scheduler_name + ".sock")).string();
    co.job_json = kJob;
    co.n_trials = 2;
    co.heartbeat_interval = milliseconds(1000);
    co.lease_timeout = milliseconds(5000);
    co.log = [this](const std::string& line) {
      if (line.find("expired") != std::string::npos ||
          line.find("forgotten") != std::string::npos) {
        starved_ = true;
        std::cerr << "[" << name_ << "] " << line << "\n";
      }
    };
    coordinator_.emplace(*study_, co);
    a_ = connect("A");
    b_ = connect("B");
    lease_a_ = take_trial(*a_, "A");
    lease_b_ = take_trial(*b_, "B");
  }

  void measure() {
    double cpu = 0.0;
    int sent = 0;
    double first_per_report = 0.0;
    int previous_size = 0;
    double previous_cpu = 0.0;
    for (int size : flags_.sizes) {
      while (sent < size) {
        const int n = std::min(flags_.round, size - sent);
        for (int i = 0; i < n; ++i) {
          a_->send(
              ReportMessage{.lease_id = lease_a_, .step = sent + i, .metrics = {{"loss", 0.5}}});
        }
        b_->send(HeartbeatMessage{.lease_ids = {lease_b_}});
        sent += n;
        int decisions = 0;
        while (decisions < n) {
          const double before = thread_cpu_seconds();
          coordinator_->poll_once(milliseconds(5));
          cpu += thread_cpu_seconds() - before;
          while (auto frames = a_->receive()) {
            if (std::holds_alternative<DecisionMessage>(decode(*frames))) ++decisions;
          }
          while (b_->receive()) {
          }
        }
      }
      const double per_report_us = (cpu - previous_cpu) / (size - previous_size) * 1e6;
      if (first_per_report == 0.0) first_per_report = per_report_us;
      std::cout << "{\"bench\": \"coordinator_report_cost\", \"scheduler\": \"" << name_
                << "\", \"reports\": " << size << ", \"coordinator_cpu_s\": " << cpu
                << ", \"window\": [" << previous_size << ", " << size
                << "], \"us_per_report\": " << per_report_us
                << ", \"ratio_to_first_window\": " << per_report_us / first_per_report
                << ", \"healthy_lease_kept\": " << (starved_ ? "false" : "true") << "}"
                << std::endl;
      if (flags_.table) {
        std::fprintf(stderr,
                     "%-10s %6d reports: %7.3f s coordinator CPU, %8.1f us/report in "
                     "[%d, %d), x%.2f of the first window\n",
                     name_.c_str(), size, cpu, per_report_us, previous_size, size,
                     per_report_us / first_per_report);
      }
      previous_size = size;
      previous_cpu = cpu;
    }
  }

 private:
  std::unique_ptr<DealerEndpoint> connect(const std::string& id) {
    return std::make_unique<DealerEndpoint>(context_, coordinator_->endpoint(),
                                            ZmqSocketOptions{.routing_id = id});
  }

  uint64_t take_trial(DealerEndpoint& peer, const std::string& id) {
    peer.send(HelloMessage{
        .executor_id = id, .hostname = "bench", .pid = ::getpid(), .resources = {.cpu_slots = 1}});
    peer.send(ReadyMessage{.free_slots = 1});
    for (int i = 0; i < 2000; ++i) {
      coordinator_->poll_once(milliseconds(5));
      while (auto frames = peer.receive()) {
        Message m = decode(*frames);
        if (auto* trial = std::get_if<TrialMessage>(&m)) return trial->lease_id;
      }
    }
    std::cerr << "executor " << id << " got no trial\n";
    std::exit(1);
  }

  const Flags& flags_;
  std::string name_;
  std::optional<Study> study_;
  ZmqContext context_;  // before the coordinator and the sockets: they close first
  std::optional<Coordinator> coordinator_;
  std::unique_ptr<DealerEndpoint> a_, b_;
  uint64_t lease_a_ = 0, lease_b_ = 0;
  bool starved_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = parse_flags(argc, argv);
  std::filesystem::path dir = flags.work.empty()
                                  ? std::filesystem::temp_directory_path() /
                                        ("tuner-report-cost-" + std::to_string(::getpid()))
                                  : std::filesystem::path(flags.work);
  std::filesystem::create_directories(dir);
  for (const std::string& name : flags.schedulers) {
    Run run(flags, name, dir);
    run.measure();
  }
  if (flags.work.empty()) std::filesystem::remove_all(dir);
  return 0;
}
