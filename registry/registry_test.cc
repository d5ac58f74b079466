#include "registry/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "registry/test_util.h"
#include "storage/sqlite/connection.h"
#include "storage/sqlite_storage.h"
#include "trials/error.h"

namespace tuner::registry {
namespace {

namespace fs = std::filesystem;
using testing::code_of;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ScratchDir;
using testing::tiny_checkpoint;

Lineage lineage_with(double accuracy, int trial = 0, std::string storage = "") {
  Lineage l;
  l.study = "s";
  l.trial = trial;
  l.storage = std::move(storage);
  l.params = {{"lr", "0.01"}};
  l.metrics = {{"val_accuracy", accuracy}, {"val_loss", 1.0 - accuracy}};
  return l;
}

RegisterOptions promote_on(const std::string& metric = "val_accuracy", bool maximize = true) {
  RegisterOptions o;
  o.metric = metric;
  o.maximize = maximize;
  o.promote_if_better = true;
  return o;
}

TEST(RegistryTest, VersionsCountFromOneAndAreNeverReused) {
  ScratchDir scratch;
  Registry r = Registry::open(scratch.path() / "reg", /*create=*/true);
  const auto c = tiny_checkpoint();
  EXPECT_EQ(r.register_version("m", c, lineage_with(0.5), {}).version, 1);
  EXPECT_EQ(r.register_version("m", c, lineage_with(0.6), {}).version, 2);
  r.delete_version("m", 2);
  EXPECT_FALSE(fs::exists(scratch.path() / "reg" / "m" / "2"));
  EXPECT_EQ(r.register_version("m", c, lineage_with(0.7), {}).version, 3);
  const RegisteredModel m = r.model("m");
  ASSERT_EQ(m.versions.size(), 2u);
  EXPECT_EQ(m.versions[0].version, 1);
  EXPECT_EQ(m.versions[1].version, 3);
  EXPECT_EQ(m.versions[1].lineage.metrics.at("val_accuracy"), 0.7);
  EXPECT_TRUE(fs::is_regular_file(scratch.path() / "reg" / "m" / "3" / "MLmodel"));
  EXPECT_THAT(r.model_names(), ElementsAre("m"));
}

TEST(RegistryTest, AliasesResolveAndMove) {
  ScratchDir scratch;
  Registry r = Registry::open(scratch.path(), true);
  const auto c = tiny_checkpoint();
  RegisterOptions o;
  o.aliases = {"challenger"};
  r.register_version("m", c, lineage_with(0.5), {});
  r.register_version("m", c, lineage_with(0.6), o);
  EXPECT_EQ(r.resolve("m").version.version, 2);  // no champion: the latest
  EXPECT_EQ(r.resolve("m@challenger").version.version, 2);
  r.set_alias("m", 1, "champion");
  EXPECT_EQ(r.resolve("m").version.version, 1);
  EXPECT_EQ(r.resolve("m@champion").dir, scratch.path() / "m" / "1");
  r.set_alias("m", 2, "champion");  // moves
  EXPECT_EQ(r.resolve("m@champion").version.version, 2);
  EXPECT_EQ(r.resolve("m/1").version.version, 1);
  r.set_tag("m", 1, "owner", "ml-team");
  r.set_description("m", std::nullopt, "the classifier");
  EXPECT_EQ(r.model("m").find(1)->tags.at("owner"), "ml-team");
  EXPECT_EQ(r.model("m").description, "the classifier");
  r.delete_version("m", 2);  // takes its aliases with it
  EXPECT_TRUE(r.model("m").aliases.empty());
  EXPECT_EQ(code_of([&] { r.set_alias("m", 1, "42"); }), ErrorCode::kInvalidArgument);
}

TEST(RegistryTest, UnknownModelAliasOrVersionIsNotFound) {
  ScratchDir scratch;
  Registry r = Registry::open(scratch.path(), true);
  r.register_version("m", tiny_checkpoint(), lineage_with(0.5), {});
  std::string message;
  EXPECT_EQ(code_of([&] { (void)r.resolve("nope"); }, &message), ErrorCode::kNotFound);
  EXPECT_THAT(message, HasSubstr("has no model 'nope' (registered: m)"));
  EXPECT_EQ(code_of([&] { (void)r.resolve("m@champion"); }, &message), ErrorCode::kNotFound);
  EXPECT_THAT(message, HasSubstr("model 'm' has no alias 'champion' (its aliases: none)"));
  EXPECT_EQ(code_of([&] { (void)r.resolve("m/9"); }, &message), ErrorCode::kNotFound);
  EXPECT_THAT(message, HasSubstr("has no version 9 (its versions: 1)"));
  EXPECT_EQ(code_of([&] { (void)r.resolve("m/x"); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { r.set_alias("m", 5, "champion"); }), ErrorCode::kNotFound);
  EXPECT_EQ(code_of([&] { r.delete_alias("m", "champion"); }), ErrorCode::kNotFound);
  EXPECT_EQ(code_of([&] { r.delete_model("other"); }), ErrorCode::kNotFound);
  EXPECT_EQ(code_of([&] { (void)r.resolve(".hidden"); }), ErrorCode::kNotFound);
  EXPECT_EQ(code_of([&] { (void)r.resolve("../1"); }), ErrorCode::kNotFound);
}

TEST(RegistryTest, ADirectoryThatIsNotARegistryIsRefused) {
  ScratchDir scratch;
  std::string message;
  EXPECT_EQ(code_of([&] { (void)Registry::open(scratch.path() / "missing", false); }),
            ErrorCode::kNotFound);
  // Empty, without create: not (yet) a registry.
  EXPECT_EQ(code_of([&] { (void)Registry::open(scratch.path(), false); }, &message),
            ErrorCode::kFailedPrecondition);
  std::ofstream(scratch.path() / "notes.txt") << "hello\n";
  EXPECT_EQ(code_of([&] { (void)Registry::open(scratch.path(), true); }, &message),
            ErrorCode::kFailedPrecondition);
  EXPECT_THAT(message, HasSubstr("is not a model registry"));
  EXPECT_THAT(message, HasSubstr("holds other files"));
  EXPECT_FALSE(fs::exists(scratch.path() / "tuner-registry.json"));  // nothing written
  std::ofstream(scratch.path() / "file") << "x";
  EXPECT_EQ(code_of([&] { (void)Registry::open(scratch.path() / "file", true); }),
            ErrorCode::kFailedPrecondition);
}

TEST(RegistryTest, RegistryFilesWithMembersOfAnotherTypeAreRefusedNotACrash) {
  // Found by fuzzing: a member of another type in registry.json or the marker escaped as
  // nlohmann's type_error instead of an Error naming the file, and a number past an int's range
  // was converted to one (undefined behaviour).
  ScratchDir scratch;
  Registry r = Registry::open(scratch.path(), true);
  fs::create_directories(scratch.path() / "m");
  std::string message;
  for (const char* text : {R"({"format": "tuner-model-registry", "name": 7})",
                           R"({"format": "tuner-model-registry", "format_version": "2"})",
                           R"({"format": "tuner-model-registry", "last_version": 1e300})",
                           R"({"format": "tuner-model-registry", "versions": [{"version": 1,
                               "study": ["s"]}]})"}) {
    std::ofstream(scratch.path() / "m" / "registry.json") << text;
    EXPECT_EQ(code_of([&] { (void)r.model("m"); }, &message), ErrorCode::kDataLoss) << text;
    EXPECT_THAT(message, HasSubstr("registry.json")) << text;
  }
  for (const char* text : {R"({"format": 1})", R"({"format": "tuner-registry", "format_version":
                           "9"})"}) {
    std::ofstream(scratch.path() / "tuner-registry.json") << text;
    EXPECT_EQ(code_of([&] { (void)Registry::open(scratch.path(), false); }, &message),
              ErrorCode::kFailedPrecondition)
        << text;
    EXPECT_THAT(message, HasSubstr("not a registry marker")) << text;
  }
}

TEST(RegistryTest, AFailedExportLeavesNothing) {
  ScratchDir scratch;
  Registry r = Registry::open(scratch.path(), true);
  RegisterOptions o;
  o.mlflow.before_publish = [](const fs::path&) {
    throw Error(ErrorCode::kUnavailable, "disk full (injected)");
  };
  EXPECT_EQ(code_of([&] { r.register_version("m", tiny_checkpoint(), lineage_with(0.5), o); }),
            ErrorCode::kUnavailable);
  EXPECT_TRUE(r.model_names().empty());
  EXPECT_FALSE(fs::exists(scratch.path() / "m"));
  // An existing model keeps its state and no directory of the failed version remains.
  r.register_version("m", tiny_checkpoint(), lineage_with(0.5), {});
  EXPECT_ANY_THROW(r.register_version("m", tiny_checkpoint(), lineage_with(0.6), o));
  EXPECT_EQ(r.model("m").versions.size(), 1u);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(scratch.path() / "m")) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_THAT(names, ElementsAre("1", "registry.json"));
  // A bad checkpoint fails before anything is written.
  training::Checkpoint bad = tiny_checkpoint();
  bad.buffers.clear();
  EXPECT_EQ(code_of([&] { r.register_version("n", bad, lineage_with(0.5), {}); }),
            ErrorCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(scratch.path() / "n"));
}

TEST(RegistryTest, PromotionRuleTakesChampionOnlyWhenBetter) {
  ScratchDir scratch;
  Registry r = Registry::open(scratch.path(), true);
  const auto c = tiny_checkpoint();
  const ModelVersion v1 = r.register_version("m", c, lineage_with(0.80), promote_on());
  ASSERT_TRUE(v1.promotion);
  EXPECT_TRUE(v1.promotion->promoted);
  EXPECT_EQ(v1.promotion->reason, "no champion yet");
  const ModelVersion v2 = r.register_version("m", c, lineage_with(0.75), promote_on());
  EXPECT_FALSE(v2.promotion->promoted);
  EXPECT_EQ(v2.promotion->champion_version, 1);
  EXPECT_EQ(v2.promotion->champion_value, 0.80);
  EXPECT_EQ(v2.promotion->value, 0.75);
  EXPECT_EQ(r.resolve("m@champion").version.version, 1);
  const ModelVersion v3 = r.register_version("m", c, lineage_with(0.80), promote_on());
  EXPECT_FALSE(v3.promotion->promoted);  // a tie keeps the champion
  const ModelVersion v4 = r.register_version("m", c, lineage_with(0.85), promote_on());
  EXPECT_TRUE(v4.promotion->promoted);
  EXPECT_EQ(v4.promotion->reason, "0.85 > 0.8 of version 1 (maximize)");
  EXPECT_EQ(r.resolve("m@champion").version.version, 4);
  // The decisions are recorded with the versions.
  const RegisteredModel m = r.model("m");
  ASSERT_TRUE(m.find(2)->promotion);
  EXPECT_FALSE(m.find(2)->promotion->promoted);
  EXPECT_EQ(m.find(2)->promotion->champion_value, 0.80);
  EXPECT_FALSE(m.find(2)->promotion->decided_at.empty());
  // Minimizing: a lower loss wins.
  const ModelVersion v5 =
      r.register_version("m", c, lineage_with(0.90), promote_on("val_loss", false));
  EXPECT_FALSE(v5.promotion->promoted);  // the champion was evaluated on val_accuracy
  EXPECT_THAT(v5.promotion->reason, HasSubstr("has no value of 'val_loss'"));
  // The rule and an explicit champion alias exclude each other.
  RegisterOptions both = promote_on();
  both.aliases = {"champion"};
  EXPECT_EQ(code_of([&] { r.register_version("m", c, lineage_with(0.99), both); }),
            ErrorCode::kInvalidArgument);
}

TEST(RegistryTest, DecidePromotionIsDirectionAware) {
  RegisteredModel m;
  ModelVersion v;
  v.version = 3;
  v.metric = "val_loss";
  v.metric_value = 0.30;
  m.versions.push_back(v);
  m.aliases["champion"] = 3;
  const PromotionRule rule{"val_loss", false, {}};
  EXPECT_TRUE(decide_promotion(m, rule, {{"val_loss", 0.25}}).promoted);
  EXPECT_FALSE(decide_promotion(m, rule, {{"val_loss", 0.35}}).promoted);
  EXPECT_FALSE(decide_promotion(m, rule, {{"val_loss", std::nan("")}}).promoted);
  EXPECT_FALSE(decide_promotion(m, rule, {{"val_accuracy", 0.9}}).promoted);
  EXPECT_TRUE(decide_promotion(RegisteredModel{}, rule, {{"val_loss", 0.9}}).promoted);
}

// The figures a multi-objective sweep trades accuracy against.
Lineage tradeoff(double accuracy, double latency_ms, double num_params) {
  Lineage l = lineage_with(accuracy);
  l.metrics["latency_ms"] = latency_ms;
  l.metrics["num_params"] = num_params;
  return l;
}

RegisterOptions promote_within_limits() {
  RegisterOptions o = promote_on();
  o.limits = {{"latency_ms", MetricLimit::Bound::kMax, 2.0},
              {"num_params", MetricLimit::Bound::kMax, 1e6}};
  return o;
}

TEST(RegistryTest, PromotionWithLimitsTakesTheBestThatMeetsThem) {
  ScratchDir scratch;
  Registry r = Registry::open(scratch.path(), true);
  const auto c = tiny_checkpoint();
  const RegisterOptions o = promote_within_limits();
  // The first version breaks a limit: not champion, though there is none.
  const ModelVersion v1 = r.register_version("m", c, tradeoff(0.95, 3.5, 5e5), o);
  EXPECT_FALSE(v1.promotion->promoted);
  EXPECT_EQ(v1.promotion->reason, "latency_ms = 3.5 breaks latency_ms <= 2");
  ASSERT_EQ(v1.promotion->limits.size(), 2u);
  EXPECT_FALSE(v1.promotion->limits[0].met);
  EXPECT_EQ(v1.promotion->limits[0].value, 3.5);
  EXPECT_TRUE(v1.promotion->limits[1].met);
  EXPECT_FALSE(r.model("m").aliases.contains("champion"));
  // One that meets them becomes champion.
  const ModelVersion v2 = r.register_version("m", c, tradeoff(0.85, 1.5, 5e5), o);
  EXPECT_TRUE(v2.promotion->promoted);
  EXPECT_EQ(v2.promotion->reason,
            "no champion yet; meets latency_ms <= 2 (1.5), num_params <= 1e+06 (500000)");
  // Better on the primary metric but too large: not promoted, the decision names the limit.
  const ModelVersion v3 = r.register_version("m", c, tradeoff(0.90, 1.0, 2e6), o);
  EXPECT_FALSE(v3.promotion->promoted);
  EXPECT_EQ(v3.promotion->reason, "num_params = 2e+06 breaks num_params <= 1e+06");
  EXPECT_EQ(v3.promotion->champion_version, 2);
  // A version without a value of a limit's metric does not meet it.
  Lineage no_latency = tradeoff(0.99, 0, 1);
  no_latency.metrics.erase("latency_ms");
  const ModelVersion v4 = r.register_version("m", c, no_latency, o);
  EXPECT_FALSE(v4.promotion->promoted);
  EXPECT_EQ(v4.promotion->reason, "no value of 'latency_ms' for latency_ms <= 2");
  // Within the limits and better: promoted; worse: not.
  const ModelVersion v5 = r.register_version("m", c, tradeoff(0.88, 2.0, 1e6), o);
  EXPECT_TRUE(v5.promotion->promoted);
  EXPECT_EQ(v5.promotion->reason,
            "0.88 > 0.85 of version 2 (maximize); meets latency_ms <= 2 (2), num_params <= 1e+06 "
            "(1e+06)");
  EXPECT_FALSE(r.register_version("m", c, tradeoff(0.86, 0.5, 10), o).promotion->promoted);
  EXPECT_EQ(r.resolve("m@champion").version.version, 5);
  // The rule and each decision are read back from registry.json.
  const RegisteredModel m = r.model("m");
  ASSERT_TRUE(m.find(3)->promotion);
  const PromotionDecision& d3 = *m.find(3)->promotion;
  EXPECT_EQ(d3.metric, "val_accuracy");
  EXPECT_TRUE(d3.maximize);
  ASSERT_EQ(d3.limits.size(), 2u);
  EXPECT_EQ(d3.limits[1].limit, (MetricLimit{"num_params", MetricLimit::Bound::kMax, 1e6}));
  EXPECT_EQ(d3.limits[1].value, 2e6);
  EXPECT_FALSE(d3.limits[1].met);
  EXPECT_EQ(d3.limits, v3.promotion->limits);
  EXPECT_EQ(d3.reason, v3.promotion->reason);
  // Version 2 of registry.json, as it holds limits.
  std::ifstream in(scratch.path() / "m" / "registry.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("\"format_version\": 2"));
  EXPECT_THAT(text, HasSubstr("\"max\": 1000000.0"));
}

TEST(RegistryTest, AChampionThatBreaksTheLimitsIsReplaced) {
  ScratchDir scratch;
  Registry r = Registry::open(scratch.path(), true);
  const auto c = tiny_checkpoint();
  // Champion by the single-metric rule, too slow for the limits.
  r.register_version("m", c, tradeoff(0.95, 3.0, 100), promote_on());
  const ModelVersion v2 =
      r.register_version("m", c, tradeoff(0.80, 1.0, 100), promote_within_limits());
  EXPECT_TRUE(v2.promotion->promoted);
  EXPECT_THAT(v2.promotion->reason,
              HasSubstr("the champion (version 1) breaks the limits: latency_ms = 3 breaks "
                        "latency_ms <= 2"));
  EXPECT_EQ(r.resolve("m@champion").version.version, 2);
  // A model whose decisions have no limits stays at format version 1.
  r.register_version("n", c, tradeoff(0.5, 1, 1), promote_on());
  std::ifstream in(scratch.path() / "n" / "registry.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("\"format_version\": 1"));
  // A limit that is not finite is refused.
  RegisterOptions bad = promote_within_limits();
  bad.limits[0].limit = std::nan("");
  EXPECT_EQ(code_of([&] { r.register_version("m", c, tradeoff(0.9, 1, 1), bad); }),
            ErrorCode::kInvalidArgument);
}

TEST(RegistryTest, MirrorsIntoTheStudyDatabase) {
  ScratchDir scratch;
  const std::string db = (scratch.path() / "study.db").string();
  {
    SqliteStorage storage(db);
    storage.create_study("s", {StudyDirection::kMaximize});
  }
  Registry r = Registry::open(scratch.path() / "reg", true);
  const auto c = tiny_checkpoint();
  r.register_version("m", c, lineage_with(0.8, 3, db), promote_on());
  r.register_version("m", c, lineage_with(0.7, 4, db), promote_on());
  r.set_tag("m", 2, "note", "worse");
  sqlite::Connection conn(db, /*read_only=*/true);
  {
    auto q = conn.query(
        "SELECT version, trial, metric, metric_value FROM tuner_registry_versions "
        "WHERE model = 'm' ORDER BY version");
    ASSERT_TRUE(q.step());
    EXPECT_EQ(q.int64(0), 1);
    EXPECT_EQ(q.int64(1), 3);
    EXPECT_EQ(q.text(2), "val_accuracy");
    EXPECT_DOUBLE_EQ(q.real(3), 0.8);
    ASSERT_TRUE(q.step());
    EXPECT_EQ(q.int64(0), 2);
    EXPECT_FALSE(q.step());
  }
  {
    auto q = conn.query("SELECT alias, version FROM tuner_registry_aliases WHERE model = 'm'");
    ASSERT_TRUE(q.step());
    EXPECT_EQ(q.text(0), "champion");
    EXPECT_EQ(q.int64(1), 1);
  }
  {
    auto q = conn.query(
        "SELECT promoted, value, champion_version, champion_value FROM "
        "tuner_registry_promotions WHERE model = 'm' AND version = 2");
    ASSERT_TRUE(q.step());
    EXPECT_EQ(q.int64(0), 0);
    EXPECT_DOUBLE_EQ(q.real(1), 0.7);
    EXPECT_EQ(q.int64(2), 1);
    EXPECT_DOUBLE_EQ(q.real(3), 0.8);
  }
  {
    auto q = conn.query("SELECT COUNT(*) FROM tuner_registry_promotion_limits");
    ASSERT_TRUE(q.step());
    EXPECT_EQ(q.int64(0), 0);  // the single-metric rule has no limits
  }
  {
    auto q = conn.query("SELECT value FROM tuner_registry_tags WHERE model = 'm' AND version = 2");
    ASSERT_TRUE(q.step());
    EXPECT_EQ(q.text(0), "worse");
  }
  // The study database still opens as a study database.
  SqliteStorage reopened(db);
  EXPECT_TRUE(reopened.find_study("s"));
  r.delete_model("m");
  auto q = conn.query("SELECT COUNT(*) FROM tuner_registry_versions");
  ASSERT_TRUE(q.step());
  EXPECT_EQ(q.int64(0), 0);
}

TEST(RegistryTest, MirrorsTheLimitsOfEachDecision) {
  ScratchDir scratch;
  const std::string db = (scratch.path() / "study.db").string();
  {
    SqliteStorage storage(db);
    storage.create_study("s", {StudyDirection::kMaximize, StudyDirection::kMinimize});
  }
  Registry r = Registry::open(scratch.path() / "reg", true);
  Lineage l = tradeoff(0.9, 2.5, 100);
  l.storage = db;
  r.register_version("m", tiny_checkpoint(), l, promote_within_limits());
  sqlite::Connection conn(db, /*read_only=*/true);
  auto q = conn.query(
      "SELECT metric, bound, threshold, value, met FROM "
      "tuner_registry_promotion_limits WHERE model = 'm' AND version = 1 "
      "ORDER BY metric");
  ASSERT_TRUE(q.step());
  EXPECT_EQ(q.text(0), "latency_ms");
  EXPECT_EQ(q.text(1), "max");
  EXPECT_DOUBLE_EQ(q.real(2), 2.0);
  EXPECT_DOUBLE_EQ(q.real(3), 2.5);
  EXPECT_EQ(q.int64(4), 0);
  ASSERT_TRUE(q.step());
  EXPECT_EQ(q.text(0), "num_params");
  EXPECT_EQ(q.int64(4), 1);
  EXPECT_FALSE(q.step());
  auto v =
      conn.query("SELECT value FROM tuner_registry_meta WHERE key = 'registry_schema_version'");
  ASSERT_TRUE(v.step());
  EXPECT_EQ(v.text(0), "2");
}

TEST(RegistryTest, ADatabaseThatCannotBeMirroredIsAWarning) {
  ScratchDir scratch;
  std::vector<std::string> warnings;
  RegistryOptions options;
  options.warn = [&](const std::string& w) { warnings.push_back(w); };
  Registry r = Registry::open(scratch.path() / "reg", true, options);
  const std::string not_a_study = (scratch.path() / "other.db").string();
  {
    sqlite::Connection conn(not_a_study);
    conn.exec("CREATE TABLE t (x INTEGER)");
  }
  r.register_version("m", tiny_checkpoint(), lineage_with(0.8, 0, not_a_study), {});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("is not a study database"));
  EXPECT_EQ(r.model("m").versions.size(), 1u);
}

}  // namespace
}  // namespace tuner::registry
