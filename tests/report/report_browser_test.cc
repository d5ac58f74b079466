// End to end: a 60-trial study (TPE, median stopping, intermediate values, a conditional param)
// written to SQLite through the C++ API, `tuner report` on it, and the page rendered by headless
// Chromium, which must run its script without error and show marks in every plot; and the same
// for a constrained study of three objectives (its Pareto plots and hypervolume).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>

#include "search/samplers/tpe/tpe_sampler.h"
#include "search/schedulers/median_stopping.h"
#include "storage/sqlite_storage.h"
#include "tuner/study.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;

constexpr char kStudy[] = "report-e2e";
constexpr int kTrials = 60;
constexpr char kMultiStudy[] = "report-e2e-objectives";
constexpr int kMultiTrials = 40;
// The params in name order; plot "slice-N" shows the N-th.
const std::vector<std::string> kParams = {"lr", "momentum", "optimizer", "units", "x"};

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct ShellResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

ShellResult run_shell(const std::string& command) {
  ShellResult run;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) run.output.append(buffer, n);
  int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The Chromium binary: $TUNER_CHROMIUM, else the first of the usual names on PATH; "" if none
// (or if $TUNER_CHROMIUM is not an executable).
std::string find_chromium() {
  if (const char* env = std::getenv("TUNER_CHROMIUM"); env != nullptr && *env != '\0') {
    return ::access(env, X_OK) == 0 ? env : "";
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  std::vector<std::string> all;
  while (std::getline(dirs, dir, ':')) all.push_back(dir);
  for (const char* name :
       {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}) {
    for (const std::string& d : all) {
      fs::path candidate = fs::path(d) / name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
  }
  return "";
}

// A study as a user would run one: TPE with median stopping, learning curves, one failure.
void write_study(const fs::path& db) {
  StudyOptions options;
  options.name = kStudy;
  options.storage = std::make_shared<SqliteStorage>(db.string());
  TpeOptions tpe;
  tpe.n_startup_trials = 10;
  options.sampler = std::make_shared<TpeSampler>(tpe);
  MedianStoppingOptions median;
  median.n_startup_trials = 5;
  median.n_warmup_steps = 3;
  options.scheduler = std::make_shared<MedianStopping>(median);
  options.seed = 42;
  options.heartbeat_interval = std::nullopt;
  Study study = Study::create(options);
  OptimizeOptions run;
  run.n_trials = kTrials;
  study.optimize(
      [](Trial& trial) {
        double x = trial.suggest_float("x", -4, 4);
        double lr = trial.suggest_float("lr", 1e-5, 1e-1, {.log = true});
        int64_t units = trial.suggest_int("units", 8, 256, {.log = true});
        std::string optimizer =
            trial.suggest_categorical<std::string>("optimizer", {"sgd", "adam"});
        double momentum = optimizer == "sgd" ? trial.suggest_float("momentum", 0.0, 0.99) : 0.0;
        if (trial.number() == 13) throw std::runtime_error("simulated crash of the objective");
        double final_loss = 0.3 * x * x + 0.2 * std::abs(std::log10(lr) + 3) +
                            (optimizer == "adam" ? 0.0 : 0.3 - 0.2 * momentum) +
                            0.05 * std::log2(256.0 / static_cast<double>(units));
        double loss = 0;
        for (int step = 0; step < 12; ++step) {
          loss = final_loss + 2.0 / (1.0 + step);
          trial.report(step, loss);
          if (trial.should_stop()) return loss;
        }
        return loss;
      },
      run);
}

// Three objectives (loss down, accuracy up, size down) named as a sweep names them, and a
// constraint (size <= 6) that some trials break.
void write_multi_objective_study(const fs::path& db) {
  StudyOptions options;
  options.name = kMultiStudy;
  auto storage = std::make_shared<SqliteStorage>(db.string());
  options.storage = storage;
  options.directions = {StudyDirection::kMinimize, StudyDirection::kMaximize,
                        StudyDirection::kMinimize};
  options.seed = 7;
  options.heartbeat_interval = std::nullopt;
  Study study = Study::create(options);
  storage->set_study_system_attr(study.id(), "study:metric_names",
                                 R"(["loss", "accuracy", "size"])");
  OptimizeOptions run;
  run.n_trials = kMultiTrials;
  study.optimize(
      [](Trial& trial) {
        double x = trial.suggest_float("x", 0, 1);
        double units = static_cast<double>(trial.suggest_int("units", 1, 10));
        trial.set_constraints({units - 6});
        return std::vector<double>{x * x + 1 / units, 1 - (1 - x) * (1 - x), units};
      },
      run);
}

// The plots of a rendered DOM and their mark counts (data-marks, set by the page's script).
std::map<std::string, int> plot_marks(const std::string& dom) {
  std::map<std::string, int> marks;
  std::regex svg_tag(R"(<svg [^>]*>)");
  std::regex id_attr(R"re(\bid="([^"]+)")re"), marks_attr(R"re(\bdata-marks="(\d+)")re");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), svg_tag);
       it != std::sregex_iterator(); ++it) {
    std::string tag = it->str();
    if (tag.find("class=\"plot") == std::string::npos) continue;
    std::smatch id, count;
    EXPECT_TRUE(std::regex_search(tag, id, id_attr)) << tag;
    EXPECT_TRUE(std::regex_search(tag, count, marks_attr)) << "no data-marks: " << tag;
    if (!id.empty() && !count.empty()) marks[id[1]] = std::stoi(count[1]);
  }
  return marks;
}

class ReportBrowserTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() /
                        ("tuner-report-test-" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    write_study(db());
    write_multi_objective_study(db());
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  // The page rendered by headless Chromium, its DOM after the page's script ran ("" after a
  // failure, reported). Every check of a clean run is here: the script ran to its end, nothing
  // was logged to the console.
  static std::string render_in_chromium(const fs::path& html) {
    const std::string chromium = find_chromium();
    EXPECT_FALSE(chromium.empty())
        << "Chromium was not found: install Debian's 'chromium' package (scripts/setup does) or "
           "set TUNER_CHROMIUM to a Chromium or Chrome binary. This test renders the report in it.";
    if (chromium.empty()) return "";
    const fs::path dom_file = html.string() + ".dom", log_file = html.string() + ".log";
    // --dump-dom prints the DOM after the page's scripts ran; console messages go to stderr.
    std::string command = "timeout 60 " + quote(chromium) +
                          " --headless --no-sandbox --disable-gpu --no-first-run"
                          " --disable-extensions --enable-logging=stderr --v=0"
                          " --user-data-dir=" +
                          quote((dir() / "profile").string()) + " --dump-dom " +
                          quote("file://" + html.string()) + " > " + quote(dom_file.string()) +
                          " 2> " + quote(log_file.string());
    ShellResult browser = run_shell(command);
    const std::string dom = read_file(dom_file), log = read_file(log_file);
    EXPECT_EQ(browser.exit_code, 0) << command << "\n" << log;
    if (browser.exit_code != 0) return "";

    // The script ran to its end, with no error.
    EXPECT_NE(dom.find("data-ok=\"1\""), std::string::npos) << log;
    EXPECT_EQ(dom.find("data-js-error=\""), std::string::npos) << log;
    // The page logs nothing when all is well; Chromium logs console messages (errors included,
    // all at INFO) as "...:CONSOLE:LINE] ..." or "...:CONSOLE(LINE)] ...".
    EXPECT_FALSE(std::regex_search(log, std::regex(R"(:CONSOLE[:(]|Uncaught)"))) << log;

    return dom;
  }
  static fs::path db() { return *dir_ / "study.db"; }
  static fs::path dir() { return *dir_; }

  static fs::path* dir_;
};

fs::path* ReportBrowserTest::dir_ = nullptr;

TEST_F(ReportBrowserTest, RendersInChromiumWithEveryPlotDrawn) {
  const fs::path html = dir() / "report.html";
  ShellResult report =
      run_shell(std::string(TUNER_PATH) + " report --study " + kStudy + " --storage " +
                quote(db().string()) + " --out " + quote(html.string()));
  ASSERT_EQ(report.exit_code, 0) << report.output;
  EXPECT_NE(report.output.find("written to " + html.string()), std::string::npos) << report.output;
  const std::string page = read_file(html);
  ASSERT_FALSE(page.empty());
  EXPECT_NE(page.find("PRUNED"), std::string::npos);
  EXPECT_NE(page.find("curve pruned"), std::string::npos) << "the median rule pruned nothing?";

  const std::string dom = render_in_chromium(html);
  ASSERT_FALSE(dom.empty());

  // Every plot is there and has marks, counted in the browser.
  std::map<std::string, int> marks = plot_marks(dom);
  std::vector<std::string> expected = {"history", "intermediate", "parallel", "importance"};
  for (size_t p = 0; p < kParams.size(); ++p) expected.push_back("slice-" + std::to_string(p));
  for (const std::string& id : expected) {
    ASSERT_TRUE(marks.contains(id)) << "plot '" << id << "' is missing";
    EXPECT_GT(marks[id], 0) << "plot '" << id << "' is empty";
  }
  for (const auto& [id, n] : marks) EXPECT_GT(n, 0) << "plot '" << id << "' is empty";
  EXPECT_EQ(marks.size(), expected.size());
  // The trials table was paged by the script: 50 rows shown of 60.
  EXPECT_NE(dom.find("page 1 of 2"), std::string::npos);
}

// A study of three objectives gets a Pareto plot per pair, infeasible trials
// marked, and the hypervolume over trials; all drawn in the browser.
TEST_F(ReportBrowserTest, MultiObjectiveReportDrawsEveryPairAndTheHypervolume) {
  const fs::path html = dir() / "objectives.html";
  ShellResult report =
      run_shell(std::string(TUNER_PATH) + " report --study " + kMultiStudy + " --storage " +
                quote(db().string()) + " --out " + quote(html.string()));
  ASSERT_EQ(report.exit_code, 0) << report.output;
  const std::string page = read_file(html);
  const std::string dom = render_in_chromium(html);
  ASSERT_FALSE(dom.empty());
  std::map<std::string, int> marks = plot_marks(dom);
  for (std::string id : {"pareto-0-1", "pareto-0-2", "pareto-1-2", "hypervolume"}) {
    ASSERT_TRUE(marks.contains(id)) << "plot '" << id << "' is missing";
    EXPECT_GT(marks[id], 0) << "plot '" << id << "' is empty";
  }
  // Every COMPLETE trial is a dot in each pair (40 trials, none fails).
  EXPECT_EQ(marks["pareto-0-1"], kMultiTrials);
  EXPECT_EQ(marks.count("pareto-0-3"), 0u);
  for (const auto& [id, n] : marks) EXPECT_GT(n, 0) << "plot '" << id << "' is empty";
  // Axes named by the metric names and directions; infeasible trials (units > 6) marked.
  EXPECT_NE(page.find(">accuracy (maximize)</text>"), std::string::npos);
  EXPECT_NE(page.find("class=\"pt infeasible\""), std::string::npos);
  EXPECT_NE(page.find("class=\"pt front\""), std::string::npos);
  EXPECT_NE(page.find("id=\"hypervolume-reference\">Reference point: loss "), std::string::npos);
  EXPECT_NE(page.find("<th>Pareto front</th>"), std::string::npos);
}

TEST_F(ReportBrowserTest, DefaultOutputIsNamedAfterTheStudyInTheCurrentDirectory) {
  const fs::path cwd = dir() / "cwd";
  fs::create_directories(cwd);
  ShellResult report =
      run_shell("cd " + quote(cwd.string()) + " && " + TUNER_PATH + " report --study " + kStudy +
                " --storage " + quote(db().string()));
  ASSERT_EQ(report.exit_code, 0) << report.output;
  EXPECT_TRUE(fs::exists(cwd / (std::string(kStudy) + "-report.html"))) << report.output;
}

TEST_F(ReportBrowserTest, UnknownStudyListsTheStudiesInTheFile) {
  ShellResult report =
      run_shell(std::string(TUNER_PATH) + " report --study nope --storage " + quote(db().string()) +
                " --out " + quote((dir() / "x.html").string()));
  EXPECT_EQ(report.exit_code, 1) << report.output;
  EXPECT_NE(report.output.find("nope"), std::string::npos) << report.output;
  EXPECT_NE(report.output.find(kStudy), std::string::npos) << report.output;
  EXPECT_FALSE(fs::exists(dir() / "x.html"));
}

TEST_F(ReportBrowserTest, MissingFileIsAnError) {
  ShellResult report = run_shell(std::string(TUNER_PATH) + " report --study x --storage " +
                                 quote((dir() / "absent.db").string()));
  EXPECT_EQ(report.exit_code, 1) << report.output;
  EXPECT_NE(report.output.find("absent.db"), std::string::npos) << report.output;
  EXPECT_FALSE(fs::exists(dir() / "absent.db"));
}

TEST_F(ReportBrowserTest, MissingFlagsAreUsageErrors) {
  ShellResult report = run_shell(std::string(TUNER_PATH) + " report --storage x.db");
  EXPECT_EQ(report.exit_code, 2) << report.output;
  EXPECT_NE(report.output.find("--study is required"), std::string::npos) << report.output;
}

}  // namespace
}  // namespace tuner
