// NCCL all-reduce bandwidth through the engine's NcclCommunicator, one thread (rank) per visible
// GPU, in the units nccl-tests' all_reduce_perf prints: algorithm bandwidth = bytes / time, bus
// bandwidth = algbw * 2 (n - 1) / n (what each link carries; 0 with one GPU, where NCCL only
// copies). One JSON line per message size.
//
//   nccl_allreduce [--min-mb 8] [--max-mb 1024] [--iters 20] [--gpus N]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "training/distributed/nccl_communicator.h"

namespace {

using tuner::training::NcclCommunicator;
using tuner::training::PendingCollective;

struct Args {
  double min_mb = 8, max_mb = 1024;
  int iters = 20;
  int gpus = 0;  // 0: every visible GPU
};

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
  }
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One rank: its own device, buffer and communicator; rank 0 prints.
void run_rank(int rank, int size, const std::string& id, const Args& args) {
  check(cudaSetDevice(rank), "cudaSetDevice");
  const size_t max_floats = static_cast<size_t>(args.max_mb * 1024 * 1024 / sizeof(float));
  float* buffer = nullptr;
  check(cudaMalloc(&buffer, max_floats * sizeof(float)), "cudaMalloc");
  check(cudaMemset(buffer, 0, max_floats * sizeof(float)), "cudaMemset");
  NcclCommunicator comm(rank, size, id, rank, std::chrono::seconds(60));
  for (double mb = args.min_mb; mb <= args.max_mb; mb *= 2) {
    const size_t n = static_cast<size_t>(mb * 1024 * 1024 / sizeof(float));
    std::span<float> x(buffer, n);
    for (int i = 0; i < 3; ++i) comm.all_reduce_sum(x);
    comm.barrier();
    const double t = now();
    std::vector<std::unique_ptr<PendingCollective>> pending;
    for (int i = 0; i < args.iters; ++i) pending.push_back(comm.all_reduce_sum_async(x));
    for (auto& p : pending) p->wait();
    const double seconds = (now() - t) / args.iters;
    if (rank == 0) {
      const double bytes = static_cast<double>(n * sizeof(float));
      const double algbw = bytes / seconds / 1e9;
      std::printf(
          "{\"bench\": \"nccl_allreduce\", \"ranks\": %d, \"bytes\": %.0f, "
          "\"time_us\": %.1f, \"algbw_gbps\": %.1f, \"busbw_gbps\": %.1f}\n",
          size, bytes, seconds * 1e6, algbw, algbw * 2.0 * (size - 1) / size);
      std::fflush(stdout);
    }
  }
  cudaFree(buffer);
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr,
                   "usage: nccl_allreduce [--min-mb M] [--max-mb M] [--iters N] [--gpus N]\n");
      return 2;
    }
    const std::string v = argv[++i];
    if (a == "--min-mb") {
      args.min_mb = std::stod(v);
    } else if (a == "--max-mb") {
      args.max_mb = std::stod(v);
    } else if (a == "--iters") {
      args.iters = std::stoi(v);
    } else if (a == "--gpus") {
      args.gpus = std::stoi(v);
    } else {
      std::fprintf(stderr, "nccl_allreduce: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  try {
    int visible = 0;
    check(cudaGetDeviceCount(&visible), "cudaGetDeviceCount");
    const int size = args.gpus > 0 ? std::min(args.gpus, visible) : visible;
    if (size < 1) throw std::runtime_error("no GPU visible");
    if (size == 1) {
      // NCCL returns at once from an in-place all-reduce over one rank: there is no bandwidth
      // to measure.
      std::printf(
          "{\"bench\": \"nccl_allreduce\", \"ranks\": 1, \"note\": \"one GPU: "
          "all-reduce bandwidth needs two or more\"}\n");
      return 0;
    }
    const std::string id = tuner::training::nccl_new_unique_id();
    std::vector<std::thread> ranks;
    std::vector<std::string> errors(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) {
      ranks.emplace_back([&, r] {
        try {
          run_rank(r, size, id, args);
        } catch (const std::exception& e) {
          errors[static_cast<size_t>(r)] = e.what();
        }
      });
    }
    for (auto& t : ranks) t.join();
    for (int r = 0; r < size; ++r) {
      if (!errors[static_cast<size_t>(r)].empty()) {
        throw std::runtime_error("rank " + std::to_string(r) + ": " +
                                 errors[static_cast<size_t>(r)]);
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nccl_allreduce: %s\n", e.what());
    return 1;
  }
}
