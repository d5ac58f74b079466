#include "executor/metrics_line.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "util/strings.h"

namespace tuner {

namespace {

constexpr int kMaxDepth = 64;

// Python's json.dumps writes NaN, Infinity and -Infinity, which JSON lacks: rewrite those bare
// tokens (outside strings) as the strings "nan", "inf" and "-inf". Returns nullopt when the
// nesting is deeper than kMaxDepth.
std::optional<std::string> normalize(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  bool in_string = false;
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) return std::nullopt;
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (text.compare(i, 3, "NaN") == 0) {
      out += "\"nan\"";
      i += 2;
      continue;
    } else if (text.compare(i, 8, "Infinity") == 0) {
      out += "\"inf\"";
      i += 7;
      continue;
    } else if (text.compare(i, 9, "-Infinity") == 0) {
      out += "\"-inf\"";
      i += 8;
      continue;
    }
    out += c;
  }
  return out;
}

std::optional<double> metric_value(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

MetricsLine malformed(std::string problem) {
  MetricsLine line;
  line.kind = MetricsLine::Kind::kMalformed;
  line.problem = std::move(problem);
  return line;
}

}  // namespace

MetricsLine parse_metrics_line(std::string_view raw) {
  std::string_view text = trim(raw);
  if (text.empty() || text.front() != '{') return {};
  auto normalized = normalize(text);
  if (!normalized) return malformed("nested deeper than " + std::to_string(kMaxDepth));
  nlohmann::json object = nlohmann::json::parse(*normalized, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded() || !object.is_object()) return malformed("not valid JSON");

  MetricsLine line;
  auto step = object.find("step");
  if (step != object.end()) {
    if (step->is_number_unsigned() && step->get<uint64_t>() > uint64_t{INT64_MAX}) {
      return malformed("\"step\" is out of the int64 range");
    }
    if (!step->is_number_integer()) return malformed("\"step\" must be an integer");
    line.kind = MetricsLine::Kind::kReport;
    line.step = step->get<int64_t>();
  }
  for (const auto& [name, value] : object.items()) {
    if (name == "step") continue;
    if (auto v = metric_value(value)) {
      line.metrics[name] = *v;
      if (value.is_number_integer() && std::abs(*v) <= 0x1p53) line.integers.push_back(name);
    }
  }
  if (line.kind != MetricsLine::Kind::kReport) {
    line.kind = line.metrics.empty() ? MetricsLine::Kind::kText : MetricsLine::Kind::kFinal;
  }
  return line;
}

}  // namespace tuner
