#include "executor/job_spec.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "executor/argv_template.h"
#include "executor/job_json.h"
#include "trials/error.h"

namespace tuner {

namespace {

using job_json::fail;

std::string string_of(const nlohmann::json& v, const std::string& path) {
  if (!v.is_string()) fail(path, std::string("expected a string, got ") + v.type_name());
  return v.get<std::string>();
}

// A member in seconds, in (0, high] when `positive`, else in [0, high], as milliseconds
// (rounded; at least 1 ms when positive). nullopt when absent.
std::optional<std::chrono::milliseconds> seconds_member(const nlohmann::json& root, const char* key,
                                                        const std::string& where, bool positive,
                                                        double high) {
  auto it = root.find(key);
  if (it == root.end()) return std::nullopt;
  const std::string path = where + "." + key;
  const std::string range =
      std::string(positive ? "(0, " : "[0, ") + std::to_string(static_cast<int64_t>(high)) + "]";
  if (!it->is_number()) {
    fail(path, "expected a number of seconds in " + range + ", got " + it->type_name() +
                   (it->is_string() ? " " + it->dump() : std::string()));
  }
  const double seconds = it->get<double>();
  if (!std::isfinite(seconds) || seconds < 0 || (positive && seconds == 0) || seconds > high) {
    fail(path, "expected a number of seconds in " + range + ", got " + it->dump());
  }
  auto ms = std::chrono::milliseconds(std::llround(seconds * 1000));
  if (positive && ms.count() < 1) ms = std::chrono::milliseconds(1);
  return ms;
}

// The members both kinds share: the time limit and the stop grace.
void parse_limits(const nlohmann::json& root, const std::string& where, JobSpec& spec) {
  spec.timeout = seconds_member(root, "timeout_s", where, true, kMaxJobTimeoutSeconds);
  spec.stop_grace = seconds_member(root, "stop_grace_s", where, false, kMaxJobStopGraceSeconds);
}

}  // namespace

std::string seconds_text(std::chrono::milliseconds duration) {
  const int64_t ms = duration.count();
  std::string text = std::to_string(ms / 1000);
  if (int64_t frac = ms % 1000; frac != 0) {
    std::string digits = std::to_string(frac);
    digits.insert(0, 3 - digits.size(), '0');
    while (digits.back() == '0') digits.pop_back();
    text += "." + digits;
  }
  return text + " s";
}

JobSpec parse_job_spec(std::string_view json, const std::string& where) {
  nlohmann::json root = job_json::parse_object(json, where);
  if (auto kind = root.find("kind"); kind != root.end() && *kind == "engine") {
    JobSpec spec;
    spec.kind = JobKind::kEngine;
    spec.engine = parse_engine_job(json, where);
    spec.objective_metric = spec.engine.objective_metric;
    parse_limits(root, where, spec);
    return spec;
  }
  for (const auto& [key, value] : root.items()) {
    if (key != "kind" && key != "argv" && key != "env" && key != "working_dir" &&
        key != "objective_metric" && key != "timeout_s" && key != "stop_grace_s") {
      fail(where + "." + key,
           "unknown member (a command job has kind, argv, env, working_dir, objective_metric, "
           "timeout_s, stop_grace_s)");
    }
  }
  auto member = [&](const char* key) -> const nlohmann::json& {
    auto it = root.find(key);
    if (it == root.end()) fail(where + "." + key, "missing");
    return *it;
  };

  JobSpec spec;
  std::string kind = string_of(member("kind"), where + ".kind");
  if (kind == "command") {
    spec.kind = JobKind::kCommand;
  } else {
    fail(where + ".kind", "expected \"command\" or \"engine\", got \"" + kind + "\"");
  }

  const std::string argv_path = where + ".argv";
  const nlohmann::json& argv = member("argv");
  if (!argv.is_array()) fail(argv_path, std::string("expected an array, got ") + argv.type_name());
  if (argv.empty()) fail(argv_path, "must name a program (it is empty)");
  for (size_t i = 0; i < argv.size(); ++i) {
    spec.command.argv.push_back(string_of(argv[i], argv_path + "[" + std::to_string(i) + "]"));
    try {
      argv_placeholders(spec.command.argv.back(), i);  // a broken template fails at load
    } catch (const Error& e) {
      throw Error(ErrorCode::kInvalidArgument, where + "." + e.what());
    }
  }
  if (spec.command.argv.front().empty()) fail(argv_path + "[0]", "the program name is empty");

  if (auto it = root.find("env"); it != root.end()) {
    const std::string env_path = where + ".env";
    if (!it->is_object()) fail(env_path, std::string("expected an object, got ") + it->type_name());
    for (const auto& [name, value] : it->items()) {
      if (name.empty() || name.find('=') != std::string::npos) {
        fail(env_path + "." + name, "not a valid environment variable name");
      }
      spec.command.env[name] = string_of(value, env_path + "." + name);
    }
  }
  if (auto it = root.find("working_dir"); it != root.end()) {
    spec.command.working_dir = string_of(*it, where + ".working_dir");
  }
  spec.objective_metric = string_of(member("objective_metric"), where + ".objective_metric");
  if (spec.objective_metric.empty()) fail(where + ".objective_metric", "must not be empty");
  parse_limits(root, where, spec);
  return spec;
}

std::string job_spec_to_json(const JobSpec& spec) {
  if (spec.kind == JobKind::kEngine) return spec.engine.json;
  nlohmann::json json = {{"kind", "command"},
                         {"argv", spec.command.argv},
                         {"objective_metric", spec.objective_metric}};
  if (!spec.command.env.empty()) json["env"] = spec.command.env;
  if (!spec.command.working_dir.empty()) json["working_dir"] = spec.command.working_dir;
  if (spec.timeout) json["timeout_s"] = static_cast<double>(spec.timeout->count()) / 1000;
  if (spec.stop_grace) json["stop_grace_s"] = static_cast<double>(spec.stop_grace->count()) / 1000;
  return json.dump();
}

}  // namespace tuner
