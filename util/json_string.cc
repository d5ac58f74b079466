#include "util/json_string.h"

#include <nlohmann/json.hpp>

namespace tuner {

std::string json_string(std::string_view text) { return nlohmann::json(text).dump(); }

}  // namespace tuner
