#include "registry/registry.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "registry/file_util.h"
#include "registry/registry_tables.h"
#include "trials/error.h"
#include "trials/json.h"
#include "trials/json_depth.h"
#include "util/files.h"

namespace tuner::registry {

namespace fs = std::filesystem;

namespace {

constexpr char kMarkerFile[] = "tuner-registry.json";
constexpr char kModelFile[] = "registry.json";
constexpr char kRegistryFormat[] = "tuner-model-registry";
// The version DIR/tuner-registry.json is written with: its layout has not changed since 1.
constexpr int kMarkerFormatVersion = 1;

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&t, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%d %H:%M:%S", &utc);
  return buffer;
}

std::string format_value(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

// An exclusive flock on DIR/.lock for the lifetime of the object.
class DirLock {
 public:
  explicit DirLock(const fs::path& dir) {
    const fs::path path = dir / ".lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      throw Error(ErrorCode::kUnavailable,
                  path.string() + ": cannot open the registry's lock: " + std::strerror(errno));
    }
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd_);
      throw Error(ErrorCode::kUnavailable,
                  path.string() + ": cannot lock the registry: " + std::strerror(err));
    }
  }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  ~DirLock() { ::close(fd_); }  // releases the lock

 private:
  int fd_ = -1;
};

// --- JSON form of a model (DIR/MODEL/registry.json) -------------------------------------------

Json optional_number(std::optional<double> v) {
  return v && std::isfinite(*v) ? Json(*v) : Json(nullptr);
}

std::optional<double> read_optional(const Json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

const char* bound_key(MetricLimit::Bound bound) {
  return bound == MetricLimit::Bound::kMax ? "max" : "min";
}

// {"metric": "latency_ms", "max": 2, "value": 1.2, "met": true}
Json limit_check_json(const LimitCheck& c) {
  return {{"metric", c.limit.metric},
          {bound_key(c.limit.bound), c.limit.limit},
          {"value", optional_number(c.value)},
          {"met", c.met}};
}

LimitCheck limit_check_from(const Json& j, const std::string& where) {
  LimitCheck c;
  c.limit.metric = j.is_object() ? j.value("metric", "") : "";
  const bool max = j.is_object() && j.contains("max") && j["max"].is_number();
  const bool min = j.is_object() && j.contains("min") && j["min"].is_number();
  if (c.limit.metric.empty() || max == min) {
    throw Error(ErrorCode::kDataLoss,
                where + ": a promotion limit without a \"metric\" and one of \"max\", \"min\"");
  }
  c.limit.bound = max ? MetricLimit::Bound::kMax : MetricLimit::Bound::kMin;
  c.limit.limit = j[max ? "max" : "min"].get<double>();
  c.value = read_optional(j, "value");
  c.met = j.value("met", false);
  return c;
}

Json promotion_json(const PromotionDecision& p) {
  Json limits = Json::array();
  for (const LimitCheck& c : p.limits) limits.push_back(limit_check_json(c));
  return {{"promoted", p.promoted},
          {"metric", p.metric},
          {"direction", p.maximize ? "maximize" : "minimize"},
          {"limits", limits},
          {"value", optional_number(p.value)},
          {"champion_version", p.champion_version ? Json(*p.champion_version) : Json(nullptr)},
          {"champion_value", optional_number(p.champion_value)},
          {"reason", p.reason},
          {"decided_at", p.decided_at}};
}

PromotionDecision promotion_from(const Json& j, const std::string& where) {
  PromotionDecision p;
  p.promoted = j.value("promoted", false);
  p.metric = j.value("metric", "");
  p.maximize = j.value("direction", "") == "maximize";
  if (j.contains("limits") && j["limits"].is_array()) {
    for (const Json& c : j["limits"]) p.limits.push_back(limit_check_from(c, where));
  }
  p.value = read_optional(j, "value");
  if (j.contains("champion_version") && j["champion_version"].is_number_integer()) {
    p.champion_version = j["champion_version"].get<int>();
  }
  p.champion_value = read_optional(j, "champion_value");
  p.reason = j.value("reason", "");
  p.decided_at = j.value("decided_at", "");
  return p;
}

Json string_map(const std::map<std::string, std::string>& m) {
  Json j = Json::object();
  for (const auto& [k, v] : m) j[k] = v;
  return j;
}

std::map<std::string, std::string> read_string_map(const Json& j) {
  std::map<std::string, std::string> m;
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) m[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  return m;
}

Json version_json(const ModelVersion& v) {
  Json params = Json::object();
  for (const auto& [k, text] : v.lineage.params) {
    Json p = Json::parse(text, nullptr, false);
    params[k] = p.is_discarded() ? Json(text) : p;
  }
  Json metrics = Json::object();
  for (const auto& [k, x] : v.lineage.metrics) metrics[k] = optional_number(x);
  Json j = {{"version", v.version},
            {"created", v.created},
            {"study", v.lineage.study},
            {"trial", v.lineage.trial},
            {"storage", v.lineage.storage},
            {"objective_metric", v.lineage.objective_metric},
            {"metric", v.metric},
            {"direction", v.maximize ? "maximize" : "minimize"},
            {"metric_value", optional_number(v.metric_value)},
            {"params", params},
            {"metrics", metrics},
            {"source", v.source},
            {"model_format", v.user_model ? std::string(to_string(*v.user_model)) : "engine"},
            {"description", v.description},
            {"tags", string_map(v.tags)}};
  if (v.user_model) j["flavors"] = v.flavors;
  j["promotion"] = v.promotion ? promotion_json(*v.promotion) : Json(nullptr);
  return j;
}

ModelVersion version_from(const Json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("version") || !j["version"].is_number_integer()) {
    throw Error(ErrorCode::kDataLoss, where + ": a version without an integer \"version\"");
  }
  ModelVersion v;
  v.version = j["version"].get<int>();
  v.created = j.value("created", "");
  v.lineage.study = j.value("study", "");
  v.lineage.trial = int_member(j, "trial", -1, where);
  v.lineage.storage = j.value("storage", "");
  v.lineage.objective_metric = j.value("objective_metric", "");
  if (j.contains("params") && j["params"].is_object()) {
    for (const auto& [k, p] : j["params"].items()) v.lineage.params[k] = p.dump();
  }
  if (j.contains("metrics") && j["metrics"].is_object()) {
    for (const auto& [k, x] : j["metrics"].items()) {
      v.lineage.metrics[k] = x.is_number() ? x.get<double>() : std::nan("");
    }
  }
  v.metric = j.value("metric", "");
  v.maximize = j.value("direction", "") == "maximize";
  v.metric_value = read_optional(j, "metric_value");
  v.source = j.value("source", "");
  v.user_model = parse_user_model_format(j.value("model_format", "engine"));
  if (v.user_model && j.contains("flavors") && j["flavors"].is_array()) {
    for (const Json& f : j["flavors"]) {
      if (f.is_string()) v.flavors.push_back(f.get<std::string>());
    }
  }
  v.description = j.value("description", "");
  if (j.contains("tags")) v.tags = read_string_map(j["tags"]);
  if (j.contains("promotion") && j["promotion"].is_object()) {
    v.promotion = promotion_from(j["promotion"], where + ": version " + std::to_string(v.version));
  }
  return v;
}

Json model_json(const RegisteredModel& m) {
  Json aliases = Json::object();
  for (const auto& [a, v] : m.aliases) aliases[a] = v;
  Json versions = Json::array();
  for (const ModelVersion& v : m.versions) versions.push_back(version_json(v));
  // Version 1 holds no limits; a model with none stays readable by the tuners that read only it.
  const bool has_limits = std::any_of(
      m.versions.begin(), m.versions.end(),
      [](const ModelVersion& v) { return v.promotion && !v.promotion->limits.empty(); });
  return {{"format", kRegistryFormat},
          {"format_version", has_limits ? kRegistryFormatVersion : 1},
          {"name", m.name},
          {"created", m.created},
          {"description", m.description},
          {"tags", string_map(m.tags)},
          {"aliases", aliases},
          {"last_version", m.last_version},
          {"versions", versions}};
}

RegisteredModel parse_model(const fs::path& file) {
  const std::string where = file.string();
  const std::string text = read_file(file);
  Json j = json_nests_deeper_than(text, kMaxJsonDepth) ? Json() : Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != kRegistryFormat) {
    throw Error(ErrorCode::kDataLoss, where + ": not a registered model's registry.json");
  }
  if (const int version = int_member(j, "format_version", 0, where);
      version > kRegistryFormatVersion) {
    throw Error(ErrorCode::kFailedPrecondition,
                where + ": format version " + std::to_string(version) +
                    " is newer than this tuner's (" + std::to_string(kRegistryFormatVersion) +
                    "); use a newer tuner");
  }
  RegisteredModel m;
  m.name = j.value("name", "");
  m.created = j.value("created", "");
  m.description = j.value("description", "");
  if (j.contains("tags")) m.tags = read_string_map(j["tags"]);
  if (j.contains("aliases") && j["aliases"].is_object()) {
    for (const auto& [a, v] : j["aliases"].items()) {
      if (v.is_number_integer()) m.aliases[a] = v.get<int>();
    }
  }
  m.last_version = int_member(j, "last_version", 0, where);
  if (j.contains("versions") && j["versions"].is_array()) {
    for (const Json& v : j["versions"]) m.versions.push_back(version_from(v, where));
  }
  std::sort(m.versions.begin(), m.versions.end(),
            [](const ModelVersion& a, const ModelVersion& b) { return a.version < b.version; });
  for (const ModelVersion& v : m.versions) m.last_version = std::max(m.last_version, v.version);
  return m;
}

// A model's registry.json; throws Error(kDataLoss) naming the file when it is not one.
RegisteredModel read_model(const fs::path& file) {
  try {
    return parse_model(file);
  } catch (const Json::exception& e) {
    // A member of another type than the format's (a name that is a number, ...).
    throw Error(ErrorCode::kDataLoss,
                file.string() + ": not a registered model's registry.json (" + e.what() + ")");
  }
}

bool name_chars_ok(const std::string& s) {
  if (s.empty() || s.size() > 128 || s[0] == '.' || s[0] == '-') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

}  // namespace

const ModelVersion* RegisteredModel::find(int version) const {
  for (const ModelVersion& v : versions) {
    if (v.version == version) return &v;
  }
  return nullptr;
}

bool Registry::valid_model_name(const std::string& name) { return name_chars_ok(name); }

bool Registry::valid_alias(const std::string& alias) {
  return name_chars_ok(alias) &&
         !std::all_of(alias.begin(), alias.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string to_string(const MetricLimit& limit) {
  return limit.metric + (limit.bound == MetricLimit::Bound::kMax ? " <= " : " >= ") +
         format_value(limit.limit);
}

LimitCheck check_limit(const MetricLimit& limit, const std::map<std::string, double>& metrics) {
  LimitCheck c;
  c.limit = limit;
  if (const auto it = metrics.find(limit.metric); it != metrics.end() && !std::isnan(it->second)) {
    c.value = it->second;
    c.met = limit.bound == MetricLimit::Bound::kMax ? it->second <= limit.limit
                                                    : it->second >= limit.limit;
  }
  return c;
}

namespace {

// "latency_ms = 3.1 breaks latency_ms <= 2", or "no value of 'latency_ms' for latency_ms <= 2".
std::string broken_text(const LimitCheck& c) {
  if (!c.value) return "no value of '" + c.limit.metric + "' for " + to_string(c.limit);
  return c.limit.metric + " = " + format_value(*c.value) + " breaks " + to_string(c.limit);
}

// "; meets latency_ms <= 2 (1.2), num_params <= 1e+06 (5e+05)", or "" without limits.
std::string met_text(const std::vector<LimitCheck>& checks) {
  std::string out;
  for (const LimitCheck& c : checks) {
    out += (out.empty() ? "; meets " : ", ") + to_string(c.limit) + " (" + format_value(*c.value) +
           ")";
  }
  return out;
}

}  // namespace

PromotionDecision decide_promotion(const RegisteredModel& model, const PromotionRule& rule,
                                   const std::map<std::string, double>& metrics) {
  PromotionDecision d;
  d.metric = rule.metric;
  d.maximize = rule.maximize;
  const std::string& metric = rule.metric;
  if (const auto it = metrics.find(metric); it != metrics.end()) d.value = it->second;
  for (const MetricLimit& limit : rule.limits) d.limits.push_back(check_limit(limit, metrics));
  const auto champion = model.aliases.find(kChampion);
  const ModelVersion* current =
      champion == model.aliases.end() ? nullptr : model.find(champion->second);
  if (current != nullptr) {
    d.champion_version = current->version;
    if (current->metric == metric) d.champion_value = current->metric_value;
  }
  if (!d.value || std::isnan(*d.value)) {
    d.reason = "the new version has no value of '" + metric + "'";
    return d;
  }
  std::string broken;
  for (const LimitCheck& c : d.limits) {
    if (!c.met) broken += (broken.empty() ? "" : "; ") + broken_text(c);
  }
  if (!broken.empty()) {
    d.reason = broken;
    return d;
  }
  if (current == nullptr) {
    d.promoted = true;
    d.reason = "no champion yet" + met_text(d.limits);
    return d;
  }
  const std::string champ = "version " + std::to_string(current->version);
  // A champion that breaks the rule's limits is no champion under it: a version meeting them
  // replaces it, whatever the two values of the metric.
  for (const MetricLimit& limit : rule.limits) {
    const LimitCheck c = check_limit(limit, current->lineage.metrics);
    if (!c.met) {
      d.promoted = true;
      d.reason =
          "the champion (" + champ + ") breaks the limits: " + broken_text(c) + met_text(d.limits);
      return d;
    }
  }
  if (current->metric != metric || !d.champion_value || std::isnan(*d.champion_value)) {
    // The champion was evaluated otherwise: the two values are not comparable.
    d.reason = "the champion (" + champ + ") has no value of '" + metric + "' to compare with";
    return d;
  }
  const double a = *d.value, b = *d.champion_value;
  const bool better = rule.maximize ? a > b : a < b;
  d.promoted = better;
  const bool maximize = rule.maximize;
  d.reason = format_value(a) +
             (better ? (maximize ? " > " : " < ") : (maximize ? " <= " : " >= ")) +
             format_value(b) + " of " + champ + " (" + (maximize ? "maximize" : "minimize") + ")" +
             met_text(d.limits);
  return d;
}

// --- opening ------------------------------------------------------------------------------------

bool Registry::is_registry(const fs::path& dir) { return fs::is_regular_file(dir / kMarkerFile); }

Registry Registry::open(const fs::path& dir, bool create, RegistryOptions options) {
  const fs::path marker = dir / kMarkerFile;
  if (!fs::exists(dir)) {
    if (!create) throw Error(ErrorCode::kNotFound, "no model registry at '" + dir.string() + "'");
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
      throw Error(ErrorCode::kUnavailable,
                  dir.string() + ": cannot create the registry directory: " + ec.message());
    }
  }
  if (!fs::is_directory(dir)) {
    throw Error(ErrorCode::kFailedPrecondition,
                "'" + dir.string() + "' is not a model registry (it is not a directory)");
  }
  if (!fs::exists(marker)) {
    const bool empty = fs::directory_iterator(dir) == fs::directory_iterator();
    if (!create || !empty) {
      throw Error(ErrorCode::kFailedPrecondition,
                  "'" + dir.string() + "' is not a model registry (it has no " + kMarkerFile +
                      (empty ? "" : " and holds other files") +
                      "); name a registry directory, or a new or empty one to create it with "
                      "'tuner export'");
    }
    write_file_atomically(
        marker,
        Json{{"format", "tuner-registry"}, {"format_version", kMarkerFormatVersion}}.dump(2) +
            "\n");
  }
  const std::string text = read_file(marker);
  Json j = json_nests_deeper_than(text, kMaxJsonDepth) ? Json() : Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.value("format", Json()).is_string() ||
      j["format"] != "tuner-registry" || !j.value("format_version", Json(0)).is_number_integer()) {
    throw Error(ErrorCode::kFailedPrecondition,
                marker.string() + ": not a registry marker; the directory is not a model registry");
  }
  if (const int version = int_member(j, "format_version", 0, marker.string());
      version > kMarkerFormatVersion) {
    throw Error(ErrorCode::kFailedPrecondition,
                marker.string() + ": registry format version " + std::to_string(version) +
                    " is newer than this tuner's (" + std::to_string(kMarkerFormatVersion) +
                    "); use a newer tuner");
  }
  return Registry(dir, std::move(options));
}

// --- reading -------------------------------------------------------------------------------------

std::vector<std::string> Registry::model_names() const {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_)) {
    if (e.is_directory() && fs::is_regular_file(e.path() / kModelFile)) {
      names.push_back(e.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

RegisteredModel Registry::model(const std::string& name) const {
  if (!valid_model_name(name) || !fs::is_regular_file(model_dir(name) / kModelFile)) {
    throw Error(ErrorCode::kNotFound, "registry '" + dir_.string() + "' has no model '" + name +
                                          "' (registered: " + join_names(model_names()) + ")");
  }
  RegisteredModel m = read_model(model_dir(name) / kModelFile);
  m.name = name;
  return m;
}

ResolvedVersion Registry::resolve(const std::string& ref) const {
  std::string name = ref, alias;
  std::optional<int> number;
  if (const size_t at = ref.find('@'); at != std::string::npos) {
    name = ref.substr(0, at);
    alias = ref.substr(at + 1);
    if (alias.empty()) {
      throw Error(ErrorCode::kInvalidArgument, "'" + ref + "': an empty alias after '@'");
    }
  } else if (const size_t slash = ref.find('/'); slash != std::string::npos) {
    name = ref.substr(0, slash);
    const std::string digits = ref.substr(slash + 1);
    if (digits.empty() || digits.size() > 9 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      throw Error(ErrorCode::kInvalidArgument,
                  "'" + ref + "': expected MODEL/VERSION with a version number >= 1");
    }
    number = std::stoi(digits);
  }
  ResolvedVersion out;
  out.model = model(name);
  if (!alias.empty()) {
    const auto it = out.model.aliases.find(alias);
    if (it == out.model.aliases.end()) {
      std::vector<std::string> known;
      for (const auto& [a, v] : out.model.aliases) known.push_back(a);
      throw Error(ErrorCode::kNotFound, "model '" + name + "' has no alias '" + alias +
                                            "' (its aliases: " + join_names(known) + ")");
    }
    number = it->second;
  } else if (!number) {
    const auto it = out.model.aliases.find(kChampion);
    if (it != out.model.aliases.end()) {
      number = it->second;
    } else if (!out.model.versions.empty()) {
      number = out.model.versions.back().version;
    } else {
      throw Error(ErrorCode::kNotFound, "model '" + name + "' has no versions");
    }
  }
  const ModelVersion* v = out.model.find(*number);
  if (v == nullptr) {
    std::vector<std::string> known;
    for (const ModelVersion& x : out.model.versions) known.push_back(std::to_string(x.version));
    throw Error(ErrorCode::kNotFound, "model '" + name + "' has no version " +
                                          std::to_string(*number) +
                                          " (its versions: " + join_names(known) + ")");
  }
  out.version = *v;
  out.dir = model_dir(name) / std::to_string(v->version);
  return out;
}

// --- changing
// --------------------------------------------------------------------------------------

namespace {

// Mirrors the model into every study database that it names now or named before the change.
void mirror_everywhere(const fs::path& registry_dir, const std::string& name,
                       const RegisteredModel* before, const RegisteredModel* after,
                       const RegistryOptions& options) {
  std::set<std::string> dbs;
  for (const RegisteredModel* m : {before, after}) {
    if (m == nullptr) continue;
    for (const ModelVersion& v : m->versions) {
      if (!v.lineage.storage.empty()) dbs.insert(v.lineage.storage);
    }
  }
  for (const std::string& db : dbs) {
    try {
      mirror_model(db, name, after, fs::absolute(registry_dir));
    } catch (const Error& e) {
      if (options.warn) {
        options.warn(
            "the registry changed, but its tables in the study database were not "
            "updated: " +
            std::string(e.what()));
      }
    }
  }
}

void check_name(const std::string& name) {
  if (!Registry::valid_model_name(name)) {
    throw Error(ErrorCode::kInvalidArgument,
                "model name '" + name +
                    "': use 1 to 128 letters, digits, '_', '-' or '.', not "
                    "starting with '.' or '-'");
  }
}

void check_alias(const std::string& alias) {
  if (!Registry::valid_alias(alias)) {
    throw Error(ErrorCode::kInvalidArgument,
                "alias '" + alias +
                    "': use 1 to 128 letters, digits, '_', '-' or '.', not "
                    "starting with '.' or '-' and not only digits");
  }
}

}  // namespace

ModelVersion Registry::register_version(const std::string& model_name,
                                        const training::Checkpoint& checkpoint,
                                        const Lineage& lineage, const RegisterOptions& options) {
  return register_with(
      model_name, ModelVersion{},
      [&](const fs::path& out, const MlflowModelOptions& mlflow) {
        write_mlflow_model(checkpoint, lineage, options.preprocessing, out, mlflow);
      },
      lineage, options);
}

ModelVersion Registry::register_user_model(const std::string& model_name, const UserModel& model,
                                           const Lineage& lineage, const RegisterOptions& options) {
  ModelVersion v;
  v.user_model = model.format;
  v.flavors = model.flavors;
  return register_with(
      model_name, std::move(v),
      [&](const fs::path& out, const MlflowModelOptions& mlflow) {
        write_user_model(model, lineage, out, mlflow);
      },
      lineage, options);
}

ModelVersion Registry::register_with(const std::string& model_name, ModelVersion v,
                                     const VersionWriter& write, const Lineage& lineage,
                                     const RegisterOptions& options) {
  check_name(model_name);
  for (const std::string& a : options.aliases) {
    check_alias(a);
    if (a == kChampion && options.promote_if_better) {
      throw Error(ErrorCode::kInvalidArgument,
                  "alias 'champion' together with the promotion rule: choose one (the rule "
                  "decides who is champion)");
    }
  }
  if (options.promote_if_better && options.metric.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "the promotion rule needs the metric to compare");
  }
  for (const MetricLimit& limit : options.limits) {
    if (limit.metric.empty() || !std::isfinite(limit.limit)) {
      throw Error(
          ErrorCode::kInvalidArgument,
          "a promotion limit needs a metric and a finite bound, got '" + to_string(limit) + "'");
    }
  }
  DirLock lock(dir_);
  const fs::path mdir = model_dir(model_name);
  const fs::path mfile = mdir / kModelFile;
  std::optional<RegisteredModel> before;
  RegisteredModel m;
  if (fs::exists(mfile)) {
    m = read_model(mfile);
    before = m;
  } else {
    m.created = utc_now();
  }
  m.name = model_name;
  const bool new_model_dir = !fs::exists(mdir);
  if (new_model_dir) make_directory(mdir);

  v.version = m.last_version + 1;
  v.created = utc_now();
  v.lineage = lineage;
  v.metric = options.metric;
  v.maximize = options.maximize;
  if (!options.metric.empty()) {
    if (auto it = lineage.metrics.find(options.metric); it != lineage.metrics.end()) {
      v.metric_value = it->second;
    }
  }
  v.source = options.source;
  v.description = options.description;
  v.tags = options.tags;
  if (options.promote_if_better) {
    v.promotion =
        decide_promotion(m, {options.metric, options.maximize, options.limits}, lineage.metrics);
    v.promotion->decided_at = v.created;
  }

  const fs::path vdir = mdir / std::to_string(v.version);
  try {
    MlflowModelOptions mlflow = options.mlflow;
    mlflow.extra_metadata["registered_model"] = Json(model_name).dump();
    mlflow.extra_metadata["registered_version"] = std::to_string(v.version);
    write(vdir, mlflow);
    m.versions.push_back(v);
    m.last_version = v.version;
    for (const std::string& a : options.aliases) m.aliases[a] = v.version;
    if (v.promotion && v.promotion->promoted) m.aliases[kChampion] = v.version;
    write_file_atomically(mfile, model_json(m).dump(2) + "\n");
  } catch (...) {
    // registry.json is unchanged (written atomically, last): the directory names nothing.
    std::error_code ignored;
    fs::remove_all(vdir, ignored);
    if (new_model_dir) fs::remove_all(mdir, ignored);
    throw;
  }
  mirror_everywhere(dir_, model_name, before ? &*before : nullptr, &m, options_);
  return v;
}

namespace {

// Reads the model under the lock, applies `change`, writes it back and mirrors it.
template <typename F>
void update_model(const Registry& registry, const fs::path& dir, const std::string& name,
                  const RegistryOptions& options, F change) {
  DirLock lock(dir);
  RegisteredModel m = registry.model(name);
  const RegisteredModel before = m;
  change(m);
  write_file_atomically(dir / name / kModelFile, model_json(m).dump(2) + "\n");
  mirror_everywhere(dir, name, &before, &m, options);
}

ModelVersion& version_or_throw(RegisteredModel& m, int version) {
  for (ModelVersion& v : m.versions) {
    if (v.version == version) return v;
  }
  std::vector<std::string> known;
  for (const ModelVersion& x : m.versions) known.push_back(std::to_string(x.version));
  throw Error(ErrorCode::kNotFound, "model '" + m.name + "' has no version " +
                                        std::to_string(version) +
                                        " (its versions: " + join_names(known) + ")");
}

}  // namespace

void Registry::set_alias(const std::string& model_name, int version, const std::string& alias) {
  check_alias(alias);
  update_model(*this, dir_, model_name, options_, [&](RegisteredModel& m) {
    version_or_throw(m, version);
    m.aliases[alias] = version;
  });
}

void Registry::delete_alias(const std::string& model_name, const std::string& alias) {
  update_model(*this, dir_, model_name, options_, [&](RegisteredModel& m) {
    if (m.aliases.erase(alias) == 0) {
      throw Error(ErrorCode::kNotFound, "model '" + model_name + "' has no alias '" + alias + "'");
    }
  });
}

void Registry::set_tag(const std::string& model_name, std::optional<int> version,
                       const std::string& key, const std::string& value) {
  if (key.empty() || key.size() > 256) {
    throw Error(ErrorCode::kInvalidArgument, "a tag key must have 1 to 256 characters");
  }
  update_model(*this, dir_, model_name, options_, [&](RegisteredModel& m) {
    (version ? version_or_throw(m, *version).tags : m.tags)[key] = value;
  });
}

void Registry::set_description(const std::string& model_name, std::optional<int> version,
                               const std::string& text) {
  update_model(*this, dir_, model_name, options_, [&](RegisteredModel& m) {
    (version ? version_or_throw(m, *version).description : m.description) = text;
  });
}

void Registry::delete_version(const std::string& model_name, int version) {
  update_model(*this, dir_, model_name, options_, [&](RegisteredModel& m) {
    version_or_throw(m, version);
    std::erase_if(m.versions, [&](const ModelVersion& v) { return v.version == version; });
    std::erase_if(m.aliases, [&](const auto& a) { return a.second == version; });
  });
  std::error_code ignored;
  fs::remove_all(model_dir(model_name) / std::to_string(version), ignored);
}

void Registry::delete_model(const std::string& model_name) {
  DirLock lock(dir_);
  const RegisteredModel before = model(model_name);
  // registry.json first: once it is gone the model is gone, whatever remains of its files.
  std::error_code ec;
  fs::remove(model_dir(model_name) / kModelFile, ec);
  if (ec) {
    throw Error(ErrorCode::kUnavailable,
                (model_dir(model_name) / kModelFile).string() + ": cannot delete: " + ec.message());
  }
  fs::remove_all(model_dir(model_name), ec);
  mirror_everywhere(dir_, model_name, &before, nullptr, options_);
}

}  // namespace tuner::registry
