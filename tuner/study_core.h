// StudyCore: what a Study and its live Trials share. Internal to tuner/.
#ifndef TUNER_TUNER_STUDY_CORE_H_
#define TUNER_TUNER_STUDY_CORE_H_

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "search/history.h"
#include "search/sampler.h"
#include "search/scheduler.h"
#include "search/search_space.h"
#include "storage/storage.h"

namespace tuner {

struct StudyCore {
  // Constant after construction.
  std::shared_ptr<Storage> storage;
  std::shared_ptr<Sampler> sampler;
  std::shared_ptr<Scheduler> scheduler;  // may be null
  StudyRecord record;
  uint64_t seed = 0;
  std::optional<SearchSpace> space;

  // State below is protected by mutex. A cache of the study's trials by number: finished trials
  // never change, so a refresh re-reads only the trials from the first unfinished one on.
  std::mutex mutex;
  std::vector<FrozenTrial> trials;
  int first_unfinished = 0;

  // Brings `trials` up to date with storage. REQUIRES: mutex held.
  void refresh_locked();
  // A view of the cached trials. REQUIRES: mutex held for as long as the view is used.
  History history_locked() const {
    return History{trials, record.directions};
  }
};

}  // namespace tuner

#endif  // TUNER_TUNER_STUDY_CORE_H_
