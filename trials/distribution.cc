#include "trials/distribution.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "trials/error.h"
#include "trials/overloaded.h"

namespace tuner {

namespace {

// Relative tolerance for "step divides the range" and "value is on the grid" with floats.
constexpr double kGridTolerance = 1e-8;

bool on_float_grid(double low, double step, double value) {
  double k = (value - low) / step;
  return std::abs(k - std::round(k)) <= kGridTolerance * std::max(1.0, std::abs(k));
}

std::optional<DistributionProblem> problem(std::string field, std::string message) {
  return DistributionProblem{std::move(field), std::move(message)};
}

std::optional<DistributionProblem> find_float_problem(const FloatDistribution& d) {
  if (!std::isfinite(d.low)) return problem("low", "must be a finite number");
  if (!std::isfinite(d.high)) return problem("high", "must be a finite number");
  if (d.low > d.high) {
    return problem("high", "must be >= low (" + to_string(ParamValue(d.low)) + ")");
  }
  // Samplers work with the width: one that overflows would give every draw as inf.
  if (!std::isfinite(d.high - d.low)) {
    return problem("high", "the range [" + to_string(ParamValue(d.low)) + ", " +
                               to_string(ParamValue(d.high)) +
                               "] is wider than the largest double: narrow it, or use a log scale");
  }
  if (d.log && d.step) return problem("step", "cannot be combined with a log scale");
  if (d.log && d.low <= 0) return problem("low", "must be > 0 for a log scale");
  if (d.step) {
    if (!std::isfinite(*d.step) || *d.step <= 0) return problem("step", "must be > 0");
    if (!on_float_grid(d.low, *d.step, d.high)) {
      return problem("step", to_string(ParamValue(*d.step)) + " does not divide the range [" +
                                 to_string(ParamValue(d.low)) + ", " +
                                 to_string(ParamValue(d.high)) + "]");
    }
  }
  return std::nullopt;
}

std::optional<DistributionProblem> find_int_problem(const IntDistribution& d) {
  if (d.low > d.high) return problem("high", "must be >= low (" + std::to_string(d.low) + ")");
  int64_t width = 0;
  if (__builtin_sub_overflow(d.high, d.low, &width)) {
    return problem("high", "the range [" + std::to_string(d.low) + ", " + std::to_string(d.high) +
                               "] is wider than the largest 64-bit integer: narrow it");
  }
  if (d.step <= 0) return problem("step", "must be > 0");
  if (d.log && d.step != 1) return problem("step", "must be 1 for a log scale");
  if (d.log && d.low < 1) return problem("low", "must be >= 1 for a log scale");
  if (width % d.step != 0) {
    return problem("step", std::to_string(d.step) + " does not divide the range [" +
                               std::to_string(d.low) + ", " + std::to_string(d.high) + "]");
  }
  return std::nullopt;
}

std::optional<DistributionProblem> find_categorical_problem(const CategoricalDistribution& d) {
  if (d.choices.empty()) return problem("choices", "must not be empty");
  for (size_t i = 0; i < d.choices.size(); ++i) {
    if (const auto* x = std::get_if<double>(&d.choices[i]); x && !std::isfinite(*x)) {
      return problem("choices[" + std::to_string(i) + "]", "must be a finite number");
    }
    for (size_t j = 0; j < i; ++j) {
      if (d.choices[i] == d.choices[j]) {
        return problem(
            "choices[" + std::to_string(i) + "]",
            "repeats choice " + std::to_string(j) + " (" + to_string(d.choices[i]) + ")");
      }
    }
  }
  return std::nullopt;
}

std::optional<DistributionProblem> find_normal_problem(const NormalDistribution& d) {
  if (!std::isfinite(d.mu)) return problem("mu", "must be a finite number");
  if (!std::isfinite(d.sigma) || d.sigma <= 0) return problem("sigma", "must be > 0");
  if (d.q && (!std::isfinite(*d.q) || *d.q <= 0)) return problem("q", "must be > 0");
  return std::nullopt;
}

int64_t round_to_int_grid(const IntDistribution& d, double x) {
  double k = std::round((x - static_cast<double>(d.low)) / static_cast<double>(d.step));
  int64_t v = d.low + static_cast<int64_t>(k) * d.step;
  return std::clamp(v, d.low, d.high);
}

}  // namespace

std::optional<DistributionProblem> find_problem(const Distribution& distribution) {
  return std::visit(
      Overloaded{
          [](const FloatDistribution& d) { return find_float_problem(d); },
          [](const IntDistribution& d) { return find_int_problem(d); },
          [](const CategoricalDistribution& d) { return find_categorical_problem(d); },
          [](const NormalDistribution& d) { return find_normal_problem(d); },
      },
      distribution);
}

void validate(const Distribution& distribution, const std::string& where) {
  if (auto p = find_problem(distribution)) {
    throw Error(ErrorCode::kInvalidArgument, where + "." + p->field + ": " + p->message);
  }
}

bool contains(const Distribution& distribution, const ParamValue& value) {
  return std::visit(Overloaded{
                        [&](const FloatDistribution& d) {
                          const auto* x = std::get_if<double>(&value);
                          if (!x || !std::isfinite(*x) || *x < d.low || *x > d.high) return false;
                          return !d.step || on_float_grid(d.low, *d.step, *x);
                        },
                        [&](const IntDistribution& d) {
                          const auto* x = std::get_if<int64_t>(&value);
                          return x && *x >= d.low && *x <= d.high && (*x - d.low) % d.step == 0;
                        },
                        [&](const CategoricalDistribution& d) {
                          for (const auto& c : d.choices) {
                            if (c == value) return true;
                          }
                          return false;
                        },
                        [&](const NormalDistribution& d) {
                          const auto* x = std::get_if<double>(&value);
                          // exp() is positive, but rounding it to a multiple of q can give 0.
                          if (!x || !std::isfinite(*x) || (d.log && (d.q ? *x < 0 : *x <= 0)))
                            return false;
                          return !d.q || on_float_grid(0.0, *d.q, *x);
                        },
                    },
                    distribution);
}

double to_internal(const Distribution& distribution, const ParamValue& value) {
  if (!contains(distribution, value)) {
    throw Error(ErrorCode::kInvalidArgument,
                "value " + to_string(value) + " is not in " + to_string(distribution));
  }
  if (const auto* c = std::get_if<CategoricalDistribution>(&distribution)) {
    for (size_t i = 0; i < c->choices.size(); ++i) {
      if (c->choices[i] == value) return static_cast<double>(i);
    }
  }
  return as_double(value);
}

ParamValue from_internal(const Distribution& distribution, double internal) {
  return std::visit(
      Overloaded{
          [&](const FloatDistribution& d) -> ParamValue {
            double x = internal;
            if (d.step) x = d.low + std::round((x - d.low) / *d.step) * *d.step;
            return std::clamp(x, d.low, d.high);
          },
          [&](const IntDistribution& d) -> ParamValue { return round_to_int_grid(d, internal); },
          [&](const CategoricalDistribution& d) -> ParamValue {
            double index = std::round(internal);
            if (!(index >= 0 && index < static_cast<double>(d.choices.size()))) {
              throw Error(ErrorCode::kInvalidArgument,
                          "choice index " + to_string(ParamValue(internal)) +
                              " is out of range for " + to_string(distribution));
            }
            return d.choices[static_cast<size_t>(index)];
          },
          [&](const NormalDistribution& d) -> ParamValue {
            double x = internal;
            if (d.q) x = std::round(x / *d.q) * *d.q;
            return x;
          },
      },
      distribution);
}

bool is_single(const Distribution& distribution) {
  return std::visit(Overloaded{
                        [](const FloatDistribution& d) { return d.low == d.high; },
                        [](const IntDistribution& d) { return d.low == d.high; },
                        [](const CategoricalDistribution& d) { return d.choices.size() == 1; },
                        [](const NormalDistribution&) { return false; },
                    },
                    distribution);
}

std::string to_string(const Distribution& distribution) {
  auto num = [](double x) { return to_string(ParamValue(x)); };
  return std::visit(Overloaded{
                        [&](const FloatDistribution& d) {
                          std::string s = "float[" + num(d.low) + ", " + num(d.high);
                          if (d.log) s += ", log";
                          if (d.step) s += ", step " + num(*d.step);
                          return s + "]";
                        },
                        [&](const IntDistribution& d) {
                          std::string s =
                              "int[" + std::to_string(d.low) + ", " + std::to_string(d.high);
                          if (d.log) s += ", log";
                          if (d.step != 1) s += ", step " + std::to_string(d.step);
                          return s + "]";
                        },
                        [&](const CategoricalDistribution& d) {
                          std::string s = "categorical[";
                          for (size_t i = 0; i < d.choices.size(); ++i) {
                            s += (i ? ", " : "") + to_string(d.choices[i]);
                          }
                          return s + "]";
                        },
                        [&](const NormalDistribution& d) {
                          std::string s = std::string(d.log ? "lognormal(" : "normal(") +
                                          num(d.mu) + ", " + num(d.sigma);
                          if (d.q) s += ", q " + num(*d.q);
                          return s + ")";
                        },
                    },
                    distribution);
}

}  // namespace tuner
