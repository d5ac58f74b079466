// What an engine trial reports after each epoch (internal to executor/): the trainer's figures
// and the system's (throughput, peak memory), as named in engine_job.h (EngineReport).
//
// Thread safety: safe from any thread; peak_rss_mb() and wall_seconds() read process-wide state.
#ifndef TUNER_EXECUTOR_ENGINE_EPOCH_METRICS_H_
#define TUNER_EXECUTOR_ENGINE_EPOCH_METRICS_H_

#include <cstdint>

#include "training/trainer.h"
#include "wire/protocol.h"

namespace tuner::engine {

// train_loss, val_loss, the task's validation metrics (classification: val_accuracy; binary:
// val_accuracy and val_auc; regression: val_rmse and val_mae), lr, epoch_seconds,
// samples_per_second and peak_rss_mb of epoch `m`. `train` is the training split's size (all
// ranks'), for the throughput; NaN when the epoch took no measurable time.
Metrics epoch_metrics(const training::EpochMetrics& m, int64_t train, training::Task task);

// The process's peak resident set so far, in MiB (getrusage's ru_maxrss); NaN when unknown.
double peak_rss_mb();

// Now, in seconds since the Unix epoch (the system clock): when an epoch ended.
double wall_seconds();

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_EPOCH_METRICS_H_
