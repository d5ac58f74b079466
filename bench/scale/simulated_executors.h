// Simulated executors: many executors in one process, each a DEALER of its own that speaks the
// real protocol (wire/protocol.h) to a coordinator, driven by one event loop that polls all their
// sockets. A trial is not run: it lasts a random time, reports at a random rate meanwhile, and
// ends with RESULT. Executors are lost (socket closed without BYE) and preempted (BYE listing
// their running and queued leases as preempted) at random, each replaced at once by a new executor.
//
// Each executor does what executor/executor_service.h does on the wire: HELLO, HEARTBEAT and
// READY (free slots) when it connects; TRIAL runs on a free slot, else waits in a queue for one
// (READY offers the slots that neither running nor queued trials take); REPORT at the trial's rate,
// DECISION stop ends the trial early; RESULT when it ends, then READY; RESULT kept and sent
// again every coordinator_timeout until ACKed; HEARTBEAT every heartbeat interval (the shorter
// of its own and TRIAL's) with the leases it holds; a lease that the coordinator's HEARTBEAT no
// longer lists is stopped (FAIL, which the coordinator refuses); ERROR with say_hello: HELLO
// again.
//
// Thread safety: run_simulated_executors() owns everything it makes; one call per process.
#ifndef TUNER_BENCH_SCALE_SIMULATED_EXECUTORS_H_
#define TUNER_BENCH_SCALE_SIMULATED_EXECUTORS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tuner::bench {

struct SimConfig {
  std::string endpoint;     // the coordinator's
  int process = 0;          // this process's index among the simulator processes
  int executors = 1;        // executors in this process
  int slots = 8;            // per executor
  double min_s = 0.5;       // a trial lasts U(min_s, max_s) wall seconds
  double max_s = 5.0;       //
  double report_hz_lo = 1;  // a trial reports at U(lo, hi) per wall second; 0: never
  double report_hz_hi = 10;
  // Churn, in percent of the executors per simulated hour; a simulated hour lasts
  // 3600 / time_scale wall seconds.
  double lost_per_hour = 1.0;
  double preempted_per_hour = 5.0;
  double time_scale = 60.0;
  uint64_t seed = 1;
  int heartbeat_ms = 1000;            // the executors' own interval (TRIAL's may be shorter)
  int coordinator_timeout_ms = 5000;  // an outcome not ACKed for this long is sent again
};

// Counts of values in milliseconds, in buckets of 0.05 ms up to 1 s and one bucket above.
struct Histogram {
  static constexpr double kBucketMs = 0.05;
  static constexpr size_t kBuckets = 20001;
  std::vector<int64_t> counts = std::vector<int64_t>(kBuckets, 0);
  void add(double ms) {
    const double bucket = ms / kBucketMs;
    counts[bucket >= kBuckets - 1 ? kBuckets - 1 : static_cast<size_t>(bucket < 0 ? 0 : bucket)]++;
  }
  void merge(const Histogram& other) {
    for (size_t i = 0; i < kBuckets; ++i) counts[i] += other.counts[i];
  }
  // The upper edge of the bucket that holds quantile q; 1,000 ms or more shows as 1000.
  double quantile(double q) const;
};

// What one simulator process saw. Times: system clock in microseconds since the epoch where it
// says unix, else wall (steady) durations.
struct SimReport {
  std::vector<std::pair<int64_t, int64_t>> starts;  // (trial id, TRIAL received, unix us)
  std::vector<int64_t> result_to_ack_us;            // first RESULT sent -> its ACK received
  std::vector<int64_t> ready_to_trial_us;           // a slot freed (READY sent) -> a TRIAL took it
  Histogram lateness_ms;    // how late each timer (a trial's end, a report, a heartbeat) fired
  int64_t trials = 0;       // TRIALs received
  int64_t queued = 0;       // TRIALs received with every slot busy: queued until one frees
  int64_t results = 0;      // RESULTs sent (first sends)
  int64_t accepted = 0;     // ACK accepted
  int64_t refused = 0;      // ACK refused (a stale outcome)
  int64_t resent = 0;       // outcomes sent again after coordinator_timeout
  int64_t reports = 0;      // REPORTs sent
  int64_t decisions = 0;    // DECISIONs received
  int64_t stopped = 0;      // trials ended by DECISION stop
  int64_t dropped = 0;      // trials stopped because the coordinator's HEARTBEAT no longer had them
  int64_t lost = 0;         // executors lost (closed without BYE)
  int64_t lost_leases = 0;  // leases they held (running or not ACKed)
  int64_t preempted = 0;    // executors preempted (BYE with preempted leases)
  int64_t preempted_leases = 0;  // leases their BYEs listed
  int64_t errors = 0;            // ERROR received
  int64_t say_hello = 0;         // of which say_hello
  double work_s = 0;             // trial seconds of the RESULTs the coordinator accepted
  double wall_s = 0;             // from the go to the stop
  double wait_s = 0;             // of which waiting in zmq_wait (idle, or polling many sockets)
  double cpu_s = 0;              // the process's CPU time (its ZeroMQ I/O threads included)
  int64_t turns = 0;             // turns of the loop
  std::vector<std::string> error_samples;  // the first few ERROR messages
};

// A SimReport's counts and seconds by name: how it is written and read, and how the reports of
// several processes add up (wall_s, wait_s and turns add too: a sum over processes).
inline constexpr std::pair<const char*, int64_t SimReport::*> kSimCounts[] = {
    {"trials", &SimReport::trials},       {"queued", &SimReport::queued},
    {"results", &SimReport::results},     {"accepted", &SimReport::accepted},
    {"refused", &SimReport::refused},     {"resent", &SimReport::resent},
    {"reports", &SimReport::reports},     {"decisions", &SimReport::decisions},
    {"stopped", &SimReport::stopped},     {"dropped", &SimReport::dropped},
    {"lost", &SimReport::lost},           {"lost_leases", &SimReport::lost_leases},
    {"preempted", &SimReport::preempted}, {"preempted_leases", &SimReport::preempted_leases},
    {"errors", &SimReport::errors},       {"say_hello", &SimReport::say_hello},
    {"turns", &SimReport::turns},
};
inline constexpr std::pair<const char*, double SimReport::*> kSimSeconds[] = {
    {"work_s", &SimReport::work_s},
    {"wall_s", &SimReport::wall_s},
    {"wait_s", &SimReport::wait_s},
    {"cpu_s", &SimReport::cpu_s},
};

// Runs `config.executors` simulated executors until `stop_fd` becomes readable (a byte written
// to it; it is not read), then says BYE for each. Throws tuner::Error when a socket cannot be made.
SimReport run_simulated_executors(const SimConfig& config, int stop_fd);

std::string to_json(const SimConfig& config);
SimConfig sim_config_from_json(const std::string& text);
std::string to_json(const SimReport& report);
SimReport sim_report_from_json(const std::string& text);

}  // namespace tuner::bench

#endif  // TUNER_BENCH_SCALE_SIMULATED_EXECUTORS_H_
