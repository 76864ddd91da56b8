// xnn-lab report (reports/): the Pareto front, gathering a run from a real store, HTML escaping
// and self-containment, the Markdown table shape, the baseline comparison (the gate's verdicts),
// and the errors for a missing database, an empty one, an unknown experiment or run.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "harness/gate/gate.h"
#include "harness/store/store.h"
#include "reports/html_report.h"
#include "reports/markdown_report.h"
#include "reports/report_data.h"
#include "reports/svg_charts.h"

namespace xnn {
namespace {
namespace fs = std::filesystem;
using reports::pareto_front;

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

TEST(ReportPareto, FrontOfKnownPoints) {
  //                          A     B     C     D     E     F    G
  const std::vector<double> lat = {1.0, 2.0, 3.0, 2.0, 0.5, NAN, 1.0};
  const std::vector<double> acc = {0.80, 0.90, 0.85, 0.90, 0.50, 0.99, 0.79};
  const std::vector<bool> front = pareto_front(lat, acc);
  // A: fastest with 80%; B and D: equal, most accurate (equal points do not dominate each other);
  // C: slower and less accurate than B; E: fastest of all; F: no latency; G: as fast as A, less accurate.
  EXPECT_EQ(front, (std::vector<bool>{true, true, false, true, true, false, false}));
}

TEST(ReportPareto, SinglePointAndMonotoneTradeOff) {
  EXPECT_EQ(pareto_front({3.0}, {0.5}), std::vector<bool>{true});
  EXPECT_TRUE(pareto_front({}, {}).empty());
  // Every point trades latency for accuracy: all on the front.
  EXPECT_EQ(pareto_front({1, 2, 3, 4}, {0.1, 0.2, 0.3, 0.4}), std::vector<bool>(4, true));
  // Strictly worse in both: only the first.
  EXPECT_EQ(pareto_front({1, 2, 3}, {0.9, 0.8, 0.7}), (std::vector<bool>{true, false, false}));
  EXPECT_THROW(pareto_front({1, 2}, {0.5}), Error);
}

TEST(ReportPareto, ScattersPerTargetSkipFailedAndIncompleteJobs) {
  reports::ReportData d;
  auto job = [](const std::string& variant, const std::string& target, double lat, double top1, const char* status = "DONE") {
    reports::JobSummary j;
    j.job_id = variant + target;
    j.model = "m";
    j.variant = variant;
    j.target = target;
    j.status = status;
    if (!std::isnan(lat)) j.metrics.push_back({"latency_ms_median", lat, "ms"});
    if (!std::isnan(top1)) j.metrics.push_back({"top1", top1, "ratio"});
    return j;
  };
  d.jobs = {job("a", "t1", 1, 0.8), job("b", "t1", 2, 0.7), job("a", "t2", 5, 0.8), job("c", "t1", 0.5, 0.95, "FAILED"),
            job("d", "t1", NAN, 0.99), job("b", "t2", 4, 0.85)};
  reports::compute_scatters(d);
  ASSERT_EQ(d.scatters.size(), 2u);
  EXPECT_EQ(d.scatters[0].target, "t1");
  ASSERT_EQ(d.scatters[0].points.size(), 2u);  // the failed job and the one without latency are left out
  EXPECT_TRUE(d.scatters[0].points[0].on_front);
  EXPECT_FALSE(d.scatters[0].points[1].on_front);  // b on t1: slower and less accurate than a
  ASSERT_EQ(d.scatters[1].points.size(), 2u);
  EXPECT_FALSE(d.scatters[1].points[0].on_front);  // a on t2: slower and not more accurate than b
  EXPECT_TRUE(d.scatters[1].points[1].on_front);
}

TEST(ReportSvg, EscapesAndTicks) {
  EXPECT_EQ(reports::html_escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  const auto ticks = reports::nice_ticks(0.03, 0.97, 5);
  ASSERT_GE(ticks.size(), 4u);
  EXPECT_GE(ticks.front(), 0.03 - 1e-12);
  EXPECT_LE(ticks.back(), 0.97 + 1e-12);
  EXPECT_NEAR(ticks[1] - ticks[0], 0.2, 1e-12);
  const std::string svg = reports::scatter_svg("t<1>", "x", "y", {{1, 2, "p&q", "tip<b>", true, "j1"}, {2, 3, "r", "tip", true, "j2"}});
  EXPECT_NE(svg.find("<title>tip&lt;b&gt;</title>"), std::string::npos);
  EXPECT_NE(svg.find("p&amp;q"), std::string::npos);
  EXPECT_NE(svg.find("<path class=\"front\""), std::string::npos);  // two front points: a front line
  EXPECT_EQ(count_of(svg, "<circle class=\"pt front\""), 2u);
}

// A store with an experiment whose model name and config try to inject markup, two targets
// (one simulated), measured jobs with raw samples and per-op profiles, a failed job and a
// training job with epoch curves.
class ReportStoreTest : public ::testing::Test {
 protected:
  static constexpr const char* kEvilModel = "<script>alert(1)</script> & co";

  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "xnn_report_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    db_ = (fs::path(dir_) / "results.db").string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Records a FINISHED run of experiment "exp" in `db`; latency samples are `latency_ms` +- 1%.
  std::string record_run(const std::string& db, double latency_ms, const std::optional<std::string>& tag = std::nullopt) {
    Store s(db);
    Environment env;
    env.cpu_model = "Test CPU <9000>";
    env.isa = "avx2 fma";
    env.cores = 2;
    env.compiler = "gcc 12.2.0";
    env.xnn_version = "0.1.0";
    env.git_commit = "abcdef123456";
    env.os = "Debian GNU/Linux 12";
    env.load_avg_1m = 0.5;
    s.ensure_target(TargetRecord{0, "cpu-1t", "cpu", false, "{}"});
    s.ensure_target(TargetRecord{0, "sim:npu", "simulated-npu", true, "{}"});
    RunRecord run;
    run.experiment = "exp";
    run.config_path = "/cfg/exp.yaml";
    run.config_text = "name: exp\n# </pre><script>alert('config')</script>\n";
    run.config_hash = "0123456789abcdef0123";
    run.git_commit = "abcdef123456";
    run.tag = tag;
    run.command = "xnn-lab run exp.yaml --tag \"a&b\"";
    run.environment_id = s.ensure_environment(env);
    const std::string run_id = s.create_run(run);
    auto job = [&](const std::string& id, const std::string& model, const std::string& variant, const std::string& target) {
      JobRecord j;
      j.id = id;
      j.run_id = run_id;
      j.experiment = "exp";
      j.model = model;
      j.variant = variant;
      j.target = target;
      s.start_job(j);
    };
    struct Spec {
      const char* id;
      const char* variant;
      const char* target;
      double lat_scale, top1;
    };
    const Spec specs[] = {{"j-fp32-cpu", "fp32", "cpu-1t", 1.0, 0.90},
                          {"j-opt-cpu", "opt", "cpu-1t", 0.5, 0.895},
                          {"j-slow-cpu", "slow", "cpu-1t", 2.0, 0.80},
                          {"j-fp32-sim", "fp32", "sim:npu", 0.2, 0.90}};
    for (const Spec& sp : specs) {
      job(sp.id, kEvilModel, sp.variant, sp.target);
      JobResult r;
      const double med = latency_ms * sp.lat_scale;
      std::vector<double> samples;
      for (int i = 0; i < 20; ++i) samples.push_back(med * (0.99 + 0.001 * i));
      std::vector<double> sorted = samples;
      std::sort(sorted.begin(), sorted.end());
      r.samples["latency_ms"] = samples;
      r.metrics = {{"latency_ms_median", (sorted[9] + sorted[10]) / 2, "ms"}, {"latency_ms_p90", sorted[17], "ms"},
                   {"size_bytes", sp.lat_scale * 100000, "bytes"},          {"parameters", 24000, "count"},
                   {"macs", 2.0e6, "count"},                                {"top1", sp.top1, "ratio"},
                   {"top5", 0.99, "ratio"},                                 {"peak_rss_bytes", 30e6, "bytes"}};
      for (int k = 0; k < 12; ++k) {
        r.op_profiles.push_back(OpProfileRow{k, "node_" + std::to_string(k) + "<&>", k % 2 ? "Conv" : "Relu",
                                             k % 2 ? "f32_gemm_6x16__avx2" : "relu", "1x8x28x28", 1000 * k, 100,
                                             med * (k + 1) / 78.0});
      }
      s.finish_job(sp.id, r);
    }
    job("j-broken", "broken", "fp32", "cpu-1t");
    JobResult failed;
    failed.status = job_status::kFailed;
    failed.error = "unsupported op <Foo> & more";
    s.finish_job("j-broken", failed);
    job("j-train", "fmnist_small_cnn", "trained", "cpu-1t");
    JobResult tr;
    tr.metrics = {{"test_accuracy", 0.87, "ratio"}, {"top1", 0.87, "ratio"}, {"train_seconds", 12.5, "s"}};
    tr.samples["epoch_test_accuracy"] = {0.80, 0.85, 0.87};
    tr.samples["epoch_train_loss"] = {0.9, 0.5, 0.4};
    s.finish_job("j-train", tr);
    s.finish_run(run_id, run_status::kFinished);
    return run_id;
  }

  std::string dir_, db_;
};

TEST_F(ReportStoreTest, GathersTheLatestFinishedRun) {
  record_run(db_, 1.0);
  const std::string latest = record_run(db_, 1.0);
  reports::ReportOptions o;
  o.db = db_;
  const reports::ReportData d = reports::gather_report(o);
  EXPECT_EQ(d.run.id, latest);
  ASSERT_EQ(d.jobs.size(), 6u);
  ASSERT_TRUE(d.environment.has_value());
  EXPECT_EQ(d.environment->cores, 2);
  const reports::JobSummary& fp32 = d.jobs[0];
  EXPECT_EQ(fp32.model, kEvilModel);
  EXPECT_EQ(fp32.op_count, 12u);
  ASSERT_EQ(fp32.top_ops.size(), 8u);
  EXPECT_EQ(fp32.top_ops[0].node_index, 11);  // slowest first
  EXPECT_NEAR(fp32.ops_total_ms, 1.0, 1e-9);  // (1 + ... + 12) / 78
  EXPECT_NEAR(fp32.other_ops_ms, (1 + 2 + 3 + 4) / 78.0, 1e-9);
  EXPECT_TRUE(d.jobs[3].simulated);
  o.top_ops = 12;  // every op shown: nothing is "other", not even rounding
  const reports::ReportData all = reports::gather_report(o);
  EXPECT_EQ(all.jobs[0].top_ops.size(), 12u);
  EXPECT_EQ(all.jobs[0].other_ops_ms, 0.0);
  EXPECT_EQ(reports::render_html(all).find("other ops"), std::string::npos);
  EXPECT_EQ(d.jobs[5].epoch_test_accuracy.size(), 3u);
  EXPECT_TRUE(d.has_training());
  // Two targets with points; on cpu-1t: opt (fastest) and fp32 (most accurate) form the front,
  // slow is dominated, the training job (no latency) and the failed job are not plotted.
  ASSERT_EQ(d.scatters.size(), 2u);
  ASSERT_EQ(d.scatters[0].points.size(), 3u);
  EXPECT_TRUE(d.scatters[0].points[0].on_front);
  EXPECT_TRUE(d.scatters[0].points[1].on_front);
  EXPECT_FALSE(d.scatters[0].points[2].on_front);
  EXPECT_TRUE(d.scatters[1].simulated);
}

TEST_F(ReportStoreTest, HtmlIsEscapedSelfContainedAndHasEveryChart) {
  record_run(db_, 1.0);
  reports::ReportOptions o;
  o.db = db_;
  const std::string html = reports::render_html(reports::gather_report(o));
  // Strings from the store never come out as markup.
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("</pre><script>"), std::string::npos);
  EXPECT_EQ(html.find("<Foo>"), std::string::npos);
  EXPECT_EQ(html.find("<9000>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; &amp; co"), std::string::npos);
  EXPECT_NE(html.find("unsupported op &lt;Foo&gt; &amp; more"), std::string::npos);
  EXPECT_NE(html.find("node_11&lt;&amp;&gt;"), std::string::npos);
  EXPECT_NE(html.find("--tag &quot;a&amp;b&quot;"), std::string::npos);
  EXPECT_EQ(count_of(html, "<script"), 1u);  // only the report's own inline script
  // Self-contained: nothing loaded from anywhere, no external stylesheet or script.
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=\s*["']?\s*(https?:)?//)", std::regex::icase)));
  EXPECT_FALSE(std::regex_search(html, std::regex(R"(<(link|iframe|img|object|embed)\b)", std::regex::icase)));
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  // Every section and chart.
  for (const char* id : {"summary", "pareto", "size", "ops", "training", "environment"}) {
    EXPECT_NE(html.find(std::string("<section id=\"") + id + "\""), std::string::npos) << id;
  }
  EXPECT_EQ(html.find("<section id=\"baseline\""), std::string::npos);  // no --baseline
  EXPECT_EQ(count_of(html, "<svg class=\"chart scatter\""), 2u);       // one per target
  EXPECT_EQ(count_of(html, "<circle class=\"pt front\""), 3u);         // opt + fp32 on cpu, fp32 on sim
  EXPECT_EQ(count_of(html, "<circle class=\"pt\""), 1u);               // slow, dominated
  EXPECT_EQ(count_of(html, "<rect class=\"bar\""), 3u);                // fp32, opt, slow (sim fp32 = same model/variant)
  EXPECT_EQ(count_of(html, "<svg class=\"chart stacked\""), 4u);       // one per profiled job
  EXPECT_EQ(count_of(html, "<rect class=\"seg\""), 4u * 9u);           // 8 top ops + "other"
  EXPECT_EQ(count_of(html, "<svg class=\"chart curve\""), 2u);         // accuracy and loss of the training job
  EXPECT_NE(html.find("f32_gemm_6x16__avx2"), std::string::npos);
  EXPECT_NE(html.find("4 other ops"), std::string::npos);
  EXPECT_NE(html.find(">simulated</span>"), std::string::npos);
  EXPECT_NE(html.find("Test CPU &lt;9000&gt;"), std::string::npos);
  EXPECT_NE(html.find("data-ready"), std::string::npos);
  EXPECT_NE(html.find("latency median (ms, lower is better)"), std::string::npos);
  EXPECT_NE(html.find("top-1 accuracy (%)"), std::string::npos);
}

// Splits a Markdown table row into cells ("\|" is part of a cell).
std::vector<std::string> md_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cur;
  for (size_t i = 1; i < line.size(); ++i) {  // skip the leading '|'
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cur += "\\|";
      ++i;
    } else if (line[i] == '|') {
      cells.push_back(cur);
      cur.clear();
    } else {
      cur += line[i];
    }
  }
  return cells;
}

TEST_F(ReportStoreTest, MarkdownTablesHaveConsistentShapeAndEscaping) {
  record_run(db_, 1.0);
  reports::ReportOptions o;
  o.db = db_;
  const std::string md = reports::render_markdown(reports::gather_report(o));
  EXPECT_EQ(md.find("<script>"), std::string::npos);
  EXPECT_NE(md.find("&lt;script&gt;alert(1)&lt;/script&gt; &amp; co"), std::string::npos);
  EXPECT_EQ(reports::md_escape("a|b<c>"), "a\\|b&lt;c&gt;");
  std::istringstream in(md);
  std::string line;
  std::vector<std::vector<std::string>> tables;  // rows of the summary table
  size_t header_cells = 0, rows = 0;
  bool in_summary = false;
  while (std::getline(in, line)) {
    if (line == "## Summary") in_summary = true;
    else if (line.rfind("## ", 0) == 0) in_summary = false;
    if (!in_summary || line.empty() || line[0] != '|') continue;
    const auto cells = md_cells(line);
    if (header_cells == 0) {
      header_cells = cells.size();
      EXPECT_EQ(cells[0], " model ");
      continue;
    }
    EXPECT_EQ(cells.size(), header_cells) << line;
    if (line.rfind("|---", 0) != 0) ++rows;
  }
  EXPECT_EQ(header_cells, 5u + 8u);  // model, variant, target, simulated, status + every metric column
  EXPECT_EQ(rows, 6u);
  EXPECT_NE(md.find("## Pareto front (accuracy vs latency)"), std::string::npos);
  EXPECT_NE(md.find("(1 dominated)"), std::string::npos);
  EXPECT_NE(md.find("## Training"), std::string::npos);
  EXPECT_NE(md.find("80.00, 85.00, 87.00"), std::string::npos);
}

TEST_F(ReportStoreTest, BaselineVerdictsAreTheGates) {
  const std::string base_db = (fs::path(dir_) / "base.db").string();
  const std::string base_id = record_run(base_db, 1.0, std::string("main"));
  const std::string cand_id = record_run(db_, 1.3);  // 30% slower everywhere
  reports::ReportOptions o;
  o.db = db_;
  o.baseline = base_db + ":tag:main";
  const reports::ReportData d = reports::gather_report(o);
  ASSERT_TRUE(d.baseline.has_value());
  EXPECT_EQ(d.baseline->run.id, base_id);
  // The same comparison through the gate library directly.
  Store bs(base_db), cs(db_);
  const auto expected = gate::gate_runs(gate::load_jobs(bs, d.baseline->db, base_id), gate::load_jobs(cs, d.db, cand_id),
                                        gate::default_policy());
  ASSERT_EQ(d.baseline->gate.comparisons.size(), expected.comparisons.size());
  size_t regressions = 0;
  for (size_t i = 0; i < expected.comparisons.size(); ++i) {
    EXPECT_EQ(d.baseline->gate.comparisons[i].verdict, expected.comparisons[i].verdict);
    EXPECT_EQ(d.baseline->gate.comparisons[i].metric, expected.comparisons[i].metric);
    regressions += d.baseline->gate.comparisons[i].verdict == gate::Verdict::kRegression;
  }
  EXPECT_EQ(regressions, 4u);  // latency of each measured job; sizes and accuracies are equal
  EXPECT_EQ(reports::gate_overall(d.baseline->gate), "FAIL");
  const std::string html = reports::render_html(d);
  EXPECT_NE(html.find("<section id=\"baseline\""), std::string::npos);
  EXPECT_NE(html.find(">REGRESSION</span>"), std::string::npos);
  const std::string md = reports::render_markdown(d);
  EXPECT_NE(md.find("## Baseline comparison: FAIL"), std::string::npos);
  EXPECT_NE(md.find(reports::gate_counts_text(expected)), std::string::npos);
  EXPECT_NE(md.find("| **REGRESSION** |"), std::string::npos);
  // The reported run cannot be its own baseline.
  o.baseline = cand_id;
  EXPECT_THROW(reports::gather_report(o), Error);
}

TEST_F(ReportStoreTest, ClearErrors) {
  reports::ReportOptions o;
  o.db = db_;
  auto message = [&] {
    try {
      reports::gather_report(o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message().find("no results database"), std::string::npos);
  { Store empty(db_); }
  EXPECT_NE(message().find("has no runs"), std::string::npos);
  record_run(db_, 1.0);
  o.experiment = "nope";
  EXPECT_NE(message().find("no experiment 'nope'"), std::string::npos);
  EXPECT_NE(message().find("exp"), std::string::npos);  // lists the known ones
  o.experiment = "exp";
  o.run = "tag:missing";
  EXPECT_NE(message().find("no run of experiment 'exp' matches 'tag:missing'"), std::string::npos);
  o.run.clear();
  o.baseline = "tag:missing";
  EXPECT_NE(message().find("tag:missing"), std::string::npos);
  o.baseline.clear();
  EXPECT_EQ(message(), "no error");
}

}  // namespace
}  // namespace xnn
