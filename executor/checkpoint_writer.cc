#include "executor/checkpoint_writer.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

namespace tuner {

namespace {

// Writes `text` to `sidecar` whole: under a temporary name, renamed when written.
std::string write_sidecar(const std::filesystem::path& sidecar, const std::string& text) {
  const std::filesystem::path temp = sidecar.string() + ".partial";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temp, ignored);
      return "cannot write " + temp.string();
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, sidecar, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    return "cannot rename " + temp.string() + " to " + sidecar.string() + ": " + ec.message();
  }
  return "";
}

nlohmann::json metrics_json(const Metrics& metrics) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : metrics) {
    if (std::isfinite(value)) out[name] = value;
  }
  return out;
}

Metrics metrics_of(const nlohmann::json& json) {
  Metrics out;
  if (!json.is_object()) return out;
  for (const auto& [name, value] : json.items()) {
    if (value.is_number() && std::isfinite(value.get<double>())) out[name] = value.get<double>();
  }
  return out;
}

}  // namespace

std::filesystem::path checkpoint_writer_path(const std::filesystem::path& file) {
  return file.string() + ".lease";
}

uint64_t read_checkpoint_writer(const std::filesystem::path& file) {
  std::ifstream in(checkpoint_writer_path(file));
  std::string text;
  if (!in || !std::getline(in, text)) return 0;
  uint64_t lease = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), lease);
  return ec == std::errc() && end == text.data() + text.size() ? lease : 0;
}

std::string write_checkpoint_writer(const std::filesystem::path& file, uint64_t lease) {
  return write_sidecar(checkpoint_writer_path(file), std::to_string(lease) + "\n");
}

std::filesystem::path checkpoint_pause_path(const std::filesystem::path& file) {
  return file.string() + ".paused.json";
}

std::optional<CheckpointPause> read_checkpoint_pause(const std::filesystem::path& file) {
  std::ifstream in(checkpoint_pause_path(file));
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, false);
  if (!json.is_object() || !json.contains("step") || !json["step"].is_number_integer()) {
    return std::nullopt;
  }
  CheckpointPause pause;
  pause.step = json["step"].get<int64_t>();
  if (json.contains("lease") && json["lease"].is_number_unsigned()) {
    pause.lease = json["lease"].get<uint64_t>();
  }
  if (json.contains("metrics")) pause.metrics = metrics_of(json["metrics"]);
  if (json.contains("result")) pause.result = metrics_of(json["result"]);
  if (json.contains("result_integers") && json["result_integers"].is_array()) {
    for (const nlohmann::json& name : json["result_integers"]) {
      if (name.is_string()) pause.result_integers.push_back(name.get<std::string>());
    }
  }
  return pause;
}

std::string write_checkpoint_pause(const std::filesystem::path& file,
                                   const CheckpointPause& pause) {
  const nlohmann::json json = {{"lease", pause.lease},
                               {"step", pause.step},
                               {"metrics", metrics_json(pause.metrics)},
                               {"result", metrics_json(pause.result)},
                               {"result_integers", pause.result_integers}};
  return write_sidecar(checkpoint_pause_path(file), json.dump() + "\n");
}

}  // namespace tuner
