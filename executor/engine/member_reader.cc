#include "executor/engine/member_reader.h"

#include <algorithm>

#include "executor/engine/placeholders.h"
#include "executor/job_json.h"

namespace tuner::engine {

using job_json::fail;

void MemberReader::only(const std::vector<std::string_view>& known, std::string_view what) const {
  for (const auto& [key, value] : object_.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      fail(path_ + "." + key, "unknown member (" + std::string(what) + " has " + join(known) + ")");
    }
  }
}

std::optional<int64_t> MemberReader::integer(const std::string& key, int64_t min,
                                             bool placeholder_ok) const {
  const nlohmann::json* v = get(key, placeholder_ok);
  if (!v) return std::nullopt;
  return read_integer(Json(*v), path_ + "." + key, min);
}

std::optional<double> MemberReader::number(const std::string& key, const NumberRange& range) const {
  const nlohmann::json* v = get(key, true);
  if (!v) return std::nullopt;
  return read_number(Json(*v), path_ + "." + key, range);
}

std::optional<std::string> MemberReader::choice(const std::string& key,
                                                const std::vector<std::string>& choices,
                                                bool placeholder_ok) const {
  const nlohmann::json* v = get(key, placeholder_ok);
  if (!v) return std::nullopt;
  return choices[read_choice(Json(*v), path_ + "." + key, choices)];
}

std::optional<std::string> MemberReader::string(const std::string& key) const {
  const nlohmann::json* v = get(key, false);
  if (!v) return std::nullopt;
  return read_string(Json(*v), path_ + "." + key);
}

const nlohmann::json* MemberReader::get(const std::string& key, bool placeholder_ok) const {
  auto it = object_.find(key);
  if (it == object_.end()) return nullptr;
  if (placeholder_name(*it)) {
    if (!placeholder_ok) fail(path_ + "." + key, "cannot be a placeholder (" + it->dump() + ")");
    if (templated_) return nullptr;
  }
  return &*it;
}

const nlohmann::json& object_member(const nlohmann::json& root, const std::string& key,
                                    const std::string& path, bool required) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  auto it = root.find(key);
  if (it == root.end()) {
    if (required) fail(path, "missing");
    return kEmpty;
  }
  if (!it->is_object()) expect_object(Json(*it), path);
  return *it;
}

}  // namespace tuner::engine
