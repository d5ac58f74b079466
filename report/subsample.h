// Deterministic thinning of what a plot or table draws, so that a report of a huge study stays
// small. Internal to report/.
//
// Thread safety: a pure function.
#ifndef TUNER_REPORT_SUBSAMPLE_H_
#define TUNER_REPORT_SUBSAMPLE_H_

#include <cstddef>
#include <vector>

namespace tuner::report {

// At most `cap` of the indices 0 .. n-1, ascending: the indices in `keep` first (in their
// order; the first `cap` of them when there are more), then an even spread over the others
// (every k-th one), so that both the trials that matter and the shape of the whole are drawn.
// All of 0 .. n-1 when n <= cap. Duplicates and out-of-range entries of `keep` are ignored.
std::vector<size_t> spread_sample(size_t n, size_t cap, const std::vector<size_t>& keep);

}  // namespace tuner::report

#endif  // TUNER_REPORT_SUBSAMPLE_H_
