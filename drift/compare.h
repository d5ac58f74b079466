// A drift check: the reference's and the current samples' features compared one by one (PSI and
// the two-sample Kolmogorov-Smirnov test), and their class distributions (PSI and a chi-square
// test), each flagged against thresholds (docs/drift.md). Pure functions; thread-safe.
#ifndef TUNER_DRIFT_COMPARE_H_
#define TUNER_DRIFT_COMPARE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "drift/chi_square.h"
#include "drift/features.h"
#include "drift/ks.h"
#include "drift/psi.h"
#include "drift/samples.h"

namespace tuner::drift {

struct Thresholds {
  // A feature (or the class distribution) whose PSI is above psi_max drifted. Default 0.2, the
  // customary "significant shift" line (0.1: slight).
  double psi_max = 0.2;
  // ... or whose p-value (KS; chi-square for the classes) is below p_min, divided by the number
  // of tests when `bonferroni` (the family-wise error rate stays at p_min however many features
  // are compared). Default 0.05, corrected. 0 turns the p-values off.
  double p_min = 0.05;
  bool bonferroni = true;
  // ... or, when set, whose KS statistic is above ks_max (in [0, 1]). Default unset.
  std::optional<double> ks_max;
};

struct DriftOptions {
  int bins = kDefaultBins;           // PSI's quantile bins, >= 2
  double epsilon = kDefaultEpsilon;  // PSI's share of an empty bin, > 0
  Thresholds thresholds;
  FeatureOptions features;
};

// What flagged a feature or the classes: "psi", "p" or "ks".
struct FeatureDrift {
  std::string name;
  std::string kind;  // "input" or "output"
  double reference_mean = 0, current_mean = 0;
  double psi = 0;
  KsResult ks;
  std::vector<std::string> flags;  // empty: no drift
};

struct ClassDrift {
  std::string reference_source, current_source;           // "predicted" or "labels"
  std::vector<int64_t> reference_counts, current_counts;  // per class 0..K-1
  double psi = 0;
  ChiSquareResult chi_square;
  std::vector<std::string> flags;
};

struct DriftReport {
  SampleSource reference, current;
  int64_t reference_count = 0, current_count = 0;
  DriftOptions options;
  int tests = 0;           // p-value tests: the features, and the classes when compared
  double p_threshold = 0;  // the p-value below which a test flags (p_min, corrected)
  std::vector<FeatureDrift> features;
  std::optional<ClassDrift> classes;  // unset when a side has no classes (a note says why)
  std::vector<std::string> notes;     // the sources' notes, then the check's

  // Whether anything is flagged, and what (the features' names, "class_distribution").
  bool drift() const { return !flagged().empty(); }
  std::vector<std::string> flagged() const;
};

// Compares `current` with `reference`. The inputs must have the same width (and, when both name
// them, the same names: the current's are reordered to the reference's); the outputs are compared
// when both have them (of one width); the classes when both have predicted classes or labels
// (predicted first). Throws Error(kInvalidArgument) for inputs or outputs of different widths, a
// column the other side lacks, bins < 2, epsilon <= 0 or a threshold out of range.
DriftReport compare(const Samples& reference, const Samples& current, const DriftOptions& options);

}  // namespace tuner::drift

#endif  // TUNER_DRIFT_COMPARE_H_
