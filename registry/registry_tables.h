// Internal to registry/: the registry's rows in a study database (tables tuner_registry_*; the
// schema is in docs/registry.md). The file is opened with a connection of its own, next to any
// SqliteStorage on it; the tables are created when missing.
#ifndef TUNER_REGISTRY_REGISTRY_TABLES_H_
#define TUNER_REGISTRY_REGISTRY_TABLES_H_

#include <filesystem>
#include <string>

#include "registry/registry.h"

namespace tuner::registry {

// The version of the tuner_registry_* tables (row "registry_schema_version" of
// tuner_registry_meta); a newer one is refused. 2 added tuner_registry_promotion_limits.
inline constexpr int kRegistryTablesVersion = 2;

// Replaces every row of model `name` in `db_path` by `model`'s state (nullptr: deletes them),
// in one transaction. `registry_dir` is recorded with the model. Throws Error naming the file:
// kNotFound when it does not exist, kFailedPrecondition when it is not a study database or its
// registry tables are newer; SQLite's own errors as storage/extra_tables.h maps them.
void mirror_model(const std::string& db_path, const std::string& name, const RegisteredModel* model,
                  const std::filesystem::path& registry_dir);

}  // namespace tuner::registry

#endif  // TUNER_REGISTRY_REGISTRY_TABLES_H_
