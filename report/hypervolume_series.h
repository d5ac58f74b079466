// The hypervolume over trials of a study of several objectives: after each count k of COMPLETE
// trials (by number), the hypervolume of the front of the feasible ones among the first k.
// Internal to report/ (the report's "hypervolume" plot, docs/report.md).
//
// Thread safety: a pure function.
#ifndef TUNER_REPORT_HYPERVOLUME_SERIES_H_
#define TUNER_REPORT_HYPERVOLUME_SERIES_H_

#include <cstddef>
#include <vector>

#include "report/study_view.h"

namespace tuner::report {

struct HypervolumeSeries {
  // In loss space (search/pareto.h: maximized objectives negated), one value per objective:
  // nadir_reference() of every feasible COMPLETE trial, so it is the same for every k and the
  // last value is what `tuner status` reports. Empty when no COMPLETE trial is feasible.
  std::vector<double> reference;
  struct Step {
    size_t k = 0;                // COMPLETE trials counted, 1 ... view.complete.size()
    double hypervolume = 0;      // of the feasible front among the first k
    bool front_changed = false;  // a trial among those counted since the last step joined it
  };
  // Ascending k, the last at k = view.complete.size(); non-decreasing hypervolume. Every k when
  // there are at most `max_steps` COMPLETE trials, else an even spread of max_steps of them;
  // fewer (at least 2) when the study's front is so large that they would take more than about
  // a second (tens of thousands of points in 2 or 3 objectives, thousands in 4 or more).
  // Empty when `reference` is, or when too_large.
  std::vector<Step> steps;
  // Even 2 steps would take more than about 2 seconds: the series is left out.
  bool too_large = false;
};

// REQUIRES: view.n_objectives >= 2, max_steps >= 1.
// Cost: each step merges the trials since the last one into the front (pareto_front() of the
// front and them) and, when the front changed, recomputes its hypervolume().
HypervolumeSeries hypervolume_series(const StudyView& view, size_t max_steps);

}  // namespace tuner::report

#endif  // TUNER_REPORT_HYPERVOLUME_SERIES_H_
