#include "reports/markdown_report.h"

#include <algorithm>
#include <cmath>

#include "reports/svg_charts.h"

namespace xnn::reports {

std::string md_escape(const std::string& s) {
  if (s.empty()) return "-";
  std::string out;
  for (char c : s) {
    switch (c) {
      case '|': out += "\\|"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '`': out += "'"; break;
      case '\n': case '\r': out += ' '; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

std::string run_line(const RunRecord& r) {
  std::string s = "`";
  s += md_escape(r.id);
  s += "` (";
  s += md_escape(r.experiment) + ", " + r.status + ", started " + r.started_at;
  if (!r.git_commit.empty()) s += ", commit `" + md_escape(r.git_commit.substr(0, 12)) + "`";
  if (r.tag) s += ", tag `" + md_escape(*r.tag) + "`";
  return s + ")";
}

}  // namespace

std::string render_markdown(const ReportData& d) {
  std::string m = "# xnn-lab report: " + md_escape(d.run.experiment) + "\n\n";
  m += "- run: " + run_line(d.run) + (d.run_orphaned ? " (interrupted: its process is gone)" : "") + "\n";
  m += "- database: `" + md_escape(d.db) + "`\n";
  if (d.environment) {
    const Environment& e = *d.environment;
    m += "- machine: " + md_escape(e.cpu_model) + strf(", %d cores, ", e.cores) + md_escape(e.isa) + "; " + md_escape(e.os) + "\n";
    m += "- build: xnn-lab " + md_escape(e.xnn_version) + ", " + md_escape(e.compiler) +
         (e.git_commit.empty() ? "" : ", commit `" + md_escape(e.git_commit.substr(0, 12)) + "`") + strf("; load %.2f", e.load_avg_1m) + "\n";
  }
  if (!d.run.command.empty()) m += "- command: `" + md_escape(d.run.command) + "`\n";

  m += "\n## Summary\n\n";
  if (d.jobs.empty()) {
    m += "This run covers no jobs.\n";
  } else {
    const auto cols = summary_columns(d.jobs);
    m += "| model | variant | target | simulated | status |";
    for (const SummaryColumn& c : cols) m += std::string(" ") + c.title + " |";
    m += "\n|---|---|---|---|---|";
    for (size_t i = 0; i < cols.size(); ++i) m += "---:|";
    m += "\n";
    for (const JobSummary& j : d.jobs) {
      m += "| " + md_escape(j.model) + " | " + md_escape(j.variant) + " | " + md_escape(j.target) + " | " + (j.simulated ? "yes" : "no") +
           " | " + md_escape(j.status) + (j.reused ? " (earlier)" : "") + " |";
      for (const SummaryColumn& c : cols) {
        m += ' ';
        m += md_escape(format_value(j.metric(c.metric), c.kind));
        m += " |";
      }
      m += "\n";
    }
    for (const JobSummary& j : d.jobs) {
      if (j.status != job_status::kDone && !j.error.empty()) {
        m += "\n- **" + md_escape(j.label() + " / " + j.target) + "** failed: " + md_escape(j.error) + "\n";
      }
    }
  }

  m += "\n## Pareto front (accuracy vs latency)\n\n";
  if (d.scatters.empty()) m += "No job recorded both a latency median and a top-1 accuracy.\n";
  for (const TargetScatter& s : d.scatters) {
    size_t dominated = 0;
    m += "**" + md_escape(s.target) + "**" + (s.simulated ? " (simulated)" : "") + ":\n\n";
    for (const ParetoPoint& p : s.points) {
      if (!p.on_front) {
        ++dominated;
        continue;
      }
      const JobSummary& j = d.jobs[p.job];
      m += "- " + md_escape(j.label()) + ": " + format_value(p.latency_ms, "ms") + " ms, top-1 " + format_value(p.accuracy, "pct") + "\n";
    }
    m += strf("- (%zu dominated)\n\n", dominated);
  }

  if (d.has_training()) {
    m += "\n## Training\n\n| model | variant | epochs | test accuracy | train s | test accuracy per epoch |\n|---|---|---:|---:|---:|---|\n";
    for (const JobSummary& j : d.jobs) {
      if (j.epoch_test_accuracy.empty() && j.epoch_train_loss.empty()) continue;
      double acc = j.metric("test_accuracy");
      if (std::isnan(acc)) acc = j.metric("top1");
      std::string curve;
      for (double v : j.epoch_test_accuracy) curve += (curve.empty() ? "" : ", ") + strf("%.2f", v * 100);
      m += "| " + md_escape(j.model) + " | " + md_escape(j.variant) + " | " +
           strf("%zu", std::max(j.epoch_test_accuracy.size(), j.epoch_train_loss.size())) + " | " + format_value(acc, "pct") + " | " +
           format_value(j.metric("train_seconds"), "") + " | " + md_escape(curve) + " |\n";
    }
  }

  if (d.baseline) {
    const BaselineComparison& b = *d.baseline;
    m += "\n## Baseline comparison: " + gate_overall(b.gate) + "\n\n";
    m += "- baseline: " + run_line(b.run) + " in `" + md_escape(b.db) + "`\n- policy: " + md_escape(b.policy_source) + "\n\n";
    if (!b.gate.comparisons.empty()) {
      m += "| model | variant | target | metric | baseline | this run | change | p-value | verdict |\n";
      m += "|---|---|---|---|---:|---:|---:|---:|---|\n";
      for (const gate::Comparison& c : b.gate.comparisons) {
        std::string v = gate::verdict_name(c.verdict);
        if (c.verdict != gate::Verdict::kPass) v = "**" + v + "**";
        m += "| " + md_escape(c.model) + " | " + md_escape(c.variant) + " | " + md_escape(c.target) + " | " + md_escape(c.metric) + " | " +
             gate_value_text(c.baseline, c.unit) + " | " + gate_value_text(c.candidate, c.unit) + " | " + gate_change_text(c) + " | " +
             gate_p_text(c) + " | " + v + " |\n";
      }
    }
    for (const gate::Comparison& c : b.gate.comparisons) {
      if (c.verdict == gate::Verdict::kPass) continue;
      m += std::string("\n- ") + gate::verdict_name(c.verdict) + " " + md_escape(c.model + " / " + c.variant + " / " + c.target) + " " +
           md_escape(c.metric) + ": " + md_escape(c.reason) + (c.hint.empty() ? "" : "; " + md_escape(c.hint));
    }
    for (const gate::NotCompared& n : b.gate.not_compared) {
      m += std::string("\n- not compared") + (n.error ? " (**error**)" : "") + ": " + md_escape(n.model + " / " + n.variant + " / " + n.target) +
           ": " + md_escape(n.reason);
    }
    m += "\n\n" + gate_counts_text(b.gate) + "\n";
  }
  m += "\n_Generated by xnn-lab " + md_escape(d.xnn_version) + " at " + d.generated_at + "._\n";
  return m;
}

}  // namespace xnn::reports
