// A trial's artifacts folder, ARTIFACTS_DIR/trial-N (internal to executor/; docs/engine_jobs.md):
// metrics.json (the final metrics, the epochs, the params and the model), model.ckpt (the best
// epoch's model, as the registry's export reads it) and the TensorBoard events of the epochs
// (`tensorboard --logdir ARTIFACTS_DIR`). Rank 0 alone writes it: a TrialArtifacts of another
// rank, or of a job without artifacts_dir, is inactive and writes nothing.
//
// Thread-compatible: one run uses it from one thread.
#ifndef TUNER_EXECUTOR_ENGINE_TRIAL_ARTIFACTS_H_
#define TUNER_EXECUTOR_ENGINE_TRIAL_ARTIFACTS_H_

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "executor/engine/history_file.h"
#include "executor/engine_job.h"
#include "executor/tensorboard_events.h"
#include "training/checkpoint.h"

namespace tuner::engine {

class TrialArtifacts {
 public:
  // Inactive.
  TrialArtifacts() = default;

  // The folder of `trial` under the job's artifacts_dir, created, with its TensorBoard writer:
  // a folder without events yet gets those of the `resumed` epochs (a re-run starts its folder
  // with the epochs it continues from; a run continuing its own folder adds only new ones).
  // Inactive when the job has no artifacts_dir or trial.rank != 0. `model_json` is the trial's
  // model spec. Throws Error(kUnavailable) naming `where`.artifacts_dir when the folder cannot be
  // made. REQUIRES: trial.number >= 0 when the job has artifacts_dir.
  static TrialArtifacts open(const EngineJobSpec& spec, const EngineTrial& trial,
                             std::string model_json, const std::vector<EpochRecord>& resumed,
                             const std::string& where);

  bool active() const { return !dir_.empty(); }

  // The model.ckpt an earlier run of the trial saved, when there is one of this model; nullopt
  // when inactive, absent, unreadable or of another model.
  std::optional<training::Checkpoint> saved_best_model() const;

  // Adds the epoch's metrics to the TensorBoard events. Inactive: nothing.
  void add_epoch(const EpochRecord& epoch);

  // Saves the best epoch's model as model.ckpt. Throws training::CheckpointError when it cannot
  // be written. Inactive: nothing.
  void save_best_model(const training::Checkpoint& checkpoint) const;

  // Writes data.json beside model.ckpt, atomically: what the model's inputs and outputs mean,
  // {"version": 1, "data": NAME, "classes": [the label of each output, in order], "features":
  // [the name of each input]}; a regression's has "task": "regression" and "targets": [the name
  // of each output] instead of "classes". Nothing when the lists are empty (the labels are the
  // output indices: fashion-mnist, npy). Throws Error(kUnavailable) when it cannot be written.
  // Inactive: nothing.
  void write_data_description(const std::string& name, const std::vector<std::string>& classes,
                              const std::vector<std::string>& targets,
                              const std::vector<std::string>& features) const;

  // Writes metrics.json (version kHistoryVersion) with the trial's `final` metrics and the epochs
  // of `history`, atomically. Throws Error(kUnavailable) when it cannot be written. Inactive:
  // nothing.
  void write_metrics(const Metrics& final, const std::vector<EpochRecord>& history) const;

 private:
  // Constant after open().
  std::filesystem::path dir_;  // empty: inactive
  int trial_number_ = -1;
  Params params_;
  std::string objective_metric_;
  std::string model_json_;

  std::unique_ptr<TensorBoardWriter> tensorboard_;
};

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_TRIAL_ARTIFACTS_H_
