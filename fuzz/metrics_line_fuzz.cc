// libFuzzer target for parse_metrics_line() (executor/metrics_line.h), which reads every line a
// command trial's program prints to standard output.
//
// The input is one line. Properties checked on every input:
//   1. parsing returns, whatever the line (it never throws; ASan/UBSan catch memory errors);
//   2. a report or final line has metrics (a report may have none), its integers are metric
//      names in name order; a malformed line says why; a log line carries nothing.
// Build and run: scripts/fuzz (docs/testing.md).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "executor/metrics_line.h"

namespace {

[[noreturn]] void broken(const char* what, std::string_view line) {
  std::fprintf(stderr, "%s\n%.*s\n", what, static_cast<int>(line.size()), line.data());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using Kind = tuner::MetricsLine::Kind;
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const tuner::MetricsLine m = tuner::parse_metrics_line(line);
  switch (m.kind) {
    case Kind::kText:
      if (!m.metrics.empty() || !m.integers.empty() || !m.problem.empty()) {
        broken("a log line with metrics or a problem", line);
      }
      break;
    case Kind::kMalformed:
      if (m.problem.empty() || !m.metrics.empty()) broken("a malformed line without a why", line);
      break;
    case Kind::kFinal:
    case Kind::kReport:
      if (m.kind == Kind::kFinal && m.metrics.empty()) broken("final metrics without any", line);
      if (!std::is_sorted(m.integers.begin(), m.integers.end()) ||
          std::adjacent_find(m.integers.begin(), m.integers.end()) != m.integers.end()) {
        broken("integers out of name order", line);
      }
      for (const auto& name : m.integers) {
        if (!m.metrics.contains(name)) broken("an integer that is not a metric", line);
      }
      if (!m.problem.empty()) broken("metrics with a problem", line);
      break;
  }
  return 0;
}
