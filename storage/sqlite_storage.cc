#include "storage/sqlite_storage.h"

#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <unordered_map>

#include "storage/optuna_schema.h"
#include "storage/sqlite/checkpointer.h"
#include "storage/sqlite/connection.h"
#include "storage/storage_fault.h"
#include "storage/write_checks.h"
#include "trials/error.h"
#include "util/strings.h"

namespace tuner {

namespace {

namespace os = optuna_schema;
using sqlite::Connection;
using sqlite::Statement;
using sqlite::Transaction;

// The version of the project's own tables (tuner_*). Bump it with every change to them; a file
// with a larger one is refused as newer than this build.
constexpr int kTunerSchemaVersion = 2;
// version_info.library_version of a file this project creates: the creating build's version
// (Optuna only shows it in messages).
constexpr char kLibraryVersion[] = "tuner " TUNER_VERSION;
// The page size of a file this project creates (bytes).
constexpr int kNewFilePageSize = 1024;
// Trial system attributes that mirror NormalDistribution params for Optuna (hidden on read).
constexpr std::string_view kParamMirrorPrefix = "tuner:param:";

constexpr const char* kTunerTables[] = {
    "CREATE TABLE IF NOT EXISTS tuner_meta (\n"
    "\t\"key\" VARCHAR(512) NOT NULL, \n"
    "\tvalue TEXT NOT NULL, \n"
    "\tPRIMARY KEY (\"key\")\n)",
    "CREATE TABLE IF NOT EXISTS tuner_trial_params (\n"
    "\tparam_id INTEGER NOT NULL, \n"
    "\ttrial_id INTEGER NOT NULL, \n"
    "\tparam_name VARCHAR(512) NOT NULL, \n"
    "\tparam_value FLOAT NOT NULL, \n"
    "\tdistribution_json TEXT NOT NULL, \n"
    "\tPRIMARY KEY (param_id), \n"
    "\tUNIQUE (trial_id, param_name), \n"
    "\tFOREIGN KEY(trial_id) REFERENCES trials (trial_id)\n)",
    // A trial's metrics at each step; value NULL is NaN; datetime as the trials' datetimes.
    "CREATE TABLE IF NOT EXISTS tuner_trial_step_metrics (\n"
    "\ttrial_id INTEGER NOT NULL, \n"
    "\tstep INTEGER NOT NULL, \n"
    "\tname VARCHAR(512) NOT NULL, \n"
    "\tvalue FLOAT, \n"
    "\tdatetime DATETIME NOT NULL, \n"
    "\tPRIMARY KEY (trial_id, step, name), \n"
    "\tFOREIGN KEY(trial_id) REFERENCES trials (trial_id)\n)",
};

// The project's indexes on Optuna's tables (Optuna ignores indexes it does not know). A file
// opened for writing gets those it lacks (Impl::add_indexes); every read works without them.
struct TunerIndex {
  const char* name;
  const char* sql;
};
constexpr TunerIndex kTunerIndexes[] = {
    // Loading a study's trials from a number on (what Study::ask does each time) walks only
    // those trials; Optuna's own index on trials(study_id) walks the whole study.
    {"tuner_trials_study_number",
     "CREATE INDEX IF NOT EXISTS tuner_trials_study_number ON trials (study_id, number)"},
    // A state filter (get_trials with states, the stale-trial check's RUNNING trials) reads only
    // the trials in those states, in number order.
    {"tuner_trials_study_state_number",
     "CREATE INDEX IF NOT EXISTS tuner_trials_study_state_number ON trials (study_id, state, "
     "number)"},
    // get_best_trial walks the values of an objective from the best on (see walk_best_trial).
    {"tuner_trial_values_objective_value",
     "CREATE INDEX IF NOT EXISTS tuner_trial_values_objective_value ON trial_values (objective, "
     "value_type, value)"},
};
// What get_best_trial's walk may read before it leaves the search to a scan of the study: rows
// of other studies or of trials that are not COMPLETE ranked before the study's best, and ties.
constexpr int kBestTrialWalkLimit = 1000;

os::Revision to_schema_revision(OptunaRevision revision) {
  return revision == OptunaRevision::kV3_0_0_d ? os::Revision::kV3_0_0_d : os::Revision::kV3_2_0_a;
}

bool same_bits(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}
bool same_bits(const std::optional<double>& a, const std::optional<double>& b) {
  return a.has_value() == b.has_value() && (!a || same_bits(*a, *b));
}

// True when `a` and `b` are the same distribution bit for bit, so that their JSON texts are
// equal (operator== takes 0.0 and -0.0 as equal; their JSON differs).
bool identical(const Distribution& a, const Distribution& b) {
  if (a.index() != b.index()) return false;
  if (const auto* f = std::get_if<FloatDistribution>(&a)) {
    const auto& g = std::get<FloatDistribution>(b);
    return same_bits(f->low, g.low) && same_bits(f->high, g.high) && f->log == g.log &&
           same_bits(f->step, g.step);
  }
  if (const auto* n = std::get_if<NormalDistribution>(&a)) {
    const auto& m = std::get<NormalDistribution>(b);
    return same_bits(n->mu, m.mu) && same_bits(n->sigma, m.sigma) && n->log == m.log &&
           same_bits(n->q, m.q);
  }
  if (const auto* c = std::get_if<CategoricalDistribution>(&a)) {
    const auto& d = std::get<CategoricalDistribution>(b);
    if (c->choices.size() != d.choices.size()) return false;
    for (size_t i = 0; i < c->choices.size(); ++i) {
      const ParamValue& x = c->choices[i];
      const ParamValue& y = d.choices[i];
      if (x.index() != y.index()) return false;
      if (const auto* xd = std::get_if<double>(&x)) {
        if (!same_bits(*xd, std::get<double>(y))) return false;
      } else if (x != y) {
        return false;
      }
    }
    return true;
  }
  return a == b;  // IntDistribution: integers only
}

// Hashes std::string and std::string_view alike, so maps keyed by text are searched without
// copying the text.
struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

// The statements that load whole trials for one filter (see Impl::load_trials).
struct TrialQueries {
  std::string trials, params, tuner_params, values, intermediate_values, user_attrs, system_attrs;
};

}  // namespace

struct SqliteStorage::Impl {
  Connection conn;
  SqliteStorageOptions options;
  // Checkpoints conn's writes in the background (none when read-only).
  std::unique_ptr<sqlite::Checkpointer> checkpointer;
  // Distribution JSON written lately, with its distribution: a study's params share few
  // distributions, and serializing one costs more than the rest of set_trial_param.
  std::vector<std::pair<Distribution, std::string>> json_cache;
  // study_id -> the id of the last trial this connection created in it: where next_number()
  // starts counting.
  std::unordered_map<int64_t, int64_t> last_trial;
  // Distributions parsed from their stored JSON text.
  std::unordered_map<std::string, Distribution, TextHash, std::equal_to<>> parsed_distributions;
  // The statements of load_trials, by the filter's WHERE clause.
  std::unordered_map<std::string, TrialQueries, TextHash, std::equal_to<>> trial_queries;

  Impl(const std::string& path, SqliteStorageOptions opts)
      : conn(path, opts.read_only), options(std::move(opts)) {
    if (!options.clock) options.clock = system_clock();
    conn.set_busy_timeout(options.busy_timeout);
    std::vector<std::string> tables = table_names();
    if (options.read_only) {
      validate(tables);
      // The project's tables a file lacks (Optuna's file, or an older tuner's), empty, so that
      // the reads find them.
      if (!has(tables, "tuner_trial_params")) {
        conn.exec(std::string("CREATE TEMP TABLE tuner_trial_params AS SELECT * FROM ") +
                  "(SELECT 1 AS param_id, 1 AS trial_id, '' AS param_name, 0.0 AS param_value, "
                  "'' AS distribution_json) WHERE 0");
      }
      if (!has(tables, "tuner_trial_step_metrics")) {
        conn.exec(std::string("CREATE TEMP TABLE tuner_trial_step_metrics AS SELECT * FROM ") +
                  "(SELECT 1 AS trial_id, 1 AS step, '' AS name, 0.0 AS value, '' AS datetime) "
                  "WHERE 0");
      }
      return;
    }
    if (tables.empty()) {
      // A new file: WAL first (it is a property of the file), then the schema in one
      // transaction. Another process may have created it meanwhile: look again under the lock.
      // Small pages: a commit writes every page it changed to the log, checksummed, so a state
      // change (one row and its index entries) costs a quarter of the bytes of 4 KiB pages. An
      // existing file keeps its page size.
      conn.exec("PRAGMA page_size=" + std::to_string(kNewFilePageSize));
      set_wal();
      Transaction tx(conn, Transaction::Kind::kWrite);
      tables = table_names();
      if (tables.empty()) {
        for (const auto& sql :
             os::create_statements(to_schema_revision(options.revision), kLibraryVersion)) {
          conn.exec(sql);
        }
        create_tuner_tables();
      }
      tx.commit();
      tables = table_names();
    }
    validate(tables);  // throws before anything is written to a file that is not ours
    set_wal();
    const char* synchronous =
        options.synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL";
    conn.exec(synchronous);
    checkpointer = std::make_unique<sqlite::Checkpointer>(conn, synchronous);
    if (!has(tables, "tuner_meta") || !has(tables, "tuner_trial_step_metrics")) {
      // A file Optuna or an older tuner wrote: add the project's tables (Optuna ignores them).
      Transaction tx(conn, Transaction::Kind::kWrite);
      create_tuner_tables();
      tx.commit();
    }
    add_indexes();
  }

  const std::string& path() const { return conn.path(); }

  // --- opening -----------------------------------------------------------------------------

  static bool has(const std::vector<std::string>& tables, std::string_view table) {
    return std::find(tables.begin(), tables.end(), table) != tables.end();
  }

  std::vector<std::string> table_names() {
    std::vector<std::string> out;
    try {
      auto q = conn.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
      while (q.step()) out.push_back(q.text(0));
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kDataLoss) {
        throw Error(ErrorCode::kDataLoss,
                    "'" + path() +
                        "' is not a SQLite database (or it is corrupt), so it cannot "
                        "hold studies; the file was not changed: pick another path (" +
                        e.what() + ")");
      }
      throw;
    }
    return out;
  }

  // Switching a file to WAL needs every other connection to let go of it, and SQLite answers
  // SQLITE_BUSY at once there instead of calling the busy handler; so wait here, up to the
  // same busy timeout, while several processes open a new file together.
  void set_wal() {
    auto deadline = std::chrono::steady_clock::now() + options.busy_timeout;
    for (;;) {
      try {
        std::string mode;
        {
          auto q = conn.query("PRAGMA journal_mode");
          if (q.step()) mode = q.text(0);
        }
        if (mode != "wal") conn.exec("PRAGMA journal_mode=WAL");
        return;
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kUnavailable || std::chrono::steady_clock::now() >= deadline) {
          throw;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  bool has_index(const char* name) {
    auto q = conn.query("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?");
    q.bind(0, name);
    return q.step();
  }

  // Adds the indexes of kTunerIndexes that the file lacks (a file of an older tuner, or
  // Optuna's), each in its own transaction. They only make reads faster: when one cannot be
  // created (the write lock is busy past the busy timeout, the disk is full), the open goes on
  // without it and the rest, and the reads it serves scan instead until a later open adds it.
  void add_indexes() {
    for (const TunerIndex& index : kTunerIndexes) {
      if (has_index(index.name)) continue;
      try {
        Transaction tx(conn, Transaction::Kind::kWrite);
        conn.exec(index.sql);
        tx.commit();
      } catch (const Error&) {
        return;
      }
    }
  }

  void create_tuner_tables() {
    for (const char* sql : kTunerTables) conn.exec(sql);
    conn.query(
            "INSERT INTO tuner_meta (\"key\", value) VALUES ('schema_version', ?) "
            "ON CONFLICT (\"key\") DO UPDATE SET value = excluded.value")
        .bind(0, std::to_string(kTunerSchemaVersion))
        .run();
  }

  void validate(const std::vector<std::string>& tables) {
    std::set<std::string> present(tables.begin(), tables.end());
    std::vector<std::string> missing;
    bool any_optuna = false;
    for (std::string_view t : os::required_tables()) {
      if (present.contains(std::string(t))) {
        any_optuna = true;
      } else {
        missing.emplace_back(t);
      }
    }
    if (!any_optuna) {
      throw Error(ErrorCode::kDataLoss,
                  "'" + path() + "' is a database of another program (its tables: " + join(tables) +
                      "); tuner only opens files that tuner or Optuna wrote. The "
                      "file was not changed: pick another path");
    }
    if (!missing.empty()) {
      throw Error(ErrorCode::kDataLoss,
                  "'" + path() + "' lacks Optuna's tables " + join(missing) +
                      " (written by an Optuna older than 2.6, or damaged); the file was not "
                      "changed: upgrade it with `optuna storage upgrade --storage sqlite:///" +
                      path() + "`");
    }
    std::string revision;
    {
      auto q = conn.query("SELECT version_num FROM alembic_version");
      if (q.step()) revision = q.text(0);
    }
    if (!os::parse_revision(revision)) {
      if (os::is_older_revision(revision)) {
        throw Error(ErrorCode::kFailedPrecondition,
                    "'" + path() + "' has Optuna schema revision " + revision +
                        ", older than tuner reads (v3.0.0.d, v3.2.0.a); the file was not "
                        "changed: upgrade it with `optuna storage upgrade --storage sqlite:///" +
                        path() + "`");
      }
      throw Error(ErrorCode::kFailedPrecondition,
                  "'" + path() + "' has Optuna schema revision '" + revision +
                      "', newer than this build of tuner knows (it reads v3.0.0.d and "
                      "v3.2.0.a); the file was not changed: use a newer tuner");
    }
    {
      auto q = conn.query("SELECT schema_version FROM version_info");
      int64_t version = q.step() ? q.int64(0) : -1;
      if (version != os::kSchemaVersion) {
        throw Error(ErrorCode::kFailedPrecondition,
                    "'" + path() + "' has version_info.schema_version " + std::to_string(version) +
                        " where Optuna's schema " + revision + " has " +
                        std::to_string(os::kSchemaVersion) + "; the file was not changed");
      }
    }
    if (present.contains("tuner_meta")) {
      auto q = conn.query("SELECT value FROM tuner_meta WHERE \"key\" = 'schema_version'");
      int version = q.step() ? std::atoi(q.text(0).c_str()) : 0;
      if (version > kTunerSchemaVersion) {
        throw Error(ErrorCode::kFailedPrecondition,
                    "'" + path() + "' has tuner schema version " + std::to_string(version) +
                        ", newer than this build knows (" + std::to_string(kTunerSchemaVersion) +
                        "); the file was not changed: use a newer tuner");
      }
    }
  }

  // --- lookups -----------------------------------------------------------------------------

  Error no_study(int64_t study_id) const {
    return Error(ErrorCode::kNotFound,
                 "no study with id " + std::to_string(study_id) + " in '" + path() + "'");
  }
  Error no_trial(int64_t trial_id) const {
    return Error(ErrorCode::kNotFound,
                 "no trial with id " + std::to_string(trial_id) + " in '" + path() + "'");
  }

  void require_study(int64_t study_id) {
    auto q = conn.query("SELECT 1 FROM studies WHERE study_id = ?");
    q.bind(0, study_id);
    if (!q.step()) throw no_study(study_id);
  }

  StudyRecord load_study(int64_t study_id) {
    StudyRecord record;
    {
      auto q = conn.query("SELECT study_name FROM studies WHERE study_id = ?");
      q.bind(0, study_id);
      if (!q.step()) throw no_study(study_id);
      record.study_id = study_id;
      record.name = q.text(0);
    }
    {
      auto q = conn.query(
          "SELECT direction FROM study_directions WHERE study_id = ? ORDER BY objective");
      q.bind(0, study_id);
      while (q.step()) {
        std::string name = q.text(0);
        auto d = os::parse_direction_name(name);
        if (!d) {
          throw Error(ErrorCode::kDataLoss, "study '" + record.name + "' in '" + path() +
                                                "' has the direction '" + name +
                                                "'; tuner knows MINIMIZE and MAXIMIZE");
        }
        record.directions.push_back(*d);
      }
    }
    for (auto [table, attrs] : {std::pair{"study_user_attributes", &record.user_attrs},
                                std::pair{"study_system_attributes", &record.system_attrs}}) {
      auto q = conn.query(std::string("SELECT \"key\", value_json FROM ") + table +
                          " WHERE study_id = ?");
      q.bind(0, study_id);
      while (q.step()) (*attrs)[q.text(0)] = q.text(1);
    }
    return record;
  }

  // The trial's number, state and study, which the write checks need. Throws kNotFound.
  FrozenTrial load_header(int64_t trial_id, int64_t* study_id) {
    auto q = conn.query("SELECT number, state, study_id FROM trials WHERE trial_id = ?");
    q.bind(0, trial_id);
    if (!q.step()) throw no_trial(trial_id);
    if (study_id) *study_id = q.int64(2);
    return header_from(q, trial_id);
  }

  // What finish_trial() checks: the header (number, state) and the study's number of
  // objectives, in one statement. Throws kNotFound.
  std::pair<FrozenTrial, size_t> load_finish_header(int64_t trial_id) {
    auto q = conn.query(
        "SELECT t.number, t.state, (SELECT COUNT(*) FROM study_directions d WHERE d.study_id = "
        "t.study_id) FROM trials t WHERE t.trial_id = ?");
    q.bind(0, trial_id);
    if (!q.step()) throw no_trial(trial_id);
    return {header_from(q, trial_id), static_cast<size_t>(q.int64(2))};
  }

  // A trial's number and state from columns 0 and 1 of a row.
  FrozenTrial header_from(const Statement& q, int64_t trial_id) const {
    FrozenTrial t;
    t.trial_id = trial_id;
    t.number = static_cast<int>(q.int64(0));
    t.state = parse_state(q.text_view(1), trial_id);
    return t;
  }

  TrialState parse_state(std::string_view name, int64_t trial_id) const {
    auto s = os::parse_state(name);
    if (!s) {
      throw Error(ErrorCode::kDataLoss, "trial id " + std::to_string(trial_id) + " in '" + path() +
                                            "' has the unknown state '" + std::string(name) + "'");
    }
    return *s;
  }

  // The distribution stored as `json`; `where` names the param for an error. A study's params
  // share few distributions, so each distinct text is parsed once. Valid until the next call.
  template <class Where>
  const Distribution& parse_distribution(std::string_view json, const Where& where) {
    auto it = parsed_distributions.find(json);
    if (it == parsed_distributions.end()) {
      Distribution d = os::from_json(json, where());
      if (parsed_distributions.size() >= 256) parsed_distributions.clear();
      it = parsed_distributions.emplace(std::string(json), std::move(d)).first;
    }
    return it->second;
  }

  // The statements that load whole trials: of the one trial ?1 (one), or of study ?1 numbered
  // >= ?2 in `states` (all states when not given). Built once per filter and kept.
  // With `skip_intermediate_values` (study form only), the intermediate values of the trials whose
  // ids are in the JSON array ?3 are not read.
  const TrialQueries& trial_queries_for(bool one,
                                        const std::optional<std::vector<TrialState>>& states,
                                        bool skip_intermediate_values = false) {
    std::string where =
        one ? " WHERE t.trial_id = ?1" : " WHERE t.study_id = ?1 AND t.number >= ?2";
    if (states) {
      // The state names are the fixed enum names, so the statement texts take few forms.
      std::string in;
      for (TrialState state : *states) {
        in += std::string(in.empty() ? "'" : ", '") + std::string(to_string(state)) + "'";
      }
      where += " AND t.state IN (" + (in.empty() ? std::string("NULL") : in) + ")";
    }
    const std::string key = where + (skip_intermediate_values ? " +skip" : "");
    auto it = trial_queries.find(key);
    if (it != trial_queries.end()) return it->second;
    // The rows of one trial are found by their trial_id index, without the join.
    const bool direct = one && !states;
    auto from = [&](const char* table) {
      return std::string(" FROM ") + table +
             (direct ? " c WHERE c.trial_id = ?1"
                     : " c JOIN trials t ON c.trial_id = t.trial_id" + where);
    };
    TrialQueries q;
    q.trials =
        "SELECT t.trial_id, t.number, t.state, t.datetime_start, t.datetime_complete "
        "FROM trials t" +
        where + " ORDER BY t.number, t.trial_id";
    q.params = "SELECT c.trial_id, c.param_name, c.param_value, c.distribution_json" +
               from("trial_params");
    q.tuner_params = "SELECT c.trial_id, c.param_name, c.param_value, c.distribution_json" +
                     from("tuner_trial_params");
    q.values = "SELECT c.trial_id, c.objective, c.value, c.value_type" + from("trial_values") +
               " ORDER BY c.objective";
    q.intermediate_values =
        "SELECT c.trial_id, c.step, c.intermediate_value, c.intermediate_value_type" +
        from("trial_intermediate_values") +
        (skip_intermediate_values && !one
             ? " AND c.trial_id NOT IN (SELECT value FROM json_each(?3))"
             : "");
    q.user_attrs = "SELECT c.trial_id, c.\"key\", c.value_json" + from("trial_user_attributes");
    q.system_attrs = "SELECT c.trial_id, c.\"key\", c.value_json" + from("trial_system_attributes");
    return trial_queries.emplace(key, std::move(q)).first->second;
  }

  // Loads whole trials: the one `trial_id` (study_id < 0), or those of `study_id` numbered
  // >= min_number, ordered by number.
  // `without_values` (study form only): trials whose intermediate values are not read.
  std::vector<FrozenTrial> load_trials(int64_t trial_id, int64_t study_id, int min_number,
                                       const std::optional<std::vector<TrialState>>& states = {},
                                       const std::vector<int64_t>& without_values = {}) {
    const bool one = study_id < 0;
    const bool skip = !one && !without_values.empty();
    const TrialQueries& sql = trial_queries_for(one, states, skip);
    auto bind = [&](Statement& q) {
      if (one) {
        q.bind(0, trial_id);
      } else {
        q.bind(0, study_id).bind(1, min_number);
      }
    };
    std::vector<FrozenTrial> trials;
    std::unordered_map<int64_t, size_t> index;  // trial_id -> position in trials
    {
      auto q = conn.query(sql.trials);
      bind(q);
      while (q.step()) {
        FrozenTrial t;
        t.trial_id = q.int64(0);
        t.number = static_cast<int>(q.int64(1));
        t.state = parse_state(q.text_view(2), t.trial_id);
        if (!q.is_null(3)) t.datetime_start = os::parse_datetime(q.text_view(3));
        if (!q.is_null(4)) t.datetime_complete = os::parse_datetime(q.text_view(4));
        index.emplace(t.trial_id, trials.size());
        trials.push_back(std::move(t));
      }
    }
    if (trials.empty()) return trials;
    auto trial_of = [&](int64_t id) -> FrozenTrial& { return trials[index.at(id)]; };
    for (const std::string* table_sql : {&sql.params, &sql.tuner_params}) {
      auto q = conn.query(*table_sql);
      bind(q);
      while (q.step()) {
        FrozenTrial& t = trial_of(q.int64(0));
        std::string name = q.text(1);
        auto where_param = [&] {
          return "trial " + std::to_string(t.number) + " param '" + name + "' in '" + path() + "'";
        };
        const Distribution& d = parse_distribution(q.text_view(3), where_param);
        ParamValue v;
        try {
          v = from_internal(d, q.real(2));
        } catch (const Error& e) {
          throw Error(ErrorCode::kDataLoss, where_param() + ": " + e.what());
        }
        t.params[name] = std::move(v);
        t.distributions[std::move(name)] = d;
      }
    }
    {
      auto q = conn.query(sql.values);
      bind(q);
      while (q.step()) {
        FrozenTrial& t = trial_of(q.int64(0));
        auto objective = static_cast<size_t>(q.int64(1));
        std::optional<double> raw;
        if (!q.is_null(2)) raw = q.real(2);
        auto v = os::stored_value(raw, q.text_view(3));
        if (!v) {
          throw Error(ErrorCode::kDataLoss, "trial " + std::to_string(t.number) + " in '" + path() +
                                                "' has a malformed value");
        }
        if (t.values.size() <= objective) t.values.resize(objective + 1);
        t.values[objective] = *v;
      }
    }
    {
      auto q = conn.query(sql.intermediate_values);
      bind(q);
      if (skip) {
        std::string ids;
        for (int64_t id : without_values) ids += (ids.empty() ? "" : ",") + std::to_string(id);
        q.bind(2, "[" + ids + "]");
      }
      while (q.step()) {
        FrozenTrial& t = trial_of(q.int64(0));
        std::optional<double> raw;
        if (!q.is_null(2)) raw = q.real(2);
        auto v = os::stored_value(raw, q.text_view(3));
        if (!v) {
          throw Error(ErrorCode::kDataLoss, "trial " + std::to_string(t.number) + " in '" + path() +
                                                "' has a malformed intermediate value");
        }
        t.intermediate_values[q.int64(1)] = *v;
      }
    }
    for (bool user : {true, false}) {
      auto q = conn.query(user ? sql.user_attrs : sql.system_attrs);
      bind(q);
      while (q.step()) {
        FrozenTrial& t = trial_of(q.int64(0));
        std::string_view key = q.text_view(1);
        if (user) {
          t.user_attrs[std::string(key)] = q.text(2);
        } else if (!key.starts_with(kParamMirrorPrefix)) {
          t.system_attrs[std::string(key)] = q.text(2);
        }
      }
    }
    return trials;
  }

  // The header of trial `trial_id` (number, state) with its param `name`, when it has it, in
  // trial.params and trial.distributions: all that set_trial_param's checks need, in one
  // statement. Throws kNotFound.
  FrozenTrial load_header_and_param(int64_t trial_id, const std::string& name) {
    auto q = conn.query(
        "SELECT t.number, t.state, p.param_id, p.param_value, p.distribution_json, u.param_id, "
        "u.param_value, u.distribution_json FROM trials t "
        "LEFT JOIN trial_params p ON p.trial_id = t.trial_id AND p.param_name = ?2 "
        "LEFT JOIN tuner_trial_params u ON u.trial_id = t.trial_id AND u.param_name = ?2 "
        "WHERE t.trial_id = ?1");
    q.bind(0, trial_id).bind(1, name);
    if (!q.step()) throw no_trial(trial_id);
    FrozenTrial trial;
    trial.trial_id = trial_id;
    trial.number = static_cast<int>(q.int64(0));
    trial.state = parse_state(q.text_view(1), trial_id);
    for (int column : {2, 5}) {  // trial_params first
      if (q.is_null(column)) continue;
      const std::string where =
          "trial " + std::to_string(trial.number) + " param '" + name + "' in '" + path() + "'";
      Distribution d = parse_distribution(q.text_view(column + 2), [&] { return where; });
      try {
        trial.params[name] = from_internal(d, q.real(column + 1));
      } catch (const Error& e) {
        throw Error(ErrorCode::kDataLoss, where + ": " + e.what());
      }
      trial.distributions[name] = std::move(d);
      break;
    }
    return trial;
  }

  FrozenTrial load_trial(int64_t trial_id) {
    auto trials = load_trials(trial_id, -1, 0);
    if (trials.empty()) throw no_trial(trial_id);
    return std::move(trials.front());
  }

  // --- writes (inside a write transaction) -------------------------------------------------

  void insert_param(int64_t trial_id, const std::string& name, const Distribution& distribution,
                    const ParamValue& value) {
    const double internal = to_internal(distribution, value);
    if (os::has_optuna_counterpart(distribution)) {
      conn.query(
              "INSERT INTO trial_params (trial_id, param_name, param_value, distribution_json) "
              "VALUES (?, ?, ?, ?)")
          .bind(0, trial_id)
          .bind(1, name)
          .bind(2, internal)
          .bind(3, distribution_json(distribution))
          .run();
      return;
    }
    conn.query(
            "INSERT INTO tuner_trial_params (trial_id, param_name, param_value, "
            "distribution_json) VALUES (?, ?, ?, ?)")
        .bind(0, trial_id)
        .bind(1, name)
        .bind(2, internal)
        .bind(3, distribution_json(distribution))
        .run();
    upsert_trial_attr(false, trial_id, std::string(kParamMirrorPrefix) + name,
                      nlohmann::json(internal).dump());
  }

  // Inside a write transaction: inserts param `name` of Optuna's tables when the trial exists, is
  // not finished and has no param `name` yet; false (nothing written) otherwise.
  // REQUIRES: has_optuna_counterpart(distribution) and the value is in it.
  bool insert_param_if_new(int64_t trial_id, const std::string& name,
                           const Distribution& distribution, const ParamValue& value) {
    conn.query(
            "INSERT INTO trial_params (trial_id, param_name, param_value, distribution_json) "
            "SELECT trial_id, ?2, ?3, ?4 FROM trials WHERE trial_id = ?1 AND state IN "
            "('RUNNING', 'WAITING') AND NOT EXISTS (SELECT 1 FROM tuner_trial_params WHERE "
            "trial_id = ?1 AND param_name = ?2) ON CONFLICT DO NOTHING")
        .bind(0, trial_id)
        .bind(1, name)
        .bind(2, to_internal(distribution, value))
        .bind(3, distribution_json(distribution))
        .run();
    return sqlite3_changes(conn.get()) == 1;
  }

  // The JSON a param's distribution is stored as: Optuna's, or the project's for a
  // distribution Optuna has no counterpart for. Valid until the next call.
  const std::string& distribution_json(const Distribution& distribution) {
    for (const auto& [known, json] : json_cache) {
      if (identical(known, distribution)) return json;
    }
    if (json_cache.size() >= 32) json_cache.clear();
    json_cache.emplace_back(distribution, os::has_optuna_counterpart(distribution)
                                              ? os::to_optuna_json(distribution)
                                              : os::to_tuner_json(distribution));
    return json_cache.back().second;
  }

  void upsert_trial_attr(bool user, int64_t trial_id, const std::string& key,
                         const std::string& json) {
    conn.query(user ? "INSERT INTO trial_user_attributes (trial_id, \"key\", value_json) "
                      "VALUES (?, ?, ?) ON CONFLICT (trial_id, \"key\") DO UPDATE SET "
                      "value_json = excluded.value_json"
                    : "INSERT INTO trial_system_attributes (trial_id, \"key\", value_json) "
                      "VALUES (?, ?, ?) ON CONFLICT (trial_id, \"key\") DO UPDATE SET "
                      "value_json = excluded.value_json")
        .bind(0, trial_id)
        .bind(1, key)
        .bind(2, json)
        .run();
  }

  void upsert_study_attr(bool user, int64_t study_id, const std::string& key,
                         const std::string& json) {
    conn.query(user ? "INSERT INTO study_user_attributes (study_id, \"key\", value_json) "
                      "VALUES (?, ?, ?) ON CONFLICT (study_id, \"key\") DO UPDATE SET "
                      "value_json = excluded.value_json"
                    : "INSERT INTO study_system_attributes (study_id, \"key\", value_json) "
                      "VALUES (?, ?, ?) ON CONFLICT (study_id, \"key\") DO UPDATE SET "
                      "value_json = excluded.value_json")
        .bind(0, study_id)
        .bind(1, key)
        .bind(2, json)
        .run();
  }

  std::string now() const { return os::format_datetime(options.clock->system_now()); }

  // The id of the COMPLETE trial of `study_id` with the best value of objective 0 (the lowest
  // number among equal values), found through tuner_trial_values_objective_value: the values
  // of the best infinity (-inf when minimizing), then the finite ones, are walked from the best
  // on, across all studies, until the first value a COMPLETE trial of the study has and its
  // ties are read. nullopt, for the scan to decide, when there is no such index, when it would
  // read more than kBestTrialWalkLimit rows, or when the study's best value is none of those
  // (the other infinity, or no value at all). Within a read transaction.
  std::optional<int64_t> walk_best_trial(int64_t study_id, bool minimize) {
    if (!has_index("tuner_trial_values_objective_value")) return std::nullopt;
    int walked = 0;
    for (const char* type : {minimize ? "INF_NEG" : "INF_POS", "FINITE"}) {
      auto q = conn.query(std::string("SELECT v.value, t.study_id, t.state, t.number, t.trial_id "
                                      "FROM trial_values v INDEXED BY "
                                      "tuner_trial_values_objective_value CROSS JOIN trials t ON "
                                      "t.trial_id = v.trial_id WHERE v.objective = 0 AND "
                                      "v.value_type = ? ORDER BY v.value") +
                          (minimize ? "" : " DESC"));
      q.bind(0, type);
      std::optional<int64_t> best_id;
      int64_t best_number = 0;
      std::optional<double> best_value;
      while (q.step()) {
        if (++walked > kBestTrialWalkLimit) return std::nullopt;
        // NULL (a malformed finite value) ranks as the scan ranks it, as a value of its own.
        const std::optional<double> value =
            q.is_null(0) ? std::nullopt : std::optional<double>(q.real(0));
        if (best_id && value != best_value) break;  // past the ties of the best value
        if (q.int64(1) != study_id || q.text_view(2) != "COMPLETE") continue;
        if (!best_id || q.int64(3) < best_number) {
          best_id = q.int64(4);
          best_number = q.int64(3);
          best_value = value;
        }
      }
      if (best_id) return best_id;
    }
    return std::nullopt;
  }

  // RUNNING trials of `study_id` (or just `trial_id`, when study_id < 0) whose last heartbeat,
  // or start when they have none, is earlier than `stale_before`.
  std::vector<int64_t> stale_trial_ids(int64_t study_id, int64_t trial_id, TimePoint stale_before) {
    auto q = conn.query(
        study_id >= 0 ? "SELECT t.trial_id, h.heartbeat, t.datetime_start FROM trials t LEFT JOIN "
                        "trial_heartbeats h ON h.trial_id = t.trial_id WHERE t.study_id = ? AND "
                        "t.state = 'RUNNING' ORDER BY t.number"
                      : "SELECT t.trial_id, h.heartbeat, t.datetime_start FROM trials t LEFT JOIN "
                        "trial_heartbeats h ON h.trial_id = t.trial_id WHERE t.trial_id = ? AND "
                        "t.state = 'RUNNING'");
    q.bind(0, study_id >= 0 ? study_id : trial_id);
    std::vector<int64_t> out;
    while (q.step()) {
      std::optional<std::string> text = q.optional_text(1);
      if (!text) text = q.optional_text(2);
      std::optional<TimePoint> last = text ? os::parse_datetime(*text) : std::nullopt;
      if (last && *last < stale_before) out.push_back(q.int64(0));
    }
    return out;
  }

  // Inside a write transaction: the finishing writes of finish_trial().
  void write_finish(int64_t trial_id, TrialState state, const std::vector<double>& values,
                    const Attributes& system_attrs) {
    const std::string time = now();
    conn.query(
            "UPDATE trials SET state = ?, datetime_complete = ?, "
            "datetime_start = COALESCE(datetime_start, ?) WHERE trial_id = ?")
        .bind(0, to_string(state))
        .bind(1, time)
        .bind(2, time)
        .bind(3, trial_id)
        .run();
    conn.query("DELETE FROM trial_values WHERE trial_id = ?").bind(0, trial_id).run();
    for (size_t i = 0; i < values.size(); ++i) {
      std::string_view type = os::value_type(values[i]);
      auto q = conn.query(
          "INSERT INTO trial_values (trial_id, objective, value, value_type) VALUES (?, ?, ?, ?)");
      q.bind(0, trial_id).bind(1, static_cast<int64_t>(i));
      if (type == "FINITE") {
        q.bind(2, values[i]);
      } else {
        q.bind_null(2);
      }
      q.bind(3, type);
      q.run();
    }
    for (const auto& [key, json] : system_attrs) upsert_trial_attr(false, trial_id, key, json);
  }

  // Inside a write transaction: the number Optuna gives the next trial of `study_id`, the count
  // of the study's trials (the write lock makes the count and the insert one step); nullopt when
  // there is no such study.
  //
  // Counting every trial costs time in proportion to the study. So when this connection created
  // a trial M of the study before, and M is still there, the count is M's number + 1 + the
  // study's trials after M: M's number counts the trials before it, and trials are never
  // removed one by one (only with their study, M included) nor inserted with an id below an
  // existing one. Otherwise (a new connection, a deleted study, a rolled-back insert) it counts.
  std::optional<int64_t> next_number(int64_t study_id) {
    if (auto hint = last_trial.find(study_id); hint != last_trial.end()) {
      auto q = conn.query(
          "SELECT EXISTS (SELECT 1 FROM studies WHERE study_id = ?1), (SELECT number FROM trials "
          "WHERE trial_id = ?2 AND study_id = ?1), (SELECT COUNT(*) FROM trials WHERE study_id = "
          "?1 AND trial_id > ?2)");
      q.bind(0, study_id).bind(1, hint->second);
      q.step();
      if (q.int64(0) == 0) return std::nullopt;
      if (!q.is_null(1)) return q.int64(1) + 1 + q.int64(2);
    }
    auto q = conn.query(
        "SELECT EXISTS (SELECT 1 FROM studies WHERE study_id = ?1), "
        "(SELECT COUNT(*) FROM trials WHERE study_id = ?1)");
    q.bind(0, study_id);
    q.step();
    if (q.int64(0) == 0) return std::nullopt;
    return q.int64(1);
  }

  // Inside a write transaction: create_trial() after its checks. Returns the new trial, as
  // get_trial() would read it unless `from` is given (then only its id, number, state and
  // start are set). Throws kNotFound for an unknown study.
  FrozenTrial insert_trial(int64_t study_id, TrialState state, const FrozenTrial* from) {
    const std::optional<int64_t> number = next_number(study_id);
    if (!number) throw no_study(study_id);
    FrozenTrial created;
    created.number = static_cast<int>(*number);
    created.state = state;
    {
      auto q = conn.query(
          "INSERT INTO trials (number, study_id, state, datetime_start, datetime_complete) "
          "VALUES (?, ?, ?, ?, NULL)");
      q.bind(0, *number).bind(1, study_id).bind(2, to_string(state));
      if (state == TrialState::kRunning) {
        // Stored with microseconds, so the record gets the stored time, not the clock's.
        const TimePoint start =
            std::chrono::floor<std::chrono::microseconds>(options.clock->system_now());
        q.bind(3, os::format_datetime(start));
        created.datetime_start = start;
      } else {
        q.bind_null(3);
      }
      q.run();
    }
    const int64_t trial_id = sqlite3_last_insert_rowid(conn.get());
    created.trial_id = trial_id;
    last_trial[study_id] = trial_id;
    if (from) {
      for (const auto& [name, value] : from->params) {
        insert_param(trial_id, name, from->distributions.at(name), value);
      }
      for (const auto& [key, json] : from->user_attrs) upsert_trial_attr(true, trial_id, key, json);
      for (const auto& [key, json] : from->system_attrs) {
        upsert_trial_attr(false, trial_id, key, json);
      }
    }
    return created;
  }
};

namespace {

std::optional<std::pair<uint64_t, uint64_t>> file_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::pair<uint64_t, uint64_t>(st.st_dev, st.st_ino);
}

}  // namespace

SqliteStorage::SqliteStorage(std::string path, SqliteStorageOptions options)
    : path_(std::move(path)), impl_(std::make_unique<Impl>(path_, options)) {
  file_id_ = file_id(path_);
}

std::optional<std::string> SqliteStorage::file_replaced() const {
  if (!file_id_) return std::nullopt;
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    if (errno != ENOENT) return std::nullopt;  // cannot look (yet): not a verdict
    return "the study database " + path_ + " was deleted while it was open";
  }
  if (std::pair<uint64_t, uint64_t>(st.st_dev, st.st_ino) != *file_id_) {
    return "the study database " + path_ + " was replaced by another file while it was open";
  }
  return std::nullopt;
}

void SqliteStorage::backup_to(const std::string& destination) {
  if (std::filesystem::exists(destination)) {
    throw Error(ErrorCode::kAlreadyExists,
                "cannot copy the study database to " + destination + ": the file exists");
  }
  sqlite3* raw = nullptr;
  const int opened = sqlite3_open_v2(destination.c_str(), &raw,
                                     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  sqlite::DbHandle target(raw);
  auto failed = [&](const std::string& why) {
    target.reset();
    std::error_code ignored;
    std::filesystem::remove(destination, ignored);
    throw StorageFault(ErrorCode::kFailedPrecondition, "cannot copy the study database " + path_ +
                                                           " to " + destination + ": " + why);
  };
  if (opened != SQLITE_OK) {
    failed(raw ? sqlite3_errmsg(raw) : sqlite3_errstr(opened));
  }
  std::lock_guard lock(mutex_);
  sqlite3_backup* backup = sqlite3_backup_init(target.get(), "main", impl_->conn.get(), "main");
  if (!backup) failed(sqlite3_errmsg(target.get()));
  const int stepped = sqlite3_backup_step(backup, -1);
  const int finished = sqlite3_backup_finish(backup);
  if (stepped != SQLITE_DONE) failed(sqlite3_errstr(stepped));
  if (finished != SQLITE_OK) failed(sqlite3_errmsg(target.get()));
}

SqliteStorage::~SqliteStorage() = default;

void SqliteStorage::with_connection(const std::function<void(Connection&)>& f) {
  std::lock_guard lock(mutex_);
  f(impl_->conn);
}

StudyRecord SqliteStorage::create_study(const std::string& name,
                                        const std::vector<StudyDirection>& directions) {
  if (directions.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "study '" + name + "' needs at least one direction");
  }
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kWrite);
  {
    auto q = impl_->conn.query("SELECT 1 FROM studies WHERE study_name = ?");
    q.bind(0, name);
    if (q.step()) {
      throw Error(ErrorCode::kAlreadyExists,
                  "a study named '" + name + "' already exists in '" + path_ + "'");
    }
  }
  impl_->conn.query("INSERT INTO studies (study_name) VALUES (?)").bind(0, name).run();
  const int64_t study_id = sqlite3_last_insert_rowid(impl_->conn.get());
  for (size_t i = 0; i < directions.size(); ++i) {
    impl_->conn
        .query("INSERT INTO study_directions (direction, study_id, objective) VALUES (?, ?, ?)")
        .bind(0, optuna_schema::direction_name(directions[i]))
        .bind(1, study_id)
        .bind(2, static_cast<int64_t>(i))
        .run();
  }
  tx.commit();
  return StudyRecord{study_id, name, directions, {}, {}};
}

std::optional<StudyRecord> SqliteStorage::find_study(const std::string& name) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kRead);
  int64_t study_id;
  {
    auto q = impl_->conn.query("SELECT study_id FROM studies WHERE study_name = ?");
    q.bind(0, name);
    if (!q.step()) return std::nullopt;
    study_id = q.int64(0);
  }
  StudyRecord record = impl_->load_study(study_id);
  tx.commit();
  return record;
}

std::vector<StudyRecord> SqliteStorage::list_studies() {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kRead);
  std::vector<int64_t> ids;
  {
    auto q = impl_->conn.query("SELECT study_id FROM studies ORDER BY study_id");
    while (q.step()) ids.push_back(q.int64(0));
  }
  std::vector<StudyRecord> out;
  for (int64_t id : ids) out.push_back(impl_->load_study(id));
  tx.commit();
  return out;
}

void SqliteStorage::delete_study(int64_t study_id) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kWrite);
  impl_->require_study(study_id);
  for (const char* table : {"trial_params", "tuner_trial_params", "tuner_trial_step_metrics",
                            "trial_values", "trial_intermediate_values", "trial_user_attributes",
                            "trial_system_attributes", "trial_heartbeats"}) {
    impl_->conn
        .query(std::string("DELETE FROM ") + table +
               " WHERE trial_id IN (SELECT trial_id FROM trials WHERE study_id = ?)")
        .bind(0, study_id)
        .run();
  }
  for (const char* table : {"trials", "study_directions", "study_user_attributes",
                            "study_system_attributes", "studies"}) {
    impl_->conn.query(std::string("DELETE FROM ") + table + " WHERE study_id = ?")
        .bind(0, study_id)
        .run();
  }
  tx.commit();
}

void SqliteStorage::set_study_user_attr(int64_t study_id, const std::string& key,
                                        const std::string& json) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kWrite);
  impl_->require_study(study_id);
  impl_->upsert_study_attr(true, study_id, key, json);
  tx.commit();
}

void SqliteStorage::set_study_system_attr(int64_t study_id, const std::string& key,
                                          const std::string& json) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kWrite);
  impl_->require_study(study_id);
  impl_->upsert_study_attr(false, study_id, key, json);
  tx.commit();
}

FrozenTrial SqliteStorage::create_trial(int64_t study_id, TrialState state,
                                        const FrozenTrial* from) {
  if (state != TrialState::kRunning && state != TrialState::kWaiting) {
    throw Error(ErrorCode::kInvalidArgument,
                "a new trial is RUNNING or WAITING, not " + std::string(to_string(state)));
  }
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kWrite);
  FrozenTrial created = impl_->insert_trial(study_id, state, from);
  // Without `from`, the new trial is all in `created`; with it, params and attributes are read
  // back as get_trial() reads them.
  if (from) created = impl_->load_trial(created.trial_id);
  tx.commit();
  return created;
}

bool SqliteStorage::claim_waiting_trial(int64_t trial_id) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kWrite);
  FrozenTrial header = impl_->load_header(trial_id, nullptr);
  if (header.state != TrialState::kWaiting) return false;
  impl_->conn
      .query(
          "UPDATE trials SET state = 'RUNNING', datetime_start = ? "
          "WHERE trial_id = ? AND state = 'WAITING'")
      .bind(0, impl_->now())
      .bind(1, trial_id)
      .run();
  const bool claimed = sqlite3_changes(impl_->conn.get()) == 1;
  tx.commit();
  return claimed;
}

void SqliteStorage::set_trial_param(int64_t trial_id, const std::string& name,
                                    const Distribution& distribution, const ParamValue& value) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kWrite);
  write_param(trial_id, name, distribution, value);
  tx.commit();
}

void SqliteStorage::set_trial_params(int64_t trial_id, const std::vector<NewParam>& params) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kWrite);
  for (const NewParam& p : params) write_param(trial_id, p.name, p.distribution, p.value);
  tx.commit();
}

void SqliteStorage::write_param(int64_t trial_id, const std::string& name,
                                const Distribution& distribution, const ParamValue& value) {
  // The usual case in one statement: a new param of a trial that is not finished, with a valid
  // distribution that contains the value. Anything else takes the checks below, which refuse
  // exactly what they refused before (with their messages) or find the same value again.
  const bool plain = os::has_optuna_counterpart(distribution) && !find_problem(distribution) &&
                     contains(distribution, value);
  if (!plain || !impl_->insert_param_if_new(trial_id, name, distribution, value)) {
    FrozenTrial trial = impl_->load_header_and_param(trial_id, name);  // what the checks need
    check_param(trial, name, distribution, value);
    if (trial.params.contains(name)) return;  // the same value again: nothing to write
    impl_->insert_param(trial_id, name, distribution, value);
  }
}

void SqliteStorage::set_trial_intermediate_value(int64_t trial_id, int64_t step, double value) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kWrite);
  // The usual case in one statement: the upsert, only if the trial is not finished. Otherwise
  // (a NaN, an unknown or finished trial) the checks refuse it with their messages.
  std::string_view type = optuna_schema::value_type(value);
  const char* kUpsert =
      "INSERT INTO trial_intermediate_values (trial_id, step, intermediate_value, "
      "intermediate_value_type) SELECT trial_id, ?2, ?3, ?4 FROM trials WHERE trial_id = ?1 AND "
      "state IN ('RUNNING', 'WAITING') ON CONFLICT (trial_id, step) DO UPDATE SET "
      "intermediate_value = excluded.intermediate_value, "
      "intermediate_value_type = excluded.intermediate_value_type";
  auto upsert = [&] {
    auto q = impl_->conn.query(kUpsert);
    q.bind(0, trial_id).bind(1, step);
    if (type == "FINITE") {
      q.bind(2, value);
    } else {
      q.bind_null(2);
    }
    q.bind(3, type);
    q.run();
    return sqlite3_changes(impl_->conn.get()) == 1;
  };
  if (std::isnan(value) || !upsert()) {
    FrozenTrial header = impl_->load_header(trial_id, nullptr);
    check_intermediate_value(header, step, value);  // throws: the trial is finished, or NaN
    throw Error(ErrorCode::kInternal, "trial " + std::to_string(header.number) + " in '" + path_ +
                                          "': step " + std::to_string(step) + " was not written");
  }
  tx.commit();
}

void SqliteStorage::set_trial_step_metrics(int64_t trial_id, int64_t step,
                                           const StepValues& metrics) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kWrite);
  check_writable(impl_->load_header(trial_id, nullptr), "report metrics");
  const std::string time = impl_->now();
  for (const auto& [name, value] : metrics) {
    auto q = impl_->conn.query(
        "INSERT INTO tuner_trial_step_metrics (trial_id, step, name, value, datetime) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (trial_id, step, name) DO UPDATE SET "
        "value = excluded.value, datetime = excluded.datetime");
    q.bind(0, trial_id).bind(1, step).bind(2, name);
    if (std::isnan(value)) {
      q.bind_null(3);
    } else {
      q.bind(3, value);
    }
    q.bind(4, time).run();
  }
  tx.commit();
}

void SqliteStorage::set_trial_user_attr(int64_t trial_id, const std::string& key,
                                        const std::string& json) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kWrite);
  FrozenTrial header = impl_->load_header(trial_id, nullptr);
  check_writable(header, "set user attribute '" + key + "'");
  impl_->upsert_trial_attr(true, trial_id, key, json);
  tx.commit();
}

void SqliteStorage::set_trial_system_attr(int64_t trial_id, const std::string& key,
                                          const std::string& json) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kWrite);
  FrozenTrial header = impl_->load_header(trial_id, nullptr);
  check_writable(header, "set system attribute '" + key + "'");
  impl_->upsert_trial_attr(false, trial_id, key, json);
  tx.commit();
}

FrozenTrial SqliteStorage::finish_trial(int64_t trial_id, TrialState state,
                                        const std::vector<double>& values,
                                        const Attributes& system_attrs,
                                        const Attributes& user_attrs) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kWrite);
  auto [header, n_objectives] = impl_->load_finish_header(trial_id);
  check_finish(header, state, values, n_objectives);
  for (const auto& [key, json] : user_attrs) impl_->upsert_trial_attr(true, trial_id, key, json);
  impl_->write_finish(trial_id, state, values, system_attrs);
  FrozenTrial finished = impl_->load_trial(trial_id);
  tx.commit();
  return finished;
}

void SqliteStorage::record_heartbeat(int64_t trial_id, TimePoint time) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kWrite);
  check_heartbeat(impl_->load_header(trial_id, nullptr));
  impl_->conn
      .query(
          "INSERT INTO trial_heartbeats (trial_id, heartbeat) VALUES (?, ?) "
          "ON CONFLICT (trial_id) DO UPDATE SET heartbeat = excluded.heartbeat")
      .bind(0, trial_id)
      .bind(1, optuna_schema::format_datetime(time))
      .run();
  tx.commit();
}

std::vector<FrozenTrial> SqliteStorage::get_stale_trials(int64_t study_id, TimePoint stale_before) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kRead);
  impl_->require_study(study_id);
  std::vector<FrozenTrial> out;
  for (int64_t id : impl_->stale_trial_ids(study_id, -1, stale_before)) {
    out.push_back(impl_->load_trial(id));
  }
  tx.commit();
  return out;
}

std::optional<Storage::StaleTrialOutcome> SqliteStorage::fail_stale_trial(
    int64_t trial_id, TimePoint stale_before, const Attributes& fail_attrs,
    const FrozenTrial* retry) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kWrite);
  int64_t study_id = -1;
  impl_->load_header(trial_id, &study_id);  // kNotFound for an unknown id
  if (impl_->stale_trial_ids(-1, trial_id, stale_before).empty()) return std::nullopt;
  impl_->write_finish(trial_id, TrialState::kFail, {}, fail_attrs);
  StaleTrialOutcome outcome;
  if (retry) {
    outcome.retry =
        impl_->load_trial(impl_->insert_trial(study_id, TrialState::kWaiting, retry).trial_id);
  }
  outcome.failed = impl_->load_trial(trial_id);
  tx.commit();
  return outcome;
}

void SqliteStorage::run_batch(const std::function<void()>& body) {
  std::lock_guard lock(mutex_);
  if (impl_->options.read_only || impl_->conn.in_batch()) {
    body();  // nothing to group / joins the batch that is open
    return;
  }
  std::optional<sqlite::Batch> batch;
  try {
    batch.emplace(impl_->conn);
  } catch (const Error&) {
    // The write lock is not to be had (another process holds it past the busy timeout): the
    // calls take their chances one by one, as without a batch.
    body();
    return;
  }
  body();
  batch->commit();
}

std::optional<uint64_t> SqliteStorage::change_count() {
  std::lock_guard lock(mutex_);
  auto q = impl_->conn.query("PRAGMA data_version");
  q.step();
  const auto others = static_cast<uint64_t>(q.int64(0));
  q.run();
  return (others << 40) + impl_->conn.changes();
}

FrozenTrial SqliteStorage::get_trial(int64_t trial_id) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kRead);
  FrozenTrial trial = impl_->load_trial(trial_id);
  tx.commit();
  return trial;
}

std::optional<FrozenTrial> SqliteStorage::get_best_trial(int64_t study_id) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kRead);
  StudyRecord record = impl_->load_study(study_id);
  // Optuna files may hold infinite values of COMPLETE trials (value NULL, the type says which).
  const bool minimize = record.directions.front() == StudyDirection::kMinimize;
  if (std::optional<int64_t> found = impl_->walk_best_trial(study_id, minimize)) {
    FrozenTrial best = impl_->load_trial(*found);
    tx.commit();
    return best;
  }
  // The scan of the study's COMPLETE trials, ranking as the walk does.
  auto q = impl_->conn.query(
      minimize ? "SELECT t.trial_id FROM trials t JOIN trial_values v ON v.trial_id = t.trial_id "
                 "AND v.objective = 0 WHERE t.study_id = ? AND t.state = 'COMPLETE' ORDER BY "
                 "CASE v.value_type WHEN 'INF_NEG' THEN 0 WHEN 'FINITE' THEN 1 ELSE 2 END, "
                 "v.value, t.number LIMIT 1"
               : "SELECT t.trial_id FROM trials t JOIN trial_values v ON v.trial_id = t.trial_id "
                 "AND v.objective = 0 WHERE t.study_id = ? AND t.state = 'COMPLETE' ORDER BY "
                 "CASE v.value_type WHEN 'INF_POS' THEN 0 WHEN 'FINITE' THEN 1 ELSE 2 END, "
                 "v.value DESC, t.number LIMIT 1");
  q.bind(0, study_id);
  if (!q.step()) return std::nullopt;
  const int64_t trial_id = q.int64(0);
  q.run();
  FrozenTrial best = impl_->load_trial(trial_id);
  tx.commit();
  return best;
}

std::vector<FrozenTrial> SqliteStorage::get_trials(int64_t study_id, const TrialFilter& filter) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kRead);
  impl_->require_study(study_id);
  std::vector<FrozenTrial> trials =
      impl_->load_trials(-1, study_id, std::max(filter.min_number, 0), filter.states,
                         filter.without_intermediate_values);
  tx.commit();
  return trials;
}

std::map<int64_t, std::vector<StepMetrics>> SqliteStorage::get_step_metrics(
    int64_t study_id, const std::vector<int64_t>& trial_ids) {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->conn, Transaction::Kind::kRead);
  impl_->require_study(study_id);
  std::map<int64_t, std::vector<StepMetrics>> out;
  // Rows in (trial, step) order: the primary key's.
  auto read = [&out](Statement& q) {
    while (q.step()) {
      std::vector<StepMetrics>& steps = out[q.int64(0)];
      const int64_t step = q.int64(1);
      if (steps.empty() || steps.back().step != step) steps.push_back(StepMetrics{.step = step});
      StepMetrics& metrics = steps.back();
      metrics.metrics[q.text(2)] = q.is_null(3) ? std::nan("") : q.real(3);
      const TimePoint time = os::parse_datetime(q.text(4)).value_or(TimePoint{});
      metrics.time = std::max(metrics.time, time);
    }
  };
  if (trial_ids.empty()) {
    auto q = impl_->conn.query(
        "SELECT m.trial_id, m.step, m.name, m.value, m.datetime FROM tuner_trial_step_metrics m "
        "JOIN trials t ON t.trial_id = m.trial_id WHERE t.study_id = ? "
        "ORDER BY m.trial_id, m.step");
    q.bind(0, study_id);
    read(q);
  } else {
    // Each trial through the primary key; trials of other studies are left out.
    for (int64_t trial_id : std::set<int64_t>(trial_ids.begin(), trial_ids.end())) {
      auto q = impl_->conn.query(
          "SELECT m.trial_id, m.step, m.name, m.value, m.datetime FROM tuner_trial_step_metrics m "
          "JOIN trials t ON t.trial_id = m.trial_id WHERE m.trial_id = ? AND t.study_id = ? "
          "ORDER BY m.step");
      q.bind(0, trial_id).bind(1, study_id);
      read(q);
    }
  }
  tx.commit();
  return out;
}

}  // namespace tuner
