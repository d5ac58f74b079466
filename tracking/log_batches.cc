#include "tracking/log_batches.h"

#include <algorithm>

namespace tuner::tracking {

namespace {

void cut(std::string& value, size_t limit) {
  if (value.size() <= limit) return;
  value.resize(limit - 3);
  // Not inside a UTF-8 sequence: drop continuation bytes and the lead byte they follow.
  while (!value.empty() && (static_cast<unsigned char>(value.back()) & 0xC0) == 0x80) {
    value.pop_back();
  }
  if (!value.empty() && (static_cast<unsigned char>(value.back()) & 0x80) != 0) value.pop_back();
  value += "...";
}

}  // namespace

std::vector<LogBatch> split_batches(std::vector<MlflowMetric> metrics,
                                    std::vector<MlflowTag> params, std::vector<MlflowTag> tags) {
  for (MlflowTag& p : params) cut(p.value, kMaxParamValueLength);
  for (MlflowTag& t : tags) cut(t.value, kMaxTagValueLength);
  std::vector<LogBatch> batches;
  size_t p = 0, t = 0, m = 0;
  while (p < params.size() || t < tags.size() || m < metrics.size()) {
    LogBatch batch;
    const size_t np = std::min(kMaxParamsPerBatch, params.size() - p);
    batch.params.assign(params.begin() + p, params.begin() + p + np);
    p += np;
    const size_t nt = std::min(kMaxTagsPerBatch, tags.size() - t);
    batch.tags.assign(tags.begin() + t, tags.begin() + t + nt);
    t += nt;
    const size_t room = std::min(kMaxMetricsPerBatch, kMaxEntitiesPerBatch - np - nt);
    const size_t nm = std::min(room, metrics.size() - m);
    batch.metrics.assign(metrics.begin() + m, metrics.begin() + m + nm);
    m += nm;
    batches.push_back(std::move(batch));
  }
  return batches;
}

}  // namespace tuner::tracking
