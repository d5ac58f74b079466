// Optuna's RDB schema as SQLite holds it, and the value encodings Optuna's storage uses.
//
// What the tables look like is fixed by Optuna: the DDL here is what Optuna's SQLAlchemy models
// create on SQLite (checked against a file Optuna 3.1 created), with the alembic revision
// stamped as Optuna stamps it. Two revisions are written and read:
//   v3.0.0.d  Optuna 3.0 and 3.1 (what Debian 12 ships);
//   v3.2.0.a  v3.0.0.d plus the index trials_study_id_key on trials(study_id); the head of
//             Optuna 3.2 to 5.x and of today's optuna-dashboard.
// Older revisions are known by name (they need `optuna storage upgrade`); anything else is newer
// than this build.
//
// Internal to storage/. Thread-safe (pure functions).
#ifndef TUNER_STORAGE_OPTUNA_SCHEMA_H_
#define TUNER_STORAGE_OPTUNA_SCHEMA_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trials/distribution.h"
#include "trials/frozen_trial.h"
#include "trials/trial_state.h"

namespace tuner::optuna_schema {

enum class Revision { kV3_0_0_d, kV3_2_0_a };

// Optuna's SCHEMA_VERSION, the row version_info holds since alembic manages the schema.
inline constexpr int kSchemaVersion = 12;

std::string_view to_string(Revision revision);                  // "v3.0.0.d", "v3.2.0.a"
std::optional<Revision> parse_revision(std::string_view name);  // only the two above
// True for the revisions of Optuna before 3.0.0.d (v0.9.0.a ... v3.0.0.c).
bool is_older_revision(std::string_view name);

// The tables every Optuna file of a readable revision has.
const std::vector<std::string_view>& required_tables();

// The statements that create Optuna's tables and stamp `revision` (version_info and
// alembic_version rows), with `library_version` in version_info.
std::vector<std::string> create_statements(Revision revision, std::string_view library_version);

// Optuna's JSON of a distribution ({"name": "FloatDistribution", "attributes": {...}}).
// REQUIRES: has_optuna_counterpart(distribution). Throws Error(kInvalidArgument) otherwise.
std::string to_optuna_json(const Distribution& distribution);
bool has_optuna_counterpart(const Distribution& distribution);

// The project's JSON of a distribution without an Optuna counterpart:
// {"name": "NormalDistribution", "attributes": {"mu": .., "sigma": .., "log": .., "q": ..}}.
// It also accepts everything to_optuna_json writes.
std::string to_tuner_json(const Distribution& distribution);

// Reads any distribution JSON Optuna 1.x to 5.x writes (including UniformDistribution,
// LogUniformDistribution, DiscreteUniformDistribution, IntUniformDistribution,
// IntLogUniformDistribution and the abbreviated {"type": "float", ...} form) and the project's
// NormalDistribution. Throws Error(kDataLoss) naming `where` for anything else (a None choice).
Distribution from_json(std::string_view json, const std::string& where);

// Enum names as SQLAlchemy stores Optuna's enums; a state is written as to_string(state).
std::optional<TrialState> parse_state(std::string_view name);
std::string_view direction_name(StudyDirection direction);  // "MINIMIZE", "MAXIMIZE"
std::optional<StudyDirection> parse_direction_name(std::string_view name);

// trial_values.value_type / trial_intermediate_values.intermediate_value_type.
// FINITE (the value in the value column), INF_POS, INF_NEG, NAN (intermediate values only);
// the value column is NULL for all but FINITE.
std::string_view value_type(double value);
// The value of a stored (value, type) pair; nullopt for an unknown type or a NULL finite value.
std::optional<double> stored_value(std::optional<double> value, std::string_view type);

// Naive UTC as SQLAlchemy writes DateTime to SQLite: "2024-05-01 12:34:56.123456".
std::string format_datetime(TimePoint time);
// Also accepts no fraction, fewer fraction digits, and a 'T' separator.
std::optional<TimePoint> parse_datetime(std::string_view text);

}  // namespace tuner::optuna_schema

#endif  // TUNER_STORAGE_OPTUNA_SCHEMA_H_
