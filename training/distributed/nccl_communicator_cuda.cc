// NcclCommunicator over a non-blocking NCCL communicator: NCCL calls return at once (or with
// ncclInProgress), and every wait here is a poll of ncclCommGetAsyncError and a CUDA event, cut
// off at the timeout by ncclCommAbort, which also stops NCCL's kernels that spin on a dead peer.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <stdexcept>
#include <thread>
#include <utility>

#include "training/distributed/nccl_communicator.h"

namespace tuner::training {
namespace {

using Clock = std::chrono::steady_clock;

std::string cuda_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

std::string nccl_text(ncclResult_t r, ncclComm_t comm) {
  std::string text = ncclGetErrorString(r);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') text += std::string(": ") + last;
  return text;
}

// The wait between two polls: short, since a gradient bucket's wait is on the critical path.
void pause() { std::this_thread::sleep_for(std::chrono::microseconds(20)); }

std::string to_hex(const ncclUniqueId& id) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * sizeof(id.internal));
  for (char c : id.internal) {
    const auto byte = static_cast<unsigned char>(c);
    hex += kDigits[byte >> 4];
    hex += kDigits[byte & 15];
  }
  return hex;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

ncclUniqueId from_hex(const std::string& hex) {
  ncclUniqueId id;
  if (hex.size() != 2 * sizeof(id.internal)) {
    throw std::invalid_argument(
        "NcclCommunicator: the unique id has " + std::to_string(hex.size()) + " hex digits, not " +
        std::to_string(2 * sizeof(id.internal)) + " (make it with nccl_new_unique_id)");
  }
  for (size_t i = 0; i < sizeof(id.internal); ++i) {
    const int hi = hex_value(hex[2 * i]);
    const int lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      throw std::invalid_argument("NcclCommunicator: the unique id has a non-hex digit at " +
                                  std::to_string(hi < 0 ? 2 * i : 2 * i + 1));
    }
    id.internal[i] = static_cast<char>((hi << 4) | lo);
  }
  return id;
}

}  // namespace

struct NcclCommunicator::Impl {
  // Constant after construction.
  int rank = 0;
  int size = 0;
  int device = 0;
  std::chrono::milliseconds timeout{0};
  std::string where;  // "nccl rank 0 of 2 (device 0)"

  // Owned handles; null once freed. Used by the issuing thread only.
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;        // where the collectives run
  cudaStream_t producer = nullptr;      // where the buffers are written (null: legacy default)
  cudaEvent_t producer_done = nullptr;  // orders `stream` after `producer`
  float* scratch = nullptr;             // one float on the device, for barrier()
  std::string failure;                  // the first failure: the communicator is broken

  ~Impl() {
    cudaSetDevice(device);
    if (comm != nullptr) {
      // Finalize flushes the issued work; past the timeout, abort instead of hanging.
      bool finalized = false;
      const ncclResult_t r = ncclCommFinalize(comm);
      if (r == ncclSuccess || r == ncclInProgress) {
        const auto deadline = Clock::now() + timeout;
        ncclResult_t state = ncclInProgress;
        while (ncclCommGetAsyncError(comm, &state) == ncclSuccess && state == ncclInProgress &&
               Clock::now() < deadline) {
          pause();
        }
        finalized = state == ncclSuccess;
      }
      if (finalized) {
        ncclCommDestroy(comm);
      } else {
        ncclCommAbort(comm);
      }
    }
    if (stream != nullptr) cudaStreamDestroy(stream);
    if (producer_done != nullptr) cudaEventDestroy(producer_done);
    if (scratch != nullptr) cudaFree(scratch);
  }

  [[noreturn]] void fail(const std::string& op, const std::string& what) {
    if (failure.empty()) failure = op + ": " + what;
    if (comm != nullptr) {
      ncclCommAbort(comm);  // frees the communicator and stops its kernels
      comm = nullptr;
    }
    throw CommunicatorError(where + ": " + op + " failed: " + what);
  }

  void check_usable(const std::string& op) const {
    if (!failure.empty()) {
      throw CommunicatorError(where + ": " + op + " failed: an earlier operation failed (" +
                              failure + ")");
    }
  }

  void check_cuda(cudaError_t e, const std::string& op, const char* call) {
    if (e != cudaSuccess) fail(op, std::string(call) + ": " + cuda_text(e));
  }

  // After an NCCL call that returned `r`: waits until the communicator leaves ncclInProgress.
  void settle(ncclResult_t r, const std::string& op, const char* call, Clock::time_point deadline) {
    if (r != ncclSuccess && r != ncclInProgress)
      fail(op, std::string(call) + ": " + nccl_text(r, comm));
    for (;;) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t q = ncclCommGetAsyncError(comm, &state);
      if (q != ncclSuccess) fail(op, "ncclCommGetAsyncError: " + nccl_text(q, comm));
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) fail(op, std::string(call) + ": " + nccl_text(state, comm));
      if (Clock::now() >= deadline) {
        fail(op, std::string(call) + " did not finish within " + std::to_string(timeout.count()) +
                     " ms (a peer died or stalled?)");
      }
      pause();
    }
  }

  // Waits until `done` has happened on the GPU, watching the communicator for errors.
  void wait_event(cudaEvent_t done, const std::string& op, Clock::time_point deadline) {
    check_usable(op);
    check_cuda(cudaSetDevice(device), op, "cudaSetDevice");
    for (;;) {
      const cudaError_t e = cudaEventQuery(done);
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) fail(op, "cudaEventQuery: " + cuda_text(e));
      ncclResult_t state = ncclSuccess;
      const ncclResult_t q = ncclCommGetAsyncError(comm, &state);
      if (q != ncclSuccess) fail(op, "ncclCommGetAsyncError: " + nccl_text(q, comm));
      if (state != ncclSuccess && state != ncclInProgress) fail(op, nccl_text(state, comm));
      if (Clock::now() >= deadline) {
        fail(op, "not done within " + std::to_string(timeout.count()) +
                     " ms (a peer died or stalled?)");
      }
      pause();
    }
  }

  // Queues `launch` (an NCCL collective on `stream`) after the producer's work, then an event
  // that marks its end. REQUIRES: `done` is an event of this device.
  template <typename Launch>
  void enqueue(const std::string& op, const char* call, cudaEvent_t done, Launch launch) {
    check_usable(op);
    const auto deadline = Clock::now() + timeout;
    check_cuda(cudaSetDevice(device), op, "cudaSetDevice");
    check_cuda(cudaEventRecord(producer_done, producer), op, "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(stream, producer_done, 0), op, "cudaStreamWaitEvent");
    settle(launch(), op, call, deadline);
    check_cuda(cudaEventRecord(done, stream), op, "cudaEventRecord");
  }

  static std::string all_reduce_op(size_t n) {
    return "all_reduce_sum of " + std::to_string(n) + " floats";
  }

  void enqueue_all_reduce(std::span<float> x, cudaEvent_t done) {
    enqueue(all_reduce_op(x.size()), "ncclAllReduce", done, [&] {
      return ncclAllReduce(x.data(), x.data(), x.size(), ncclFloat, ncclSum, comm, stream);
    });
  }

  // Runs a collective to its end: enqueue, then wait on a fresh event.
  template <typename Launch>
  void run(const std::string& op, const char* call, Launch launch) {
    check_usable(op);
    check_cuda(cudaSetDevice(device), op, "cudaSetDevice");
    cudaEvent_t done = nullptr;
    check_cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), op, "cudaEventCreate");
    struct EventGuard {
      cudaEvent_t e;
      ~EventGuard() { cudaEventDestroy(e); }
    } guard{done};
    const auto deadline = Clock::now() + timeout;
    enqueue(op, call, done, launch);
    wait_event(done, op, deadline);
  }

  // An all_reduce_sum_async in flight; owns its event, shares the communicator's state.
  class Pending final : public PendingCollective {
   public:
    Pending(std::shared_ptr<Impl> impl, cudaEvent_t done, std::string op)
        : impl_(std::move(impl)), done_(done), op_(std::move(op)) {}

    ~Pending() override {
      try {
        wait();
      } catch (...) {
        // The failure stays recorded in the communicator: its next call throws it.
      }
      cudaSetDevice(impl_->device);
      cudaEventDestroy(done_);
    }

    void wait() override {
      if (waited_) return;
      waited_ = true;
      // The timeout counts from here: the caller may compute for long before it waits.
      impl_->wait_event(done_, op_, Clock::now() + impl_->timeout);
    }

   private:
    std::shared_ptr<Impl> impl_;
    cudaEvent_t done_;
    std::string op_;
    bool waited_ = false;
  };
};

NcclDevices nccl_visible_devices() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return {0, "no GPU: cudaGetDeviceCount: " + cuda_text(e)};
  if (count == 0) return {0, "no GPU: cudaGetDeviceCount reports 0 devices"};
  return {count, ""};
}

std::string nccl_new_unique_id() {
  ncclUniqueId id;
  const ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess) {
    throw CommunicatorError("nccl: ncclGetUniqueId failed: " + nccl_text(r, nullptr));
  }
  return to_hex(id);
}

NcclCommunicator::NcclCommunicator(int rank, int size, const std::string& unique_id_hex, int device,
                                   std::chrono::milliseconds timeout)
    : impl_(std::make_shared<Impl>()) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw std::invalid_argument("NcclCommunicator: rank " + std::to_string(rank) +
                                " is not in [0, " + std::to_string(size) + ")");
  }
  const ncclUniqueId id = from_hex(unique_id_hex);
  Impl& m = *impl_;
  m.rank = rank;
  m.size = size;
  m.device = device;
  m.timeout = timeout;
  m.where = "nccl rank " + std::to_string(rank) + " of " + std::to_string(size) + " (device " +
            std::to_string(device) + ")";
  const std::string op = "init";
  const auto deadline = Clock::now() + timeout;
  m.check_cuda(cudaSetDevice(device), op, "cudaSetDevice");
  m.check_cuda(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking), op, "cudaStreamCreate");
  m.check_cuda(cudaEventCreateWithFlags(&m.producer_done, cudaEventDisableTiming), op,
               "cudaEventCreate");
  m.check_cuda(cudaMalloc(&m.scratch, sizeof(float)), op, "cudaMalloc");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every NCCL call returns; settle() polls with the timeout
  const ncclResult_t r = ncclCommInitRankConfig(&m.comm, size, id, rank, &config);
  if (m.comm == nullptr) m.fail(op, "ncclCommInitRankConfig: " + nccl_text(r, nullptr));
  m.settle(r, op, "ncclCommInitRankConfig", deadline);
}

NcclCommunicator::~NcclCommunicator() = default;  // Impl frees once the last pending is gone

int NcclCommunicator::rank() const { return impl_->rank; }
int NcclCommunicator::size() const { return impl_->size; }
int NcclCommunicator::device() const { return impl_->device; }

void NcclCommunicator::all_reduce_sum(std::span<float> x) {
  Impl& m = *impl_;
  m.run(Impl::all_reduce_op(x.size()), "ncclAllReduce", [&] {
    return ncclAllReduce(x.data(), x.data(), x.size(), ncclFloat, ncclSum, m.comm, m.stream);
  });
}

std::unique_ptr<PendingCollective> NcclCommunicator::all_reduce_sum_async(std::span<float> x) {
  Impl& m = *impl_;
  const std::string op = Impl::all_reduce_op(x.size());
  m.check_usable(op);
  m.check_cuda(cudaSetDevice(m.device), op, "cudaSetDevice");
  cudaEvent_t done = nullptr;
  m.check_cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), op, "cudaEventCreate");
  // The pending owns the event from here, also when enqueueing fails.
  auto pending = std::make_unique<Impl::Pending>(impl_, done, op);
  m.enqueue_all_reduce(x, done);
  return pending;
}

void NcclCommunicator::broadcast(std::span<float> x, int root) {
  Impl& m = *impl_;
  if (root < 0 || root >= m.size) {
    throw std::invalid_argument(m.where + ": broadcast root " + std::to_string(root) +
                                " is not a rank");
  }
  m.run("broadcast of " + std::to_string(x.size()) + " floats from rank " + std::to_string(root),
        "ncclBroadcast", [&] {
          return ncclBroadcast(x.data(), x.data(), x.size(), ncclFloat, root, m.comm, m.stream);
        });
}

void NcclCommunicator::barrier() {
  // NCCL has no barrier: an all-reduce of one float ends on no rank before all have started it.
  Impl& m = *impl_;
  m.run("barrier", "ncclAllReduce", [&] {
    return ncclAllReduce(m.scratch, m.scratch, 1, ncclFloat, ncclSum, m.comm, m.stream);
  });
}

void NcclCommunicator::set_producer_stream(void* stream) {
  impl_->producer = static_cast<cudaStream_t>(stream);
}

}  // namespace tuner::training
