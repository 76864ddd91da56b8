#include "reports/html_report.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "reports/svg_charts.h"

namespace xnn::reports {
namespace {

const char kCss[] = R"css(
:root { --fg:#1d2330; --muted:#5b6475; --line:#d9dee7; --bg:#ffffff; --band:#f4f6fa; --accent:#2b5fb4; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--fg);
       background: var(--bg); margin: 0 auto; max-width: 1180px; padding: 20px 28px 40px; }
h1 { font-size: 24px; margin: 0 0 4px; } h2 { font-size: 19px; margin: 30px 0 10px; border-bottom: 2px solid var(--line);
     padding-bottom: 4px; } h3 { font-size: 15px; margin: 18px 0 6px; }
.meta { color: var(--muted); margin: 2px 0; } code, pre { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
nav a { margin-right: 14px; color: var(--accent); text-decoration: none; } nav { margin: 10px 0 4px; }
table { border-collapse: collapse; margin: 6px 0 10px; } th, td { padding: 4px 10px; border-bottom: 1px solid var(--line); text-align: left; }
th { background: var(--band); font-weight: 600; white-space: nowrap; } td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.sortable th { cursor: pointer; } th[data-sort="asc"]::after { content: " \25B2"; } th[data-sort="desc"]::after { content: " \25BC"; }
tr.hl td { background: #fff3c4; } tr.failed td { color: #a32020; }
.badge { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 12px; font-weight: 600; }
.v-PASS { background: #e3f3e6; color: #1d6b2c; } .v-REGRESSION, .v-FAIL, .v-ERROR { background: #fbe1e1; color: #a32020; }
.v-IMPROVEMENT { background: #e1ecfb; color: #1f4e9a; } .v-UNCERTAIN { background: #fdf1d6; color: #8a5a00; }
.sim { background: #efe6fb; color: #5b2d9c; }
.charts { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; }
svg.chart { background: #fff; border: 1px solid var(--line); border-radius: 6px; max-width: 100%; height: auto; }
svg .ctitle { font-size: 14px; font-weight: 600; fill: var(--fg); } svg .tick { font-size: 11px; fill: var(--muted); }
svg .alabel { font-size: 12px; fill: var(--fg); } svg .grid { stroke: #eceff4; } svg .axis { stroke: #8a93a3; }
svg .plabel, svg .blabel, svg .bvalue, svg .legend { font-size: 11.5px; fill: var(--fg); }
svg circle.pt { fill: #9aa6b8; stroke: #fff; stroke-width: 1.5; } svg circle.pt.front { fill: #d9480f; }
svg circle.pt.hl, svg rect.hl { stroke: #1d2330; stroke-width: 2.5; }
svg path.front { fill: none; stroke: #d9480f; stroke-width: 1.5; stroke-dasharray: 5 3; }
svg polyline.line { fill: none; stroke: var(--accent); stroke-width: 2; } svg circle.lpt { fill: var(--accent); }
pre { background: var(--band); border: 1px solid var(--line); border-radius: 6px; padding: 10px; overflow-x: auto; white-space: pre-wrap; }
dl.env { display: grid; grid-template-columns: max-content 1fr; gap: 3px 16px; } dl.env dt { color: var(--muted); } dl.env dd { margin: 0; }
.empty { color: var(--muted); font-style: italic; } .job { margin: 14px 0 22px; } footer { margin-top: 34px; color: var(--muted); font-size: 12px; }
)css";

// Sortable tables (click a header), and hovering a scatter point or a summary row highlights the
// other. Runs after the document is parsed (the script is the body's last element).
const char kScript[] = R"js(
(function () {
  var body = document.body;
  try {
    var tables = document.querySelectorAll("table.sortable");
    Array.prototype.forEach.call(tables, function (table) {
      var heads = table.tHead.rows[0].cells;
      Array.prototype.forEach.call(heads, function (th, col) {
        th.addEventListener("click", function () {
          var asc = th.getAttribute("data-sort") !== "asc";
          Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("data-sort"); });
          th.setAttribute("data-sort", asc ? "asc" : "desc");
          var rows = Array.prototype.slice.call(table.tBodies[0].rows);
          rows.sort(function (a, b) {
            var x = a.cells[col], y = b.cells[col];
            var xv = x.getAttribute("data-v"), yv = y.getAttribute("data-v");
            var r;
            if (xv !== null && yv !== null) {
              var xn = xv === "" ? Infinity : Number(xv), yn = yv === "" ? Infinity : Number(yv);
              r = xn < yn ? -1 : xn > yn ? 1 : 0;
            } else {
              r = x.textContent.localeCompare(y.textContent);
            }
            return asc ? r : -r;
          });
          rows.forEach(function (row) { table.tBodies[0].appendChild(row); });
        });
      });
    });
    var linked = document.querySelectorAll("[data-job]");
    function mark(job, on) {
      Array.prototype.forEach.call(linked, function (el) {
        if (el.getAttribute("data-job") === job) el.classList.toggle("hl", on);
      });
    }
    Array.prototype.forEach.call(linked, function (el) {
      el.addEventListener("mouseenter", function () { mark(el.getAttribute("data-job"), true); });
      el.addEventListener("mouseleave", function () { mark(el.getAttribute("data-job"), false); });
    });
    body.setAttribute("data-charts", String(document.querySelectorAll("svg.chart").length));
    body.setAttribute("data-ready", "1");
  } catch (e) {
    body.setAttribute("data-error", String((e && e.message) || e));
    throw e;
  }
})();
)js";

std::string esc(const std::string& s) { return html_escape(s); }

std::string num_attr(double v) { return std::isnan(v) ? "" : strf("%.10g", v); }

std::string badge(const std::string& text, const std::string& cls) {
  return "<span class=\"badge " + cls + "\">" + esc(text) + "</span>";
}

std::string run_meta(const RunRecord& r, bool orphaned) {
  std::string s = "run <code>" + esc(r.id) + "</code> &middot; " + badge(orphaned ? "INTERRUPTED" : r.status,
                  r.status == "FINISHED" ? "v-PASS" : "v-UNCERTAIN");
  s += " &middot; started " + esc(r.started_at);
  if (!r.finished_at.empty()) s += " &middot; finished " + esc(r.finished_at);
  if (!r.git_commit.empty()) s += " &middot; commit <code>" + esc(r.git_commit.substr(0, 12)) + "</code>";
  if (r.tag) s += " &middot; tag <code>" + esc(*r.tag) + "</code>";
  return s;
}

void summary_section(std::string& h, const ReportData& d) {
  h += "<section id=\"summary\"><h2>Summary</h2>\n";
  if (d.jobs.empty()) {
    h += "<p class=\"empty\">This run covers no jobs.</p></section>\n";
    return;
  }
  const auto cols = summary_columns(d.jobs);
  h += "<table class=\"summary sortable\"><thead><tr><th>model</th><th>variant</th><th>target</th><th>simulated</th><th>status</th>";
  for (const SummaryColumn& c : cols) h += std::string("<th class=\"num\">") + c.title + "</th>";
  h += "</tr></thead><tbody>\n";
  for (const JobSummary& j : d.jobs) {
    const bool failed = j.status != job_status::kDone;
    h += "<tr data-job=\"" + esc(j.job_id) + "\"" + (failed ? " class=\"failed\"" : "") + ">";
    h += "<td>" + esc(j.model) + "</td><td>" + esc(j.variant.empty() ? "-" : j.variant) + "</td><td>" + esc(j.target) + "</td><td>";
    h += j.simulated ? badge("simulated", "sim") : std::string("no");
    h += "</td><td>" + esc(j.status) + (j.reused ? " <span class=\"meta\">(recorded earlier)</span>" : "") + "</td>";
    for (const SummaryColumn& c : cols) {
      const double v = j.metric(c.metric);
      h += "<td class=\"num\" data-v=\"" + num_attr(v) + "\">" + esc(format_value(v, c.kind)) + "</td>";
    }
    h += "</tr>\n";
  }
  h += "</tbody></table>\n";
  bool any_sim = false;
  for (const JobSummary& j : d.jobs) any_sim = any_sim || j.simulated;
  if (any_sim) h += "<p class=\"meta\">Targets marked simulated report results from a device model, not the device.</p>\n";
  for (const JobSummary& j : d.jobs) {
    if (j.status != job_status::kDone && !j.error.empty()) {
      h += "<p class=\"meta\"><b>" + esc(j.label() + " / " + j.target) + "</b> failed: " + esc(j.error) + "</p>\n";
    }
  }
  h += "</section>\n";
}

void pareto_section(std::string& h, const ReportData& d) {
  h += "<section id=\"pareto\"><h2>Accuracy vs latency</h2>\n";
  if (d.scatters.empty()) {
    h += "<p class=\"empty\">No job of this run recorded both a latency median and a top-1 accuracy.</p></section>\n";
    return;
  }
  h += "<p class=\"meta\">One chart per target. Filled orange points are the Pareto front: no other variant is both faster "
       "and at least as accurate. Hover a point for its values.</p>\n<div class=\"charts\">\n";
  for (const TargetScatter& s : d.scatters) {
    std::vector<ScatterPoint> pts;
    for (const ParetoPoint& p : s.points) {
      const JobSummary& j = d.jobs[p.job];
      ScatterPoint sp;
      sp.x = p.latency_ms;
      sp.y = p.accuracy * 100;
      sp.label = j.variant.empty() ? j.model : j.variant;
      if (s.points.size() > 1) {
        std::set<std::string> models;
        for (const ParetoPoint& q : s.points) models.insert(d.jobs[q.job].model);
        if (models.size() > 1) sp.label = j.label();
      }
      sp.tooltip = j.label() + " on " + s.target + "\nlatency median " + format_value(p.latency_ms, "ms") + " ms\ntop-1 " +
                   format_value(p.accuracy, "pct") + (p.on_front ? "\nPareto front" : "\ndominated");
      sp.highlight = p.on_front;
      sp.job_id = j.job_id;
      pts.push_back(std::move(sp));
    }
    h += scatter_svg("target " + s.target + (s.simulated ? " (simulated)" : ""), "latency median (ms, lower is better)",
                     "top-1 accuracy (%)", pts);
  }
  h += "</div>\n";
  for (const TargetScatter& s : d.scatters) {
    h += "<h3>Pareto front on " + esc(s.target) + "</h3><ul>\n";
    for (const ParetoPoint& p : s.points) {
      if (!p.on_front) continue;
      const JobSummary& j = d.jobs[p.job];
      h += "<li>" + esc(j.label()) + ": " + esc(format_value(p.latency_ms, "ms")) + " ms, top-1 " + esc(format_value(p.accuracy, "pct")) +
           "</li>\n";
    }
    h += "</ul>\n";
  }
  h += "</section>\n";
}

void size_section(std::string& h, const ReportData& d) {
  h += "<section id=\"size\"><h2>Model size</h2>\n";
  std::vector<Bar> bars;
  std::set<std::string> seen;  // one bar per model / variant (the file is the same on every target)
  for (const JobSummary& j : d.jobs) {
    const double size = j.metric("size_bytes");
    if (std::isnan(size) || !seen.insert(j.model + "\n" + j.variant).second) continue;
    std::string tip = j.label() + ": " + format_value(size, "bytes") + strf(" (%.0f bytes)", size);
    const double params = j.metric("parameters"), macs = j.metric("macs");
    if (!std::isnan(params)) tip += "\nparameters " + format_value(params, "count");
    if (!std::isnan(macs)) tip += "\nMACs " + format_value(macs, "count");
    bars.push_back(Bar{j.label(), size, format_value(size, "bytes"), tip});
  }
  if (bars.empty()) h += "<p class=\"empty\">No job of this run recorded a model size.</p>\n";
  else h += bar_chart_svg("model file size per model / variant", bars);
  h += "</section>\n";
}

void ops_section(std::string& h, const ReportData& d) {
  h += "<section id=\"ops\"><h2>Per-op latency</h2>\n";
  bool any = false;
  for (const JobSummary& j : d.jobs) {
    if (j.top_ops.empty()) continue;
    any = true;
    const double total = j.ops_total_ms;
    auto pct = [&](double ms) { return total > 0 ? 100 * ms / total : 0.0; };
    std::vector<Segment> segs;
    for (const OpProfileRow& o : j.top_ops) {
      const std::string label = o.op_type + " " + o.node_name + " [" + o.kernel + "] " + strf("%.4g ms, %.1f%%", o.time_ms, pct(o.time_ms));
      segs.push_back(Segment{label, o.time_ms, label + (o.shapes.empty() ? "" : "\n" + o.shapes)});
    }
    if (j.op_count > j.top_ops.size()) {
      const size_t rest = j.op_count - j.top_ops.size();
      segs.push_back(Segment{strf("%zu other ops: %.4g ms, %.1f%%", rest, j.other_ops_ms, pct(j.other_ops_ms)), j.other_ops_ms,
                             strf("%zu other ops", rest)});
    }
    h += "<div class=\"job\">\n";
    h += stacked_bar_svg(j.label() + " on " + j.target + strf(": %.4g ms over %zu ops", total, j.op_count), segs);
    h += "<table class=\"ops sortable\"><thead><tr><th class=\"num\">#</th><th>node</th><th>op type</th><th>kernel</th>"
         "<th class=\"num\">ms</th><th class=\"num\">%</th><th class=\"num\">MACs</th><th>shapes</th></tr></thead><tbody>\n";
    for (const OpProfileRow& o : j.top_ops) {
      h += "<tr><td class=\"num\" data-v=\"" + strf("%lld", static_cast<long long>(o.node_index)) + "\">" +
           strf("%lld", static_cast<long long>(o.node_index)) + "</td><td>" + esc(o.node_name) + "</td><td>" + esc(o.op_type) +
           "</td><td><code>" + esc(o.kernel) + "</code></td><td class=\"num\" data-v=\"" + num_attr(o.time_ms) + "\">" +
           strf("%.4g", o.time_ms) + "</td><td class=\"num\" data-v=\"" + num_attr(pct(o.time_ms)) + "\">" +
           strf("%.1f", pct(o.time_ms)) + "</td><td class=\"num\" data-v=\"" + num_attr(static_cast<double>(o.macs)) + "\">" +
           esc(format_value(static_cast<double>(o.macs), "count")) + "</td><td><code>" + esc(o.shapes) + "</code></td></tr>\n";
    }
    h += "</tbody></table></div>\n";
  }
  if (!any) h += "<p class=\"empty\">No per-op profile was recorded for this run (metrics.latency.profile: true records one).</p>\n";
  h += "</section>\n";
}

void training_section(std::string& h, const ReportData& d) {
  if (!d.has_training()) return;
  h += "<section id=\"training\"><h2>Training</h2>\n";
  h += "<table class=\"training\"><thead><tr><th>model</th><th>variant</th><th class=\"num\">epochs</th><th class=\"num\">test accuracy</th>"
       "<th class=\"num\">train time s</th><th class=\"num\">final train loss</th></tr></thead><tbody>\n";
  for (const JobSummary& j : d.jobs) {
    if (j.epoch_test_accuracy.empty() && j.epoch_train_loss.empty()) continue;
    double acc = j.metric("test_accuracy");
    if (std::isnan(acc)) acc = j.metric("top1");
    const size_t epochs = std::max(j.epoch_test_accuracy.size(), j.epoch_train_loss.size());
    h += "<tr><td>" + esc(j.model) + "</td><td>" + esc(j.variant) + "</td><td class=\"num\">" + strf("%zu", epochs) +
         "</td><td class=\"num\">" + esc(format_value(acc, "pct")) + "</td><td class=\"num\">" +
         esc(format_value(j.metric("train_seconds"), "")) + "</td><td class=\"num\">" +
         (j.epoch_train_loss.empty() ? std::string("-") : strf("%.4g", j.epoch_train_loss.back())) + "</td></tr>\n";
  }
  h += "</tbody></table>\n<div class=\"charts\">\n";
  for (const JobSummary& j : d.jobs) {
    if (!j.epoch_test_accuracy.empty()) {
      std::vector<double> pct;
      for (double v : j.epoch_test_accuracy) pct.push_back(v * 100);
      h += line_chart_svg(j.model + ": test accuracy", "test accuracy (%)", pct, "%.2f%%");
    }
    if (!j.epoch_train_loss.empty()) h += line_chart_svg(j.model + ": train loss", "train loss", j.epoch_train_loss);
  }
  h += "</div></section>\n";
}

void baseline_section(std::string& h, const ReportData& d) {
  if (!d.baseline) return;
  const BaselineComparison& b = *d.baseline;
  using gate::Verdict;
  const std::string overall = gate_overall(b.gate);
  h += "<section id=\"baseline\"><h2>Comparison with the baseline " + badge(overall, "v-" + overall) + "</h2>\n";
  h += "<p class=\"meta\">baseline " + run_meta(b.run, false) + " in <code>" + esc(b.db) + "</code>; policy " + esc(b.policy_source) +
       ". Verdicts are those of <code>xnn-lab gate</code>: latency by a Mann-Whitney U test on the raw samples plus a minimum "
       "change of the median, size and accuracy by the change alone.</p>\n";
  h += "<p><b>" + esc(gate_counts_text(b.gate)) + "</b></p>\n";
  if (!b.gate.comparisons.empty()) {
    h += "<table class=\"baseline sortable\"><thead><tr><th>model</th><th>variant</th><th>target</th><th>metric</th>"
         "<th class=\"num\">baseline</th><th class=\"num\">this run</th><th class=\"num\">change</th><th class=\"num\">p-value</th>"
         "<th>verdict</th></tr></thead><tbody>\n";
    for (const gate::Comparison& c : b.gate.comparisons) {
      const std::string v = gate::verdict_name(c.verdict);
      const double change = c.unit == "%" ? c.change_abs : c.change_rel;
      h += "<tr><td>" + esc(c.model) + "</td><td>" + esc(c.variant) + "</td><td>" + esc(c.target) + "</td><td>" + esc(c.metric) +
           "</td><td class=\"num\" data-v=\"" + num_attr(c.baseline) + "\">" + esc(gate_value_text(c.baseline, c.unit)) +
           "</td><td class=\"num\" data-v=\"" + num_attr(c.candidate) + "\">" + esc(gate_value_text(c.candidate, c.unit)) +
           "</td><td class=\"num\" data-v=\"" + num_attr(std::isinf(change) ? NAN : change) + "\">" + esc(gate_change_text(c)) +
           "</td><td class=\"num\">" + esc(gate_p_text(c)) + "</td><td title=\"" + esc(c.reason + (c.hint.empty() ? "" : "; " + c.hint)) +
           "\">" + badge(v, "v-" + v) + "</td></tr>\n";
    }
    h += "</tbody></table>\n";
  }
  bool notes = false;
  for (const gate::Comparison& c : b.gate.comparisons) {
    if (c.verdict == Verdict::kPass) continue;
    if (!notes) h += "<ul>\n";
    notes = true;
    h += "<li>" + badge(gate::verdict_name(c.verdict), std::string("v-") + gate::verdict_name(c.verdict)) + " " +
         esc(c.model + " / " + c.variant + " / " + c.target + " " + c.metric + ": " + c.reason) +
         (c.hint.empty() ? "" : " <span class=\"meta\">(" + esc(c.hint) + ")</span>") + "</li>\n";
  }
  if (notes) h += "</ul>\n";
  if (!b.gate.not_compared.empty()) {
    h += "<h3>Not compared</h3><ul>\n";
    for (const gate::NotCompared& n : b.gate.not_compared) {
      h += "<li>" + std::string(n.error ? badge("ERROR", "v-ERROR") + " " : "") + esc(n.model + " / " + n.variant + " / " + n.target) +
           ": " + esc(n.reason) + "</li>\n";
    }
    h += "</ul>\n";
  }
  h += "</section>\n";
}

void environment_section(std::string& h, const ReportData& d) {
  h += "<section id=\"environment\"><h2>Environment</h2>\n";
  if (d.environment) {
    const Environment& e = *d.environment;
    auto row = [&](const char* k, const std::string& v) {
      h += std::string("<dt>") + k + "</dt><dd>" + (v.empty() ? "<span class=\"empty\">unknown</span>" : esc(v)) + "</dd>\n";
    };
    h += "<dl class=\"env\">\n";
    row("CPU", e.cpu_model);
    row("ISA", e.isa);
    row("cores", e.cores > 0 ? strf("%d", e.cores) : "");
    row("governor", e.governor);
    row("load average (1 min)", strf("%.2f", e.load_avg_1m));
    row("compiler", e.compiler);
    row("xnn-lab version", e.xnn_version);
    row("git commit", e.git_commit);
    row("OS", e.os);
    row("host", e.hostname);
    h += "</dl>\n";
  } else {
    h += "<p class=\"empty\">No environment was recorded for this run.</p>\n";
  }
  h += "<h3>Command</h3><pre class=\"command\">" + (d.run.command.empty() ? "-" : esc(d.run.command)) + "</pre>\n";
  h += "<h3>Config</h3><p class=\"meta\">" + esc(d.run.config_path) +
       (d.run.config_hash.empty() ? "" : " &middot; sha256 <code>" + esc(d.run.config_hash.substr(0, 16)) + "</code>") + "</p>\n";
  h += "<pre class=\"config\">" + (d.run.config_text.empty() ? "-" : esc(d.run.config_text)) + "</pre>\n";
  h += "</section>\n";
}

}  // namespace

std::string render_html(const ReportData& d) {
  std::string h;
  h.reserve(64 * 1024);
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  h += "<meta name=\"generator\" content=\"xnn-lab " + esc(d.xnn_version) + "\">\n";
  h += "<title>xnn-lab report: " + esc(d.run.experiment) + " " + esc(d.run.id) + "</title>\n";
  h += "<style>" + std::string(kCss) + "</style>\n</head>\n<body>\n<header>\n";
  h += "<h1>xnn-lab report: " + esc(d.run.experiment) + "</h1>\n";
  h += "<p class=\"meta\">" + run_meta(d.run, d.run_orphaned) + "</p>\n";
  h += "<p class=\"meta\">database <code>" + esc(d.db) + "</code> &middot; " + strf("%zu", d.jobs.size()) + " jobs</p>\n";
  h += "<nav><a href=\"#summary\">Summary</a><a href=\"#pareto\">Accuracy vs latency</a><a href=\"#size\">Size</a>"
       "<a href=\"#ops\">Per-op latency</a>";
  if (d.has_training()) h += "<a href=\"#training\">Training</a>";
  if (d.baseline) h += "<a href=\"#baseline\">Baseline</a>";
  h += "<a href=\"#environment\">Environment</a></nav>\n</header>\n<main>\n";
  summary_section(h, d);
  pareto_section(h, d);
  size_section(h, d);
  ops_section(h, d);
  training_section(h, d);
  baseline_section(h, d);
  environment_section(h, d);
  h += "</main>\n<footer>Generated by xnn-lab " + esc(d.xnn_version) + " at " + esc(d.generated_at) +
       " (<code>xnn-lab report</code>). Self-contained: no network access is needed to view it.</footer>\n";
  h += "<script>" + std::string(kScript) + "</script>\n</body>\n</html>\n";
  return h;
}

}  // namespace xnn::reports
