#include "training/trainer.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "training/distributed/communicator.h"
#include "training/distributed/gradient_buckets.h"
#include "training/layers/dropout.h"
#include "training/optim/clip.h"
#include "training/roc_auc.h"

namespace tuner::training {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The values of `t` (backend memory) readable on the host: its own memory, or `scratch` holding
// a copy.
const float* on_host(Backend& backend, const Tensor& t, std::vector<float>& scratch) {
  if (backend.host_accessible()) return t.data();
  scratch.resize(static_cast<size_t>(t.numel()));
  backend.download(t.span(), scratch);
  return scratch.data();
}

// Correct predictions in logits[B,K] (host memory; argmax, first maximum on ties).
int64_t count_correct(const float* p, int64_t b, int64_t k, std::span<const int32_t> labels) {
  int64_t correct = 0;
  for (int64_t i = 0; i < b; ++i) {
    int64_t best = 0;
    for (int64_t j = 1; j < k; ++j) best = p[i * k + j] > p[i * k + best] ? j : best;
    correct += best == labels[i];
  }
  return correct;
}

void check_fits(const Sequential& model, const Dataset& data, Task task, const char* what) {
  if (data.empty()) return;
  if (!(data.sample_shape() == model.input_shape())) {
    throw std::invalid_argument(std::string("trainer: ") + what + " samples are " +
                                data.sample_shape().to_string() + " but the model takes " +
                                model.input_shape().to_string());
  }
  const std::string task_text = "the task is " + std::string(task_name(task)) + " but ";
  if (data.is_regression() != (task == Task::kRegression)) {
    throw std::invalid_argument(std::string("trainer: ") + task_text + what + " has " +
                                (data.is_regression() ? "float targets" : "class labels"));
  }
  if (task == Task::kRegression) {
    if (!(model.output_shape() == Shape{data.num_targets()})) {
      throw std::invalid_argument(
          std::string("trainer: ") + what + " has " + std::to_string(data.num_targets()) +
          " target(s) but the model outputs " + model.output_shape().to_string() +
          " (a regression needs [" + std::to_string(data.num_targets()) + "])");
    }
    return;
  }
  if (task == Task::kBinary && (data.num_classes() > 2 || !(model.output_shape() == Shape{2}))) {
    throw std::invalid_argument(
        std::string("trainer: ") + task_text + what + " has " + std::to_string(data.num_classes()) +
        " classes and the model outputs " + model.output_shape().to_string() +
        " (a binary classifier has 2 classes and outputs [2])");
  }
  if (model.output_shape().rank() != 1 || data.num_classes() > model.output_shape()[0]) {
    throw std::invalid_argument(
        std::string("trainer: ") + what + " has " + std::to_string(data.num_classes()) +
        " classes but the model outputs " + model.output_shape().to_string());
  }
}

}  // namespace

std::string_view stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::kCompleted:
      return "completed";
    case StopReason::kEarlyStopping:
      return "early_stopping";
    case StopReason::kCallback:
      return "callback";
    case StopReason::kDiverged:
      return "diverged";
    case StopReason::kInterrupted:
      return "interrupted";
  }
  return "?";
}

Trainer::Trainer(Sequential& model, Optimizer& optimizer, const LrSchedule& schedule,
                 const Dataset& train, const Dataset& validation, TrainerOptions options)
    : model_(model),
      optimizer_(optimizer),
      schedule_(schedule),
      train_(train),
      validation_(validation),
      options_(options),
      loss_(options.label_smoothing),
      mse_(),
      train_loader_(train, {.batch_size = options.batch_size,
                            .shuffle = true,
                            .drop_last = options.drop_last,
                            .seed = options.seed,
                            .transform = options.augment,
                            .prefetch = options.prefetch}) {
  if (options.batch_size > model.max_batch()) {
    throw std::invalid_argument("trainer: batch size " + std::to_string(options.batch_size) +
                                " exceeds the model's max batch " +
                                std::to_string(model.max_batch()));
  }
  if (options.epochs < 0) throw std::invalid_argument("trainer: epochs must be >= 0");
  check_fits(model, train, options.task, "the training split");
  check_fits(model, validation, options.task, "the validation split");
  if (options.task == Task::kRegression && options.label_smoothing != 0.0f) {
    throw std::invalid_argument("trainer: label smoothing is for classification, not regression");
  }
  const TargetScaling& scaling = options.target_scaling;
  if (!scaling.mean.empty() || !scaling.stddev.empty()) {
    const auto t = static_cast<size_t>(train.num_targets());
    bool positive = true;
    for (float s : scaling.stddev) positive = positive && s > 0.0f;
    if (options.task != Task::kRegression || scaling.mean.size() != t ||
        scaling.stddev.size() != t || !positive) {
      throw std::invalid_argument("trainer: the target scaling needs a regression and " +
                                  std::to_string(t) + " means and standard deviations > 0");
    }
  }
  if (options.early_stopping.patience > 0 && validation.empty()) {
    throw std::invalid_argument("trainer: early stopping needs a validation split");
  }
  if (options.early_stopping.patience < 0) {
    throw std::invalid_argument("trainer: early stopping patience must be >= 0");
  }
  if (!validation.empty()) {
    val_loader_ = std::make_unique<BatchLoader>(
        validation, BatchLoaderOptions{model.max_batch(), false, false, 0});
  }
  if (Communicator* comm = options.communicator) {
    // Every rank starts from rank 0's weights, whatever seed built its model.
    ParameterArena& arena = model.parameters();
    if (!arena.values().empty()) comm->broadcast(arena.values(), 0);
    if (!arena.buffer_values().empty()) comm->broadcast(arena.buffer_values(), 0);
    std::vector<int64_t> offsets;
    for (size_t i = 0; i < arena.param_specs().size(); ++i) offsets.push_back(arena.offset(i));
    Backend& backend = model.backend();
    buckets_ = std::make_unique<GradientBuckets>(
        arena.grads(), offsets, *comm,
        [&backend](std::span<float> x, float factor) { backend.scale(x, factor); },
        options.bucket_bytes);
    reduce_scratch_ = backend.allocate(Shape{4});
  }
  if (options.task == Task::kRegression) {
    targets_ = model.backend().allocate(Shape{model.max_batch(), train.num_targets()});
    scaled_targets_.resize(static_cast<size_t>(targets_.numel()));
  }
  if (options.task == Task::kBinary) {
    scores_.reserve(static_cast<size_t>(validation.size()));
    score_labels_.reserve(static_cast<size_t>(validation.size()));
  }
}

Trainer::~Trainer() = default;

Trainer::ShardLoss Trainer::forward_backward(const Batch& batch) {
  Backend& backend = model_.backend();
  const int64_t global = batch.x.dim(0);
  int64_t begin = 0, rows = global;
  if (Communicator* comm = options_.communicator) {
    begin = global * comm->rank() / comm->size();
    rows = global * (comm->rank() + 1) / comm->size() - begin;
    buckets_->begin_step();
  }
  float loss = 0.0f;
  if (rows > 0) {
    const int64_t row_floats = batch.x.numel() / global;
    const Tensor x =
        Tensor::borrow_const(batch.x.data() + begin * row_floats, batch.x.shape().with_dim0(rows));
    const Tensor& logits = model_.forward(x, Mode::kTrain);
    Tensor& grad = model_.output_grad();
    if (options_.task == Task::kRegression) {
      const auto t = static_cast<size_t>(train_.num_targets());
      const auto n = static_cast<size_t>(rows) * t;
      std::span<const float> y = batch.targets.subspan(static_cast<size_t>(begin) * t, n);
      const TargetScaling& scaling = options_.target_scaling;
      if (!scaling.mean.empty()) {
        for (size_t i = 0; i < n; ++i) {
          scaled_targets_[i] = (y[i] - scaling.mean[i % t]) / scaling.stddev[i % t];
        }
        y = std::span<const float>(scaled_targets_).first(n);
      }
      backend.upload(y, targets_.span().first(n));
      loss = mse_.compute(backend, logits, targets_.slice(0, rows), &grad);
    } else {
      loss = loss_.compute(
          backend, logits,
          batch.labels.subspan(static_cast<size_t>(begin), static_cast<size_t>(rows)), &grad);
    }
    if (buckets_) {
      // The loss is the mean over this rank's rows: weighted so that the sum over the ranks is
      // the mean over the whole batch.
      if (rows != global) {
        backend.scale(grad.span(), static_cast<float>(rows) / static_cast<float>(global));
      }
      model_.backward([this](int64_t offset) { buckets_->ready_from(offset); });
    } else {
      model_.backward();
    }
  } else {
    model_.parameters().zero_grads();  // a batch smaller than the world leaves some ranks idle
  }
  if (buckets_) buckets_->finish(1.0f);
  return {loss, rows};
}

void Trainer::sum_over_ranks(std::span<float> host_values) {
  if (options_.communicator == nullptr) return;
  Backend& backend = model_.backend();
  std::span<float> scratch = reduce_scratch_.span().subspan(0, host_values.size());
  backend.upload(host_values, scratch);
  options_.communicator->all_reduce_sum(scratch);
  backend.download(scratch, host_values);
}

EvalResult Trainer::evaluate_with(BatchLoader& loader) {
  Backend& backend = model_.backend();
  const bool regression = options_.task == Task::kRegression;
  double loss = 0.0;
  // Regression: the squared error of the standardized targets (the loss), and the squared and
  // absolute errors in the targets' own units.
  double squared = 0.0, squared_in_units = 0.0, absolute_in_units = 0.0;
  int64_t correct = 0, seen = 0;
  scores_.clear();
  score_labels_.clear();
  loader.start_epoch();
  while (const Batch* b = loader.next()) {
    const Tensor& out = model_.forward(b->x, Mode::kEval);
    const int64_t n = b->x.dim(0);
    const float* p = on_host(backend, out, host_outputs_);
    seen += n;
    if (regression) {
      // Summed in double on the host, in sample order: the same bits on every backend's outputs.
      const TargetScaling& scaling = options_.target_scaling;
      const int64_t t = out.numel() / n;
      for (int64_t i = 0; i < out.numel(); ++i) {
        const double y = b->targets[i];
        const double sd = scaling.mean.empty() ? 1.0 : scaling.stddev[i % t];
        const double z = scaling.mean.empty() ? y : (y - scaling.mean[i % t]) / sd;
        const double e = static_cast<double>(p[i]) - z;
        squared += e * e;
        squared_in_units += e * e * sd * sd;
        absolute_in_units += std::abs(e) * sd;
      }
      continue;
    }
    const int64_t k = out.dim(1);
    loss += static_cast<double>(loss_.compute(backend, out, b->labels, nullptr)) *
            static_cast<double>(n);
    correct += count_correct(p, n, k, b->labels);
    if (options_.task == Task::kBinary) {
      for (int64_t i = 0; i < n; ++i) scores_.push_back(p[i * k + 1] - p[i * k]);
      score_labels_.insert(score_labels_.end(), b->labels.begin(), b->labels.end());
    }
  }
  EvalResult r{.loss = kNaN, .accuracy = kNaN, .auc = kNaN, .rmse = kNaN, .mae = kNaN};
  if (regression) {
    const double values =
        static_cast<double>(seen) * static_cast<double>(loader.data().num_targets());
    r.loss = squared / values;
    r.rmse = std::sqrt(squared_in_units / values);
    r.mae = absolute_in_units / values;
    return r;
  }
  r.loss = loss / static_cast<double>(seen);
  r.accuracy = static_cast<double>(correct) / static_cast<double>(seen);
  if (options_.task == Task::kBinary) r.auc = roc_auc(scores_, score_labels_);
  return r;
}

EvalResult Trainer::evaluate(const Dataset& data) {
  check_fits(model_, data, options_.task, "the evaluated dataset");
  if (data.empty()) return {kNaN, kNaN, kNaN, kNaN, kNaN};
  BatchLoader loader(data, {model_.max_batch(), false, false, 0});
  return evaluate_with(loader);
}

EpochMetrics Trainer::train_epoch() {
  const auto start = std::chrono::steady_clock::now();
  EpochMetrics m;
  double loss_sum = 0.0;
  int64_t seen = 0;
  float lr = 0.0f;
  ParameterArena& params = model_.parameters();
  train_loader_.start_epoch();
  while (const Batch* b = train_loader_.next()) {
    if (options_.stop.stop_requested()) {
      m.interrupted = true;
      return m;
    }
    const ShardLoss shard = forward_backward(*b);
    if (options_.clip_grad_norm > 0.0) {
      clip_grad_norm(model_.backend(), params.grads(), options_.clip_grad_norm);
    }
    lr = static_cast<float>(schedule_.lr(optimizer_.steps()));
    optimizer_.step(params.values(), params.grads(), lr);
    loss_sum += static_cast<double>(shard.loss) * static_cast<double>(shard.rows);
    seen += shard.rows;
  }
  if (options_.communicator != nullptr) {
    float totals[2] = {static_cast<float>(loss_sum), static_cast<float>(seen)};
    sum_over_ranks(totals);
    loss_sum = totals[0];
    seen = static_cast<int64_t>(totals[1]);
  }
  ++epoch_;
  m.epoch = epoch_;
  m.train_loss = seen > 0 ? loss_sum / static_cast<double>(seen) : kNaN;
  m.lr = lr;
  m.steps = optimizer_.steps();
  if (val_loader_) {
    const EvalResult v = evaluate_with(*val_loader_);
    m.val_loss = v.loss;
    m.val_accuracy = v.accuracy;
    m.val_auc = v.auc;
    m.val_rmse = v.rmse;
    m.val_mae = v.mae;
  } else {
    m.val_loss = m.val_accuracy = m.val_auc = m.val_rmse = m.val_mae = kNaN;
  }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return m;
}

bool Trainer::early_stop(const EpochMetrics& m) {
  if (!val_loader_) return false;
  const EarlyStoppingOptions& es = options_.early_stopping;
  const bool by_loss = es.metric == StopMetric::kValLoss;
  const double value = by_loss ? m.val_loss : m.val_accuracy;
  const bool improved = best_epoch_ == 0 || (by_loss ? value < best_value_ - es.min_delta
                                                     : value > best_value_ + es.min_delta);
  if (improved) {
    best_value_ = value;
    best_epoch_ = m.epoch;
    bad_epochs_ = 0;
  } else {
    ++bad_epochs_;
  }
  return es.patience > 0 && bad_epochs_ >= es.patience;
}

TrainResult Trainer::run(const EpochCallback& on_epoch) {
  TrainResult result;
  while (epoch_ < options_.epochs) {
    const EpochMetrics m = train_epoch();
    if (m.interrupted) {
      result.reason = StopReason::kInterrupted;
      break;
    }
    result.history.push_back(m);
    const bool stop_early = early_stop(m);
    if (!std::isfinite(m.train_loss)) {
      result.reason = StopReason::kDiverged;
      break;
    }
    if (on_epoch && on_epoch(m) == EpochDecision::kStop) {
      result.reason = StopReason::kCallback;
      break;
    }
    if (stop_early) {
      result.reason = StopReason::kEarlyStopping;
      break;
    }
  }
  result.best_epoch = best_epoch_;
  result.best_value = best_value_;
  return result;
}

Checkpoint Trainer::checkpoint(const std::string& model_spec_json) const {
  Checkpoint c;
  c.model_spec = model_spec_json;
  const ParameterArena& arena = model_.parameters();
  c.parameters = arena.values_to_host();
  c.buffers = arena.buffer_values_to_host();
  const std::span<const float> state = optimizer_.state();
  c.optimizer_state.resize(state.size());
  model_.backend().download(state, c.optimizer_state);
  c.optimizer_steps = optimizer_.steps();
  c.lr_step = optimizer_.steps();
  c.data_rng = train_loader_.rng_state();
  model_.for_each_layer([&](Layer& layer) {
    if (auto* d = dynamic_cast<Dropout*>(&layer)) {
      c.dropout_seeds.push_back(d->seed());
      c.dropout_calls.push_back(d->calls());
    }
  });
  c.epoch = epoch_;
  c.best_value = best_value_;
  c.best_epoch = best_epoch_;
  c.epochs_without_improvement = bad_epochs_;
  return c;
}

void Trainer::restore(const Checkpoint& c) {
  ParameterArena& arena = model_.parameters();
  auto mismatch = [](const std::string& what, size_t got, size_t want) {
    throw CheckpointError("checkpoint does not fit this run: " + what + " has " +
                          std::to_string(got) + " values, expected " + std::to_string(want));
  };
  if (c.parameters.size() != arena.values().size()) {
    mismatch("parameters", c.parameters.size(), arena.values().size());
  }
  if (c.buffers.size() != arena.buffer_values().size()) {
    mismatch("buffers", c.buffers.size(), arena.buffer_values().size());
  }
  if (c.optimizer_state.size() != optimizer_.state().size()) {
    mismatch("optimizer state", c.optimizer_state.size(), optimizer_.state().size());
  }
  std::vector<Dropout*> dropouts;
  model_.for_each_layer([&](Layer& layer) {
    if (auto* d = dynamic_cast<Dropout*>(&layer)) dropouts.push_back(d);
  });
  if (c.dropout_calls.size() != dropouts.size() || c.dropout_seeds.size() != dropouts.size()) {
    mismatch("dropout counters", c.dropout_calls.size(), dropouts.size());
  }
  if (c.lr_step != c.optimizer_steps) {
    throw CheckpointError("checkpoint: LR schedule position " + std::to_string(c.lr_step) +
                          " differs from the optimizer's step count " +
                          std::to_string(c.optimizer_steps));
  }
  arena.set_values(c.parameters);
  arena.set_buffer_values(c.buffers);
  model_.backend().upload(c.optimizer_state, optimizer_.state());
  optimizer_.set_steps(c.optimizer_steps);
  for (size_t i = 0; i < dropouts.size(); ++i) {
    dropouts[i]->set_seed(c.dropout_seeds[i]);
    dropouts[i]->set_calls(c.dropout_calls[i]);
  }
  train_loader_.set_rng_state(c.data_rng);
  arena.zero_grads();
  epoch_ = c.epoch;
  best_value_ = c.best_value;
  best_epoch_ = c.best_epoch;
  bad_epochs_ = c.epochs_without_improvement;
}

}  // namespace tuner::training
