#include "storage/optuna_schema.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "trials/error.h"
#include "trials/json_depth.h"

namespace tuner::optuna_schema {

namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;  // keeps keys in Optuna's order

// The DDL SQLAlchemy emits for Optuna's models on SQLite (enum columns are VARCHARs sized to
// the longest enum name; no CHECK constraints on them since SQLAlchemy 1.4).
constexpr const char* kCreateTables[] = {
    R"(CREATE TABLE studies (
	study_id INTEGER NOT NULL, 
	study_name VARCHAR(512) NOT NULL, 
	PRIMARY KEY (study_id)
))",
    "CREATE UNIQUE INDEX ix_studies_study_name ON studies (study_name)",
    R"(CREATE TABLE version_info (
	version_info_id INTEGER NOT NULL, 
	schema_version INTEGER, 
	library_version VARCHAR(256), 
	PRIMARY KEY (version_info_id), 
	CHECK (version_info_id=1)
))",
    R"(CREATE TABLE study_directions (
	study_direction_id INTEGER NOT NULL, 
	direction VARCHAR(8) NOT NULL, 
	study_id INTEGER NOT NULL, 
	objective INTEGER NOT NULL, 
	PRIMARY KEY (study_direction_id), 
	UNIQUE (study_id, objective), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
))",
    R"(CREATE TABLE study_user_attributes (
	study_user_attribute_id INTEGER NOT NULL, 
	study_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (study_user_attribute_id), 
	UNIQUE (study_id, "key"), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
))",
    R"(CREATE TABLE study_system_attributes (
	study_system_attribute_id INTEGER NOT NULL, 
	study_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (study_system_attribute_id), 
	UNIQUE (study_id, "key"), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
))",
    R"(CREATE TABLE trials (
	trial_id INTEGER NOT NULL, 
	number INTEGER, 
	study_id INTEGER, 
	state VARCHAR(8) NOT NULL, 
	datetime_start DATETIME, 
	datetime_complete DATETIME, 
	PRIMARY KEY (trial_id), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
))",
    R"(CREATE TABLE trial_user_attributes (
	trial_user_attribute_id INTEGER NOT NULL, 
	trial_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (trial_user_attribute_id), 
	UNIQUE (trial_id, "key"), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
))",
    R"(CREATE TABLE trial_system_attributes (
	trial_system_attribute_id INTEGER NOT NULL, 
	trial_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (trial_system_attribute_id), 
	UNIQUE (trial_id, "key"), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
))",
    R"(CREATE TABLE trial_params (
	param_id INTEGER NOT NULL, 
	trial_id INTEGER, 
	param_name VARCHAR(512), 
	param_value FLOAT, 
	distribution_json TEXT, 
	PRIMARY KEY (param_id), 
	UNIQUE (trial_id, param_name), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
))",
    R"(CREATE TABLE trial_values (
	trial_value_id INTEGER NOT NULL, 
	trial_id INTEGER NOT NULL, 
	objective INTEGER NOT NULL, 
	value FLOAT, 
	value_type VARCHAR(7) NOT NULL, 
	PRIMARY KEY (trial_value_id), 
	UNIQUE (trial_id, objective), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
))",
    R"(CREATE TABLE trial_intermediate_values (
	trial_intermediate_value_id INTEGER NOT NULL, 
	trial_id INTEGER NOT NULL, 
	step INTEGER NOT NULL, 
	intermediate_value FLOAT, 
	intermediate_value_type VARCHAR(7) NOT NULL, 
	PRIMARY KEY (trial_intermediate_value_id), 
	UNIQUE (trial_id, step), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
))",
    R"(CREATE TABLE trial_heartbeats (
	trial_heartbeat_id INTEGER NOT NULL, 
	trial_id INTEGER NOT NULL, 
	heartbeat DATETIME NOT NULL, 
	PRIMARY KEY (trial_heartbeat_id), 
	UNIQUE (trial_id), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
))",
    R"(CREATE TABLE alembic_version (
	version_num VARCHAR(32) NOT NULL, 
	CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
))",
};

// The index revision v3.2.0.a adds (alembic's op.create_index("trials_study_id_key", ...)).
constexpr const char* kV3_2_0_aIndex = "CREATE INDEX trials_study_id_key ON trials (study_id)";

Error data_loss(const std::string& where, const std::string& what) {
  return Error(ErrorCode::kDataLoss, where + ": " + what);
}

double number(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) {
    throw data_loss(where, std::string("distribution JSON lacks the number '") + key + "'");
  }
  return it->get<double>();
}

int64_t integer(const json& j, const char* key, const std::string& where,
                std::optional<int64_t> fallback = std::nullopt) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (fallback) return *fallback;
    throw data_loss(where, std::string("distribution JSON lacks the integer '") + key + "'");
  }
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_float() && std::floor(it->get<double>()) == it->get<double>()) {
    return static_cast<int64_t>(it->get<double>());
  }
  throw data_loss(where, std::string("distribution JSON field '") + key + "' is not an integer");
}

bool boolean(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? fallback : it->get<bool>();
}

std::optional<double> optional_number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<double>();
}

json choice_json(const ParamValue& v) {
  return std::visit([](const auto& x) { return json(x); }, v);
}

ParamValue choice_value(const json& j, const std::string& where) {
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number_float()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  throw data_loss(where, "categorical choice " + j.dump() +
                             " is not a string, integer, float or boolean; tuner cannot hold it");
}

CategoricalDistribution categorical(const json& choices, const std::string& where) {
  if (!choices.is_array()) throw data_loss(where, "categorical choices are not a list");
  CategoricalDistribution d;
  for (const json& c : choices) d.choices.push_back(choice_value(c, where));
  return d;
}

}  // namespace

std::string_view to_string(Revision revision) {
  return revision == Revision::kV3_0_0_d ? "v3.0.0.d" : "v3.2.0.a";
}

std::optional<Revision> parse_revision(std::string_view name) {
  if (name == "v3.0.0.d") return Revision::kV3_0_0_d;
  if (name == "v3.2.0.a") return Revision::kV3_2_0_a;
  return std::nullopt;
}

bool is_older_revision(std::string_view name) {
  for (std::string_view old : {"v0.9.0.a", "v1.2.0.a", "v1.3.0.a", "v2.4.0.a", "v2.6.0.a",
                               "v3.0.0.a", "v3.0.0.b", "v3.0.0.c"}) {
    if (name == old) return true;
  }
  return false;
}

const std::vector<std::string_view>& required_tables() {
  static const std::vector<std::string_view> kTables = {"studies",
                                                        "study_directions",
                                                        "study_user_attributes",
                                                        "study_system_attributes",
                                                        "trials",
                                                        "trial_params",
                                                        "trial_values",
                                                        "trial_intermediate_values",
                                                        "trial_user_attributes",
                                                        "trial_system_attributes",
                                                        "trial_heartbeats",
                                                        "version_info",
                                                        "alembic_version"};
  return kTables;
}

std::vector<std::string> create_statements(Revision revision, std::string_view library_version) {
  std::vector<std::string> out(std::begin(kCreateTables), std::end(kCreateTables));
  if (revision == Revision::kV3_2_0_a) out.emplace_back(kV3_2_0_aIndex);
  std::string escaped;
  for (char c : library_version) {
    escaped += c;
    if (c == '\'') escaped += '\'';
  }
  out.push_back(
      "INSERT INTO version_info (version_info_id, schema_version, library_version) "
      "VALUES (1, " +
      std::to_string(kSchemaVersion) + ", '" + escaped + "')");
  out.push_back("INSERT INTO alembic_version (version_num) VALUES ('" +
                std::string(to_string(revision)) + "')");
  return out;
}

bool has_optuna_counterpart(const Distribution& distribution) {
  return !std::holds_alternative<NormalDistribution>(distribution);
}

std::string to_optuna_json(const Distribution& distribution) {
  ojson out;
  if (const auto* f = std::get_if<FloatDistribution>(&distribution)) {
    out = {{"name", "FloatDistribution"},
           {"attributes",
            {{"step", f->step ? ojson(*f->step) : ojson(nullptr)},
             {"low", f->low},
             {"high", f->high},
             {"log", f->log}}}};
  } else if (const auto* i = std::get_if<IntDistribution>(&distribution)) {
    out = {
        {"name", "IntDistribution"},
        {"attributes", {{"log", i->log}, {"step", i->step}, {"low", i->low}, {"high", i->high}}}};
  } else if (const auto* c = std::get_if<CategoricalDistribution>(&distribution)) {
    ojson choices = ojson::array();
    for (const auto& v : c->choices) choices.push_back(ojson(choice_json(v)));
    out = {{"name", "CategoricalDistribution"}, {"attributes", {{"choices", choices}}}};
  } else {
    throw Error(ErrorCode::kInvalidArgument,
                to_string(distribution) + " has no Optuna counterpart");
  }
  return out.dump();
}

std::string to_tuner_json(const Distribution& distribution) {
  if (const auto* n = std::get_if<NormalDistribution>(&distribution)) {
    ojson out = {{"name", "NormalDistribution"},
                 {"attributes",
                  {{"mu", n->mu},
                   {"sigma", n->sigma},
                   {"log", n->log},
                   {"q", n->q ? ojson(*n->q) : ojson(nullptr)}}}};
    return out.dump();
  }
  return to_optuna_json(distribution);
}

Distribution from_json(std::string_view text, const std::string& where) {
  if (json_nests_deeper_than(text, kMaxJsonDepth)) {
    throw data_loss(
        where, "distribution JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) throw data_loss(where, "distribution JSON is not an object");
  try {
    if (auto name_it = j.find("name"); name_it != j.end() && name_it->is_string()) {
      const std::string name = name_it->get<std::string>();
      auto attrs_it = j.find("attributes");
      if (attrs_it == j.end() || !attrs_it->is_object()) {
        throw data_loss(where, "distribution JSON lacks its attributes");
      }
      const json& a = *attrs_it;
      if (name == "FloatDistribution") {
        return FloatDistribution{number(a, "low", where), number(a, "high", where),
                                 boolean(a, "log", false), optional_number(a, "step")};
      }
      if (name == "UniformDistribution") {
        return FloatDistribution{number(a, "low", where), number(a, "high", where), false, {}};
      }
      if (name == "LogUniformDistribution") {
        return FloatDistribution{number(a, "low", where), number(a, "high", where), true, {}};
      }
      if (name == "DiscreteUniformDistribution") {
        return FloatDistribution{number(a, "low", where), number(a, "high", where), false,
                                 number(a, "q", where)};
      }
      if (name == "IntDistribution") {
        return IntDistribution{integer(a, "low", where), integer(a, "high", where),
                               boolean(a, "log", false), integer(a, "step", where, 1)};
      }
      if (name == "IntUniformDistribution") {
        return IntDistribution{integer(a, "low", where), integer(a, "high", where), false,
                               integer(a, "step", where, 1)};
      }
      if (name == "IntLogUniformDistribution") {
        return IntDistribution{integer(a, "low", where), integer(a, "high", where), true,
                               integer(a, "step", where, 1)};
      }
      if (name == "CategoricalDistribution") {
        auto c = a.find("choices");
        if (c == a.end()) throw data_loss(where, "categorical distribution lacks its choices");
        return categorical(*c, where);
      }
      if (name == "NormalDistribution") {
        return NormalDistribution{number(a, "mu", where), number(a, "sigma", where),
                                  boolean(a, "log", false), optional_number(a, "q")};
      }
      throw data_loss(where, "unknown distribution '" + name + "'");
    }
    auto type_it = j.find("type");
    if (type_it == j.end() || !type_it->is_string()) {
      throw data_loss(where, "distribution JSON has neither a name nor a type");
    }
    const std::string type = type_it->get<std::string>();
    if (type == "categorical") {
      auto c = j.find("choices");
      if (c == j.end()) throw data_loss(where, "categorical distribution lacks its choices");
      return categorical(*c, where);
    }
    if (type == "float") {
      return FloatDistribution{number(j, "low", where), number(j, "high", where),
                               boolean(j, "log", false), optional_number(j, "step")};
    }
    if (type == "int") {
      return IntDistribution{integer(j, "low", where), integer(j, "high", where),
                             boolean(j, "log", false), integer(j, "step", where, 1)};
    }
    throw data_loss(where, "unknown distribution type '" + type + "'");
  } catch (const json::exception& e) {
    throw data_loss(where, std::string("malformed distribution JSON: ") + e.what());
  }
}

std::optional<TrialState> parse_state(std::string_view name) {
  for (TrialState s : {TrialState::kRunning, TrialState::kComplete, TrialState::kPruned,
                       TrialState::kFail, TrialState::kWaiting}) {
    if (to_string(s) == name) return s;  // Optuna stores the upper-case names
  }
  return std::nullopt;
}

std::string_view direction_name(StudyDirection direction) {
  return direction == StudyDirection::kMinimize ? "MINIMIZE" : "MAXIMIZE";
}

std::optional<StudyDirection> parse_direction_name(std::string_view name) {
  if (name == "MINIMIZE") return StudyDirection::kMinimize;
  if (name == "MAXIMIZE") return StudyDirection::kMaximize;
  return std::nullopt;
}

std::string_view value_type(double value) {
  if (std::isnan(value)) return "NAN";
  if (value == INFINITY) return "INF_POS";
  if (value == -INFINITY) return "INF_NEG";
  return "FINITE";
}

std::optional<double> stored_value(std::optional<double> value, std::string_view type) {
  if (type == "FINITE") return value;
  if (type == "INF_POS") return INFINITY;
  if (type == "INF_NEG") return -INFINITY;
  if (type == "NAN") return NAN;
  return std::nullopt;
}

std::string format_datetime(TimePoint time) {
  using namespace std::chrono;
  auto us = floor<microseconds>(time);
  auto day = floor<days>(us);
  year_month_day ymd{day};
  hh_mm_ss hms{us - day};
  const int y = int(ymd.year());
  if (y < 0 || y > 9999) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02u %02d:%02d:%02d.%06lld", y, unsigned(ymd.month()),
                  unsigned(ymd.day()), int(hms.hours().count()), int(hms.minutes().count()),
                  int(hms.seconds().count()), static_cast<long long>(hms.subseconds().count()));
    return buf;
  }
  // Called for every trial start and finish: digits by hand, no format parsing.
  std::string out = "0000-00-00 00:00:00.000000";
  auto put = [&out](size_t end, long long value, int width) {
    for (int i = 1; i <= width; ++i, value /= 10) out[end - i] = char('0' + value % 10);
  };
  put(4, y, 4);
  put(7, unsigned(ymd.month()), 2);
  put(10, unsigned(ymd.day()), 2);
  put(13, hms.hours().count(), 2);
  put(16, hms.minutes().count(), 2);
  put(19, hms.seconds().count(), 2);
  put(26, hms.subseconds().count(), 6);
  return out;
}

namespace {

// The value of the `width` digits at text[pos...], or -1 when one of them is not a digit.
int digits_at(std::string_view text, size_t pos, size_t width) {
  int value = 0;
  for (size_t i = pos; i < pos + width; ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

}  // namespace

std::optional<TimePoint> parse_datetime(std::string_view text) {
  using namespace std::chrono;
  std::string_view s = text;
  int y, mo, d, h, mi, sec, consumed = 0;
  char sep;
  // The form every Optuna version writes, "YYYY-MM-DD HH:MM:SS", read without sscanf (a list
  // of all trials parses two per trial); anything else goes through sscanf.
  if (s.size() >= 19 && s[4] == '-' && s[7] == '-' && (s[10] == ' ' || s[10] == 'T') &&
      s[13] == ':' && s[16] == ':' && (y = digits_at(s, 0, 4)) >= 0 &&
      (mo = digits_at(s, 5, 2)) >= 0 && (d = digits_at(s, 8, 2)) >= 0 &&
      (h = digits_at(s, 11, 2)) >= 0 && (mi = digits_at(s, 14, 2)) >= 0 &&
      (sec = digits_at(s, 17, 2)) >= 0) {
    consumed = 19;
  } else {
    std::string copy(text);
    if (std::sscanf(copy.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%n", &y, &mo, &d, &sep, &h, &mi, &sec,
                    &consumed) != 7 ||
        (sep != ' ' && sep != 'T')) {
      return std::nullopt;
    }
  }
  int64_t micros = 0;
  if (static_cast<size_t>(consumed) < s.size() && s[consumed] == '.') {
    int digits = 0;
    for (size_t i = consumed + 1; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]));
         ++i) {
      if (digits < 6) {
        micros = micros * 10 + (s[i] - '0');
        ++digits;
      }
    }
    for (; digits < 6; ++digits) micros *= 10;
  }
  year_month_day ymd{year(y), month(static_cast<unsigned>(mo)), day(static_cast<unsigned>(d))};
  if (!ymd.ok()) return std::nullopt;
  auto tp = sys_days(ymd) + hours(h) + minutes(mi) + seconds(sec) + microseconds(micros);
  return time_point_cast<TimePoint::duration>(tp);
}

}  // namespace tuner::optuna_schema
