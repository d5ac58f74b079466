#include "executor/engine_job.h"

#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "executor/argv_template.h"
#include "executor/engine/datasets.h"
#include "executor/engine/epoch_metrics.h"
#include "executor/engine/factories.h"
#include "executor/engine/history_file.h"
#include "executor/engine/init_source.h"
#include "executor/engine/latency.h"
#include "executor/engine/trial_artifacts.h"
#include "executor/job_json.h"
#include "training/checkpoint.h"
#include "training/distributed/communicator.h"
#include "training/init_from.h"
#include "training/model_spec.h"
#include "training/trainer.h"
#include "trials/error.h"

namespace tuner {

namespace {

using engine::EpochRecord;
using job_json::fail;

// Checks the rank fields of `trial` against the job.
void check_rank(const EngineJobSpec& spec, const EngineTrial& trial, const std::string& where) {
  if (trial.world != spec.ranks) {
    fail(where + ".ranks", "the job has " + std::to_string(spec.ranks) +
                               " rank(s) but this run is one of " + std::to_string(trial.world) +
                               " (`tuner trial` launches the ranks of a job)");
  }
  if (trial.rank < 0 || trial.rank >= trial.world) {
    fail(where + ".ranks", "rank " + std::to_string(trial.rank) + " is not in [0, " +
                               std::to_string(trial.world) + ")");
  }
  if (trial.world > 1 && spec.backend == "cpu" && trial.rendezvous_dir.empty() &&
      trial.node_store_dir.empty()) {
    fail(where + ".ranks",
         "a CPU run of " + std::to_string(trial.world) + " ranks needs a rendezvous directory");
  }
  if (trial.world > 1 && spec.backend == "cuda" && trial.nccl_id.empty()) {
    fail(where + ".ranks", "a CUDA run of " + std::to_string(trial.world) +
                               " ranks needs the NCCL id of rank 0 (TUNER_NCCL_ID)");
  }
}

// "trial 3: job", or "job" without a trial number: the prefix of the run's errors.
std::string trial_where(const EngineTrial& trial) {
  return trial.number >= 0 ? "trial " + std::to_string(trial.number) + ": job" : std::string("job");
}

EngineOutcome interrupted_outcome() {
  EngineOutcome outcome;
  outcome.end_reason = "interrupted";
  return outcome;
}

// One rank's run of one trial: run_engine_trial's steps, in the order run() calls them. Each
// step's errors are those run_engine_trial documents. Used once, from one thread.
class TrialRun {
 public:
  TrialRun(const EngineJobSpec& spec, const EngineTrial& trial,
           const EngineReportCallback& on_report, std::stop_token stop)
      : spec_(spec),
        trial_(trial),
        on_report_(on_report),
        stop_(std::move(stop)),
        where_(trial_where(trial)),
        rank_where_(where_ + ": rank " + std::to_string(trial.rank) + " of " +
                    std::to_string(trial.world)) {}

  EngineOutcome run() {
    prepare();
    if (trial_.world > 1 && stop_.stop_requested()) {
      // The other ranks are being killed: a rendezvous would only wait for its timeout.
      return interrupted_outcome();
    }
    comm_ = engine::make_communicator(spec_, trial_, *backend_, rank_where_);
    if (!build_trainer()) return interrupted_outcome();
    size_model();
    resume();
    open_artifacts();
    train();
    finish();
    return std::move(outcome_);
  }

 private:
  // Checks the trial against the job, resolves its config, loads the data, makes the backend.
  void prepare() {
    if (!spec_.artifacts_dir.empty() && trial_.number < 0) {
      fail(where_ + ".artifacts_dir", "needs the trial's number (TUNER_TRIAL_NUMBER)");
    }
    check_rank(spec_, trial_, where_);
    config_ = resolve_engine_job(spec_, trial_.params, where_);
    if (!config_.init_from.empty()) {  // read before the data, so that a bad one fails at once
      init_source_ = engine::read_init_source(config_.init_from, where_ + ".training.init_from");
      if (spec_.model_from_init) {  // "model": {"from": "init_from"}
        config_.model_json =
            engine::source_model(*init_source_, config_, spec_.task, where_).dump();
      }
    }
    data_ = engine::load_data(spec_, config_, where_);  // binds config_.model_json to the data
    model_spec_ = training::parse_model_spec(config_.model_json);
    backend_ = engine::make_backend(spec_, trial_.gpu, where_);
  }

  // The schedule, model, optimizer and trainer. False when the ranks' collective failed after
  // this rank was told to stop (the run is interrupted).
  bool build_trainer() {
    const EngineTrialConfig& c = config_;
    try {
      schedule_ = engine::make_schedule(c);
      model_ = training::build_model(model_spec_, c.batch_size, *backend_, c.seed);
      if (init_source_) {
        const training::InitFromResult loaded =
            engine::load_init_source(*init_source_, model_spec_, model_->parameters(),
                                     c.replace_head, where_ + ".training.init_from");
        if (trial_.rank == 0) {
          std::cerr << where_ << ".training.init_from: started from " << init_source_->name << ": "
                    << loaded.layers_loaded << " layers with weights loaded"
                    << (loaded.head_replaced ? ", the last one new (replace_head)" : "") << "\n";
        }
        init_source_.reset();  // its weights are the model's now
      }
      optimizer_ = engine::make_optimizer(
          c, *backend_, static_cast<int64_t>(model_->parameters().values().size()),
          training::layer_param_groups(model_spec_, c.layer_lr_factors()));
      training::TrainerOptions options{.task = spec_.task,
                                       .epochs = c.epochs,
                                       .batch_size = c.batch_size,
                                       .seed = c.seed,
                                       .label_smoothing = static_cast<float>(c.label_smoothing),
                                       .target_scaling = data_.target_scaling,
                                       .clip_grad_norm = c.clip_grad_norm};
      options.augment = data_.augmentation;
      options.prefetch = spec_.prefetch;
      options.stop = stop_;
      options.communicator = comm_.get();
      trainer_ = std::make_unique<training::Trainer>(*model_, *optimizer_, *schedule_, data_.train,
                                                     data_.validation, options);
    } catch (const training::CommunicatorError& e) {
      collective_failed(e);
      return false;
    } catch (const std::invalid_argument& e) {
      fail(where_, std::string(e.what()) + " (model " + model_spec_.input.to_string() + " -> " +
                       model_spec_.output.to_string() + ", data " +
                       data_.train.sample_shape().to_string() + " with " +
                       (data_.train.is_regression()
                            ? std::to_string(data_.train.num_targets()) + " targets"
                            : std::to_string(data_.train.num_classes()) + " classes") +
                       ")");
    }
    return true;
  }

  // Restores the trial's checkpoint when it exists, with the epochs' history beside it, and
  // reports those epochs again.
  void resume() {
    if (!trial_.checkpoint_path || !std::filesystem::exists(*trial_.checkpoint_path)) return;
    const std::string& path = *trial_.checkpoint_path;
    try {
      training::Checkpoint checkpoint = training::load_checkpoint(path);
      if (checkpoint.model_spec != model_spec_.json) {
        throw Error(ErrorCode::kFailedPrecondition,
                    path + ": a checkpoint of another model (" + checkpoint.model_spec +
                        "), not this trial's (" + model_spec_.json + "); remove it to start over");
      }
      trainer_->restore(checkpoint);
    } catch (const training::CheckpointError& e) {
      throw Error(ErrorCode::kDataLoss, e.what());
    }
    outcome_.resumed_from = trainer_->epoch();
    history_ = engine::read_checkpoint_history(path, trainer_->epoch());
    // The trial's latency, when an earlier run measured it; the epochs get the model's figures
    // (a history written without them has none).
    for (const EpochRecord& e : history_) {
      auto batch1 = e.metrics.find("latency_ms");
      auto per_sample = e.metrics.find("latency_ms_per_sample");
      if (batch1 != e.metrics.end() && per_sample != e.metrics.end() &&
          std::isfinite(batch1->second) && std::isfinite(per_sample->second)) {
        latency_ = engine::InferenceLatency{batch1->second, per_sample->second};
        break;
      }
    }
    for (EpochRecord& e : history_) add_model_figures(e.metrics);
    // The epochs it continues from are this run's too (a re-run is a new trial): its
    // scheduler sees them, and a stop it answers arrives before more training is done. An answer
    // other than continue (a PBT segment's pause at its last epoch, which the checkpoint already
    // reached) ends a trial of one rank before it trains another epoch.
    if (on_report_) {
      for (const EpochRecord& e : history_) {
        const JobDecision decision =
            on_report_(EngineReport{.step = e.epoch, .metrics = e.metrics});
        if (decision != JobDecision::kContinue) resumed_decision_ = decision;
      }
    }
  }

  // The model's size as a checkpoint as the export reads it (spec, weights, buffers): it does not
  // depend on the weights' values.
  void size_model() {
    checkpoint_bytes_ = training::checkpoint_file_size(
        training::Checkpoint{.model_spec = model_spec_.json,
                             .parameters = model_->parameters().values_to_host(),
                             .buffers = model_->parameters().buffer_values_to_host()});
  }

  // The model's figures, which every epoch reports so that a scheduler can judge them as
  // objectives (docs/engine_jobs.md, "Metrics"): its size, and on rank 0 its inference latency,
  // measured once per trial (the forward pass's time depends on the model's shape, not on its
  // weights: each later epoch, and the final metrics, report the same figure). A measurement cut
  // short by a stop request is NaN, and is made again at the next epoch.
  void add_model_figures(Metrics& m) {
    m["num_params"] = static_cast<double>(model_->parameters().num_parameters());
    m["train_flops_per_sample"] = static_cast<double>(3 * model_->forward_flops());
    m["checkpoint_bytes"] = static_cast<double>(checkpoint_bytes_);
    if (trial_.rank != 0) return;
    engine::InferenceLatency latency;
    if (latency_) {
      latency = *latency_;
    } else {
      latency = engine::measure_inference_latency(model_spec_, *model_, spec_.latency_batch,
                                                  *backend_, stop_);
      if (std::isfinite(latency.batch1_ms) && std::isfinite(latency.per_sample_ms)) {
        latency_ = latency;
      }
    }
    m["latency_ms"] = latency.batch1_ms;
    m["latency_ms_per_sample"] = latency.per_sample_ms;
  }

  // The artifacts folder, and the best model a resumed trial saved there (so that the test split
  // measures the model a registry exports).
  void open_artifacts() {
    artifacts_ = engine::TrialArtifacts::open(spec_, trial_, model_spec_.json, history_, where_);
    artifacts_.write_data_description(data_.name, data_.class_names, data_.target_names,
                                      data_.features);
    if (!history_.empty()) best_weights_ = artifacts_.saved_best_model();
  }

  // Trains epoch by epoch until the epochs are done or the run ends (outcome_.end_reason).
  void train() {
    outcome_.end_reason = "completed";
    if (trial_.world == 1 && resumed_decision_ != JobDecision::kContinue) {
      outcome_.end_reason = "callback";
      return;
    }
    // Rank 0's decision, on every rank (a one-float broadcast; backend memory for NCCL).
    if (comm_) decision_scratch_ = backend_->allocate(training::Shape{1});
    while (trainer_->epoch() < config_.epochs && train_epoch()) {
    }
  }

  // One epoch: trains it, records and saves it, and asks the callback. False when the run ends.
  bool train_epoch() {
    training::EpochMetrics m;
    try {
      m = trainer_->train_epoch();
    } catch (const training::CommunicatorError& e) {
      collective_failed(e);
      m.interrupted = true;
    }
    if (m.interrupted) {
      outcome_.end_reason = "interrupted";
      return false;
    }
    history_.push_back(
        {m.epoch, engine::epoch_metrics(m, config_.train, spec_.task), engine::wall_seconds()});
    add_model_figures(history_.back().metrics);
    artifacts_.add_epoch(history_.back());
    const bool is_best = best_epoch() == history_.size() - 1;
    if (is_best && config_.test > 0) keep_best_weights();
    save_epoch(is_best);
    if (!std::isfinite(m.train_loss)) outcome_.end_reason = "diverged";
    JobDecision decision = JobDecision::kContinue;
    if (on_report_) {
      decision = on_report_(EngineReport{.step = m.epoch, .metrics = history_.back().metrics});
    }
    try {
      decision = agree(decision);
    } catch (const training::CommunicatorError& e) {
      collective_failed(e);
      outcome_.end_reason = "interrupted";
      return false;
    }
    if (decision != JobDecision::kContinue && outcome_.end_reason == "completed") {
      outcome_.end_reason = "callback";
    }
    return outcome_.end_reason == "completed";
  }

  // The epoch's files: the best model and metrics.json in the artifacts, and the checkpoint with
  // its history (rank 0 alone).
  void save_epoch(bool is_best) {
    try {
      if (artifacts_.active()) {
        if (is_best) artifacts_.save_best_model(trainer_->checkpoint(model_spec_.json));
        artifacts_.write_metrics(final_metrics(), history_);
      }
      if (trial_.checkpoint_path && trial_.rank == 0) {
        // The history first: a crash between the two leaves a history one epoch ahead, which the
        // resume cuts back to the checkpoint's epoch.
        engine::write_checkpoint_history(*trial_.checkpoint_path, history_);
        training::save_checkpoint(*trial_.checkpoint_path, trainer_->checkpoint(model_spec_.json));
      }
    } catch (const training::CheckpointError& e) {
      throw Error(ErrorCode::kUnavailable, e.what());
    }
  }

  // The final metrics, then the test split when the run was not interrupted, and metrics.json.
  void finish() {
    outcome_.epochs_completed = trainer_->epoch();
    outcome_.final_metrics = final_metrics();
    Metrics& final = outcome_.final_metrics;
    const bool measure = !final.empty() && outcome_.end_reason != "interrupted";
    if (measure && config_.test > 0) {
      if (best_weights_) {
        model_->parameters().set_values(best_weights_->parameters);
        model_->parameters().set_buffer_values(best_weights_->buffers);
      }
      const training::EvalResult test = trainer_->evaluate(data_.test);
      final["test_loss"] = test.loss;
      if (spec_.task == training::Task::kRegression) {
        final["test_rmse"] = test.rmse;
        final["test_mae"] = test.mae;
      } else {
        final["test_accuracy"] = test.accuracy;
        if (spec_.task == training::Task::kBinary) final["test_auc"] = test.auc;
      }
    }
    if (!final.empty()) artifacts_.write_metrics(final, history_);
  }

  // The best epoch's metrics, with the model's figures as every epoch has them (add_model_figures;
  // for objectives and constraints on them, docs/sweep_file.md); empty when no epoch completed.
  Metrics final_metrics() const {
    Metrics out;
    if (history_.empty()) return out;
    const size_t best = best_epoch();
    out = history_[best].metrics;
    out["best_epoch"] = static_cast<double>(history_[best].epoch);
    if (latency_) {  // the trial's one measurement, also when the best epoch's was cut short
      out["latency_ms"] = latency_->batch1_ms;
      out["latency_ms_per_sample"] = latency_->per_sample_ms;
    }
    out["peak_rss_mb"] = engine::peak_rss_mb();  // the peak of the whole run, not the best epoch's
    return out;
  }

  size_t best_epoch() const {
    return engine::best_epoch(history_, spec_.objective_metric, spec_.maximize);
  }

  // The current weights, as the best epoch's (what the test split measures).
  void keep_best_weights() {
    training::Checkpoint best;
    best.parameters = model_->parameters().values_to_host();
    best.buffers = model_->parameters().buffer_values_to_host();
    best_weights_ = std::move(best);
  }

  // Rank 0's decision, on every rank. Throws training::CommunicatorError.
  JobDecision agree(JobDecision decision) {
    if (!comm_) return decision;
    float value[1] = {static_cast<float>(static_cast<int>(decision))};
    backend_->upload(value, decision_scratch_.span());
    comm_->broadcast(decision_scratch_.span(), 0);
    backend_->download(decision_scratch_.span(), value);
    return static_cast<JobDecision>(static_cast<int>(value[0]));
  }

  // A collective's failure: an interruption when this rank was told to stop (the others are
  // being killed; the caller ends the run), else Error(kUnavailable) naming this rank.
  void collective_failed(const training::CommunicatorError& e) const {
    if (stop_.stop_requested()) return;
    throw Error(ErrorCode::kUnavailable, rank_where_ + ": " + e.what());
  }

  // Constant after construction.
  const EngineJobSpec& spec_;
  const EngineTrial& trial_;
  const EngineReportCallback& on_report_;
  const std::stop_token stop_;
  const std::string where_;       // "trial 3: job"
  const std::string rank_where_;  // "trial 3: job: rank 0 of 2"

  // The last answer other than continue to the epochs a resumed run reports again.
  JobDecision resumed_decision_ = JobDecision::kContinue;
  // Set by prepare().
  EngineTrialConfig config_;
  std::optional<engine::InitSource> init_source_;  // training.init_from's weights, when given
  training::ModelSpec model_spec_;
  engine::Splits data_;
  // The training objects, destroyed in the reverse order: the backend last.
  std::unique_ptr<training::Backend> backend_;
  std::unique_ptr<training::Communicator> comm_;
  std::unique_ptr<training::Sequential> model_;
  std::unique_ptr<training::Optimizer> optimizer_;
  std::unique_ptr<training::LrSchedule> schedule_;
  std::unique_ptr<training::Trainer> trainer_;

  // The run's state.
  EngineOutcome outcome_;
  std::vector<EpochRecord> history_;
  int64_t checkpoint_bytes_ = 0;
  std::optional<engine::InferenceLatency> latency_;  // rank 0: the trial's, once measured
  engine::TrialArtifacts artifacts_;
  std::optional<training::Checkpoint> best_weights_;  // the best epoch's parameters and buffers
  training::Tensor decision_scratch_;                 // [1], for agree(); backend memory
};

}  // namespace

EngineOutcome run_engine_trial(const EngineJobSpec& spec, const EngineTrial& trial,
                               const EngineReportCallback& on_report, std::stop_token stop) {
  return TrialRun(spec, trial, on_report, std::move(stop)).run();
}

EngineInputPipeline engine_input_pipeline(const EngineJobSpec& spec,
                                          const EngineTrialConfig& config) {
  EngineTrialConfig train_only = config;
  train_only.validation = 0;
  train_only.test = 0;
  // The training split's statistics as the trials had them (the data cache's when it holds them).
  const engine::NormalizedSplits normalized = engine::load_normalized_data(spec, train_only, "job");
  const engine::Splits& s = normalized.splits;
  const std::vector<float>& mean = normalized.mean;
  const std::vector<float>& stddev = normalized.stddev;
  const engine::DatasetInfo& info = engine::find_dataset(spec.dataset, "job.data.dataset");
  EngineInputPipeline p;
  p.dataset = spec.dataset;
  p.task = spec.task;
  if (s.train.is_regression()) p.target_scaling = training::TargetScaling::fit(s.train);
  p.uint8 = info.uint8;
  p.divisor = info.divisor;
  if (spec.format == "csv") {
    p.feature_mean.assign(mean.begin(), mean.end());
    p.feature_stddev.assign(stddev.begin(), stddev.end());
    p.columns = s.columns;
    p.features = s.features;
    p.label = spec.files.label;
    p.missing_mean = spec.files.missing_mean;
    p.class_labels = s.class_names;
    if (p.feature_mean.size() != p.features.size()) {
      throw Error(ErrorCode::kInternal, "job.data: " + std::to_string(p.feature_mean.size()) +
                                            " normalization statistics for " +
                                            std::to_string(p.features.size()) + " features");
    }
    return p;
  }
  p.class_labels = s.class_names;
  if (mean.size() == 1) {
    p.mean = mean[0];
    p.stddev = stddev[0];
    return p;
  }
  // Per channel (an RGB image's [3, H, W]): one mean and standard deviation per element of the
  // sample's first dimension.
  const training::Shape& sample = s.train.sample_shape();
  if (sample.rank() < 1 || static_cast<int64_t>(mean.size()) != sample.dims()[0]) {
    throw Error(ErrorCode::kInternal, "job.data: " + std::to_string(mean.size()) +
                                          " normalization statistics for samples of " +
                                          sample.to_string() + ", not one per channel");
  }
  p.feature_mean.assign(mean.begin(), mean.end());
  p.feature_stddev.assign(stddev.begin(), stddev.end());
  return p;
}

std::optional<std::string> engine_trial_error(std::string_view log_tail) {
  constexpr std::string_view kPrefix = "error: ";
  std::optional<std::string> found;
  size_t at = 0;
  while (at < log_tail.size()) {
    size_t end = log_tail.find('\n', at);
    if (end == std::string_view::npos) end = log_tail.size();
    std::string_view line = log_tail.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.starts_with(kPrefix) && line.size() > kPrefix.size()) {
      found = std::string(line.substr(kPrefix.size()));
    }
    at = end + 1;
  }
  return found;
}

std::vector<int> engine_rank_gpus(const EngineJobSpec& spec, const std::vector<int>& trial_gpus,
                                  const std::string& where) {
  if (spec.backend != "cuda") return {};
  if (spec.ranks == 1) return {trial_gpus.empty() ? 0 : trial_gpus.front()};
  const int node_ranks = spec.ranks / spec.nodes;
  if (static_cast<int>(trial_gpus.size()) != node_ranks) {
    std::string given;
    for (int g : trial_gpus) given += (given.empty() ? "" : ",") + std::to_string(g);
    fail(where + ".ranks", std::to_string(node_ranks) + " CUDA ranks" +
                               (spec.nodes > 1 ? " per node" : std::string()) +
                               " need one GPU each, but the trial was given " +
                               (trial_gpus.empty() ? std::string("none (TUNER_GPUS is not set)")
                                                   : std::to_string(trial_gpus.size()) +
                                                         " (TUNER_GPUS=" + given + ")"));
  }
  return trial_gpus;
}

CommandSpec engine_job_command(const EngineJobSpec& spec, const std::string& tuner_path) {
  CommandSpec command;
  command.argv = {argv_literal(tuner_path), "trial", "--engine-job", argv_literal(spec.json)};
  return command;
}

}  // namespace tuner
