// Prepared: a trial of a study on its way to an executor, with its lineage.
//
// Each lease holds one (a multi-node trial's nodes other than 0 hold a copy without the live
// handle), and a study run keeps those asked and not yet leased (StudyRun::prepared).
#ifndef TUNER_COORDINATOR_WORK_H_
#define TUNER_COORDINATOR_WORK_H_

#include <optional>
#include <vector>

#include "search/schedulers/pbt.h"
#include "tuner/study.h"

namespace tuner {

// A trial asked from the study and not yet leased (its first executor vanished before TRIAL
// could be queued), or the lineage of one that is.
struct Prepared {
  std::optional<Trial> trial;  // the live handle (Study::ask or Study::adopt)
  Params params;
  int attempt = 0;
  std::vector<int> history;     // numbers of the earlier, failed attempts
  bool asked_in_batch = false;  // asked in the open batch: gone if the batch fails
  // A PBT segment (StudyRunOptions::pbt): its lineage; the first trial of its parent's lineage,
  // whose checkpoint (TrialJob::checkpoint_path) it starts from; and the step of the report it was
  // told to pause at (later reports are not stored). Unset otherwise.
  std::optional<PbtLineage> segment;
  std::optional<int> start_from;
  std::optional<int64_t> paused_at;
  // The step of the report its job was told to stop at: reports that arrive before the stop
  // lands are not stored.
  std::optional<int64_t> stopped_at;
};

}  // namespace tuner

#endif  // TUNER_COORDINATOR_WORK_H_
