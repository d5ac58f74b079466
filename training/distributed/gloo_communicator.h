// GlooCommunicator: the Communicator of CPU training processes, over Gloo's TCP transport.
//
// Each rank makes one with its rank, the world size and a shared rendezvous: either a directory
// that every rank can see (Gloo's FileStore; fresh for each run) or a RendezvousStore of the
// caller's (e.g. a key/value service behind the coordinator, for ranks on several hosts). Ranks
// exchange their TCP addresses there, then connect to each other directly.
//
// Every collective (and the rendezvous) is bounded by the timeout: a peer that dies or stalls
// makes the call throw CommunicatorError("gloo ..."), and after one failure the communicator is
// broken: every later call throws at once.
//
// Collectives run on one worker thread per communicator, in issue order: all_reduce_sum_async
// returns at once, so the caller keeps computing (gradient buckets overlap the backward pass);
// the synchronous calls queue behind the pending async ones and wait for their own turn.
//
//   GlooCommunicator comm(rank, world, std::filesystem::path("/shared/run-17/rendezvous"));
//   comm.all_reduce_sum(grads);
#ifndef TUNER_TRAINING_DISTRIBUTED_GLOO_COMMUNICATOR_H_
#define TUNER_TRAINING_DISTRIBUTED_GLOO_COMMUNICATOR_H_

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "training/distributed/communicator.h"

namespace tuner::training {

// A key/value store the ranks of one run share for the rendezvous. Keys are written once.
// Thread safety: called from the constructing thread only.
class RendezvousStore {
 public:
  virtual ~RendezvousStore() = default;
  virtual void set(const std::string& key, const std::vector<char>& value) = 0;
  // The value of `key`, waiting up to `timeout` for some rank to set it; nullopt when it did
  // not appear in time.
  virtual std::optional<std::vector<char>> get(const std::string& key,
                                               std::chrono::milliseconds timeout) = 0;
};

struct GlooOptions {
  // The address this rank listens on and the others connect to: a host name or IP address that
  // every rank can reach. Default: loopback, for ranks on one host.
  std::string hostname = "127.0.0.1";
  // Instead of `hostname`, a network interface whose address to use (e.g. "eth0"); empty: use
  // `hostname`.
  std::string interface;
  // Bound on the rendezvous and on every collective. Default 30 s.
  std::chrono::milliseconds timeout = std::chrono::seconds(30);
};

// Thread safety: as Communicator (one issuing thread).
class GlooCommunicator final : public Communicator {
 public:
  // Rendezvous through files in `file_store_dir` (created when missing), which must be fresh for
  // this run: ranks find each other's addresses there under keys "0", "1", ...
  // REQUIRES: 0 <= rank < size.
  // Throws CommunicatorError when the rendezvous or the connections fail within the timeout.
  GlooCommunicator(int rank, int size, const std::filesystem::path& file_store_dir,
                   GlooOptions options = {});
  // Rendezvous through the caller's store (same keys; namespace them in the store when it is
  // shared by several runs).
  GlooCommunicator(int rank, int size, std::shared_ptr<RendezvousStore> store,
                   GlooOptions options = {});
  // Waits for the queued collectives (each bounded by the timeout), then disconnects.
  ~GlooCommunicator() override;

  GlooCommunicator(const GlooCommunicator&) = delete;
  GlooCommunicator& operator=(const GlooCommunicator&) = delete;

  std::string_view name() const override { return "gloo"; }
  int rank() const override;
  int size() const override;

  void all_reduce_sum(std::span<float> x) override;
  std::unique_ptr<PendingCollective> all_reduce_sum_async(std::span<float> x) override;
  void broadcast(std::span<float> x, int root) override;
  void barrier() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DISTRIBUTED_GLOO_COMMUNICATOR_H_
