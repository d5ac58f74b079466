#include "serving/numeric_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace tuner::serving {

namespace {

class Reader {
 public:
  explicit Reader(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  void skip_space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool eat(char c) {
    skip_space();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  bool peek(char c) {
    skip_space();
    return p_ < end_ && *p_ == c;
  }
  bool at_end() {
    skip_space();
    return p_ == end_;
  }
  // A string without escapes (field names), or nullopt.
  std::optional<std::string_view> plain_string() {
    if (!eat('"')) return std::nullopt;
    const char* begin = p_;
    while (p_ < end_ && *p_ != '"' && *p_ != '\\') ++p_;
    if (p_ == end_ || *p_ != '"') return std::nullopt;
    return std::string_view(begin, static_cast<size_t>(p_++ - begin));
  }
  // A JSON number, -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, as float(double(number));
  // nullopt for anything else or a value past float32's range.
  std::optional<float> number() {
    skip_space();
    const char* begin = p_;
    const char* q = p_;
    auto digits = [&] {
      const char* from = q;
      while (q < end_ && *q >= '0' && *q <= '9') ++q;
      return q > from;
    };
    if (q < end_ && *q == '-') ++q;
    if (q < end_ && *q == '0') {
      ++q;
    } else if (!digits()) {
      return std::nullopt;
    }
    if (q < end_ && *q == '.') {
      ++q;
      if (!digits()) return std::nullopt;
    }
    if (q < end_ && (*q == 'e' || *q == 'E')) {
      ++q;
      if (q < end_ && (*q == '+' || *q == '-')) ++q;
      if (!digits()) return std::nullopt;
    }
    double value = 0;
    const bool sign = *begin == '-';
    if (q - begin - sign <= 15 &&
        std::all_of(begin + sign, q, [](char c) { return c >= '0' && c <= '9'; })) {
      // An integer (pixel values): exact in a double, summed faster than from_chars parses.
      int64_t whole = 0;
      for (const char* c = begin + sign; c < q; ++c) whole = whole * 10 + (*c - '0');
      p_ = q;
      return static_cast<float>(static_cast<double>(sign ? -whole : whole));
    }
    const auto [next, ec] = std::from_chars(begin, q, value);
    if (ec != std::errc() || next != q) return std::nullopt;
    const float f = static_cast<float>(value);
    if (!std::isfinite(f)) return std::nullopt;
    p_ = q;
    return f;
  }

 private:
  const char* p_;
  const char* end_;
};

// Reads nested arrays of numbers at `depth` into `values`, keeping every array at a depth to the
// length the first one there had (`lengths`) and the numbers at one depth (`leaf`): a
// rectangular tensor.
bool read_array(Reader& r, int depth, int max_depth, std::vector<int64_t>& lengths, int& leaf,
                std::vector<float>& values) {
  if (depth >= max_depth || !r.eat('[') || r.peek(']')) return false;
  const bool numbers = !r.peek('[');
  if (numbers) {
    if (leaf == -1) leaf = depth;
    if (leaf != depth) return false;
  } else if (leaf != -1 && depth >= leaf) {
    return false;
  }
  int64_t n = 0;
  for (;;) {
    if (numbers) {
      const std::optional<float> v = r.number();
      if (!v) return false;
      values.push_back(*v);
    } else if (!read_array(r, depth + 1, max_depth, lengths, leaf, values)) {
      return false;
    }
    ++n;
    if (r.eat(']')) break;
    if (!r.eat(',')) return false;
  }
  const size_t d = static_cast<size_t>(depth);
  if (lengths.size() <= d) lengths.resize(d + 1, -1);
  if (lengths[d] == -1) lengths[d] = n;
  return lengths[d] == n;
}

}  // namespace

std::optional<NumericTensor> read_numeric_tensor(std::string_view body, int max_depth) {
  Reader r(body);
  if (!r.eat('{')) return std::nullopt;
  NumericTensor t;
  bool have_tensor = false;
  for (;;) {
    const std::optional<std::string_view> key = r.plain_string();
    if (!key || !r.eat(':')) return std::nullopt;
    if ((*key == "inputs" || *key == "instances") && !have_tensor) {
      t.field = std::string(*key);
      int leaf = -1;
      if (!read_array(r, 0, max_depth - 1, t.dims, leaf, t.values)) return std::nullopt;
      have_tensor = true;
    } else if (*key == "params") {
      if (!r.eat('{') || !r.eat('}')) return std::nullopt;
    } else {
      return std::nullopt;
    }
    if (r.eat('}')) break;
    if (!r.eat(',')) return std::nullopt;
  }
  if (!have_tensor || !r.at_end()) return std::nullopt;
  return t;
}

}  // namespace tuner::serving
