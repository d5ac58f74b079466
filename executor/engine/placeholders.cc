#include "executor/engine/placeholders.h"

#include <variant>

#include "executor/engine/job_spec.h"
#include "executor/job_json.h"

namespace tuner {

std::optional<std::string> engine_placeholder(std::string_view text) {
  if (text.size() < 3 || text.front() != '{' || text.back() != '}') return std::nullopt;
  std::string name(text.substr(1, text.size() - 2));
  if (name.find_first_of("{}") != std::string::npos) return std::nullopt;
  return name;
}

std::string substitute_engine_params(std::string_view json, const Params& params,
                                     const std::string& where) {
  nlohmann::json root = job_json::parse_object(json, where);
  if (auto it = root.find("model"); it != root.end()) {
    *it = engine::substitute(*it, where + ".model", params);
  }
  if (auto it = root.find("training"); it != root.end()) {
    *it = engine::substitute(*it, where + ".training", params);
  }
  if (auto it = root.find("data"); it != root.end() && it->is_object()) {
    for (const char* key : {"train", "validation", "test", "augment"}) {
      if (auto v = it->find(key); v != it->end()) {
        *v = engine::substitute(*v, where + ".data." + key, params);
      }
    }
  }
  return root.dump();
}

namespace engine {

std::optional<std::string> placeholder_name(const nlohmann::json& v) {
  return v.is_string() ? engine_placeholder(v.get_ref<const std::string&>()) : std::nullopt;
}

bool has_placeholder(const nlohmann::json& v) {
  if (placeholder_name(v)) return true;
  if (v.is_structured()) {
    for (const nlohmann::json& child : v) {
      if (has_placeholder(child)) return true;
    }
  }
  return false;
}

nlohmann::json param_json(const ParamValue& value) {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, value);
}

nlohmann::json substitute(const nlohmann::json& v, const std::string& path, const Params& params) {
  if (auto name = placeholder_name(v)) {
    auto it = params.find(*name);
    if (it == params.end()) {
      job_json::fail(path, v.dump() + ": the trial has no parameter '" + *name + "'");
    }
    return param_json(it->second);
  }
  if (v.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, child] : v.items())
      out[key] = substitute(child, path + "." + key, params);
    return out;
  }
  if (v.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < v.size(); ++i) {
      out.push_back(substitute(v[i], path + "[" + std::to_string(i) + "]", params));
    }
    return out;
  }
  return v;
}

}  // namespace engine
}  // namespace tuner
