#include "executor/engine/epoch_metrics.h"

#include <sys/resource.h>

#include <chrono>
#include <limits>

namespace tuner::engine {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

Metrics epoch_metrics(const training::EpochMetrics& m, int64_t train) {
  return {{"train_loss", m.train_loss},
          {"val_loss", m.val_loss},
          {"val_accuracy", m.val_accuracy},
          {"lr", m.lr},
          {"epoch_seconds", m.seconds},
          {"samples_per_second", m.seconds > 0 ? static_cast<double>(train) / m.seconds : kNaN},
          {"peak_rss_mb", peak_rss_mb()}};
}

double peak_rss_mb() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return kNaN;
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace tuner::engine
