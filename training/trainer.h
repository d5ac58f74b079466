// The training loop: epochs of mini-batches with an optimizer and an LR schedule, evaluation on
// the validation split after each epoch, a per-epoch callback that may stop the run (what a
// tuning scheduler plugs into), early stopping with patience, and checkpoints.
#ifndef TUNER_TRAINING_TRAINER_H_
#define TUNER_TRAINING_TRAINER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "training/checkpoint.h"
#include "training/data/batch_loader.h"
#include "training/data/dataset.h"
#include "training/losses/cross_entropy.h"
#include "training/losses/mean_squared_error.h"
#include "training/optim/lr_schedule.h"
#include "training/optim/optimizer.h"
#include "training/sequential.h"
#include "training/task.h"

namespace tuner::training {

class Communicator;
class GradientBuckets;

enum class StopMetric { kValLoss, kValAccuracy };

struct EarlyStoppingOptions {
  int64_t patience = 0;  // epochs without improvement before stopping; 0 disables
  StopMetric metric = StopMetric::kValLoss;
  double min_delta = 0.0;  // an improvement must beat the best by more than this
};

struct TrainerOptions {
  // The loss and the metrics: softmax cross-entropy with accuracy (kClassification; kBinary adds
  // ROC AUC, REQUIRES 2 classes and a model output [2]), or mean squared error with RMSE and MAE
  // (kRegression, REQUIRES a regression dataset of T targets and a model output [T]). Default
  // kClassification.
  Task task = Task::kClassification;
  int64_t epochs = 10;           // total epochs of the run (a restored run continues up to it)
  int64_t batch_size = 128;      // REQUIRES: 1 <= batch_size <= model.max_batch()
  uint64_t seed = 0;             // seeds the training order (the model's seed is its own)
  bool drop_last = false;        // skip a last batch smaller than batch_size
  float label_smoothing = 0.0f;  // classification only: REQUIRES 0 for kRegression
  // kRegression: the model learns the targets standardized by this ([T] each, stddev > 0; empty:
  // as they are). The losses are then those of the standardized targets, val_rmse and val_mae
  // in the targets' own units.
  TargetScaling target_scaling;
  double clip_grad_norm = 0.0;  // clip the gradients' global L2 norm to this; 0 disables
  // Applied to the training batches as they are gathered, never to validation or evaluation
  // (BatchLoaderOptions::transform); null: none.
  std::shared_ptr<const SampleTransform> augment;
  // Training batches gathered ahead on a background thread (BatchLoaderOptions::prefetch): the
  // same results, bit for bit.
  int prefetch = 0;
  EarlyStoppingOptions early_stopping;
  // Data parallelism as PyTorch's DDP does it, when set: this process is one rank of the
  // communicator. Every rank runs the same trainer on the same data and options; each global
  // batch of batch_size is split by rank, the gradients are all-reduced in buckets of
  // bucket_bytes while the backward pass runs, the parameters are broadcast from rank 0 when
  // the trainer is made, and every rank sees the metrics of the whole batch and validation
  // split. Borrowed: it must outlive the trainer.
  Communicator* communicator = nullptr;
  int64_t bucket_bytes = 25 << 20;
  // Checked between batches, so that a process told to stop (SIGTERM) ends within a batch:
  // once a stop is requested, train_epoch() abandons its epoch (EpochMetrics::interrupted, no
  // evaluation, epoch() unchanged) and run() ends with StopReason::kInterrupted. The abandoned
  // epoch's updates stay in the model, so the trainer is no longer at an epoch boundary: its
  // checkpoint() is not one to resume from (restore the last epoch's checkpoint instead).
  // Default: never stops. Not for data-parallel runs (each rank would stop at its own batch).
  std::stop_token stop;
};

// What one epoch reports. Validation values are NaN when there is no validation split, and
// those of another task (val_accuracy of a regression, val_rmse of a classification) are NaN.
// The losses are cross-entropy, or for kRegression the squared error (mean over every target).
struct EpochMetrics {
  int64_t epoch = 0;          // 1-based
  double train_loss = 0.0;    // mean over the epoch's training samples (train mode)
  double val_loss = 0.0;      // mean over the validation split (eval mode)
  double val_accuracy = 0.0;  // fraction in [0, 1]
  double val_auc = 0.0;       // kBinary: ROC AUC of the validation split, in [0, 1]
  // kRegression, in the targets' units (val_loss is of the standardized targets when
  // TrainerOptions::target_scaling is set): the root of the mean squared error, and the mean
  // absolute error, over every target.
  double val_rmse = 0.0;
  double val_mae = 0.0;
  double lr = 0.0;           // learning rate of the epoch's last step
  int64_t steps = 0;         // optimizer steps so far
  double seconds = 0.0;      // wall time of the epoch, evaluation included
  bool interrupted = false;  // abandoned by TrainerOptions::stop; the other fields are unset
};

enum class EpochDecision { kContinue, kStop };
// Called after each epoch; returning kStop ends the run (e.g. a pruned trial).
using EpochCallback = std::function<EpochDecision(const EpochMetrics&)>;

enum class StopReason {
  kCompleted,      // all epochs ran
  kEarlyStopping,  // the validation metric stopped improving
  kCallback,       // the callback said stop
  kDiverged,       // the training loss became NaN or infinite
  kInterrupted,    // TrainerOptions::stop was requested (the last epoch was abandoned)
};
std::string_view stop_reason_name(StopReason reason);

struct TrainResult {
  std::vector<EpochMetrics> history;  // the epochs this call ran
  StopReason reason = StopReason::kCompleted;
  int64_t best_epoch = 0;   // by the early-stopping metric (0 without a validation split)
  double best_value = 0.0;  // that metric's best value
};

// Of one evaluated dataset; as EpochMetrics, the metrics of another task are NaN.
struct EvalResult {
  double loss = 0.0;      // mean cross-entropy, or squared error for kRegression
  double accuracy = 0.0;  // fraction in [0, 1]
  double auc = 0.0;       // kBinary: ROC AUC of logit 1 - logit 0
  double rmse = 0.0;      // kRegression: as EpochMetrics::val_rmse
  double mae = 0.0;       // kRegression: as EpochMetrics::val_mae
};

// A run is deterministic given the model's seed, TrainerOptions::seed and the backend's thread
// count: the same inputs give bit-identical weights and metrics, and so does a run restored from
// a checkpoint of it. Nothing is allocated per step.
// Thread safety: one thread at a time. Everything passed to the constructor must outlive it.
class Trainer {
 public:
  // Throws std::invalid_argument when the batch size does not fit the model, the datasets'
  // samples or classes (targets) do not fit the model's input and output or the task, or early
  // stopping is asked for without a validation split. `validation` may be empty.
  Trainer(Sequential& model, Optimizer& optimizer, const LrSchedule& schedule, const Dataset& train,
          const Dataset& validation, TrainerOptions options);
  ~Trainer();

  // Runs epochs epoch()+1 .. options.epochs, calling on_epoch after each (when given).
  TrainResult run(const EpochCallback& on_epoch = {});
  // One epoch of training followed by evaluation on the validation split (or an abandoned one,
  // see TrainerOptions::stop).
  EpochMetrics train_epoch();
  // Mean loss and accuracy of the model in eval mode over `data`, in batches of the model's
  // max_batch (allocates a batch buffer; train_epoch's validation pass does not).
  EvalResult evaluate(const Dataset& data);

  int64_t epoch() const { return epoch_; }  // epochs completed

  // The run's state at the current epoch boundary, for save_checkpoint().
  Checkpoint checkpoint(const std::string& model_spec_json) const;
  // Continues from a checkpoint of the same model (same arena layout), optimizer and options.
  // Throws CheckpointError when the arrays do not match this model or optimizer.
  void restore(const Checkpoint& checkpoint);

 private:
  EvalResult evaluate_with(BatchLoader& loader);
  // Forward, loss and backward of this rank's rows of a global batch (all of them without a
  // communicator), leaving the gradients of the whole batch on every rank.
  struct ShardLoss {
    float loss = 0.0f;  // mean over the rows
    int64_t rows = 0;
  };
  ShardLoss forward_backward(const Batch& batch);
  // Sums values over the ranks (a no-op without a communicator).
  void sum_over_ranks(std::span<float> host_values);
  // Updates the early-stopping state for this epoch's metrics; true when patience ran out.
  bool early_stop(const EpochMetrics& m);

  // Constant after construction.
  Sequential& model_;
  Optimizer& optimizer_;
  const LrSchedule& schedule_;
  const Dataset& train_;
  const Dataset& validation_;
  const TrainerOptions options_;
  const SoftmaxCrossEntropy loss_;
  const MeanSquaredError mse_;
  // Run state (saved in checkpoints).
  BatchLoader train_loader_;
  std::unique_ptr<BatchLoader> val_loader_;   // null without a validation split
  std::unique_ptr<GradientBuckets> buckets_;  // with a communicator
  Tensor reduce_scratch_;                     // a few floats in backend memory, for metrics
  Tensor targets_;                            // kRegression: [max_batch, T], backend memory
  std::vector<float> scaled_targets_;         // kRegression: [max_batch, T], host staging
  // Evaluation's host buffers: a batch's outputs (backends without host access), and kBinary's
  // scores and labels of the evaluated dataset.
  std::vector<float> host_outputs_, scores_;
  std::vector<int32_t> score_labels_;
  int64_t epoch_ = 0;
  double best_value_ = 0.0;
  int64_t best_epoch_ = 0;
  int64_t bad_epochs_ = 0;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_TRAINER_H_
