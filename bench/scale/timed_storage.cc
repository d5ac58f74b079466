#include "bench/scale/timed_storage.h"

#include <chrono>
#include <utility>

namespace tuner::bench {

namespace {

using SteadyClock = std::chrono::steady_clock;

// Calls of this thread that are running now: only the outermost one adds its time.
thread_local int depth = 0;

int64_t ns_since(SteadyClock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - start).count();
}

}  // namespace

TimedStorage::TimedStorage(std::shared_ptr<Storage> base) : base_(std::move(base)) {}

StorageCounts TimedStorage::counts() const {
  return {.writes = writes_.load(),
          .reads = reads_.load(),
          .batches = batches_.load(),
          .ns = ns_.load()};
}

template <typename Call>
decltype(auto) TimedStorage::timed(bool write, Call&& call) {
  (write ? writes_ : reads_).fetch_add(1, std::memory_order_relaxed);
  struct Scope {
    std::atomic<int64_t>& ns;
    SteadyClock::time_point start = SteadyClock::now();
    Scope(std::atomic<int64_t>& total) : ns(total) { ++depth; }
    ~Scope() {
      if (--depth == 0) ns.fetch_add(ns_since(start), std::memory_order_relaxed);
    }
  } scope(ns_);
  return call();
}

StudyRecord TimedStorage::create_study(const std::string& name,
                                       const std::vector<StudyDirection>& directions) {
  return timed(true, [&] { return base_->create_study(name, directions); });
}
std::optional<StudyRecord> TimedStorage::find_study(const std::string& name) {
  return timed(false, [&] { return base_->find_study(name); });
}
std::vector<StudyRecord> TimedStorage::list_studies() {
  return timed(false, [&] { return base_->list_studies(); });
}
void TimedStorage::delete_study(int64_t study_id) {
  timed(true, [&] { base_->delete_study(study_id); });
}
void TimedStorage::set_study_user_attr(int64_t study_id, const std::string& key,
                                       const std::string& json) {
  timed(true, [&] { base_->set_study_user_attr(study_id, key, json); });
}
void TimedStorage::set_study_system_attr(int64_t study_id, const std::string& key,
                                         const std::string& json) {
  timed(true, [&] { base_->set_study_system_attr(study_id, key, json); });
}
FrozenTrial TimedStorage::create_trial(int64_t study_id, TrialState state,
                                       const FrozenTrial* from) {
  return timed(true, [&] { return base_->create_trial(study_id, state, from); });
}
bool TimedStorage::claim_waiting_trial(int64_t trial_id) {
  return timed(true, [&] { return base_->claim_waiting_trial(trial_id); });
}
void TimedStorage::set_trial_param(int64_t trial_id, const std::string& name,
                                   const Distribution& distribution, const ParamValue& value) {
  timed(true, [&] { base_->set_trial_param(trial_id, name, distribution, value); });
}
void TimedStorage::set_trial_params(int64_t trial_id, const std::vector<NewParam>& params) {
  timed(true, [&] { base_->set_trial_params(trial_id, params); });
}
void TimedStorage::set_trial_intermediate_value(int64_t trial_id, int64_t step, double value) {
  timed(true, [&] { base_->set_trial_intermediate_value(trial_id, step, value); });
}
void TimedStorage::set_trial_step_metrics(int64_t trial_id, int64_t step,
                                          const StepValues& metrics) {
  timed(true, [&] { base_->set_trial_step_metrics(trial_id, step, metrics); });
}
void TimedStorage::set_trial_user_attr(int64_t trial_id, const std::string& key,
                                       const std::string& json) {
  timed(true, [&] { base_->set_trial_user_attr(trial_id, key, json); });
}
void TimedStorage::set_trial_system_attr(int64_t trial_id, const std::string& key,
                                         const std::string& json) {
  timed(true, [&] { base_->set_trial_system_attr(trial_id, key, json); });
}
FrozenTrial TimedStorage::finish_trial(int64_t trial_id, TrialState state,
                                       const std::vector<double>& values,
                                       const Attributes& system_attrs,
                                       const Attributes& user_attrs) {
  return timed(
      true, [&] { return base_->finish_trial(trial_id, state, values, system_attrs, user_attrs); });
}
void TimedStorage::record_heartbeat(int64_t trial_id, TimePoint time) {
  timed(true, [&] { base_->record_heartbeat(trial_id, time); });
}
std::vector<FrozenTrial> TimedStorage::get_stale_trials(int64_t study_id, TimePoint stale_before) {
  return timed(false, [&] { return base_->get_stale_trials(study_id, stale_before); });
}
std::optional<Storage::StaleTrialOutcome> TimedStorage::fail_stale_trial(
    int64_t trial_id, TimePoint stale_before, const Attributes& fail_attrs,
    const FrozenTrial* retry) {
  return timed(true,
               [&] { return base_->fail_stale_trial(trial_id, stale_before, fail_attrs, retry); });
}
FrozenTrial TimedStorage::get_trial(int64_t trial_id) {
  return timed(false, [&] { return base_->get_trial(trial_id); });
}
std::optional<FrozenTrial> TimedStorage::get_best_trial(int64_t study_id) {
  return timed(false, [&] { return base_->get_best_trial(study_id); });
}
std::vector<FrozenTrial> TimedStorage::get_trials(int64_t study_id, const TrialFilter& filter) {
  return timed(false, [&] { return base_->get_trials(study_id, filter); });
}
std::map<int64_t, std::vector<StepMetrics>> TimedStorage::get_step_metrics(
    int64_t study_id, const std::vector<int64_t>& trial_ids) {
  return timed(false, [&] { return base_->get_step_metrics(study_id, trial_ids); });
}

void TimedStorage::run_batch(const std::function<void()>& body) {
  if (depth > 0) {  // inside another call: its time covers this one
    base_->run_batch(body);
    return;
  }
  batches_.fetch_add(1, std::memory_order_relaxed);
  const auto start = SteadyClock::now();
  int64_t body_ns = 0;
  // The body's own calls count as outermost calls; the rest of its time is not the storage's.
  ++depth;
  try {
    base_->run_batch([&] {
      --depth;
      const auto body_start = SteadyClock::now();
      try {
        body();
      } catch (...) {
        body_ns += ns_since(body_start);
        ++depth;
        throw;
      }
      body_ns += ns_since(body_start);
      ++depth;
    });
  } catch (...) {
    --depth;
    ns_.fetch_add(ns_since(start) - body_ns, std::memory_order_relaxed);
    throw;
  }
  --depth;
  ns_.fetch_add(ns_since(start) - body_ns, std::memory_order_relaxed);
}

std::optional<uint64_t> TimedStorage::change_count() {
  return timed(false, [&] { return base_->change_count(); });
}

}  // namespace tuner::bench
