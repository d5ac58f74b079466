// TimedStorage: a Storage that passes every call to another one and counts the calls and the
// time they take, so that a benchmark can tell how much of a coordinator's loop goes to storage.
//
// Time counts once per outermost call: a call made inside another (a default implementation
// calling a sibling) is within its caller's time. A run_batch() counts its own cost (opening the
// batch and committing it), not its body's: the calls the body makes count as calls, and what
// else the body does (a sampler's ask) counts nowhere.
//
// Thread safety: as the wrapped storage; the counters are atomic.
#ifndef TUNER_BENCH_SCALE_TIMED_STORAGE_H_
#define TUNER_BENCH_SCALE_TIMED_STORAGE_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "storage/storage.h"

namespace tuner::bench {

struct StorageCounts {
  int64_t writes = 0;   // write calls (each one atomic change), inside batches or not
  int64_t reads = 0;    // read calls
  int64_t batches = 0;  // run_batch() calls that reached the storage
  int64_t ns = 0;       // time inside the storage, as above
};

class TimedStorage final : public Storage {
 public:
  explicit TimedStorage(std::shared_ptr<Storage> base);

  StorageCounts counts() const;

  StudyRecord create_study(const std::string& name,
                           const std::vector<StudyDirection>& directions) override;
  std::optional<StudyRecord> find_study(const std::string& name) override;
  std::vector<StudyRecord> list_studies() override;
  void delete_study(int64_t study_id) override;
  void set_study_user_attr(int64_t study_id, const std::string& key,
                           const std::string& json) override;
  void set_study_system_attr(int64_t study_id, const std::string& key,
                             const std::string& json) override;
  FrozenTrial create_trial(int64_t study_id, TrialState state = TrialState::kRunning,
                           const FrozenTrial* from = nullptr) override;
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
  std::vector<FrozenTrial> get_trials(int64_t study_id, const TrialFilter& filter = {}) override;
  std::map<int64_t, std::vector<StepMetrics>> get_step_metrics(
      int64_t study_id, const std::vector<int64_t>& trial_ids = {}) override;
  void run_batch(const std::function<void()>& body) override;
  std::optional<uint64_t> change_count() override;

 private:
  // Runs `call`, counting it as a write or a read, and its time when it is outermost.
  template <typename Call>
  decltype(auto) timed(bool write, Call&& call);

  // Constant after construction.
  const std::shared_ptr<Storage> base_;

  std::atomic<int64_t> writes_{0};
  std::atomic<int64_t> reads_{0};
  std::atomic<int64_t> batches_{0};
  std::atomic<int64_t> ns_{0};
};

}  // namespace tuner::bench

#endif  // TUNER_BENCH_SCALE_TIMED_STORAGE_H_
