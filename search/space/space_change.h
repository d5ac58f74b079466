// SpaceChange: how a new search space differs from the space a stored study was run with, and
// whether the study can go on with it.
//
// A study keeps its trials' values with their distributions (Optuna's trial_params), and a
// sampler continues it by reading those values under the new space. A change is compatible when
// every old value still reads the same way under the new distribution (Optuna's samplers and its
// storages accept the study, and ours learn from the old trials); otherwise it is refused, since
// the study could no longer be sampled (docs/search_space.md, "Changing the space of a study"):
// - incompatible: another kind of distribution (float, int, categorical, normal); a float, int or
//   normal parameter whose log scale is switched on or off; a categorical that loses a choice
//   (choices of another type, integers -> strings, lose them all).
// - compatible: a new parameter, a removed one, a wider or narrower range or another step, new
//   choices of a categorical that keeps the old ones, a fixed value replaced by another.
// Pure functions; thread-safe.
#ifndef TUNER_SEARCH_SPACE_SPACE_CHANGE_H_
#define TUNER_SEARCH_SPACE_SPACE_CHANGE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "search/space/search_space.h"
#include "trials/distribution.h"

namespace tuner {

// The stored side of a comparison: each parameter's distribution, in the study's order.
using StoredDistributions = std::vector<std::pair<std::string, Distribution>>;

struct SpaceChange {
  struct Changed {
    std::string name;
    Distribution before;
    Distribution after;
  };
  std::vector<std::string> added;    // in the new space's order
  std::vector<std::string> removed;  // in the stored order
  std::vector<Changed> changed;      // compatible changes, in the new space's order

  bool empty() const { return added.empty() && removed.empty() && changed.empty(); }
  // One line: "+ activation; - momentum; hidden [16, 256] -> [16, 512]"; "" when empty.
  std::string summary() const;
};

// Why `after` cannot replace `before` for the same parameter ("another kind of distribution",
// "the log scale is switched off", "the choices changed type (integers -> strings)", "choice 64
// is gone"), or nullopt when it can.
std::optional<std::string> incompatibility(const Distribution& before, const Distribution& after);

// A refused change: the parameter, both distributions and the reason.
struct SpaceConflict {
  std::string name;
  Distribution before;
  Distribution after;
  std::string reason;
  // "parameter 'units' was categorical[16, 32] and is now categorical[\"16\", \"32\"]: the
  // choices changed type (integers -> strings)"
  std::string message() const;
};

// Compares `next` with the stored distributions. The first incompatible change is returned as
// a conflict; otherwise the compatible changes.
struct SpaceComparison {
  SpaceChange change;
  std::optional<SpaceConflict> conflict;
};
SpaceComparison compare_spaces(const StoredDistributions& stored, const SearchSpace& next);

// The stored side for a space: its parameters and their distributions.
StoredDistributions distributions_of(const SearchSpace& space);

}  // namespace tuner

#endif  // TUNER_SEARCH_SPACE_SPACE_CHANGE_H_
