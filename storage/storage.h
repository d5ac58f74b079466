// Storage: where studies and their trials live.
//
// The interface every backend implements (in memory here; SQLite in its own issue), with Optuna's
// model: a study has a name, one direction per objective and attributes; a trial is created
// RUNNING (or WAITING), gets parameters, intermediate values and attributes while it runs, and is
// finished once with a state and its values. Each method is one atomic state change.
//
// Thread safety: every method may be called from several threads at once.
// Errors: Error(kNotFound) for an unknown study or trial, Error(kAlreadyExists) for a taken study
// name, Error(kFailedPrecondition) for any write to a finished trial (finished trials are never
// rewritten), Error(kInvalidArgument) for a value outside its distribution or a NaN.
#ifndef TUNER_STORAGE_STORAGE_H_
#define TUNER_STORAGE_STORAGE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trials/distribution.h"
#include "trials/frozen_trial.h"
#include "trials/trial_state.h"

namespace tuner {

struct StudyRecord {
  int64_t study_id = -1;
  std::string name;
  std::vector<StudyDirection> directions;
  std::map<std::string, std::string, std::less<>> user_attrs;    // JSON text
  std::map<std::string, std::string, std::less<>> system_attrs;  // JSON text
};

// Which trials get_trials() returns.
struct TrialFilter {
  std::optional<std::vector<TrialState>> states;  // default: every state
  int min_number = 0;                             // only trials numbered >= this
};

class Storage {
 public:
  virtual ~Storage() = default;

  // REQUIRES: directions not empty.
  virtual StudyRecord create_study(const std::string& name,
                                   const std::vector<StudyDirection>& directions) = 0;
  virtual std::optional<StudyRecord> find_study(const std::string& name) = 0;
  virtual std::vector<StudyRecord> list_studies() = 0;
  virtual void delete_study(int64_t study_id) = 0;
  virtual void set_study_user_attr(int64_t study_id, const std::string& key,
                                   const std::string& json) = 0;
  virtual void set_study_system_attr(int64_t study_id, const std::string& key,
                                     const std::string& json) = 0;

  // A new trial numbered after the study's last one. With `from`, it starts with that trial's
  // params, distributions and attributes (how enqueued and retried trials are made);
  // REQUIRES: state is RUNNING or WAITING.
  virtual FrozenTrial create_trial(int64_t study_id, TrialState state = TrialState::kRunning,
                                   const FrozenTrial* from = nullptr) = 0;
  // Moves a WAITING trial to RUNNING; false if another worker took it first.
  virtual bool claim_waiting_trial(int64_t trial_id) = 0;
  virtual void set_trial_param(int64_t trial_id, const std::string& name,
                               const Distribution& distribution, const ParamValue& value) = 0;
  virtual void set_trial_intermediate_value(int64_t trial_id, int64_t step, double value) = 0;
  virtual void set_trial_user_attr(int64_t trial_id, const std::string& key,
                                   const std::string& json) = 0;
  virtual void set_trial_system_attr(int64_t trial_id, const std::string& key,
                                     const std::string& json) = 0;
  // REQUIRES: is_finished(state); values as FrozenTrial documents them.
  virtual void finish_trial(int64_t trial_id, TrialState state,
                            const std::vector<double>& values) = 0;

  virtual FrozenTrial get_trial(int64_t trial_id) = 0;
  // Ordered by number.
  virtual std::vector<FrozenTrial> get_trials(int64_t study_id, const TrialFilter& filter = {}) = 0;
};

}  // namespace tuner

#endif  // TUNER_STORAGE_STORAGE_H_
