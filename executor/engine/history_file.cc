#include "executor/engine/history_file.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "trials/error.h"
#include "trials/trial_state.h"

namespace tuner::engine {

namespace {

namespace fs = std::filesystem;

std::string history_path(const std::string& checkpoint_path) {
  return checkpoint_path + ".history.json";
}

Metrics metrics_from_json(const nlohmann::json& json) {
  Metrics out;
  for (const auto& [name, value] : json.items()) {
    out[name] = value.is_number() ? value.get<double>() : std::numeric_limits<double>::quiet_NaN();
  }
  return out;
}

// Whether objective value a beats b (NaN never beats anything; anything finite beats NaN).
bool better(double a, double b, bool maximize) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return is_better(maximize ? StudyDirection::kMaximize : StudyDirection::kMinimize, a, b);
}

}  // namespace

nlohmann::json metrics_json(const Metrics& metrics) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : metrics)
    out[name] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json();
  return out;
}

nlohmann::json history_json(const std::vector<EpochRecord>& history) {
  nlohmann::json epochs = nlohmann::json::array();
  for (const EpochRecord& r : history) {
    nlohmann::json e = metrics_json(r.metrics);
    e["epoch"] = r.epoch;
    if (r.time > 0) e["time"] = r.time;
    epochs.push_back(e);
  }
  return epochs;
}

size_t best_epoch(const std::vector<EpochRecord>& history, const std::string& objective,
                  bool maximize) {
  size_t best = 0;
  for (size_t i = 1; i < history.size(); ++i) {
    if (better(history[i].metrics.at(objective), history[best].metrics.at(objective), maximize)) {
      best = i;
    }
  }
  return best;
}

std::vector<EpochRecord> read_checkpoint_history(const std::string& checkpoint_path, int64_t last) {
  std::vector<EpochRecord> history;
  std::ifstream in(history_path(checkpoint_path));
  if (!in) return history;
  try {
    nlohmann::json json = nlohmann::json::parse(in);
    if (json.value("version", 0) != kHistoryVersion) return history;
    for (nlohmann::json epoch : json.at("epochs")) {
      const int64_t number = epoch.at("epoch").get<int64_t>();
      if (number > last) break;
      epoch.erase("epoch");
      const double time =
          epoch.contains("time") && epoch["time"].is_number() ? epoch["time"].get<double>() : 0.0;
      epoch.erase("time");
      history.push_back({number, metrics_from_json(epoch), time});
    }
  } catch (const nlohmann::json::exception&) {
    history.clear();
  }
  return history;
}

void write_checkpoint_history(const std::string& checkpoint_path,
                              const std::vector<EpochRecord>& history) {
  write_file_atomically(
      history_path(checkpoint_path),
      nlohmann::json{{"version", kHistoryVersion}, {"epochs", history_json(history)}}.dump());
}

void write_file_atomically(const std::string& path, const std::string& text) {
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw Error(ErrorCode::kUnavailable, tmp + ": cannot write");
  }
  fs::rename(tmp, path, ec);
  if (ec) throw Error(ErrorCode::kUnavailable, path + ": cannot write: " + ec.message());
}

}  // namespace tuner::engine
