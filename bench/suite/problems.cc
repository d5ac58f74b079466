#include "bench/suite/problems.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <numbers>
#include <stdexcept>

#include "bench/suite/bbob.h"
#include "bench/suite/instance_rng.h"
#include "bench/test_functions.h"

namespace tuner::bench::suite {
namespace {

using Point = std::vector<double>;
constexpr double kPi = std::numbers::pi;

// --- Parameter helpers ------------------------------------------------------------------------

ParamSpec float_param(std::string name, double low, double high, bool log = false) {
  return {.name = std::move(name), .type = ParamType::kFloat, .low = low, .high = high, .log = log};
}
ParamSpec int_param(std::string name, double low, double high, bool log = false) {
  return {.name = std::move(name), .type = ParamType::kInt, .low = low, .high = high, .log = log};
}
ParamSpec cat_param(std::string name, std::vector<std::string> choices) {
  return {.name = std::move(name),
          .type = ParamType::kCategorical,
          .low = 0.0,
          .high = static_cast<double>(choices.size() - 1),
          .choices = std::move(choices)};
}
ParamSpec child(ParamSpec spec, std::string parent, std::vector<int> choices) {
  spec.parent = std::move(parent);
  spec.parent_choices = std::move(choices);
  return spec;
}

std::vector<ParamSpec> box(const std::string& prefix, size_t dim, double low, double high) {
  std::vector<ParamSpec> params;
  for (size_t i = 0; i < dim; ++i) {
    params.push_back(float_param(prefix + std::to_string(i), low, high));
  }
  return params;
}

// The classic functions (branin, hartmann3/6, rosenbrock, ackley, levy): bench/test_functions.h.
constexpr double kBraninMin = 0.397887357729738;  // 5 / (4 pi)
constexpr double kHartmann3Min = -3.86278214782076;
constexpr double kHartmann6Min = -3.32236801141551;

// --- Mixed spaces -----------------------------------------------------------------------------

// A rotated ellipsoid (condition 1e3) over 8 integers in [-20, 20], centred on integer targets.
Problem int_ellipsoid() {
  constexpr int kDim = 8;
  InstanceRng rng(0x1E11150000000001ULL);
  auto target = std::make_shared<std::vector<double>>(kDim);
  for (double& t : *target) t = std::floor(rng.uniform(-15.0, 16.0));
  auto rotation = std::make_shared<std::vector<double>>(random_rotation(kDim, rng));
  Problem p{.name = "int_ellipsoid_rot8",
            .group = "mixed",
            .summary =
                "rotated ellipsoid (condition 1e3) of (n - t) / 4 over 8 integers in "
                "[-20, 20], t fixed integers; minimum 0 at n = t"};
  for (int i = 0; i < kDim; ++i) p.params.push_back(int_param("n" + std::to_string(i), -20, 20));
  p.optimum = 0.0;
  p.minimizer = *target;
  p.objective = [target, rotation](const Point& x) {
    double f = 0.0;
    for (size_t i = 0; i < kDim; ++i) {
      double z = 0.0;
      for (size_t k = 0; k < kDim; ++k)
        z += (*rotation)[i * kDim + k] * (x[k] - (*target)[k]) / 4.0;
      f += std::pow(1e3, static_cast<double>(i) / (kDim - 1)) * z * z;
    }
    return f;
  };
  return p;
}

// A rotated ellipsoid (condition 1e6) over 4 integers of 2, 4, 8 and 16 values and a float, as
// bbob-mixint's ellipsoid in 5-D: integer j of n values sits at -5 + 10 (j + 0.5) / n in [-5, 5],
// the float as it is; the optimum's integers are fixed values, its float a fixed number.
Problem mixint_ellipsoid() {
  constexpr int kDim = 5;
  static constexpr int kValues[kDim - 1] = {2, 4, 8, 16};
  InstanceRng rng(0x313E11150000000DULL);
  auto at = [](int i, double x) { return i < kDim - 1 ? -5.0 + 10.0 * (x + 0.5) / kValues[i] : x; };
  std::vector<double> minimizer(kDim);
  for (int i = 0; i < kDim - 1; ++i) {
    minimizer[static_cast<size_t>(i)] = std::floor(rng.uniform(0.0, kValues[i]));
  }
  minimizer[kDim - 1] = rng.uniform(-4.0, 4.0);
  auto target = std::make_shared<std::vector<double>>(kDim);
  for (int i = 0; i < kDim; ++i)
    (*target)[static_cast<size_t>(i)] = at(i, minimizer[static_cast<size_t>(i)]);
  auto rotation = std::make_shared<std::vector<double>>(random_rotation(kDim, rng));
  Problem p{.name = "mixint_ellipsoid_d5",
            .group = "mixed",
            .summary =
                "rotated ellipsoid (condition 1e6) over 4 integers of 2, 4, 8 and 16 values "
                "(spread over [-5, 5]) and a float in [-5, 5]; min 0"};
  for (int i = 0; i < kDim - 1; ++i) {
    p.params.push_back(int_param("n" + std::to_string(i), 0, kValues[i] - 1));
  }
  p.params.push_back(float_param("x", -5, 5));
  p.optimum = 0.0;
  p.minimizer = minimizer;
  p.objective = [target, rotation, at](const Point& x) {
    double f = 0.0;
    for (int i = 0; i < kDim; ++i) {
      double z = 0.0;
      for (int k = 0; k < kDim; ++k) {
        z += (*rotation)[static_cast<size_t>(i * kDim + k)] *
             (at(k, x[static_cast<size_t>(k)]) - (*target)[static_cast<size_t>(k)]);
      }
      f += std::pow(1e6, static_cast<double>(i) / (kDim - 1)) * z * z;
    }
    return f;
  };
  return p;
}

// Floats, a log float, integers, a log integer and two categoricals that move the optima of the
// others (the best centre of x0, x1 depends on `kind`, the best lr on `act`).
double mixed_cat_int(const Point& x) {
  static constexpr double kKindOffset[4] = {0.5, 0.0, 0.8, 0.3};
  static constexpr double kCentre[4][2] = {{1.0, -2.0}, {-1.5, 2.5}, {3.0, 0.0}, {0.0, 0.0}};
  static constexpr double kActOffset[3] = {0.0, 0.2, 0.1};
  static constexpr double kBestLogLr[3] = {-2.5, -3.0, -2.0};
  const size_t kind = static_cast<size_t>(x[0]);
  const size_t act = static_cast<size_t>(x[7]);
  const double d0 = x[1] - kCentre[kind][0], d1 = x[2] - kCentre[kind][1];
  return kKindOffset[kind] + (d0 * d0 + d1 * d1 + d0 * d1) +
         std::pow(std::log10(x[3]) - kBestLogLr[act], 2) + 4.0 * std::pow(x[4] - 0.3, 2) +
         std::pow((x[5] - 6.0) / 3.0, 2) + std::pow(std::log2(x[6]) - 7.0, 2) / 4.0 +
         kActOffset[act];
}

std::vector<ParamSpec> mixed_cat_int_params() {
  return {cat_param("kind", {"k0", "k1", "k2", "k3"}),
          float_param("x0", -5.0, 5.0),
          float_param("x1", -5.0, 5.0),
          float_param("lr", 1e-5, 1.0, /*log=*/true),
          float_param("u", 0.0, 1.0),
          int_param("layers", 1, 16),
          int_param("units", 8, 1024, /*log=*/true),
          cat_param("act", {"relu", "tanh", "gelu"})};
}

// Sets p's objective to f and its optimum and minimizer by enumerating every point of a space
// of categoricals with these numbers of choices (the first varying fastest; the first minimum
// found kept).
void set_objective_by_enumeration(Problem& p, const std::vector<size_t>& choices,
                                  std::function<double(const Point&)> f) {
  size_t count = 1;
  for (size_t c : choices) count *= c;
  double best = INFINITY;
  Point point(choices.size());
  for (size_t code = 0; code < count; ++code) {
    size_t rest = code;
    for (size_t i = 0; i < choices.size(); ++i) {
      point[i] = static_cast<double>(rest % choices[i]);
      rest /= choices[i];
    }
    if (const double v = f(point); v < best) {
      best = v;
      p.minimizer = point;
    }
  }
  p.optimum = best;
  p.objective = std::move(f);
}

// Six categoricals of five choices: a random table per choice and per pair of neighbours on a
// ring; the minimum found by enumerating the 5^6 points.
Problem categorical6() {
  constexpr size_t kVars = 6, kChoices = 5;
  InstanceRng rng(0xCA7E600000000001ULL);
  auto unary = std::make_shared<std::array<std::array<double, kChoices>, kVars>>();
  auto pair = std::make_shared<std::array<std::array<double, kChoices * kChoices>, kVars>>();
  for (auto& row : *unary) {
    for (double& v : row) v = rng.uniform();
  }
  for (auto& row : *pair) {
    for (double& v : row) v = 2.0 * rng.uniform();
  }
  auto f = [unary, pair](const Point& x) {
    double v = 0.0;
    for (size_t i = 0; i < kVars; ++i) {
      const size_t c = static_cast<size_t>(x[i]), next = static_cast<size_t>(x[(i + 1) % kVars]);
      v += (*unary)[i][c] + (*pair)[i][c * kChoices + next];
    }
    return v;
  };
  Problem p{.name = "categorical6",
            .group = "mixed",
            .summary =
                "6 categoricals of 5 choices: random unary and ring-neighbour pair tables; "
                "minimum by enumeration"};
  for (size_t i = 0; i < kVars; ++i) {
    p.params.push_back(cat_param("c" + std::to_string(i), {"a", "b", "c", "d", "e"}));
  }
  set_objective_by_enumeration(p, std::vector<size_t>(kVars, kChoices), f);
  return p;
}

// Held out from tuning the GP's categorical handling: eight categoricals of 3 or 4 choices, an
// additive table per choice plus four pairwise interaction tables (0-3, 1-5, 2-7, 4-6) and one
// three-way term; the minimum by enumerating the 20,736 points.
Problem categorical8_heldout() {
  constexpr size_t kVars = 8;
  constexpr std::array<size_t, kVars> kChoices = {4, 3, 4, 3, 4, 3, 4, 3};
  constexpr std::array<std::pair<size_t, size_t>, 4> kPairs = {{{0, 3}, {1, 5}, {2, 7}, {4, 6}}};
  InstanceRng rng(0xCA7E800000000002ULL);
  auto unary = std::make_shared<std::array<std::array<double, 4>, kVars>>();
  auto pair = std::make_shared<std::array<std::array<double, 16>, kPairs.size()>>();
  auto triple = std::make_shared<std::array<double, 64>>();
  for (auto& row : *unary) {
    for (double& v : row) v = 2.0 * rng.uniform();
  }
  for (auto& row : *pair) {
    for (double& v : row) v = 1.5 * rng.uniform();
  }
  for (double& v : *triple) v = rng.uniform();
  auto f = [unary, pair, triple, kPairs](const Point& x) {
    auto at = [&](size_t i) { return static_cast<size_t>(x[i]); };
    double v = 0.0;
    for (size_t i = 0; i < kVars; ++i) v += (*unary)[i][at(i)];
    for (size_t k = 0; k < kPairs.size(); ++k) {
      v += (*pair)[k][at(kPairs[k].first) * 4 + at(kPairs[k].second)];
    }
    return v + (*triple)[at(0) * 16 + at(2) * 4 + at(4)];
  };
  Problem p{.name = "categorical8_heldout",
            .group = "mixed",
            .summary =
                "8 categoricals of 3-4 choices: additive tables, 4 pair and one three-way "
                "interaction; minimum by enumeration"};
  const std::vector<std::string> names = {"a", "b", "c", "d"};
  for (size_t i = 0; i < kVars; ++i) {
    p.params.push_back(
        cat_param("c" + std::to_string(i),
                  std::vector<std::string>(
                      names.begin(), names.begin() + static_cast<std::ptrdiff_t>(kChoices[i]))));
  }
  set_objective_by_enumeration(p, {kChoices.begin(), kChoices.end()}, f);
  return p;
}

// --- Conditional spaces -----------------------------------------------------------------------

// A model choice, each model with parameters of its own, and a parameter they share.
Problem conditional_models() {
  Problem p{.name = "conditional_models",
            .group = "conditional",
            .summary =
                "model in {linear, tree, net} chooses 2, 3 or 5 params of its own (floats, "
                "log floats, ints, a log int, categoricals) + 1 shared float; minimum 0 "
                "(net)"};
  p.params = {cat_param("model", {"linear", "tree", "net"}),
              float_param("scale", 0.0, 1.0),
              child(float_param("alpha", 1e-6, 1.0, true), "model", {0}),
              child(float_param("l1_ratio", 0.0, 1.0), "model", {0}),
              child(int_param("depth", 1, 16), "model", {1}),
              child(int_param("min_leaf", 1, 100, true), "model", {1}),
              child(cat_param("criterion", {"gini", "entropy"}), "model", {1}),
              child(float_param("lr", 1e-5, 1e-1, true), "model", {2}),
              child(int_param("layers", 1, 6), "model", {2}),
              child(int_param("width", 16, 512, true), "model", {2}),
              child(float_param("dropout", 0.0, 0.8), "model", {2}),
              child(cat_param("optimizer", {"sgd", "adam", "rmsprop"}), "model", {2})};
  p.optimum = 0.0;
  const double nan = std::nan("");
  p.minimizer = {2, 0.6, nan, nan, nan, nan, nan, std::pow(10.0, -3.5), 3, 128, 0.25, 1};
  p.objective = [](const Point& x) {
    double v = 2.0 * std::pow(x[1] - 0.6, 2);
    switch (static_cast<int>(x[0])) {
      case 0:
        return v + 0.6 + std::pow(std::log10(x[2]) + 3.0, 2) / 4.0 + std::pow(x[3] - 0.2, 2);
      case 1:
        return v + 0.3 + std::pow((x[4] - 9.0) / 4.0, 2) + std::pow(std::log10(x[5]) - 1.0, 2) +
               (x[6] == 1.0 ? 0.15 : 0.0);
      default: {
        static constexpr double kBestLogLr[3] = {-2.0, -3.5, -3.0};
        static constexpr double kOptOffset[3] = {0.3, 0.0, 0.1};
        const size_t opt = static_cast<size_t>(x[11]);
        return v + std::pow(std::log10(x[7]) - kBestLogLr[opt], 2) / 2.0 +
               std::pow((x[8] - 3.0) / 2.0, 2) + std::pow(std::log2(x[9]) - 7.0, 2) / 8.0 +
               2.0 * std::pow(x[10] - 0.25, 2) + kOptOffset[opt];
      }
    }
  };
  return p;
}

// A function choice: Hartmann3 + 1, Hartmann6, or Branin / 10 - 3, each on params of its own.
Problem conditional_functions() {
  Problem p{.name = "conditional_functions",
            .group = "conditional",
            .summary =
                "fn in {hartmann3, hartmann6, branin} chooses 3, 6 or 2 floats: Hartmann3 "
                "+ 1 (min -2.863), Hartmann6 (min -3.322), Branin / 10 - 3 (min -2.960)"};
  p.params.push_back(cat_param("fn", {"hartmann3", "hartmann6", "branin"}));
  for (int i = 0; i < 3; ++i) {
    p.params.push_back(child(float_param("h3_x" + std::to_string(i), 0, 1), "fn", {0}));
  }
  for (int i = 0; i < 6; ++i) {
    p.params.push_back(child(float_param("h6_x" + std::to_string(i), 0, 1), "fn", {1}));
  }
  p.params.push_back(child(float_param("br_x0", -5.0, 10.0), "fn", {2}));
  p.params.push_back(child(float_param("br_x1", 0.0, 15.0), "fn", {2}));
  p.optimum = kHartmann6Min;
  const double nan = std::nan("");
  p.minimizer = {1,        nan,      nan,      nan,    0.20169, 0.150011,
                 0.476874, 0.275332, 0.311652, 0.6573, nan,     nan};
  p.objective = [](const Point& x) {
    switch (static_cast<int>(x[0])) {
      case 0:
        return hartmann3({x[1], x[2], x[3]}) + 1.0;
      case 1:
        return hartmann6({x[4], x[5], x[6], x[7], x[8], x[9]});
      default:
        return branin({x[10], x[11]}) / 10.0 - 3.0;
    }
  };
  return p;
}

// --- The suite --------------------------------------------------------------------------------

Problem plain(std::string name, std::string group, std::string summary,
              std::vector<ParamSpec> params, double optimum, Point minimizer,
              double (*f)(const Point&)) {
  return Problem{.name = std::move(name),
                 .group = std::move(group),
                 .summary = std::move(summary),
                 .params = std::move(params),
                 .optimum = optimum,
                 .minimizer = std::move(minimizer),
                 .objective = f};
}

Problem noisy(Problem p, double sd) {
  p.name += "_noisy";
  p.group = "noisy";
  p.summary += "; observed with N(0, " + std::to_string(sd).substr(0, 4) +
               "^2) noise, regret on the noiseless value";
  p.noise_sd = sd;
  return p;
}

std::vector<Problem> build() {
  std::vector<Problem> out;
  // Classic functions.
  out.push_back(plain("branin", "classic", "Branin on [-5, 10] x [0, 15]; min 0.397887",
                      {float_param("x0", -5, 10), float_param("x1", 0, 15)}, kBraninMin,
                      {kPi, 2.275}, branin));
  out.push_back(plain("hartmann3", "classic", "Hartmann3 on [0, 1]^3; min -3.86278",
                      box("x", 3, 0, 1), kHartmann3Min, {0.114614, 0.555649, 0.852547}, hartmann3));
  out.push_back(plain("hartmann6", "classic", "Hartmann6 on [0, 1]^6; min -3.32237",
                      box("x", 6, 0, 1), kHartmann6Min,
                      {0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573}, hartmann6));
  out.push_back(plain("rosenbrock10", "classic", "Rosenbrock on [-5, 10]^10; min 0",
                      box("x", 10, -5, 10), 0.0, Point(10, 1.0), rosenbrock));
  out.push_back(plain("ackley10", "classic", "Ackley on [-32.768, 32.768]^10; min 0",
                      box("x", 10, -32.768, 32.768), 0.0, Point(10, 0.0), ackley));
  out.push_back(plain("levy10", "classic", "Levy on [-10, 10]^10; min 0", box("x", 10, -10, 10),
                      0.0, Point(10, 1.0), levy));
  // BBOB, instance 1, in 2, 5, 10 and 20 dimensions; 40, outside the core set, for where the
  // AutoSampler's bound on the GP's parameters lies (docs/samplers.md, "Auto").
  for (int id : bbob_ids()) {
    for (int dim : {2, 5, 10, 20, 40}) {
      auto f = std::make_shared<BbobFunction>(id, dim, /*instance=*/1);
      Problem p{.name = "f" + std::to_string(id) + "_" + bbob_name(id) + "_d" + std::to_string(dim),
                .group = "bbob",
                .summary = "BBOB f" + std::to_string(id) + " (" + bbob_name(id) + ") on [-5, 5]^" +
                           std::to_string(dim) + ", instance 1; min 0",
                .params = box("x", static_cast<size_t>(dim), -5, 5)};
      p.optimum = (*f)(f->x_opt());
      p.minimizer = f->x_opt();
      p.objective = [f](const Point& x) { return (*f)(x); };
      out.push_back(std::move(p));
    }
  }
  // Integer and categorical dimensions.
  out.push_back(int_ellipsoid());
  out.push_back(mixint_ellipsoid());
  out.push_back(plain("mixed_cat_int", "mixed",
                      "2 categoricals (4 and 3 choices) that move the optima of 2 floats, a log "
                      "float, a float, an int and a log int; min 0",
                      mixed_cat_int_params(), 0.0,
                      {1, -1.5, 2.5, std::pow(10.0, -2.5), 0.3, 6, 128, 0}, mixed_cat_int));
  out.push_back(categorical6());
  // Conditional spaces.
  out.push_back(conditional_models());
  out.push_back(conditional_functions());
  // Noise.
  out.push_back(noisy(out[0], 0.5));
  out.push_back(noisy(out[2], 0.1));
  out.push_back(noisy(*std::find_if(out.begin(), out.end(),
                                    [](const Problem& q) { return q.name == "mixed_cat_int"; }),
                      0.3));
  out.push_back(categorical8_heldout());
  return out;
}

uint64_t fnv1a(std::string_view text) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001B3ULL;
  }
  return h;
}

}  // namespace

const std::vector<Problem>& problems() {
  static const std::vector<Problem> all = build();
  return all;
}

const Problem* find_problem(std::string_view name) {
  for (const Problem& p : problems()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::vector<const Problem*> select_problems(std::string_view spec) {
  static const std::vector<std::string> kCore = {"branin",
                                                 "f15_rastrigin_rotated_d5",
                                                 "mixed_cat_int",
                                                 "conditional_models",
                                                 "hartmann6",
                                                 "f10_ellipsoid_rotated_d10",
                                                 "int_ellipsoid_rot8",
                                                 "hartmann6_noisy",
                                                 "f1_sphere_d5",
                                                 "f21_gallagher101_d10",
                                                 "categorical6",
                                                 "conditional_functions",
                                                 "hartmann3",
                                                 "f8_rosenbrock_d5",
                                                 "f20_schwefel_d5",
                                                 "branin_noisy",
                                                 "rosenbrock10",
                                                 "f6_attractive_sector_d5",
                                                 "f3_rastrigin_d5",
                                                 "mixed_cat_int_noisy",
                                                 "ackley10",
                                                 "f2_ellipsoid_d10",
                                                 "f5_linear_slope_d10",
                                                 "levy10",
                                                 "f15_rastrigin_rotated_d20",
                                                 "f1_sphere_d20",
                                                 "f8_rosenbrock_d2",
                                                 "f21_gallagher101_d2"};
  static const std::vector<std::string> kQuick = {"branin", "f15_rastrigin_rotated_d5",
                                                  "mixed_cat_int", "conditional_models"};
  std::vector<const Problem*> out;
  auto add = [&](const Problem* p) {
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  };
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string_view::npos) end = spec.size();
    const std::string_view item = spec.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    if (item == "all") {
      for (const Problem& p : problems()) add(&p);
    } else if (item == "core" || item == "quick") {
      for (const auto& name : item == "core" ? kCore : kQuick) add(find_problem(name));
    } else if (const Problem* p = find_problem(item)) {
      add(p);
    } else {
      bool group = false;
      for (const Problem& q : problems()) {
        if (q.group == item) {
          add(&q);
          group = true;
        }
      }
      if (!group) {
        throw std::invalid_argument("unknown problem '" + std::string(item) +
                                    "': expected a problem name (sampler_suite --list), a group "
                                    "(bbob, classic, mixed, conditional, noisy) or a set (all, "
                                    "core, quick)");
      }
    }
  }
  return out;
}

double noise(const Problem& problem, uint64_t seed, int trial_number) {
  if (problem.noise_sd == 0.0) return 0.0;
  InstanceRng rng(fnv1a(problem.name) ^ (seed * 0x9E3779B97F4A7C15ULL) ^
                  (static_cast<uint64_t>(trial_number) << 32));
  rng.next();  // decorrelate neighbouring seeds
  return problem.noise_sd * rng.normal();
}

bool is_active(const Problem& problem, size_t index, const std::vector<double>& point) {
  const ParamSpec& spec = problem.params[index];
  if (spec.parent.empty()) return true;
  for (size_t j = 0; j < index; ++j) {
    if (problem.params[j].name != spec.parent) continue;
    if (std::isnan(point[j])) return false;
    const int choice = static_cast<int>(point[j]);
    return std::find(spec.parent_choices.begin(), spec.parent_choices.end(), choice) !=
           spec.parent_choices.end();
  }
  throw std::logic_error("problem " + problem.name + ": parameter " + spec.name +
                         " names a parent that does not come before it: " + spec.parent);
}

void check_point(const Problem& problem, const std::vector<double>& point) {
  auto fail = [&](const std::string& what) {
    throw std::invalid_argument("problem " + problem.name + ": " + what);
  };
  if (point.size() != problem.params.size()) {
    fail("a point has " + std::to_string(problem.params.size()) + " values, got " +
         std::to_string(point.size()));
  }
  for (size_t i = 0; i < point.size(); ++i) {
    const ParamSpec& spec = problem.params[i];
    const double v = point[i];
    if (!is_active(problem, i, point)) {
      if (!std::isnan(v)) fail("parameter " + spec.name + " is inactive here and must be NaN");
      continue;
    }
    if (!(v >= spec.low && v <= spec.high)) {
      fail("parameter " + spec.name + " = " + std::to_string(v) + " is outside [" +
           std::to_string(spec.low) + ", " + std::to_string(spec.high) + "]");
    }
    if (spec.type != ParamType::kFloat && v != std::floor(v)) {
      fail("parameter " + spec.name + " = " + std::to_string(v) + " must be integral");
    }
  }
}

}  // namespace tuner::bench::suite
