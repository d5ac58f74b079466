#include "drift/compare.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "trials/error.h"

namespace tuner::drift {
namespace {

std::string describe(const Samples& s) { return s.source.kind + " " + s.source.path; }

double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

void check_options(const DriftOptions& o) {
  const Thresholds& t = o.thresholds;
  if (o.bins < 2) throw Error(ErrorCode::kInvalidArgument, "bins must be >= 2");
  if (!(o.epsilon > 0) || !(o.epsilon < 1)) {
    throw Error(ErrorCode::kInvalidArgument, "epsilon must be in (0, 1)");
  }
  if (!(t.psi_max > 0)) throw Error(ErrorCode::kInvalidArgument, "the PSI threshold must be > 0");
  if (!(t.p_min >= 0 && t.p_min < 1)) {
    throw Error(ErrorCode::kInvalidArgument, "the p-value threshold must be in [0, 1)");
  }
  if (t.ks_max && !(*t.ks_max >= 0 && *t.ks_max < 1)) {
    throw Error(ErrorCode::kInvalidArgument, "the KS threshold must be in [0, 1)");
  }
}

// The current's input columns in the order of the reference's names.
void align_columns(const Samples& reference, const Samples& current, FeatureTable& cur) {
  if (reference.input_names.empty() || current.input_names.empty()) return;
  if (reference.input_names == current.input_names) return;
  FeatureTable aligned;
  for (const std::string& name : reference.input_names) {
    const auto it = std::find(current.input_names.begin(), current.input_names.end(), name);
    if (it == current.input_names.end()) {
      throw Error(ErrorCode::kInvalidArgument,
                  describe(current) + " has no column '" + name + "' (the reference has)");
    }
    const size_t k = static_cast<size_t>(it - current.input_names.begin());
    aligned.names.push_back(name);
    aligned.kinds.push_back("input");
    aligned.columns.push_back(std::move(cur.columns[k]));
  }
  cur = std::move(aligned);
}

// The class of each sample, and where it came from: predicted first, else labels.
const std::vector<int32_t>* classes_of(const Samples& s, std::string& source) {
  if (!s.predicted.empty()) {
    source = "predicted";
    return &s.predicted;
  }
  if (!s.labels.empty()) {
    source = "labels";
    return &s.labels;
  }
  return nullptr;
}

// Values the inputs span, for a hint when the two sides' units differ (pixels 0..255 against
// [0, 1]).
float largest_abs(const std::vector<float>& v) {
  float m = 0;
  for (float x : v) m = std::max(m, std::abs(x));
  return m;
}

}  // namespace

std::vector<std::string> DriftReport::flagged() const {
  std::vector<std::string> out;
  for (const FeatureDrift& f : features) {
    if (!f.flags.empty()) out.push_back(f.name);
  }
  if (classes && !classes->flags.empty()) out.push_back("class_distribution");
  return out;
}

DriftReport compare(const Samples& reference, const Samples& current, const DriftOptions& options) {
  check_options(options);
  DriftReport report;
  report.reference = reference.source;
  report.current = current.source;
  report.reference_count = reference.count;
  report.current_count = current.count;
  report.options = options;
  for (const Samples* s : {&reference, &current}) {
    for (const std::string& note : s->notes) report.notes.push_back(note);
  }
  if (reference.count == 0 || current.count == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                describe(reference.count == 0 ? reference : current) + ": no samples");
  }
  if (reference.input_width != current.input_width) {
    throw Error(ErrorCode::kInvalidArgument,
                "the reference's samples (" + describe(reference) + ") have " +
                    std::to_string(reference.input_width) + " input values, the current's (" +
                    describe(current) + ") " + std::to_string(current.input_width));
  }
  FeatureTable ref = input_features(reference, options.features);
  FeatureTable cur = input_features(current, options.features);
  if (options.features.image.rank() == 0) align_columns(reference, current, cur);

  if (reference.output_width > 0 && current.output_width > 0) {
    if (reference.output_width != current.output_width) {
      throw Error(ErrorCode::kInvalidArgument,
                  "the reference's outputs have " + std::to_string(reference.output_width) +
                      " values, the current's " + std::to_string(current.output_width) +
                      ": not the same model's");
    }
    FeatureTable ro = output_features(reference), co = output_features(current);
    for (FeatureTable* t : {&ref, &cur}) {
      FeatureTable& o = t == &ref ? ro : co;
      t->names.insert(t->names.end(), o.names.begin(), o.names.end());
      t->kinds.insert(t->kinds.end(), o.kinds.begin(), o.kinds.end());
      for (auto& c : o.columns) t->columns.push_back(std::move(c));
    }
  } else if (reference.output_width > 0 || current.output_width > 0) {
    report.notes.push_back(std::string("the model's outputs are not compared: the ") +
                           (reference.output_width > 0 ? "current" : "reference") +
                           " has none (--model computes them)");
  }

  // The classes: counts over 0..K-1, K the outputs' width when known.
  std::string ref_source, cur_source;
  const std::vector<int32_t>* rc = classes_of(reference, ref_source);
  const std::vector<int32_t>* cc = classes_of(current, cur_source);
  if (rc && cc) {
    ClassDrift cd;
    cd.reference_source = ref_source;
    cd.current_source = cur_source;
    int64_t k = std::max(reference.output_width, current.output_width);
    for (const auto* v : {rc, cc}) {
      for (int32_t c : *v) k = std::max<int64_t>(k, c + 1);
    }
    cd.reference_counts.assign(static_cast<size_t>(k), 0);
    cd.current_counts.assign(static_cast<size_t>(k), 0);
    for (int32_t c : *rc) cd.reference_counts[static_cast<size_t>(c)]++;
    for (int32_t c : *cc) cd.current_counts[static_cast<size_t>(c)]++;
    report.classes = std::move(cd);
    if (ref_source != cur_source) {
      report.notes.push_back("the class distributions compared are the reference's " + ref_source +
                             " and the current's " + cur_source +
                             " classes: the model's errors count as shift (--model predicts the "
                             "reference's)");
    }
  } else {
    report.notes.push_back(std::string("the predicted class distribution is not compared: the ") +
                           (rc   ? "current has"
                            : cc ? "reference has"
                                 : "reference and the current have") +
                           " no classes (--model predicts them; idx images bring labels)");
  }

  const Thresholds& t = options.thresholds;
  report.tests = static_cast<int>(ref.names.size()) + (report.classes ? 1 : 0);
  report.p_threshold = t.bonferroni && report.tests > 0 ? t.p_min / report.tests : t.p_min;
  for (size_t k = 0; k < ref.names.size(); ++k) {
    FeatureDrift f;
    f.name = ref.names[k];
    f.kind = ref.kinds[k];
    f.reference_mean = mean(ref.columns[k]);
    f.current_mean = mean(cur.columns[k]);
    f.psi =
        population_stability_index(ref.columns[k], cur.columns[k], options.bins, options.epsilon);
    f.ks = ks_two_sample(ref.columns[k], cur.columns[k]);
    if (f.psi > t.psi_max) f.flags.push_back("psi");
    if (f.ks.p_value < report.p_threshold) f.flags.push_back("p");
    if (t.ks_max && f.ks.statistic > *t.ks_max) f.flags.push_back("ks");
    report.features.push_back(std::move(f));
  }
  if (report.classes) {
    ClassDrift& cd = *report.classes;
    cd.psi = psi_from_counts(cd.reference_counts, cd.current_counts, options.epsilon);
    cd.chi_square = chi_square_homogeneity(cd.reference_counts, cd.current_counts);
    if (cd.psi > t.psi_max) cd.flags.push_back("psi");
    if (cd.chi_square.p_value < report.p_threshold) cd.flags.push_back("p");
  }

  constexpr int64_t kFew = 100;
  if (std::min(reference.count, current.count) < kFew) {
    report.notes.push_back("few samples (" + std::to_string(reference.count) + " reference, " +
                           std::to_string(current.count) + " current): PSI over " +
                           std::to_string(options.bins) + " bins is noisy below ~" +
                           std::to_string(kFew) + " per side");
  }
  const float ref_max = largest_abs(reference.inputs), cur_max = largest_abs(current.inputs);
  if ((ref_max > 2 && cur_max <= 1) || (cur_max > 2 && ref_max <= 1)) {
    report.notes.push_back("the inputs' ranges differ in kind (reference up to " +
                           std::to_string(ref_max) + ", current up to " + std::to_string(cur_max) +
                           "): are both in the same units? A uint8 model's log holds pixel values "
                           "0..255");
  }
  return report;
}

}  // namespace tuner::drift
