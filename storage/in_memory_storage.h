// InMemoryStorage: a Storage that lives and dies with the process.
//
// Thread-safe (one mutex). The default storage of a Study, and the reference the shared storage
// test suite holds every other backend to.
#ifndef TUNER_STORAGE_IN_MEMORY_STORAGE_H_
#define TUNER_STORAGE_IN_MEMORY_STORAGE_H_

#include <memory>
#include <mutex>

#include "storage/storage.h"
#include "trials/clock.h"

namespace tuner {

class InMemoryStorage final : public Storage {
 public:
  // `clock` stamps trial datetimes. Default: the system clock.
  explicit InMemoryStorage(std::shared_ptr<Clock> clock = system_clock());
  ~InMemoryStorage() override;

  StudyRecord create_study(const std::string& name,
                           const std::vector<StudyDirection>& directions) override;
  std::optional<StudyRecord> find_study(const std::string& name) override;
  std::vector<StudyRecord> list_studies() override;
  void delete_study(int64_t study_id) override;
  void set_study_user_attr(int64_t study_id, const std::string& key,
                           const std::string& json) override;
  void set_study_system_attr(int64_t study_id, const std::string& key,
                             const std::string& json) override;

  FrozenTrial create_trial(int64_t study_id, TrialState state, const FrozenTrial* from) override;
  bool claim_waiting_trial(int64_t trial_id) override;
  void set_trial_param(int64_t trial_id, const std::string& name, const Distribution& distribution,
                       const ParamValue& value) override;
  void set_trial_params(int64_t trial_id, const std::vector<NewParam>& params) override;
  void set_trial_intermediate_value(int64_t trial_id, int64_t step, double value) override;
  void set_trial_step_metrics(int64_t trial_id, int64_t step, const StepValues& metrics) override;
  void set_trial_user_attr(int64_t trial_id, const std::string& key,
                           const std::string& json) override;
  void set_trial_system_attr(int64_t trial_id, const std::string& key,
                             const std::string& json) override;
  FrozenTrial finish_trial(int64_t trial_id, TrialState state, const std::vector<double>& values,
                           const Attributes& system_attrs = {},
                           const Attributes& user_attrs = {}) override;
  void record_heartbeat(int64_t trial_id, TimePoint time) override;
  std::vector<FrozenTrial> get_stale_trials(int64_t study_id, TimePoint stale_before) override;
  std::optional<StaleTrialOutcome> fail_stale_trial(int64_t trial_id, TimePoint stale_before,
                                                    const Attributes& fail_attrs,
                                                    const FrozenTrial* retry) override;

  FrozenTrial get_trial(int64_t trial_id) override;
  std::optional<FrozenTrial> get_best_trial(int64_t study_id) override;
  std::vector<FrozenTrial> get_trials(int64_t study_id, const TrialFilter& filter) override;
  std::map<int64_t, std::vector<StepMetrics>> get_step_metrics(
      int64_t study_id, const std::vector<int64_t>& trial_ids = {}) override;
  // Holds the mutex while `body` runs, so that other threads see the batch's changes together.
  // Nothing can fail at commit; when `body` throws, the changes made before it are kept.
  void run_batch(const std::function<void()>& body) override;
  // Counts every write call (failed ones too).
  std::optional<uint64_t> change_count() override;

 private:
  struct State;
  // Constant after construction.
  const std::shared_ptr<Clock> clock_;

  std::recursive_mutex mutex_;    // recursive: a batch holds it while its calls take it
  std::unique_ptr<State> state_;  // protected by mutex_
  uint64_t changes_ = 0;          // protected by mutex_
};

}  // namespace tuner

#endif  // TUNER_STORAGE_IN_MEMORY_STORAGE_H_
