// The runs/log-batch calls that carry a run's metrics, params and tags: as few as MLflow's
// limits allow (1000 metrics, 100 params, 100 tags, 1000 entities in one call), in the given
// order, so that a run's metrics for a step arrive together and a failed call can be resent.
//
// Thread safety: pure functions.
#ifndef TUNER_TRACKING_LOG_BATCHES_H_
#define TUNER_TRACKING_LOG_BATCHES_H_

#include <vector>

#include "tracking/mlflow_client.h"

namespace tuner::tracking {

struct LogBatch {
  std::vector<MlflowMetric> metrics;
  std::vector<MlflowTag> params;
  std::vector<MlflowTag> tags;
  bool empty() const { return metrics.empty() && params.empty() && tags.empty(); }
};

// Splits into batches within MLflow's limits: params and tags fill the first batches (MLflow
// stores params before the metrics that depend on them in the UI), metrics follow in order.
// Empty input gives no batch. Param values longer than kMaxParamValueLength and tag values longer
// than kMaxTagValueLength are cut, ending in "...".
std::vector<LogBatch> split_batches(std::vector<MlflowMetric> metrics,
                                    std::vector<MlflowTag> params, std::vector<MlflowTag> tags);

}  // namespace tuner::tracking

#endif  // TUNER_TRACKING_LOG_BATCHES_H_
