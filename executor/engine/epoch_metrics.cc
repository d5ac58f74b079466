#include "executor/engine/epoch_metrics.h"

#include <sys/resource.h>

#include <chrono>
#include <limits>

namespace tuner::engine {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

Metrics epoch_metrics(const training::EpochMetrics& m, int64_t train, training::Task task) {
  Metrics out = {
      {"train_loss", m.train_loss},
      {"val_loss", m.val_loss},
      {"lr", m.lr},
      {"epoch_seconds", m.seconds},
      {"samples_per_second", m.seconds > 0 ? static_cast<double>(train) / m.seconds : kNaN},
      {"peak_rss_mb", peak_rss_mb()}};
  if (task == training::Task::kRegression) {
    out["val_rmse"] = m.val_rmse;
    out["val_mae"] = m.val_mae;
  } else {
    out["val_accuracy"] = m.val_accuracy;
    if (task == training::Task::kBinary) out["val_auc"] = m.val_auc;
  }
  return out;
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
