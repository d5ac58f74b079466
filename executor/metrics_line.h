// The metrics a command trial prints: one JSON object per stdout line.
//
//   {"step": 3, "val_loss": 0.41, "acc": 0.87}   a report: intermediate metrics at step 3
//   {"val_loss": 0.38, "acc": 0.9}                final metrics (the last such line wins)
//   anything else                                 a log line
//
// "step" must be an integer. The metrics are the members whose values are numbers; NaN and the
// infinities may be written as Python's json module writes them (NaN, Infinity, -Infinity) or as
// the strings "nan", "inf", "-inf". Members of other types (strings, booleans, arrays, objects,
// null) are ignored, so a line may carry extra context. A JSON object without "step" and without
// any number is a log line too.
//
// Thread safety: pure functions.
#ifndef TUNER_EXECUTOR_METRICS_LINE_H_
#define TUNER_EXECUTOR_METRICS_LINE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "wire/protocol.h"

namespace tuner {

struct MetricsLine {
  enum class Kind {
    kText,       // not a metrics line: goes to the log
    kReport,     // step and metrics
    kFinal,      // metrics
    kMalformed,  // looked like a metrics line ('{' first) but is not one: `problem` says why
  };
  Kind kind = Kind::kText;
  int64_t step = 0;  // kReport only
  Metrics metrics;   // kReport and kFinal
  // kReport and kFinal: the metrics written as JSON integers (12345, not 12345.0) that a double
  // holds exactly, in name order; they are stored as integers.
  std::vector<std::string> integers;
  std::string problem;  // kMalformed only, e.g. "not valid JSON", "\"step\" must be an integer"
};

// Classifies one line of stdout (without its newline; surrounding whitespace is ignored).
MetricsLine parse_metrics_line(std::string_view line);

}  // namespace tuner

#endif  // TUNER_EXECUTOR_METRICS_LINE_H_
