// The area under the ROC curve of a binary classifier's scores.
#ifndef TUNER_TRAINING_ROC_AUC_H_
#define TUNER_TRAINING_ROC_AUC_H_

#include <cstdint>
#include <span>

namespace tuner::training {

// The probability that a random positive (label 1) scores above a random negative (label 0),
// a tie counting one half: the Mann-Whitney U statistic over P * N, computed exactly from the
// average ranks of the sorted scores (O(n log n)). NaN when either class is absent.
// REQUIRES: scores.size() == labels.size(); every label 0 or 1 (else std::invalid_argument);
// no NaN score.
double roc_auc(std::span<const float> scores, std::span<const int32_t> labels);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_ROC_AUC_H_
