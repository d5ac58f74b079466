// The drawing vocabulary of the HTML report: scales, axes, colours and text escaping for inline
// SVG. Internal to report/.
//
// Every plot is `<svg class="plot" id=ID data-plot=KIND>` holding `<g class="axes">` and
// `<g class="marks">`; the drawn data (points, lines, bars) go in the marks group, so a browser
// test can count them per plot.
//
// Thread safety: pure functions and value types.
#ifndef TUNER_REPORT_SVG_PLOT_H_
#define TUNER_REPORT_SVG_PLOT_H_

#include <string>
#include <string_view>
#include <vector>

namespace tuner::report {

// Text escaped for HTML and SVG content and attribute values.
std::string escape_html(std::string_view text);

// A short readable number: 4 significant digits ("0.01234", "1.5e+05", "42").
std::string format_number(double v);

// A pixel coordinate with one decimal, the precision the plots need (keeps files small).
void append_px(std::string& out, double px);

// A colour on a dark-blue -> teal -> yellow ramp; t in [0, 1] (clamped). "#rrggbb".
std::string ramp_color(double t);

// Maps data to pixels along one axis: linear, log10, or bands (one per category, by index).
class Scale {
 public:
  // Pads an empty domain (lo == hi) so that it has a width.
  static Scale linear(double lo, double hi, double from_px, double to_px);
  // REQUIRES: 0 < lo <= hi.
  static Scale log(double lo, double hi, double from_px, double to_px);
  static Scale bands(std::vector<std::string> categories, double from_px, double to_px);

  // Linear and log: the pixel of a value. Bands: the centre of band `index`.
  double operator()(double v) const;
  bool is_bands() const { return kind_ == Kind::kBands; }
  bool is_log() const { return kind_ == Kind::kLog; }
  double band_width() const;  // bands only
  const std::vector<std::string>& categories() const { return categories_; }
  double from_px() const { return from_px_; }
  double to_px() const { return to_px_; }

  struct Tick {
    double px;
    std::string label;
  };
  // About `target` round-valued ticks inside the domain (every band for bands).
  std::vector<Tick> ticks(int target = 5) const;

 private:
  enum class Kind { kLinear, kLog, kBands };
  Scale(Kind kind, double lo, double hi, double from_px, double to_px)
      : kind_(kind), lo_(lo), hi_(hi), from_px_(from_px), to_px_(to_px) {}
  Kind kind_;
  double lo_, hi_;  // domain (log: of log10 values)
  double from_px_, to_px_;
  std::vector<std::string> categories_;
};

// Where the plotting area of a plot lies (pixels).
struct Frame {
  double width = 640;
  double height = 300;
  double left = 64;  // margins around the plotting area
  double right = 16;
  double top = 16;
  double bottom = 44;
  double x0() const { return left; }
  double x1() const { return width - right; }
  double y0() const { return height - bottom; }  // bottom edge (SVG y grows downwards)
  double y1() const { return top; }
};

// Appends `<svg class="plot CLASSES" id=ID data-plot=KIND ...>` with a title for screen readers.
void open_plot(std::string& out, std::string_view id, std::string_view kind,
               std::string_view extra_classes, const Frame& frame, std::string_view title);
// Appends the bottom axis (ticks, grid lines, label) inside `<g class="axes">`.
void draw_x_axis(std::string& out, const Frame& frame, const Scale& x, std::string_view label);
// Appends the left axis (ticks, grid lines, label) inside `<g class="axes">`.
void draw_y_axis(std::string& out, const Frame& frame, const Scale& y, std::string_view label);
// Appends one legend entry at (x, y): a swatch of `css_class` and its text.
void draw_legend_entry(std::string& out, double x, double y, std::string_view css_class,
                       std::string_view text);
void close_plot(std::string& out);

}  // namespace tuner::report

#endif  // TUNER_REPORT_SVG_PLOT_H_
