// The NCCL communicator of a build without CUDA: it cannot be made.
#include "training/distributed/nccl_communicator.h"

namespace tuner::training {
namespace {

constexpr const char* kNoNccl =
    "nccl: built without CUDA/NCCL (configure with -DTUNER_CUDA=ON on a machine with the CUDA "
    "toolkit and NCCL)";

}  // namespace

struct NcclCommunicator::Impl {};

NcclDevices nccl_visible_devices() { return {0, kNoNccl}; }

std::string nccl_new_unique_id() { throw CommunicatorError(kNoNccl); }

NcclCommunicator::NcclCommunicator(int, int, const std::string&, int, std::chrono::milliseconds) {
  throw CommunicatorError(kNoNccl);
}
NcclCommunicator::~NcclCommunicator() = default;

// Unreachable: no NcclCommunicator can exist in this build.
int NcclCommunicator::rank() const { return 0; }
int NcclCommunicator::size() const { return 0; }
int NcclCommunicator::device() const { return 0; }
void NcclCommunicator::all_reduce_sum(std::span<float>) { throw CommunicatorError(kNoNccl); }
std::unique_ptr<PendingCollective> NcclCommunicator::all_reduce_sum_async(std::span<float>) {
  throw CommunicatorError(kNoNccl);
}
void NcclCommunicator::broadcast(std::span<float>, int) { throw CommunicatorError(kNoNccl); }
void NcclCommunicator::barrier() { throw CommunicatorError(kNoNccl); }
void NcclCommunicator::set_producer_stream(void*) { throw CommunicatorError(kNoNccl); }

}  // namespace tuner::training
