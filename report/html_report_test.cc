#include "report/html_report.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <regex>
#include <string>

#include "report/hypervolume_series.h"
#include "report/study_view.h"
#include "report/svg_plot.h"
#include "search/pareto.h"
#include "search/rng.h"
#include "trials/constraints.h"
#include "trials/trial_origin.h"

namespace tuner::report {
namespace {

using std::chrono::seconds;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The text of the <svg> element with this id, or "" when there is none.
std::string plot(const std::string& html, const std::string& id) {
  size_t at = html.find("id=\"" + id + "\" data-plot=");
  if (at == std::string::npos) return "";
  size_t start = html.rfind("<svg", at);
  return html.substr(start, html.find("</svg>", at) + 6 - start);
}

// Marks drawn in one plot: elements directly in its <g class="marks">.
size_t marks(const std::string& svg) {
  size_t begin = svg.find("<g class=\"marks\">");
  if (begin == std::string::npos) return 0;
  std::string body = svg.substr(begin);
  return count(body, "<circle") + count(body, "<path") + count(body, "<rect");
}

// A study like a real one: x (float), lr (log float), units (int), optimizer (categorical),
// momentum (only with sgd), intermediate values, PRUNED, FAIL and RUNNING trials.
ReportInput make_input(int n_trials, int n_objectives = 1) {
  ReportInput in;
  in.study.name = "demo";
  in.study.directions.assign(static_cast<size_t>(n_objectives), StudyDirection::kMinimize);
  Rng rng(5);
  const TimePoint t0 = TimePoint{} + std::chrono::hours(24 * 365 * 54);
  for (int i = 0; i < n_trials; ++i) {
    FrozenTrial t;
    t.trial_id = i;
    t.number = i;
    double x = rng.uniform(-5, 5), lr = std::exp(rng.uniform(std::log(1e-5), std::log(1e-1)));
    int64_t units = rng.integer(1, 64);
    std::string optimizer = rng.uniform() < 0.5 ? "sgd" : "adam";
    t.params = {{"x", x}, {"lr", lr}, {"units", units}, {"optimizer", optimizer}};
    t.distributions = {
        {"x", FloatDistribution{-5, 5}},
        {"lr", FloatDistribution{1e-5, 1e-1, true}},
        {"units", IntDistribution{1, 64}},
        {"optimizer", CategoricalDistribution{{std::string("sgd"), std::string("adam")}}}};
    if (optimizer == "sgd") {
      t.params["momentum"] = rng.uniform(0, 0.99);
      t.distributions["momentum"] = FloatDistribution{0, 0.99};
    }
    double value = x * x + 0.1 * std::abs(std::log10(lr) + 3);
    if (i < 300) {  // curves for the first trials only: big studies stay quick to build
      for (int step = 0; step < 20; ++step) t.intermediate_values[step] = value + 10.0 / (step + 1);
    }
    t.datetime_start = t0 + seconds(i);
    if (i % 10 == 7) {
      t.state = TrialState::kPruned;
      if (!t.intermediate_values.empty()) t.values = {t.intermediate_values.rbegin()->second};
    } else if (i % 23 == 5) {
      t.state = TrialState::kFail;
    } else if (i == n_trials - 1) {
      t.state = TrialState::kRunning;
      t.datetime_complete.reset();
    } else {
      t.state = TrialState::kComplete;
      t.values = {value};
      if (n_objectives > 1) t.values.push_back(static_cast<double>(units) - x);
      for (int k = 2; k < n_objectives; ++k) {  // trade-offs against x and lr
        t.values.push_back(std::abs(x - k) + std::log10(lr) * (k % 2 ? 1 : -1));
      }
    }
    if (t.state != TrialState::kRunning) t.datetime_complete = *t.datetime_start + seconds(2);
    in.trials.push_back(std::move(t));
  }
  return in;
}

void expect_self_contained(const std::string& html) {
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
}

TEST(HtmlReportTest, EverySectionAndPlotIsThere) {
  ReportInput in = make_input(60);
  in.generated_at = "2024-05-01 12:00 UTC";
  std::string html = render_report(in);
  expect_self_contained(html);
  for (std::string id :
       {"summary", "history-section", "intermediate-section", "parallel-section", "slice-section",
        "importance-section", "trials-section", "best-trial", "trials-table"}) {
    EXPECT_NE(html.find("id=\"" + id + "\""), std::string::npos) << id;
  }
  // Params in name order: lr, momentum, optimizer, units, x.
  for (std::string id : {"history", "intermediate", "parallel", "importance", "slice-0", "slice-1",
                         "slice-2", "slice-3", "slice-4"}) {
    EXPECT_GT(marks(plot(html, id)), 0u) << id;
  }
  EXPECT_EQ(html.find("data-plot=\"pareto\""), std::string::npos);  // one objective
  EXPECT_EQ(plot(html, "hypervolume"), "");
  EXPECT_EQ(html.find("<th>Pareto front</th>"), std::string::npos);
  EXPECT_NE(html.find("2024-05-01 12:00 UTC"), std::string::npos);
  EXPECT_NE(html.find("curve pruned"), std::string::npos);
  EXPECT_NE(html.find("prune-mark"), std::string::npos);
  EXPECT_NE(plot(html, "slice-0").find("(log scale)"), std::string::npos);     // lr
  EXPECT_NE(plot(html, "slice-2").find("class=\"band\""), std::string::npos);  // optimizer
  // Every trial is in the table (60 rows, no note about a limit).
  EXPECT_EQ(html.find("trials-limited"), std::string::npos);
  EXPECT_EQ(count(html, "<tr><td class=\"num\" data-v="), 60u);
}

TEST(HtmlReportTest, TheBestTrialIsNamed) {
  ReportInput in = make_input(60);
  const FrozenTrial* best = nullptr;
  for (const auto& t : in.trials) {
    if (t.state == TrialState::kComplete && (!best || t.values[0] < best->values[0])) best = &t;
  }
  std::string html = render_report(in);
  std::string section = html.substr(html.find("id=\"best-trial\""), 400);
  EXPECT_NE(section.find("<td>" + std::to_string(best->number) + "</td>"), std::string::npos)
      << section;
  EXPECT_NE(plot(html, "history").find("class=\"pt best\""), std::string::npos);
}

// The report marks infeasible trials, and its best trial is feasible.
TEST(HtmlReportTest, InfeasibleTrialsAreMarkedAndNeverTheBest) {
  ReportInput in = make_input(60);
  // The constraint x >= 1: the unconstrained best (x near 0) is infeasible.
  const FrozenTrial* best = nullptr;
  int infeasible = 0, infeasible_rows = 0;
  for (auto& t : in.trials) {
    if (t.state != TrialState::kComplete && t.state != TrialState::kPruned) continue;
    const std::vector<double> c = {1.0 - std::get<double>(t.params.at("x"))};
    t.system_attrs[kConstraintsAttr] = constraints_to_json(c);
    if (c[0] > 0) ++infeasible_rows;
    if (t.state != TrialState::kComplete) continue;
    if (c[0] > 0) ++infeasible;
    if (c[0] <= 0 && (!best || t.values[0] < best->values[0])) best = &t;
  }
  ASSERT_NE(best, nullptr);
  ASSERT_GT(infeasible, 0);
  const std::string html = render_report(in);
  const std::string section = html.substr(html.find("id=\"best-trial\""), 600);
  EXPECT_NE(section.find("<td>" + std::to_string(best->number) + "</td>"), std::string::npos)
      << section;
  EXPECT_NE(section.find("(feasible)"), std::string::npos) << section;
  EXPECT_NE(html.find("infeasible " + std::to_string(infeasible) + " of COMPLETE"),
            std::string::npos);
  EXPECT_EQ(count(html, "<tr class=\"infeasible\">"), static_cast<size_t>(infeasible_rows));
  EXPECT_NE(html.find("<th>Feasible</th>"), std::string::npos);
  const std::string history = plot(html, "history");
  EXPECT_EQ(count(history, "class=\"pt infeasible\""), static_cast<size_t>(infeasible));
  EXPECT_NE(history.find("best: trial " + std::to_string(best->number) + ":"), std::string::npos);

  // No feasible trial: no best, and the summary says why.
  for (auto& t : in.trials) t.system_attrs[kConstraintsAttr] = "[1.0]";
  const std::string none = render_report(in);
  EXPECT_NE(none.find("id=\"no-feasible\""), std::string::npos);
  EXPECT_EQ(none.find("id=\"best-trial\""), std::string::npos);
  EXPECT_EQ(plot(none, "history").find("class=\"pt best\""), std::string::npos);
  // An unconstrained study has no such column.
  EXPECT_EQ(render_report(make_input(20)).find("<th>Feasible</th>"), std::string::npos);
}

// The trials table names the sampler each trial came from.
TEST(HtmlReportTest, TheTrialsTableNamesEachTrialsSampler) {
  ReportInput in = make_input(20);
  EXPECT_EQ(render_report(in).find("<th>Sampler</th>"), std::string::npos);  // none recorded
  for (auto& t : in.trials) {
    if (t.state != TrialState::kRunning) {
      t.system_attrs[kSamplerAttr] = t.number < 10 ? "\"random\"" : "\"tpe\"";
    }
  }
  const std::string html = render_report(in);
  EXPECT_NE(html.find("<th>Sampler</th>"), std::string::npos);
  EXPECT_EQ(count(html, "<td>random</td>"), 10u);
  EXPECT_EQ(count(html, "<td>tpe</td>"), 9u);  // the last trial is RUNNING
}

TEST(HtmlReportTest, SameInputSameOutput) {
  EXPECT_EQ(render_report(make_input(80)), render_report(make_input(80)));
}

TEST(HtmlReportTest, NamesAreEscaped) {
  ReportInput in = make_input(12);
  in.study.name = "<script>alert(1)</script>";
  for (auto& t : in.trials) {
    t.params["<b>"] = std::string("a&b");
    t.distributions["<b>"] = CategoricalDistribution{{std::string("a&b")}};
  }
  std::string html = render_report(in);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_NE(html.find("&quot;a&amp;b&quot;"), std::string::npos);
}

// Regression: the history drew only COMPLETE trials. It shows FAIL and PRUNED trials too, each
// with why in its title: a FAIL's reason and its program's last line, escaped.
TEST(HtmlReportTest, HistoryMarksFailedAndPrunedTrialsWithTheirReasons) {
  ReportInput in = make_input(60);
  int failed = 0, pruned = 0;
  for (auto& t : in.trials) {
    failed += t.state == TrialState::kFail;
    pruned += t.state == TrialState::kPruned;
    if (t.state == TrialState::kFail) {
      t.system_attrs["fail_reason"] = "\"exited with code 1\"";
      t.system_attrs["log_tail"] = "\"Traceback:\\nKeyError: <lr>\\n[tuner] exited\\n\"";
    }
  }
  ASSERT_GT(failed, 0);
  ASSERT_GT(pruned, 0);
  const std::string history = plot(render_report(in), "history");
  EXPECT_EQ(count(history, "class=\"pt failed\""), static_cast<size_t>(failed));
  EXPECT_EQ(count(history, "class=\"pt pruned\""), static_cast<size_t>(pruned));
  EXPECT_NE(history.find(" FAIL: exited with code 1: KeyError: &lt;lr&gt;"), std::string::npos)
      << history;
  EXPECT_NE(history.find(" PRUNED at step 19 (last value "), std::string::npos);
}

TEST(HtmlReportTest, NoCompleteTrialSaysSo) {
  ReportInput in = make_input(10);
  for (auto& t : in.trials) {
    if (t.state == TrialState::kComplete) {
      t.state = TrialState::kFail;
      t.values.clear();
    }
  }
  std::string html = render_report(in);
  expect_self_contained(html);
  EXPECT_NE(html.find("id=\"no-complete\""), std::string::npos);
  EXPECT_EQ(plot(html, "history"), "");
  EXPECT_NE(html.find("id=\"history-empty\""), std::string::npos);
  EXPECT_NE(html.find("id=\"importance-empty\""), std::string::npos);
  EXPECT_NE(html.find("id=\"trials-table\""), std::string::npos);
}

TEST(HtmlReportTest, EmptyStudy) {
  ReportInput in;
  in.study.name = "empty";
  in.study.directions = {StudyDirection::kMaximize};
  std::string html = render_report(in);
  EXPECT_NE(html.find("id=\"no-complete\""), std::string::npos);
  EXPECT_NE(html.find("id=\"intermediate-empty\""), std::string::npos);
  EXPECT_EQ(count(html, "<svg"), 0u);
}

TEST(HtmlReportTest, MultiObjectiveGetsAPlotPerObjectiveAndAParetoFront) {
  ReportInput in = make_input(80, 2);
  in.study.system_attrs["study:metric_names"] = R"(["loss", "cost"])";
  std::string html = render_report(in);
  expect_self_contained(html);
  for (std::string id : {"history-obj0", "history-obj1", "importance-obj0", "importance-obj1",
                         "slice-4-obj1", "pareto-0-1", "hypervolume", "parallel"}) {
    EXPECT_GT(marks(plot(html, id)), 0u) << id;
  }
  EXPECT_EQ(plot(html, "history"), "");
  EXPECT_NE(html.find("id=\"best-trials\""), std::string::npos);
  EXPECT_NE(html.find("loss (minimize)"), std::string::npos);
  EXPECT_EQ(count(html, "data-plot=\"pareto\""), 1u);
  // The axes are named by the metric names and directions.
  const std::string pareto = plot(html, "pareto-0-1");
  EXPECT_NE(pareto.find(">loss (minimize)</text>"), std::string::npos) << pareto;
  EXPECT_NE(pareto.find(">cost (minimize)</text>"), std::string::npos) << pareto;
  // Every COMPLETE trial is drawn, the front as search/pareto.h finds it.
  const std::vector<FrozenTrial> front = pareto_front_trials(in.trials, in.study.directions);
  ASSERT_FALSE(front.empty());
  size_t n_complete = 0;
  for (const auto& t : in.trials) n_complete += t.state == TrialState::kComplete;
  EXPECT_EQ(marks(pareto), n_complete);
  EXPECT_EQ(count(pareto, "class=\"pt front\""), front.size());
  for (const FrozenTrial& t : front) {
    EXPECT_NE(pareto.find("Pareto-optimal: trial " + std::to_string(t.number) + ":"),
              std::string::npos)
        << t.number;
  }
  // The trials table marks the same trials.
  EXPECT_NE(html.find("<th>Pareto front</th>"), std::string::npos);
  EXPECT_EQ(count(html, "<td class=\"front\">yes</td>"), front.size());
  EXPECT_EQ(pareto.find("lg-infeasible"), std::string::npos);  // unconstrained
}

// The sweep's export rule: its pick said in the summary and ringed in every Pareto plot.
TEST(HtmlReportTest, TheExportRulesPickIsSaidAndRingedInEveryParetoPlot) {
  ReportInput in = make_input(60, 3);
  const std::vector<FrozenTrial> front = pareto_front_trials(in.trials, in.study.directions);
  ASSERT_FALSE(front.empty());
  const int picked = front.back().number;
  in.export_pick = ExportPick{"the lowest loss with cost <= 2", picked, ""};
  std::string html = render_report(in);
  EXPECT_NE(html.find("<p id=\"export-pick\">The sweep's export rule (the lowest loss with cost "
                      "&lt;= 2) picks trial " +
                      std::to_string(picked) + ", ringed in the Pareto plots.</p>"),
            std::string::npos);
  for (std::string id : {"pareto-0-1", "pareto-0-2", "pareto-1-2"}) {
    const std::string svg = plot(html, id);
    EXPECT_EQ(count(svg, "class=\"pick\""), 1u) << id;
    EXPECT_NE(svg.find("the export rule's pick: trial " + std::to_string(picked)),
              std::string::npos)
        << id;
    EXPECT_NE(svg.find(">export pick</text>"), std::string::npos) << id;
  }

  // No trial meets the rule: the summary says why, and nothing is ringed.
  in.export_pick = ExportPick{"the lowest loss with cost <= 0", std::nullopt, "no trial meets it"};
  html = render_report(in);
  EXPECT_NE(html.find("picks no trial: no trial meets it</p>"), std::string::npos);
  EXPECT_EQ(count(html, "class=\"pick\""), 0u);

  // A study without an export rule has neither.
  in.export_pick.reset();
  html = render_report(in);
  EXPECT_EQ(html.find("id=\"export-pick\""), std::string::npos);
  EXPECT_EQ(count(html, "class=\"pick\""), 0u);
}

// A plot for every pair of objectives; past 10 pairs, the first 10 and a note.
TEST(HtmlReportTest, EveryPairOfObjectivesHasAParetoPlot) {
  for (int m : {3, 4}) {
    const std::string html = render_report(make_input(60, m));
    const size_t pairs = static_cast<size_t>(m * (m - 1) / 2);
    EXPECT_EQ(count(html, "data-plot=\"pareto\""), pairs) << m;
    for (int a = 0; a < m; ++a) {
      for (int b = a + 1; b < m; ++b) {
        const std::string id = "pareto-" + std::to_string(a) + "-" + std::to_string(b);
        const std::string svg = plot(html, id);
        EXPECT_GT(count(svg, "class=\"pt front\""), 0u) << id;
        EXPECT_NE(svg.find(">objective " + std::to_string(a) + " (minimize)</text>"),
                  std::string::npos)
            << id;
        EXPECT_NE(svg.find(">objective " + std::to_string(b) + " (minimize)</text>"),
                  std::string::npos)
            << id;
      }
    }
    EXPECT_GT(marks(plot(html, "hypervolume")), 0u) << m;
    EXPECT_EQ(html.find("pairs: the first 10"), std::string::npos) << m;
  }
  // 6 objectives: 15 pairs, 10 drawn (0 against the 5 others, 1 against 2 to 5, then 2-3).
  const std::string six = render_report(make_input(40, 6));
  EXPECT_EQ(count(six, "data-plot=\"pareto\""), 10u);
  EXPECT_NE(plot(six, "pareto-0-5"), "");
  EXPECT_NE(plot(six, "pareto-1-5"), "");
  EXPECT_NE(plot(six, "pareto-2-3"), "");
  EXPECT_EQ(plot(six, "pareto-2-4"), "");
  EXPECT_NE(six.find("15 pairs: the first 10 are drawn"), std::string::npos);
}

// Infeasible trials are drawn apart in every pair and never on the front.
TEST(HtmlReportTest, ParetoPlotsMarkInfeasibleTrials) {
  ReportInput in = make_input(80, 3);
  in.study.directions[1] = StudyDirection::kMaximize;
  size_t infeasible = 0;
  for (auto& t : in.trials) {
    if (t.state != TrialState::kComplete) continue;
    const std::vector<double> c = {std::get<double>(t.params.at("x")) - 2.0, -1.0};  // x <= 2
    t.system_attrs[kConstraintsAttr] = constraints_to_json(c);
    infeasible += c[0] > 0;
  }
  ASSERT_GT(infeasible, 0u);
  const std::string html = render_report(in);
  const std::vector<FrozenTrial> front = pareto_front_trials(in.trials, in.study.directions);
  ASSERT_FALSE(front.empty());
  for (std::string id : {"pareto-0-1", "pareto-0-2", "pareto-1-2"}) {
    const std::string svg = plot(html, id);
    EXPECT_EQ(count(svg, "class=\"pt infeasible\""), infeasible) << id;
    EXPECT_EQ(count(svg, "infeasible: trial "), infeasible) << id;
    EXPECT_EQ(count(svg, "class=\"pt front\""), front.size()) << id;
    EXPECT_NE(svg.find("lg-infeasible"), std::string::npos) << id;  // in the legend
  }
  for (std::string id : {"pareto-0-1", "pareto-1-2"}) {
    EXPECT_NE(plot(html, id).find(">objective 1 (maximize)</text>"), std::string::npos) << id;
  }
  for (const FrozenTrial& t : front) EXPECT_TRUE(is_feasible(t)) << t.number;
  // The front table: every objective's value and the constraint values of each member.
  const size_t table_at = html.find("id=\"best-trials\"");
  ASSERT_NE(table_at, std::string::npos);
  const std::string table = html.substr(table_at, html.find("</table>", table_at) - table_at);
  EXPECT_NE(table.find("<th>Constraints (all &lt;= 0: feasible)</th>"), std::string::npos);
  for (int k = 0; k < 3; ++k) {
    EXPECT_NE(table.find("<th>objective " + std::to_string(k) + "</th>"), std::string::npos);
  }
  const FrozenTrial& first = front.front();
  std::string row = "<tr><td>" + std::to_string(first.number) + "</td>";
  for (double v : first.values) row += "<td class=\"num\">" + format_number(v) + "</td>";
  EXPECT_NE(table.find(row), std::string::npos) << table;
  EXPECT_NE(html.find("infeasible " + std::to_string(infeasible) + " of COMPLETE"),
            std::string::npos);
}

// The hypervolume of the feasible front among the first k COMPLETE trials, as search/pareto.h
// computes it from scratch.
double front_hypervolume(const std::vector<const FrozenTrial*>& complete, size_t k,
                         const std::vector<StudyDirection>& directions,
                         const std::vector<double>& reference) {
  std::vector<FrozenTrial> first;
  for (size_t i = 0; i < k; ++i) first.push_back(*complete[i]);
  std::vector<double> losses;
  for (const FrozenTrial& t : pareto_front_trials(first, directions)) {
    for (size_t j = 0; j < directions.size(); ++j) {
      losses.push_back(directions[j] == StudyDirection::kMaximize ? -t.values[j] : t.values[j]);
    }
  }
  return hypervolume(losses, directions.size(), reference);
}

// The hypervolume over trials never falls and ends at the whole front's.
TEST(HtmlReportTest, HypervolumeOverTrialsRisesToTheWholeFronts) {
  for (int m : {2, 3, 4}) {
    ReportInput in = make_input(90, m);
    in.study.directions[0] = StudyDirection::kMaximize;
    for (auto& t : in.trials) {  // units <= 48, with the first trials infeasible
      if (t.state != TrialState::kComplete) continue;
      const double c =
          t.number < 8 ? 1.0 : static_cast<double>(std::get<int64_t>(t.params.at("units"))) - 48;
      t.system_attrs[kConstraintsAttr] = constraints_to_json(std::vector<double>{c});
    }
    const StudyView view = make_study_view(in.study, in.trials);
    const HypervolumeSeries series = hypervolume_series(view, 1000);
    // The reference: nadir_reference() of every feasible COMPLETE trial's loss vector.
    std::vector<double> feasible;
    for (const auto& t : in.trials) {
      if (t.state != TrialState::kComplete || !is_feasible(t)) continue;
      for (size_t j = 0; j < t.values.size(); ++j) {
        feasible.push_back(in.study.directions[j] == StudyDirection::kMaximize ? -t.values[j]
                                                                               : t.values[j]);
      }
    }
    const size_t n = view.complete.size();
    ASSERT_EQ(series.reference, nadir_reference(feasible, static_cast<size_t>(m))) << m;
    ASSERT_EQ(series.steps.size(), n) << m;
    EXPECT_EQ(series.steps.front().hypervolume, 0.0) << m;  // the first trial is infeasible
    for (size_t s = 0; s < n; ++s) {
      EXPECT_EQ(series.steps[s].k, s + 1);
      if (s > 0) {
        EXPECT_GE(series.steps[s].hypervolume, series.steps[s - 1].hypervolume) << s;
      }
      EXPECT_DOUBLE_EQ(
          series.steps[s].hypervolume,
          front_hypervolume(view.complete, s + 1, in.study.directions, series.reference))
          << "m " << m << ", k " << s + 1;
    }
    // The last value is the whole front's (pareto_front_trials: `tuner best`, `tuner status`).
    EXPECT_GT(series.steps.back().hypervolume, 0.0);
    EXPECT_DOUBLE_EQ(series.steps.back().hypervolume,
                     front_hypervolume(view.complete, n, in.study.directions, series.reference));

    // Thinned to 7 steps: the same values at those counts, the last count kept.
    const HypervolumeSeries thin = hypervolume_series(view, 7);
    ASSERT_EQ(thin.steps.size(), 7u);
    EXPECT_EQ(thin.steps.back().k, n);
    for (const auto& step : thin.steps) {
      EXPECT_DOUBLE_EQ(step.hypervolume, series.steps[step.k - 1].hypervolume) << step.k;
    }

    // The plot: a line and a dot per change of the front, and the reference point stated.
    const std::string html = render_report(in);
    const std::string svg = plot(html, "hypervolume");
    size_t changes = 0;
    for (const auto& step : series.steps) changes += step.front_changed;
    EXPECT_EQ(marks(svg), 1 + changes) << m;
    std::string reference = "Reference point: objective 0 " + format_number(-series.reference[0]);
    EXPECT_NE(html.find(reference), std::string::npos) << reference;
  }
}

// n trials of m objectives on the positive part of the unit sphere: every one on the front.
ReportInput sphere_study(int n, int m) {
  ReportInput in;
  in.study.name = "sphere";
  in.study.directions.assign(static_cast<size_t>(m), StudyDirection::kMinimize);
  Rng rng(3);
  for (int i = 0; i < n; ++i) {
    FrozenTrial t;
    t.number = i;
    t.state = TrialState::kComplete;
    double norm = 0;
    for (int k = 0; k < m; ++k) {
      t.values.push_back(rng.uniform(0.05, 1));
      norm += t.values.back() * t.values.back();
    }
    for (double& v : t.values) v /= std::sqrt(norm);
    in.trials.push_back(std::move(t));
  }
  return in;
}

// A front of thousands of points in 4 or more objectives: fewer steps, or none, not minutes.
TEST(HtmlReportTest, HypervolumeOfAHugeFrontTakesFewerSteps) {
  const ReportInput four = sphere_study(1500, 4);
  const StudyView view = make_study_view(four.study, four.trials);
  ASSERT_EQ(view.pareto.size(), 1500u);
  const HypervolumeSeries series = hypervolume_series(view, ReportOptions().max_hypervolume_steps);
  EXPECT_FALSE(series.too_large);
  EXPECT_GE(series.steps.size(), 2u);
  EXPECT_LT(series.steps.size(), 200u);
  EXPECT_EQ(series.steps.back().k, 1500u);
  EXPECT_DOUBLE_EQ(series.steps.back().hypervolume,
                   front_hypervolume(view.complete, 1500, four.study.directions, series.reference));

  const ReportInput five = sphere_study(3000, 5);
  const StudyView big = make_study_view(five.study, five.trials);
  const HypervolumeSeries none = hypervolume_series(big, ReportOptions().max_hypervolume_steps);
  EXPECT_TRUE(none.too_large);
  EXPECT_TRUE(none.steps.empty());
}

TEST(HtmlReportTest, HypervolumeWithoutAFeasibleTrialSaysSo) {
  ReportInput in = make_input(30, 2);
  for (auto& t : in.trials) t.system_attrs[kConstraintsAttr] = "[1.0]";
  const std::string html = render_report(in);
  EXPECT_NE(html.find("id=\"hypervolume-empty\""), std::string::npos);
  EXPECT_EQ(plot(html, "hypervolume"), "");
  EXPECT_GT(marks(plot(html, "pareto-0-1")), 0u);  // every trial drawn hollow
  EXPECT_EQ(count(plot(html, "pareto-0-1"), "class=\"pt front\""), 0u);
}

// The learning curves offer the objective's intermediate values and every metric the trials
// reported per step, a plot each, chosen with radio buttons.
TEST(HtmlReportTest, StepMetricsCanBeChosenInTheLearningCurves) {
  ReportInput in = make_input(60);
  in.study.system_attrs["study:metric_names"] = R"(["loss"])";
  size_t with_train_loss = 0;
  for (const FrozenTrial& t : in.trials) {
    std::vector<StepMetrics>& steps = in.step_metrics[t.trial_id];
    for (const auto& [step, value] : t.intermediate_values) {
      steps.push_back({.step = step,
                       .metrics = {{"loss", value},
                                   {"train_loss", 2 * value},
                                   {"lr", 0.1 / static_cast<double>(step + 1)}}});
    }
    with_train_loss += !steps.empty();
  }
  in.step_metrics[in.trials[3].trial_id].back().metrics["a<b"] = 1.0;  // one trial, one step
  const std::string html = render_report(in);
  expect_self_contained(html);
  // The objective first and chosen, then the other metrics by name; "loss" is the objective's.
  const std::string choice = html.substr(html.find("id=\"curve-choice\""));
  size_t at = 0;
  for (std::string label :
       {">loss (objective)</label>", ">a&lt;b</label>", ">lr</label>", ">train_loss</label>"}) {
    const size_t next = choice.find(label, at);
    ASSERT_NE(next, std::string::npos) << label;
    at = next;
  }
  EXPECT_NE(html.find("id=\"intermediate-choice\" checked>"), std::string::npos);
  EXPECT_EQ(count(html, "type=\"radio\""), 4u);
  EXPECT_EQ(count(html, " checked>"), 1u);
  EXPECT_EQ(html.find(">loss</label>"), std::string::npos);
  EXPECT_GT(marks(plot(html, "intermediate")), 0u);
  EXPECT_EQ(count(plot(html, "step-metric-0"), "class=\"curve "), 1u);  // a<b
  EXPECT_EQ(count(plot(html, "step-metric-2"), "class=\"curve "), with_train_loss);
  EXPECT_NE(plot(html, "step-metric-2").find(">train_loss</text>"), std::string::npos);
  EXPECT_NE(html.find("data-metric=\"train_loss\""), std::string::npos);
  EXPECT_EQ(plot(html, "step-metric-3"), "");
  // Each plot in its own panel, shown when its button is checked (CSS, no script needed).
  EXPECT_EQ(count(html, "class=\"curve-panel\""), 4u);
  EXPECT_NE(html.find("input:checked+label+.curve-panel{display:block}"), std::string::npos);
  // Without step metrics: the intermediate values alone, no choice.
  EXPECT_EQ(render_report(make_input(60)).find("id=\"curve-choice\""), std::string::npos);
}

// Several objectives: no intermediate values, so the first step metric is the one shown.
TEST(HtmlReportTest, WithoutIntermediateValuesTheFirstStepMetricIsShown) {
  ReportInput in = make_input(20, 2);
  for (FrozenTrial& t : in.trials) {
    t.intermediate_values.clear();
    in.step_metrics[t.trial_id] = {{.step = 1, .metrics = {{"acc", 0.5}}},
                                   {.step = 2, .metrics = {{"acc", 0.7}}}};
  }
  const std::string html = render_report(in);
  EXPECT_NE(html.find("id=\"step-metric-0-choice\" checked>"), std::string::npos);
  EXPECT_NE(html.find(">intermediate values</label>"), std::string::npos);
  EXPECT_NE(html.find("id=\"intermediate-empty\""), std::string::npos);
  EXPECT_EQ(count(plot(html, "step-metric-0"), "class=\"curve "), 20u);
}

// Many metrics of many trials: those the most trials reported are offered, each plot capped.
TEST(HtmlReportTest, StepMetricsStayBounded) {
  ReportInput in = make_input(300);
  in.options.max_curves = 40;
  in.options.max_curve_points = 10;
  in.options.max_step_metrics = 5;
  for (const FrozenTrial& t : in.trials) {
    std::vector<StepMetrics>& steps = in.step_metrics[t.trial_id];
    for (int step = 0; step < 30; ++step) {
      StepMetrics s{.step = step};
      for (int m = 0; m < 5; ++m) s.metrics["common_" + std::to_string(m)] = step * m;
      if (t.number < 3) {
        for (int m = 0; m < 10; ++m) s.metrics["rare_" + std::to_string(m)] = step;
      }
      steps.push_back(std::move(s));
    }
  }
  const std::string html = render_report(in);
  for (int n = 0; n < 5; ++n) {
    const std::string svg = plot(html, "step-metric-" + std::to_string(n));
    EXPECT_NE(svg.find(">common_" + std::to_string(n) + "</text>"), std::string::npos) << n;
    EXPECT_LE(marks(svg), 2 * in.options.max_curves) << n;  // curves + prune marks
    EXPECT_EQ(count(svg, "class=\"curve "), in.options.max_curves) << n;
  }
  EXPECT_EQ(plot(html, "step-metric-5"), "");
  const std::string note = html.substr(html.find("id=\"step-metrics-limited\""), 400);
  EXPECT_NE(note.find("reported 15 metrics per step"), std::string::npos) << note;
  EXPECT_NE(note.find("Left out: rare_0, rare_1,"), std::string::npos) << note;
  EXPECT_NE(html.find("40 of 300 trials that reported common_0 drawn"), std::string::npos);
}

// A 100,000-trial study: every plot stays capped and the file small.
TEST(HtmlReportTest, HugeStudyStaysBounded) {
  ReportInput in = make_input(100000);
  std::string html = render_report(in);
  EXPECT_LT(html.size(), 20u << 20);
  ReportOptions defaults;
  EXPECT_LE(marks(plot(html, "history")), defaults.max_points + 2);  // + best line and best point
  EXPECT_LE(marks(plot(html, "parallel")), defaults.max_parallel_lines);
  EXPECT_LE(marks(plot(html, "intermediate")), 2 * defaults.max_curves);  // curves + prune marks
  for (int p = 0; p < 5; ++p) {
    EXPECT_LE(marks(plot(html, "slice-" + std::to_string(p))), defaults.max_points);
  }
  EXPECT_NE(html.find("id=\"trials-limited\""), std::string::npos);
  EXPECT_EQ(count(html, "<tr><td class=\"num\" data-v="), defaults.max_table_rows);
  // The best trial is drawn in the history even though most trials are not.
  const FrozenTrial* best = nullptr;
  for (const auto& t : in.trials) {
    if (t.state == TrialState::kComplete && (!best || t.values[0] < best->values[0])) best = &t;
  }
  EXPECT_NE(plot(html, "history").find("best: trial " + std::to_string(best->number) + ":"),
            std::string::npos);
}

// Several objectives and many trials: the Pareto plots and the hypervolume stay capped.
TEST(HtmlReportTest, HugeMultiObjectiveStudyStaysBounded) {
  ReportInput in = make_input(20000, 3);
  const std::string html = render_report(in);
  ReportOptions defaults;
  for (std::string id : {"pareto-0-1", "pareto-0-2", "pareto-1-2"}) {
    EXPECT_LE(marks(plot(html, id)), defaults.max_points) << id;
    EXPECT_GT(count(plot(html, id), "class=\"pt front\""), 0u) << id;
  }
  EXPECT_LE(marks(plot(html, "hypervolume")), 1 + defaults.max_hypervolume_steps);
  EXPECT_NE(
      html.find("Computed after " + std::to_string(defaults.max_hypervolume_steps) + " of the "),
      std::string::npos);
}

}  // namespace
}  // namespace tuner::report
