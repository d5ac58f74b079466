#include "report/svg_plot.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace tuner::report {

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0.0) return "0";  // also -0
  char buffer[32];
  if (std::abs(v) >= 1e4 && std::abs(v) < 1e9 && v == std::round(v)) {
    std::snprintf(buffer, sizeof(buffer), "%.0f", v);  // trial numbers and counts in full
    return buffer;
  }
  std::snprintf(buffer, sizeof(buffer), "%.4g", v);
  return buffer;
}

void append_px(std::string& out, double px) {
  char buffer[32];
  auto r = std::to_chars(buffer, buffer + sizeof(buffer), std::round(px * 10.0) / 10.0,
                         std::chars_format::fixed, 1);
  std::string_view text(buffer, static_cast<size_t>(r.ptr - buffer));
  if (text.ends_with(".0")) text.remove_suffix(2);
  if (text == "-0") text = "0";
  out += text;
}

std::string ramp_color(double t) {
  // Three stops, close to viridis's ends and middle: readable on white, and in grey scale.
  static constexpr double kStops[3][3] = {{68, 1, 84}, {33, 145, 140}, {253, 231, 37}};
  t = std::isfinite(t) ? std::clamp(t, 0.0, 1.0) : 0.0;
  int segment = t < 0.5 ? 0 : 1;
  double u = t < 0.5 ? t * 2.0 : (t - 0.5) * 2.0;
  char buffer[8];
  int rgb[3];
  for (int k = 0; k < 3; ++k) {
    rgb[k] = static_cast<int>(
        std::lround(kStops[segment][k] + (kStops[segment + 1][k] - kStops[segment][k]) * u));
  }
  std::snprintf(buffer, sizeof(buffer), "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
  return buffer;
}

Scale Scale::linear(double lo, double hi, double from_px, double to_px) {
  if (!(hi > lo)) {
    double pad = lo == 0.0 ? 1.0 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  return Scale(Kind::kLinear, lo, hi, from_px, to_px);
}

Scale Scale::log(double lo, double hi, double from_px, double to_px) {
  double l = std::log10(lo), h = std::log10(hi);
  if (!(h > l)) {
    l -= 0.5;
    h += 0.5;
  }
  return Scale(Kind::kLog, l, h, from_px, to_px);
}

Scale Scale::bands(std::vector<std::string> categories, double from_px, double to_px) {
  Scale s(Kind::kBands, 0, static_cast<double>(std::max<size_t>(1, categories.size())), from_px,
          to_px);
  s.categories_ = std::move(categories);
  return s;
}

double Scale::operator()(double v) const {
  double d = v;
  if (kind_ == Kind::kLog) d = v > 0 ? std::log10(v) : lo_;
  if (kind_ == Kind::kBands) d = v + 0.5;
  return from_px_ + (d - lo_) / (hi_ - lo_) * (to_px_ - from_px_);
}

double Scale::band_width() const { return std::abs(to_px_ - from_px_) / (hi_ - lo_); }

namespace {

// Round-valued ticks between lo and hi, about `target` of them.
std::vector<double> nice_ticks(double lo, double hi, int target) {
  double span = hi - lo;
  if (!(span > 0) || !std::isfinite(span)) return {lo};
  double raw = span / std::max(1, target);
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9 && ticks.size() < 50;
       t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

}  // namespace

std::vector<Scale::Tick> Scale::ticks(int target) const {
  std::vector<Tick> out;
  if (kind_ == Kind::kBands) {
    for (size_t i = 0; i < categories_.size(); ++i) {
      std::string label = categories_[i];
      if (label.size() > 14) label = label.substr(0, 13) + "…";
      out.push_back({(*this)(static_cast<double>(i)), label});
    }
    return out;
  }
  if (kind_ == Kind::kLog) {
    double first = std::ceil(lo_ - 1e-9), last = std::floor(hi_ + 1e-9);
    if (last - first >= 1) {
      double stride = std::max(1.0, std::ceil((last - first + 1) / (target + 1)));
      for (double e = first; e <= last; e += stride) {
        double v = std::pow(10.0, e);
        out.push_back({(*this)(v), format_number(v)});
      }
      return out;
    }
    for (double v : nice_ticks(std::pow(10.0, lo_), std::pow(10.0, hi_), target)) {
      if (v > 0) out.push_back({(*this)(v), format_number(v)});
    }
    return out;
  }
  for (double v : nice_ticks(lo_, hi_, target)) out.push_back({(*this)(v), format_number(v)});
  return out;
}

void open_plot(std::string& out, std::string_view id, std::string_view kind,
               std::string_view extra_classes, const Frame& frame, std::string_view title) {
  out += "<svg class=\"plot";
  if (!extra_classes.empty()) out.append(" ").append(extra_classes);
  out += "\" id=\"";
  out += escape_html(id);
  out += "\" data-plot=\"";
  out += kind;
  out += "\" viewBox=\"0 0 ";
  append_px(out, frame.width);
  out += " ";
  append_px(out, frame.height);
  out += "\" width=\"";
  append_px(out, frame.width);
  out += "\" height=\"";
  append_px(out, frame.height);
  out += "\" role=\"img\"><title>";
  out += escape_html(title);
  out += "</title>";
}

void draw_x_axis(std::string& out, const Frame& frame, const Scale& x, std::string_view label) {
  out += "<g class=\"axes x-axis\"><line class=\"axis\" x1=\"";
  append_px(out, frame.x0());
  out += "\" y1=\"";
  append_px(out, frame.y0());
  out += "\" x2=\"";
  append_px(out, frame.x1());
  out += "\" y2=\"";
  append_px(out, frame.y0());
  out += "\"/>";
  int target = std::max(2, static_cast<int>((frame.x1() - frame.x0()) / 90));
  for (const Scale::Tick& t : x.ticks(target)) {
    out += "<line class=\"grid\" x1=\"";
    append_px(out, t.px);
    out += "\" y1=\"";
    append_px(out, frame.y1());
    out += "\" x2=\"";
    append_px(out, t.px);
    out += "\" y2=\"";
    append_px(out, frame.y0());
    out += "\"/><text class=\"tick\" text-anchor=\"middle\" x=\"";
    append_px(out, t.px);
    out += "\" y=\"";
    append_px(out, frame.y0() + 14);
    out += "\">";
    out += escape_html(t.label);
    out += "</text>";
  }
  out += "<text class=\"label\" text-anchor=\"middle\" x=\"";
  append_px(out, (frame.x0() + frame.x1()) / 2);
  out += "\" y=\"";
  append_px(out, frame.height - 6);
  out += "\">";
  out += escape_html(label);
  out += "</text></g>";
}

void draw_y_axis(std::string& out, const Frame& frame, const Scale& y, std::string_view label) {
  out += "<g class=\"axes y-axis\"><line class=\"axis\" x1=\"";
  append_px(out, frame.x0());
  out += "\" y1=\"";
  append_px(out, frame.y1());
  out += "\" x2=\"";
  append_px(out, frame.x0());
  out += "\" y2=\"";
  append_px(out, frame.y0());
  out += "\"/>";
  int target = std::max(2, static_cast<int>((frame.y0() - frame.y1()) / 50));
  for (const Scale::Tick& t : y.ticks(target)) {
    out += "<line class=\"grid\" x1=\"";
    append_px(out, frame.x0());
    out += "\" y1=\"";
    append_px(out, t.px);
    out += "\" x2=\"";
    append_px(out, frame.x1());
    out += "\" y2=\"";
    append_px(out, t.px);
    out += "\"/><text class=\"tick\" text-anchor=\"end\" x=\"";
    append_px(out, frame.x0() - 4);
    out += "\" y=\"";
    append_px(out, t.px + 4);
    out += "\">";
    out += escape_html(t.label);
    out += "</text>";
  }
  out += "<text class=\"label\" text-anchor=\"middle\" transform=\"translate(12,";
  append_px(out, (frame.y0() + frame.y1()) / 2);
  out += ") rotate(-90)\">";
  out += escape_html(label);
  out += "</text></g>";
}

void draw_legend_entry(std::string& out, double x, double y, std::string_view css_class,
                       std::string_view text) {
  out += "<g class=\"legend\"><line class=\"";
  out += css_class;
  out += "\" x1=\"";
  append_px(out, x);
  out += "\" y1=\"";
  append_px(out, y - 4);
  out += "\" x2=\"";
  append_px(out, x + 16);
  out += "\" y2=\"";
  append_px(out, y - 4);
  out += "\"/><text x=\"";
  append_px(out, x + 20);
  out += "\" y=\"";
  append_px(out, y);
  out += "\">";
  out += escape_html(text);
  out += "</text></g>";
}

void close_plot(std::string& out) { out += "</svg>"; }

}  // namespace tuner::report
