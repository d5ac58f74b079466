#include "training/roc_auc.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace tuner::training {

double roc_auc(std::span<const float> scores, std::span<const int32_t> labels) {
  if (scores.size() != labels.size()) {
    throw std::invalid_argument("roc_auc: " + std::to_string(scores.size()) + " scores but " +
                                std::to_string(labels.size()) + " labels");
  }
  const size_t n = scores.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  // The sum of the positives' ranks (1-based), each run of tied scores given its average rank.
  double positive_rank_sum = 0.0;
  int64_t positives = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    int64_t run_positives = 0;
    for (; j < n && scores[order[j]] == scores[order[i]]; ++j) {
      const int32_t label = labels[order[j]];
      if (label != 0 && label != 1) {
        throw std::invalid_argument("roc_auc: label " + std::to_string(label) + " of sample " +
                                    std::to_string(order[j]) + " is neither 0 nor 1");
      }
      run_positives += label;
    }
    const double average_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    positive_rank_sum += average_rank * static_cast<double>(run_positives);
    positives += run_positives;
    i = j;
  }
  const int64_t negatives = static_cast<int64_t>(n) - positives;
  if (positives == 0 || negatives == 0) return std::numeric_limits<double>::quiet_NaN();
  const double p = static_cast<double>(positives);
  const double u = positive_rank_sum - p * (p + 1.0) / 2.0;
  return u / (p * static_cast<double>(negatives));
}

}  // namespace tuner::training
