#include "sweep/trial_logs.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <system_error>

#include "trials/system_attrs.h"
#include "util/strings.h"

namespace tuner {
namespace {

// A system attribute that holds a JSON string, as text; empty when absent.
std::string string_attr(const FrozenTrial& trial, const char* key) {
  auto it = trial.system_attrs.find(key);
  if (it == trial.system_attrs.end()) return "";
  const nlohmann::json value = nlohmann::json::parse(it->second, nullptr, false);
  return value.is_string() ? value.get<std::string>() : it->second;
}

}  // namespace

std::string fail_reason(const FrozenTrial& trial) { return string_attr(trial, kFailReasonAttr); }

std::string log_tail(const FrozenTrial& trial) { return string_attr(trial, kLogTailAttr); }

std::string failure_summary(const FrozenTrial& trial) {
  std::string summary = fail_reason(trial);
  if (summary.empty()) return summary;
  const std::vector<std::string> last = program_lines(log_tail(trial), 1);
  if (!last.empty()) summary += ": " + std::string(trim(last[0]));
  return summary;
}

std::vector<std::string> program_lines(std::string_view log_tail, size_t n) {
  std::vector<std::string> lines;
  while (!log_tail.empty()) {
    const size_t end = log_tail.find('\n');
    std::string_view line = log_tail.substr(0, end);
    log_tail.remove_prefix(end == std::string_view::npos ? log_tail.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.starts_with("[tuner]")) continue;
    lines.emplace_back(line);
  }
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<ptrdiff_t>(n));
  return lines;
}

std::string shorten(std::string_view text, size_t width) {
  bool cut = false;
  if (const size_t newline = text.find('\n'); newline != std::string_view::npos) {
    text = text.substr(0, newline);
    cut = true;
  }
  if (text.size() > width) {
    text = text.substr(0, width > 3 ? width - 3 : 0);
    cut = true;
  }
  return std::string(text) + (cut ? "..." : "");
}

std::string default_log_dir(const std::string& storage_path) { return storage_path + ".logs"; }

std::vector<TrialLogFile> trial_log_files(const std::filesystem::path& dir, int number) {
  std::vector<TrialLogFile> files;
  const std::string prefix = "trial-" + std::to_string(number) + "-lease-";
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix) || !name.ends_with(".log")) continue;
    const std::string_view id(name.data() + prefix.size(), name.size() - prefix.size() - 4);
    uint64_t lease = 0;
    const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), lease);
    if (ec != std::errc() || end != id.data() + id.size() || id.empty()) continue;
    files.push_back({.lease_id = lease, .path = entry.path()});
  }
  std::sort(files.begin(), files.end(),
            [](const TrialLogFile& a, const TrialLogFile& b) { return a.lease_id < b.lease_id; });
  return files;
}

}  // namespace tuner
