#include "drift/report_format.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/strings.h"

namespace tuner::drift {
namespace {

using Json = nlohmann::json;

std::string fixed(double v, const char* format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string describe(const SampleSource& s, int64_t count) {
  std::string out = s.kind + " " + s.path + ": " + std::to_string(count) + " samples";
  if (s.kind == "request log") {
    out += " (" + std::to_string(s.requests) + " requests in " + std::to_string(s.files) +
           (s.files == 1 ? " file" : " files");
    if (!s.first_time.empty()) out += ", " + s.first_time + " .. " + s.last_time;
    if (!s.models.empty()) out += "; model " + join(s.models, ", ");
    if (s.skipped_lines > 0)
      out += "; " + std::to_string(s.skipped_lines) + " malformed lines skipped";
    out += ")";
  }
  return out;
}

std::string shares(const std::vector<int64_t>& counts) {
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  std::string out;
  for (int64_t c : counts) {
    out += (out.empty() ? "" : " ") +
           fixed(total > 0 ? static_cast<double>(c) / static_cast<double>(total) : 0.0, "%.3f");
  }
  return out;
}

std::string threshold_line(const DriftReport& r) {
  const Thresholds& t = r.options.thresholds;
  std::string out = "thresholds: PSI > " + fixed(t.psi_max, "%g");
  if (t.p_min > 0) {
    out += ", p-value < " + fixed(r.p_threshold, "%.3g");
    if (t.bonferroni && r.tests > 1) {
      out += " (" + fixed(t.p_min, "%g") + " / " + std::to_string(r.tests) + " tests, Bonferroni)";
    }
  }
  if (t.ks_max) out += ", KS > " + fixed(*t.ks_max, "%g");
  out += "; PSI over " + std::to_string(r.options.bins) + " reference quantile bins";
  return out;
}

Json source_json(const SampleSource& s, int64_t count) {
  Json j = {{"kind", s.kind}, {"path", s.path}, {"samples", count}};
  if (s.kind == "request log") {
    j["files"] = s.files;
    j["requests"] = s.requests;
    j["skipped_lines"] = s.skipped_lines;
    j["first_time"] = s.first_time.empty() ? Json() : Json(s.first_time);
    j["last_time"] = s.last_time.empty() ? Json() : Json(s.last_time);
    j["models"] = s.models;
  }
  return j;
}

}  // namespace

std::string format_table(const DriftReport& r) {
  std::ostringstream out;
  out << "reference: " << describe(r.reference, r.reference_count) << "\n"
      << "current:   " << describe(r.current, r.current_count) << "\n\n";
  size_t width = std::string("feature").size();
  for (const FeatureDrift& f : r.features) width = std::max(width, f.name.size());
  char line[512];
  std::snprintf(line, sizeof line, "%-*s  %-6s  %10s  %10s  %8s  %6s  %9s  %s\n",
                static_cast<int>(width), "feature", "kind", "ref mean", "cur mean", "PSI", "KS",
                "p-value", "flag");
  out << line;
  for (const FeatureDrift& f : r.features) {
    const std::string flag = f.flags.empty() ? "" : "DRIFT (" + join(f.flags, ", ") + ")";
    std::snprintf(line, sizeof line, "%-*s  %-6s  %10.4g  %10.4g  %8.4f  %6.4f  %9.3g  %s\n",
                  static_cast<int>(width), f.name.c_str(), f.kind.c_str(), f.reference_mean,
                  f.current_mean, f.psi, f.ks.statistic, f.ks.p_value, flag.c_str());
    out << line;
  }
  out << "\n";
  if (r.classes) {
    const ClassDrift& c = *r.classes;
    out << "class distribution (reference " << c.reference_source << ", current "
        << c.current_source << "): PSI " << fixed(c.psi, "%.4f") << ", chi-square "
        << fixed(c.chi_square.statistic, "%.4g") << " (df " << c.chi_square.df << "), p-value "
        << fixed(c.chi_square.p_value, "%.3g")
        << (c.flags.empty() ? "" : "  DRIFT (" + join(c.flags, ", ") + ")") << "\n"
        << "  reference shares: " << shares(c.reference_counts) << "\n"
        << "  current shares:   " << shares(c.current_counts) << "\n\n";
  }
  out << threshold_line(r) << "\n";
  if (!r.notes.empty()) {
    out << "notes:\n";
    for (const std::string& n : r.notes) out << "  " << n << "\n";
  }
  const std::vector<std::string> flagged = r.flagged();
  if (flagged.empty()) {
    out << "no drift: none of " << r.tests << " tests flagged\n";
  } else {
    out << "DRIFT: " << flagged.size() << " of " << r.tests << " flagged: " << join(flagged, ", ")
        << "\n";
  }
  return out.str();
}

std::string format_json(const DriftReport& r) {
  const Thresholds& t = r.options.thresholds;
  Json features = Json::array();
  for (const FeatureDrift& f : r.features) {
    features.push_back({{"name", f.name},
                        {"kind", f.kind},
                        {"reference_mean", f.reference_mean},
                        {"current_mean", f.current_mean},
                        {"psi", f.psi},
                        {"ks", f.ks.statistic},
                        {"p_value", f.ks.p_value},
                        {"flags", f.flags},
                        {"drift", !f.flags.empty()}});
  }
  Json classes;  // null when not compared
  if (r.classes) {
    const ClassDrift& c = *r.classes;
    classes = {{"reference_source", c.reference_source},
               {"current_source", c.current_source},
               {"reference_counts", c.reference_counts},
               {"current_counts", c.current_counts},
               {"psi", c.psi},
               {"chi_square", c.chi_square.statistic},
               {"df", c.chi_square.df},
               {"p_value", c.chi_square.p_value},
               {"flags", c.flags},
               {"drift", !c.flags.empty()}};
  }
  const Json j = {{"reference", source_json(r.reference, r.reference_count)},
                  {"current", source_json(r.current, r.current_count)},
                  {"thresholds",
                   {{"psi_max", t.psi_max},
                    {"p_min", t.p_min},
                    {"bonferroni", t.bonferroni},
                    {"p_threshold", r.p_threshold},
                    {"ks_max", t.ks_max ? Json(*t.ks_max) : Json()},
                    {"bins", r.options.bins},
                    {"epsilon", r.options.epsilon}}},
                  {"tests", r.tests},
                  {"features", features},
                  {"classes", classes},
                  {"notes", r.notes},
                  {"flagged", r.flagged()},
                  {"drift", r.drift()}};
  return j.dump(2) + "\n";
}

}  // namespace tuner::drift
