// A DriftReport for people (a table) and for programs (JSON; docs/drift.md lists its fields).
// Pure functions; thread-safe.
#ifndef TUNER_DRIFT_REPORT_FORMAT_H_
#define TUNER_DRIFT_REPORT_FORMAT_H_

#include <string>

#include "drift/compare.h"

namespace tuner::drift {

// The sources, one row per feature (feature, kind, reference and current means, PSI, KS,
// p-value, flag), the class distribution, the thresholds, the notes and the verdict line.
std::string format_table(const DriftReport& report);

// The report as one JSON object (pretty-printed, newline-terminated).
std::string format_json(const DriftReport& report);

}  // namespace tuner::drift

#endif  // TUNER_DRIFT_REPORT_FORMAT_H_
