// LeaseTable: the trials handed out to executors, each under a lease.
//
// It owns:
// - the leases, by id. A lease is made one way, grant(): a new id (ids never repeat: they start
//   at a value the coordinator derives from the wall time, and a lease taken back from an
//   earlier coordinator moves the next id past its own), a deadline lease_timeout ahead;
// - their deadlines: renew() moves one later (never earlier), overdue() lists those passed;
// - each study's counts: `leased` counts trials (a multi-node trial's node 0 only), `finishing`
//   those of them whose outcome the open batch commits (outcome_pending);
// - the memory of ended leases (remember_end), to answer an outcome that is sent again or comes
//   late; the oldest are forgotten past `max_ended`.
// Invariants: a lease's id is its key; counts(run).leased is the number of node-0 leases of
// `run` in the table, counts(run).finishing the number of those with outcome_pending.
//
// Thread safety: not thread-safe; the coordinator's loop thread uses it.
#ifndef TUNER_COORDINATOR_LEASE_TABLE_H_
#define TUNER_COORDINATOR_LEASE_TABLE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/placement.h"
#include "coordinator/work.h"
#include "trials/clock.h"
#include "wire/protocol.h"

namespace tuner {

struct StudyRun;

struct Lease {
  uint64_t id = 0;
  StudyRun* run = nullptr;
  std::string executor_id;
  std::string route;  // the executor's connection (a reconnect moves it)
  // The trial (its live handle in work.trial; a multi-node trial's nodes other than 0 have none:
  // node 0's lease tells the outcome).
  Prepared work;
  int64_t trial_id = -1;
  int trial_number = -1;
  // A node of a multi-node trial: its group (the lease id of node 0; 0 for one-node trials).
  uint64_t group = 0;
  int node = 0;
  int nodes = 1;
  Clock::SteadyTime deadline{};
  std::vector<int> gpus;  // the executor's GPUs given to this trial
  // The shares of its one GPU the trial holds (coordinator/placement.h, kWholeGpu a GPU); 0: it
  // holds its GPUs whole.
  int gpu_share = 0;
  // Group commit: TRIAL goes out once the batch that leased it is durable.
  bool unsent = false;
  // Group commit: its outcome is told in the open batch; ACKed once that is durable. Set with
  // LeaseTable::set_outcome_pending.
  bool outcome_pending = false;
};

// What a lease is made of (grant()).
struct LeaseRequest {
  StudyRun* run = nullptr;
  std::string executor_id;
  std::string route;
  Prepared work;
  int64_t trial_id = -1;
  int trial_number = -1;
  uint64_t group = 0;  // node 0's lease id for a multi-node trial (see next_id())
  int node = 0;
  int nodes = 1;
  std::vector<int> gpus;
  int gpu_share = 0;  // Lease::gpu_share
  bool unsent = false;
  // A lease an earlier coordinator granted, taken back (HELLO lists it): keeps its id.
  std::optional<uint64_t> id;
};

struct LeaseCounts {
  int leased = 0;     // trials leased (a multi-node trial once)
  int finishing = 0;  // of those, the ones whose outcome the open batch commits
};

struct EndedLease {
  bool committed = false;  // false: expired, refused or taken back
  std::string detail;      // why it ended (the refusal's reason)
};

class LeaseTable {
 public:
  using Map = std::map<uint64_t, Lease>;

  // `first_id`: the id of the first lease granted; `timeout`: how long a lease lives without
  // renewal (CoordinatorServiceOptions::lease_timeout).
  LeaseTable(uint64_t first_id, std::chrono::milliseconds timeout, size_t max_ended = 100'000);

  // The one way to make a lease: a new id (or request.id), deadline now + timeout.
  Lease& grant(LeaseRequest request, Clock::SteadyTime now);
  // The id the next grant() without request.id gives.
  uint64_t next_id() const { return next_id_; }
  // Removes a lease from the table and returns it. REQUIRES: it is in the table.
  Lease take(uint64_t id);
  Lease take(Map::iterator it);

  Lease* find(uint64_t id);
  bool contains(uint64_t id) const { return leases_.contains(id); }
  Map::iterator find_it(uint64_t id) { return leases_.find(id); }
  Map::iterator end() { return leases_.end(); }
  const Map& all() const { return leases_; }
  Map& all() { return leases_; }
  size_t size() const { return leases_.size(); }
  // Forgets every lease (the coordinator abandons them). The ended-lease memory stays.
  void clear();

  // The lease lives until now + timeout at least.
  void renew(Lease& lease, Clock::SteadyTime now);
  // Renews lease `id` when `executor_id` holds it.
  void renew_if_held(uint64_t id, const std::string& executor_id, Clock::SteadyTime now);
  // The leases whose deadline has passed, with how long each went unrenewed.
  std::vector<std::pair<uint64_t, std::chrono::milliseconds>> overdue(Clock::SteadyTime now) const;
  // The earliest deadline; nullopt with no lease.
  std::optional<Clock::SteadyTime> next_deadline() const;
  // Every lease's deadline `by` later: the coordinator did not run for that long, so nothing it
  // could have heard counts against them.
  void postpone_all(std::chrono::milliseconds by);
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Group commit: the lease's outcome is (or is no more) told in the open batch.
  void set_outcome_pending(Lease& lease, bool pending);

  // `run`'s counts (zero for a study with no lease).
  LeaseCounts counts(const StudyRun* run) const;
  // The leases held on the connection `route` whose outcome is not being committed (slots in
  // use), and the ids of all leases `executor_id` holds (in id order). Each costs the leases of
  // that connection or executor, not of the table.
  int held_on(const std::string& route) const;
  std::vector<uint64_t> held_by(const std::string& executor_id) const;
  // How many leases `executor_id` holds, in constant time.
  int held_count(const std::string& executor_id) const;
  // The lease goes on over the connection `route` (its executor reconnected).
  void move_to(Lease& lease, const std::string& route);
  // The GPUs of `gpus` (an executor's, in its order) that no lease on `route` holds; a lease
  // whose outcome is being committed frees its GPUs already.
  std::vector<int> free_gpus(const std::string& route, const std::vector<GpuInfo>& gpus) const;
  // The GPUs of `gpus` that leases on `route` hold only shares of (Lease::gpu_share), each with
  // the sum of its shares (at most kWholeGpu) and of the GPU memory their studies state; in
  // `gpus`' order. A GPU a lease holds whole is in neither list.
  // As for free_gpus, a lease whose outcome is being committed holds nothing.
  std::vector<SharedGpu> shared_gpus(const std::string& route,
                                     const std::vector<GpuInfo>& gpus) const;

  // "lease 7 (study s, trial 3, attempt 1, node 1 of 2, executor e1)": the study is named when
  // name_studies(true) (the coordinator runs several), the node for a multi-node trial.
  std::string describe(const Lease& lease) const;
  void name_studies(bool on) { name_studies_ = on; }

  // Ended leases: `committed` (its outcome is stored) or not, and why.
  void remember_end(uint64_t id, bool committed, std::string detail);
  const EndedLease* ended(uint64_t id) const;

 private:
  void count(const Lease& lease, int leased, int finishing);
  // Removes the lease from by_executor_ and by_route_.
  void unindex(const Lease& lease);
  // The leases on the connection `route`, in id order.
  std::vector<const Lease*> on_route(const std::string& route) const;

  // Constant after construction.
  const std::chrono::milliseconds timeout_;
  const size_t max_ended_;

  Map leases_;
  uint64_t next_id_;
  bool name_studies_ = false;
  std::map<const StudyRun*, LeaseCounts> counts_;
  // The ids of the leases in the table, by executor id and by connection (no empty sets).
  std::map<std::string, std::set<uint64_t>, std::less<>> by_executor_;
  std::map<std::string, std::set<uint64_t>, std::less<>> by_route_;
  std::map<uint64_t, EndedLease> ended_;
  std::deque<uint64_t> ended_order_;
};

}  // namespace tuner

#endif  // TUNER_COORDINATOR_LEASE_TABLE_H_
