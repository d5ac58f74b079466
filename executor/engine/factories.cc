#include "executor/engine/factories.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "executor/node_store.h"
#include "training/backends/cpu/cpu_backend.h"
#include "training/backends/cuda/cuda_backend.h"
#include "training/distributed/gloo_communicator.h"
#include "training/distributed/nccl_communicator.h"
#include "training/optim/adam.h"
#include "training/optim/sgd.h"
#include "trials/error.h"

namespace tuner::engine {

std::unique_ptr<training::Backend> make_backend(const EngineJobSpec& spec, int gpu,
                                                const std::string& where) {
  if (spec.backend == "cuda") {
    try {
      training::CudaBackendOptions options;
      if (spec.precision == "bf16") options.matmul = training::Precision::kBfloat16;
      if (spec.convolution == "cudnn") options.convolution = training::Convolution::kCudnn;
      return training::make_cuda_backend(gpu, options);
    } catch (const std::exception& e) {
      throw Error(ErrorCode::kUnavailable,
                  where + ".backend: \"cuda\" (device " + std::to_string(gpu) + "): " + e.what());
    }
  }
  const training::Precision matmul =
      spec.precision == "bf16" ? training::Precision::kBfloat16 : training::Precision::kFloat32;
  try {
    return training::make_cpu_backend(spec.threads, matmul);
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kUnavailable, where + ".precision: \"bf16\" on the CPU backend: " +
                                             training::cpu_bf16_unavailable() +
                                             " (use \"fp32\", or \"backend\": \"cuda\")");
  }
}

std::unique_ptr<training::Communicator> make_communicator(const EngineJobSpec& spec,
                                                          const EngineTrial& trial,
                                                          training::Backend& backend,
                                                          const std::string& rank_where) {
  if (trial.world == 1) return nullptr;
  const auto timeout = std::chrono::milliseconds(
      static_cast<int64_t>(std::llround(spec.collective_timeout_s * 1000.0)));
  try {
    if (spec.backend == "cuda") {
      auto nccl = std::make_unique<training::NcclCommunicator>(trial.rank, trial.world,
                                                               trial.nccl_id, trial.gpu, timeout);
      nccl->set_producer_stream(training::cuda_stream_of(backend));
      return nccl;
    }
    if (!trial.node_store_dir.empty()) {
      // Ranks on several nodes: addresses travel through the coordinator's store.
      training::GlooOptions options{.timeout = timeout};
      if (!trial.rank_host.empty()) options.hostname = trial.rank_host;
      return std::make_unique<training::GlooCommunicator>(
          trial.rank, trial.world, std::make_shared<NodeStore>(trial.node_store_dir), options);
    }
    return std::make_unique<training::GlooCommunicator>(trial.rank, trial.world,
                                                        std::filesystem::path(trial.rendezvous_dir),
                                                        training::GlooOptions{.timeout = timeout});
  } catch (const training::CommunicatorError& e) {
    throw Error(ErrorCode::kUnavailable, rank_where + ": cannot join the other ranks: " + e.what());
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorCode::kInvalidArgument, rank_where + ": " + e.what());
  }
}

std::unique_ptr<training::Optimizer> make_optimizer(const EngineTrialConfig& c,
                                                    training::Backend& backend, int64_t size,
                                                    std::vector<training::ParamGroup> groups) {
  if (c.optimizer == "sgd") {
    const training::SgdOptions sgd{.momentum = static_cast<float>(c.momentum),
                                   .weight_decay = static_cast<float>(c.weight_decay)};
    if (!groups.empty()) {
      return std::make_unique<training::ParamGroupOptimizer>(backend, size, sgd, std::move(groups));
    }
    return std::make_unique<training::Sgd>(backend, size, sgd);
  }
  training::AdamOptions adam;
  adam.weight_decay = static_cast<float>(c.weight_decay);
  adam.decoupled = c.optimizer == "adamw";
  if (!groups.empty()) {
    return std::make_unique<training::ParamGroupOptimizer>(backend, size, adam, std::move(groups));
  }
  return std::make_unique<training::Adam>(backend, size, adam);
}

std::unique_ptr<training::LrSchedule> make_schedule(const EngineTrialConfig& c) {
  const int64_t steps_per_epoch = (c.train + c.batch_size - 1) / c.batch_size;
  if (c.schedule == "cosine") {
    const int64_t total = c.epochs * steps_per_epoch;
    // warmup_epochs < epochs, but rounding to steps could reach the end.
    const int64_t warmup =
        std::min(total - 1, static_cast<int64_t>(std::llround(c.warmup_epochs * steps_per_epoch)));
    return std::make_unique<training::CosineLr>(c.lr, warmup, total, c.min_lr);
  }
  if (c.schedule == "step") {
    return std::make_unique<training::StepLr>(c.lr, c.step_epochs * steps_per_epoch, c.gamma);
  }
  return std::make_unique<training::ConstantLr>(c.lr);
}

}  // namespace tuner::engine
