// Warm start: an earlier study's finished trials as prior observations of a new one
// (StudyOptions::warm_start, History::prior; docs/samplers.md, "Warm start"). Internal to tuner/.
//
// The rules, applied to each trial of the earlier study:
// - Only COMPLETE trials with a finite value per objective and PRUNED ones (with their
//   intermediate values) are read; a trial that broke its own study's constraints is left out,
//   and the others carry no constraint values (the new study's constraints may differ).
// - Objectives: as many as the new study's, else Error(kFailedPrecondition). Other directions or
//   other metric names (when both studies name theirs) are refused unless allow_other_objective;
//   then the values of an objective whose direction differs are negated.
// - Parameters, when the new study has a space: one in both whose distributions are compatible
//   (search/space/space_change.h, the rule for a study's own space changes) is read into the new
//   distribution; a trial whose value the new distribution does not hold (a narrowed range,
//   another step) is left out whole, since it was measured where the new study cannot go. A
//   parameter only the earlier study has, or whose distribution changed incompatibly, is
//   ignored; one only the new space has takes its ParamSpec::default_value when it has one, and
//   is missing from the observation otherwise. Without a space the params are read as stored.
// - The observations are renumbered 0, 1, ... in the earlier study's order, without attributes.
// Pure functions, but read_prior(), which reads storage.
#ifndef TUNER_TUNER_WARM_START_H_
#define TUNER_TUNER_WARM_START_H_

#include <string>
#include <vector>

#include "search/space/search_space.h"
#include "storage/storage.h"
#include "trials/frozen_trial.h"
#include "tuner/study.h"

namespace tuner {

struct Prior {
  std::vector<FrozenTrial> trials;  // History::prior
  std::string summary;              // Study::warm_start()
};

// The observations that the trials of the earlier study `source` (its record and its trials)
// give a study of `directions` over `space` (null: define-by-run). `where` names the source in
// the summary and in errors ("study 'a' in a.db"). Throws Error(kFailedPrecondition) for
// objectives that do not match (see the top).
Prior prior_observations(const StudyRecord& source, const std::vector<FrozenTrial>& trials,
                         const std::vector<StudyDirection>& directions, const SearchSpace* space,
                         const WarmStartOptions& options, const std::string& where);

// Reads the earlier study that `options` names (in `own`, the new study's storage, when
// storage_path is empty) and converts it with prior_observations(). `study` is the new study's
// name. Throws Error(kNotFound) naming a missing file, or a missing study with the studies the
// file has; Error(kInvalidArgument) when a study names itself.
Prior read_prior(const WarmStartOptions& options, Storage& own, const std::string& study,
                 const std::vector<StudyDirection>& directions, const SearchSpace* space);

// The kWarmStartAttr value of `options` (its storage_path made absolute), with the number of
// observations read.
std::string warm_start_to_json(const WarmStartOptions& options, size_t observations);
// The options stored in `json` (kWarmStartAttr of study `study`); Error(kDataLoss) when it is
// not what warm_start_to_json() writes.
WarmStartOptions warm_start_from_json(const std::string& json, const std::string& study);

}  // namespace tuner

#endif  // TUNER_TUNER_WARM_START_H_
