// SearchSpace: named hyperparameters, their distributions, and the conditions that activate them.
//
// Parameters are kept in declaration order; a conditional parameter is active only when its parent
// is active and takes one of the listed values, so conditions nest to any depth. A parent is
// declared before its children, which makes one pass in order enough to decide what is active.
// Not thread-safe to modify; const methods may be called from several threads.
#ifndef TUNER_SEARCH_SPACE_SEARCH_SPACE_H_
#define TUNER_SEARCH_SPACE_SEARCH_SPACE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trials/distribution.h"
#include "trials/param_value.h"

namespace tuner {

// Active when `parent` is active and its value is one of `values`.
struct Condition {
  std::string parent;
  std::vector<ParamValue> values;
  bool operator==(const Condition&) const = default;
};

struct ParamSpec {
  std::string name;
  Distribution distribution;
  std::optional<Condition> condition;
  // Declared as a fixed value (a categorical with one choice); kept so that a space saved to JSON
  // reads back exactly as it was written.
  bool fixed = false;
  // The value that trials made before this parameter was added implicitly had: the samplers see
  // those trials with it (their stored params are left as they are) and keep learning from them.
  // Default: none (such trials are left out of what involves this parameter). REQUIRES: inside
  // `distribution`, and no condition.
  std::optional<ParamValue> default_value;
  bool operator==(const ParamSpec&) const = default;
};

class SearchSpace {
 public:
  SearchSpace() = default;

  // Appends a parameter. Throws Error(kInvalidArgument) naming the parameter when its name is
  // empty or taken, its distribution is invalid, its parent is not declared before it, or a
  // condition value is not in the parent's distribution.
  void add(ParamSpec spec);

  // Shorthands for add().
  void add_float(std::string name, double low, double high, bool log = false,
                 std::optional<double> step = std::nullopt);
  void add_int(std::string name, int64_t low, int64_t high, bool log = false, int64_t step = 1);
  void add_categorical(std::string name, std::vector<ParamValue> choices);

  const std::vector<ParamSpec>& params() const { return params_; }
  const ParamSpec* find(std::string_view name) const;
  size_t size() const { return params_.size(); }
  bool empty() const { return params_.empty(); }
  // True when some parameter has a condition.
  bool has_conditions() const;

  // True when `spec` (a parameter of this space) is active given the values chosen for the
  // parameters before it.
  bool is_active(const ParamSpec& spec, const Params& chosen) const;

  // Throws Error(kInvalidArgument) unless `params` holds exactly the active parameters, each
  // inside its distribution.
  void check_assignment(const Params& params) const;

  bool operator==(const SearchSpace&) const = default;

 private:
  std::vector<ParamSpec> params_;
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SPACE_SEARCH_SPACE_H_
