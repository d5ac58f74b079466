#include "training/trainer.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "training/distributed/communicator.h"
#include "training/distributed/gradient_buckets.h"
#include "training/layers/dropout.h"
#include "training/optim/clip.h"

namespace tuner::training {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Correct predictions in logits[B,K] (argmax, first maximum on ties); logits in the backend's
// memory.
int64_t count_correct(Backend& backend, const Tensor& logits, std::span<const int32_t> labels) {
  const int64_t b = logits.dim(0), k = logits.dim(1);
  std::vector<float> host;
  const float* p = logits.data();
  if (!backend.host_accessible()) {
    host.resize(static_cast<size_t>(b * k));
    backend.download(logits.span(), host);
    p = host.data();
  }
  int64_t correct = 0;
  for (int64_t i = 0; i < b; ++i) {
    int64_t best = 0;
    for (int64_t j = 1; j < k; ++j) best = p[i * k + j] > p[i * k + best] ? j : best;
    correct += best == labels[i];
  }
  return correct;
}

void check_fits(const Sequential& model, const Dataset& data, const char* what) {
  if (data.empty()) return;
  if (!(data.sample_shape() == model.input_shape())) {
    throw std::invalid_argument(std::string("trainer: ") + what + " samples are " +
                                data.sample_shape().to_string() + " but the model takes " +
                                model.input_shape().to_string());
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
      train_loader_(train, {options.batch_size, true, options.drop_last, options.seed}) {
  if (options.batch_size > model.max_batch()) {
    throw std::invalid_argument("trainer: batch size " + std::to_string(options.batch_size) +
                                " exceeds the model's max batch " +
                                std::to_string(model.max_batch()));
  }
  if (options.epochs < 0) throw std::invalid_argument("trainer: epochs must be >= 0");
  check_fits(model, train, "the training split");
  check_fits(model, validation, "the validation split");
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
    loss = loss_.compute(
        backend, logits,
        batch.labels.subspan(static_cast<size_t>(begin), static_cast<size_t>(rows)), &grad);
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
  double loss = 0.0;
  int64_t correct = 0, seen = 0;
  loader.start_epoch();
  while (const Batch* b = loader.next()) {
    const Tensor& logits = model_.forward(b->x, Mode::kEval);
    const int64_t n = b->x.dim(0);
    loss += static_cast<double>(loss_.compute(model_.backend(), logits, b->labels, nullptr)) *
            static_cast<double>(n);
    correct += count_correct(model_.backend(), logits, b->labels);
    seen += n;
  }
  return {loss / static_cast<double>(seen),
          static_cast<double>(correct) / static_cast<double>(seen)};
}

EvalResult Trainer::evaluate(const Dataset& data) {
  check_fits(model_, data, "the evaluated dataset");
  if (data.empty()) return {kNaN, kNaN};
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
  } else {
    m.val_loss = m.val_accuracy = kNaN;
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
