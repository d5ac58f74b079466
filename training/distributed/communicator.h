// Collectives across the ranks of one data-parallel training run: one process (or thread) per
// rank, each holding a Communicator. Implementations: Gloo over TCP for CPU processes
// (gloo_communicator.h) and NCCL for GPUs (nccl_communicator.h).
//
// Every rank calls the same collectives in the same order with buffers of the same size.
// Buffers live in the memory of the backend the run trains on (host memory for Gloo, device
// memory for NCCL). A peer that dies or stalls makes a collective throw CommunicatorError after
// the timeout the communicator was made with: no collective waits forever.
#ifndef TUNER_TRAINING_DISTRIBUTED_COMMUNICATOR_H_
#define TUNER_TRAINING_DISTRIBUTED_COMMUNICATOR_H_

#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tuner::training {

// A collective failed: a peer died, the timeout passed, or the rendezvous failed. The message
// names the communicator, this rank, the world size and the operation.
class CommunicatorError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A collective started by an *_async call; wait() returns when it finished on this rank (and
// throws CommunicatorError when it failed). Destroying an unwaited one waits for it.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  virtual void wait() = 0;
};

// Thread safety: one thread issues the collectives of a Communicator; async ones complete in
// issue order.
class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual std::string_view name() const = 0;  // "gloo", "nccl"
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // x = the element-wise sum of x over all ranks; every rank ends with the same bits.
  virtual void all_reduce_sum(std::span<float> x) = 0;
  // Starts all_reduce_sum(x); x must stay valid and untouched until wait() returns.
  virtual std::unique_ptr<PendingCollective> all_reduce_sum_async(std::span<float> x) = 0;
  // x = root's x on every rank.
  virtual void broadcast(std::span<float> x, int root) = 0;
  // Returns once every rank has called it.
  virtual void barrier() = 0;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DISTRIBUTED_COMMUNICATOR_H_
