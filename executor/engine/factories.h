// The training objects of an engine trial, made from its job and config (internal to
// executor/): the backend, the communicator of a data-parallel rank, the optimizer and the
// learning-rate schedule.
//
// Thread safety: the factories are safe from any thread; what they make is thread-compatible
// (training/).
#ifndef TUNER_EXECUTOR_ENGINE_FACTORIES_H_
#define TUNER_EXECUTOR_ENGINE_FACTORIES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "executor/engine_job.h"
#include "training/backend.h"
#include "training/distributed/communicator.h"
#include "training/optim/lr_schedule.h"
#include "training/optim/optimizer.h"
#include "training/optim/param_groups.h"

namespace tuner::engine {

// The job's backend: "cuda" on device `gpu`, or the CPU with the job's threads; both with the
// job's precision (and convolution on CUDA). Throws Error(kUnavailable) naming `where`.backend or
// `where`.precision when it cannot be made (no CUDA device, bf16 on a CPU without it).
std::unique_ptr<training::Backend> make_backend(const EngineJobSpec& spec, int gpu,
                                                const std::string& where);

// The communicator of rank trial.rank of trial.world, or null for one rank: NCCL on cuda, else
// Gloo through trial.node_store_dir (ranks on several nodes) or trial.rendezvous_dir. Made once
// every rank has come, within the job's collective_timeout_s. Throws Error naming `rank_where`:
// kUnavailable when the ranks cannot join, kInvalidArgument for an id or folder that does not fit.
// REQUIRES: check of the rank fields done (run_engine_trial's); `backend` outlives the result.
std::unique_ptr<training::Communicator> make_communicator(const EngineJobSpec& spec,
                                                          const EngineTrial& trial,
                                                          training::Backend& backend,
                                                          const std::string& rank_where);

// The config's optimizer ("adam", "adamw" or "sgd") over `size` parameter floats on `backend`;
// with `groups` (per-layer learning-rate factors, training/init_from.h) the same rule as a
// training::ParamGroupOptimizer.
std::unique_ptr<training::Optimizer> make_optimizer(const EngineTrialConfig& c,
                                                    training::Backend& backend, int64_t size,
                                                    std::vector<training::ParamGroup> groups = {});

// The config's schedule ("constant", "cosine" or "step"), in optimizer steps: an epoch is
// ceil(train / batch_size) steps.
std::unique_ptr<training::LrSchedule> make_schedule(const EngineTrialConfig& c);

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_FACTORIES_H_
