#include "sweep/objective_direction.h"

#include <algorithm>
#include <cctype>

namespace tuner {
namespace {

constexpr const char* kMaximizeLong[] = {"accuracy", "precision", "recall"};
constexpr const char* kMaximizeShort[] = {"acc", "auc", "f1", "r2"};
constexpr const char* kMinimizeLong[] = {"loss", "error"};
constexpr const char* kMinimizeShort[] = {"mse", "rmse", "mae"};

template <size_t NL, size_t NS>
bool names(const std::string& lower, const std::vector<std::string>& words,
           const char* const (&long_words)[NL], const char* const (&short_words)[NS]) {
  for (const char* w : long_words) {
    if (lower.find(w) != std::string::npos) return true;
  }
  for (const char* w : short_words) {
    if (std::find(words.begin(), words.end(), w) != words.end()) return true;
  }
  return false;
}

}  // namespace

std::optional<StudyDirection> direction_suggested_by(const std::string& metric) {
  std::string lower;
  std::vector<std::string> words(1);
  for (char c : metric) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    lower += l;
    if (std::isalnum(static_cast<unsigned char>(c))) {
      words.back() += l;
    } else if (!words.back().empty()) {
      words.emplace_back();
    }
  }
  const bool maximize = names(lower, words, kMaximizeLong, kMaximizeShort);
  const bool minimize = names(lower, words, kMinimizeLong, kMinimizeShort);
  if (maximize == minimize) return std::nullopt;
  return maximize ? StudyDirection::kMaximize : StudyDirection::kMinimize;
}

std::vector<std::string> direction_warnings(const SweepFile& sweep) {
  std::vector<std::string> lines;
  for (size_t i = 0; i < sweep.objectives.size(); ++i) {
    const SweepObjective& o = sweep.objectives[i];
    const std::optional<StudyDirection> suggested = direction_suggested_by(o.metric);
    if (!suggested || *suggested == o.direction) continue;
    const std::string field = sweep.objectives.size() == 1
                                  ? "objective.direction"
                                  : "objectives[" + std::to_string(i) + "].direction";
    lines.push_back((sweep.path.empty() ? "the sweep" : sweep.path) + ": " + field + " is \"" +
                    std::string(to_string(o.direction)) + "\", but the metric \"" + o.metric +
                    "\" reads as one to " + std::string(to_string(*suggested)) +
                    ": the sampler will look for its " +
                    (o.direction == StudyDirection::kMinimize ? "lowest" : "highest") +
                    " values and a scheduler stop the trials with the others; if that is not "
                    "meant, change the direction (a study keeps its direction: give it another "
                    "name)");
  }
  return lines;
}

}  // namespace tuner
