#include "search/space/space_change.h"

#include <algorithm>
#include <set>

namespace tuner {
namespace {

const char* kind_name(const Distribution& d) {
  static constexpr const char* kNames[] = {"float", "int", "categorical", "normal"};
  return kNames[d.index()];
}

// The distribution without its kind: "[16, 256]" for int[16, 256] (for the summary line, where
// the kind did not change).
std::string bounds_text(const Distribution& d) {
  const std::string s = to_string(d);
  const size_t open = s.find_first_of("[(");
  return open == std::string::npos ? s : s.substr(open);
}

bool is_log(const Distribution& d) {
  if (const auto* f = std::get_if<FloatDistribution>(&d)) return f->log;
  if (const auto* i = std::get_if<IntDistribution>(&d)) return i->log;
  if (const auto* n = std::get_if<NormalDistribution>(&d)) return n->log;
  return false;
}

const char* type_name(const ParamValue& v) {
  static constexpr const char* kNames[] = {"booleans", "integers", "floats", "strings"};
  return kNames[v.index()];
}

// "integers", "integers and strings".
std::string types_text(const std::vector<ParamValue>& choices) {
  std::set<size_t> kinds;
  for (const ParamValue& v : choices) kinds.insert(v.index());
  std::string s;
  for (size_t k : kinds) {
    for (const ParamValue& v : choices) {
      if (v.index() != k) continue;
      s += (s.empty() ? "" : " and ") + std::string(type_name(v));
      break;
    }
  }
  return s;
}

}  // namespace

std::optional<std::string> incompatibility(const Distribution& before, const Distribution& after) {
  if (before.index() != after.index()) {
    return std::string("another kind of distribution (") + kind_name(before) + " -> " +
           kind_name(after) + ")";
  }
  if (is_log(before) != is_log(after)) {
    return std::string("the log scale is switched ") + (is_log(after) ? "on" : "off");
  }
  const auto* old_c = std::get_if<CategoricalDistribution>(&before);
  if (old_c == nullptr) return std::nullopt;
  const auto& new_c = std::get<CategoricalDistribution>(after);
  // A fixed value (one choice) is never sampled: another one is fine.
  if (old_c->choices.size() == 1 && new_c.choices.size() == 1) return std::nullopt;
  std::vector<ParamValue> gone;
  for (const ParamValue& v : old_c->choices) {
    if (std::find(new_c.choices.begin(), new_c.choices.end(), v) == new_c.choices.end()) {
      gone.push_back(v);
    }
  }
  if (gone.empty()) return std::nullopt;
  if (gone.size() == old_c->choices.size()) {
    const std::string was = types_text(old_c->choices);
    const std::string now = types_text(new_c.choices);
    if (was != now) return "the choices changed type (" + was + " -> " + now + ")";
    return std::string("every choice is new");
  }
  std::string list;
  for (const ParamValue& v : gone) list += (list.empty() ? "" : ", ") + to_string(v);
  return std::string(gone.size() == 1 ? "choice " : "choices ") + list +
         (gone.size() == 1 ? " is" : " are") + " gone";
}

std::string SpaceConflict::message() const {
  return "parameter '" + name + "' was " + to_string(before) + " and is now " + to_string(after) +
         ": " + reason;
}

std::string SpaceChange::summary() const {
  std::string s;
  auto part = [&](const std::string& text) { s += (s.empty() ? "" : "; ") + text; };
  for (const std::string& name : added) part("+ " + name);
  for (const std::string& name : removed) part("- " + name);
  for (const Changed& c : changed) {
    part(c.name + " " + bounds_text(c.before) + " -> " + bounds_text(c.after));
  }
  return s;
}

StoredDistributions distributions_of(const SearchSpace& space) {
  StoredDistributions out;
  for (const ParamSpec& spec : space.params()) out.emplace_back(spec.name, spec.distribution);
  return out;
}

SpaceComparison compare_spaces(const StoredDistributions& stored, const SearchSpace& next) {
  SpaceComparison result;
  for (const ParamSpec& spec : next.params()) {
    auto it = std::find_if(stored.begin(), stored.end(),
                           [&](const auto& entry) { return entry.first == spec.name; });
    if (it == stored.end()) {
      result.change.added.push_back(spec.name);
      continue;
    }
    if (it->second == spec.distribution) continue;
    if (std::optional<std::string> why = incompatibility(it->second, spec.distribution)) {
      if (!result.conflict) {
        result.conflict = SpaceConflict{spec.name, it->second, spec.distribution, *why};
      }
      continue;
    }
    result.change.changed.push_back({spec.name, it->second, spec.distribution});
  }
  for (const auto& [name, distribution] : stored) {
    if (next.find(name) == nullptr) result.change.removed.push_back(name);
  }
  return result;
}

}  // namespace tuner
