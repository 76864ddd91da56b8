// xnn-lab gate --baseline SEL --candidate SEL [--policy FILE] [--db FILE] [--markdown | --json] [--junit FILE]
// CI performance gating (harness/gate/gate.h; recipe in configs/ci/README.md).
// Exit codes: 0 no regression (UNCERTAIN does not fail), 1 a regression, 2 a usage or data error.
#include <cmath>
#include <cstdio>
#include <fstream>

#include "engine/core/error.h"
#include "harness/cli/commands.h"
#include "harness/gate/gate.h"
#include "harness/util/json.h"

namespace xnn::cli {
namespace {

using gate::Comparison;
using gate::GateReport;
using gate::NotCompared;
using gate::Verdict;

template <typename... Args>
std::string fmt(const char* f, Args... args) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), f, args...);
  return buf;
}

std::string value_text(double v, const std::string& unit) {
  if (std::isnan(v)) return "-";
  if (unit == "ms") return fmt("%.4g ms", v);
  if (unit == "bytes") return fmt("%.0f B", v);
  if (unit == "%") return fmt("%.2f %%", v);
  return fmt("%.6g %s", v, unit.c_str());
}

// Accuracy changes in points, everything else relative.
std::string change_text(const Comparison& c) {
  if (c.unit == "%") return std::isnan(c.change_abs) ? "-" : fmt("%+.2f pt", c.change_abs);
  if (std::isnan(c.change_rel)) return "-";
  if (std::isinf(c.change_rel)) return c.change_rel > 0 ? "+inf" : "-inf";
  return fmt("%+.2f%%", c.change_rel * 100);
}

std::string p_text(const Comparison& c) {
  if (!c.sampled || std::isnan(c.p_value)) return "-";
  return c.p_value >= 1e-4 ? fmt("%.4f", c.p_value) : fmt("%.1e", c.p_value);
}

std::string job_name(const std::string& model, const std::string& variant, const std::string& target) {
  return model + " / " + (variant.empty() ? "-" : variant) + " / " + target;
}

std::string run_line(const gate::RunSide& s) {
  const RunRecord& r = s.run;
  std::string out = r.id + " (" + r.experiment + ", " + r.status;
  if (!r.git_commit.empty()) out += ", commit " + r.git_commit.substr(0, 12);
  if (r.tag) out += ", tag " + *r.tag;
  return out + ") in " + s.db;
}

std::string overall(const GateReport& rep) {
  const int code = rep.exit_code();
  if (code == 2) return "ERROR";
  return code == 1 ? "FAIL" : "PASS";
}

std::string counts_text(const GateReport& rep) {
  return fmt("%zu compared: %zu PASS, %zu REGRESSION, %zu IMPROVEMENT, %zu UNCERTAIN", rep.comparisons.size(),
             rep.count(Verdict::kPass), rep.count(Verdict::kRegression), rep.count(Verdict::kImprovement),
             rep.count(Verdict::kUncertain));
}

std::string policy_line(const gate::Policy& p) {
  return fmt("%s (alpha %g, min_samples %d, max_cv %g)", p.source.c_str(), p.alpha, p.min_samples, p.max_cv);
}

std::vector<std::vector<std::string>> table_cells(const GateReport& rep) {
  std::vector<std::vector<std::string>> cells;
  cells.push_back({"model", "variant", "target", "metric", "baseline", "candidate", "change", "p-value", "verdict"});
  for (const Comparison& c : rep.comparisons) {
    cells.push_back({c.model, c.variant, c.target, c.metric, value_text(c.baseline, c.unit), value_text(c.candidate, c.unit),
                     change_text(c), p_text(c), gate::verdict_name(c.verdict)});
  }
  return cells;
}

std::string format_text(const GateReport& rep, const gate::RunSide& base, const gate::RunSide& cand,
                        const gate::Policy& policy) {
  std::string out = "baseline   " + run_line(base) + "\ncandidate  " + run_line(cand) + "\npolicy     " + policy_line(policy) +
                    "\n\n";
  const auto cells = table_cells(rep);
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& row : cells) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (size_t r = 0; r < cells.size() && !rep.comparisons.empty(); ++r) {
    std::string line;
    for (size_t i = 0; i < cells[r].size(); ++i) {
      const std::string& c = cells[r][i];
      const std::string pad(width[i] - c.size(), ' ');
      const bool right = i >= 4 && i <= 7;  // numbers
      line += (i ? "  " : "") + (right ? pad + c : c + pad);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    if (r == 0) {
      size_t total = 0;
      for (size_t w : width) total += w + 2;
      out += std::string(total - 2, '-') + "\n";
    }
  }
  auto section = [&](Verdict v, const char* title) {
    if (rep.count(v) == 0) return;
    out += std::string("\n") + title + "\n";
    for (const Comparison& c : rep.comparisons) {
      if (c.verdict != v) continue;
      out += "  " + job_name(c.model, c.variant, c.target) + "  " + c.metric + ": " + c.reason + "\n";
      if (!c.hint.empty()) out += "    -> " + c.hint + "\n";
    }
  };
  section(Verdict::kRegression, "REGRESSION:");
  section(Verdict::kUncertain, "UNCERTAIN (does not fail the gate; measure again to decide):");
  section(Verdict::kImprovement, "IMPROVEMENT:");
  if (!rep.not_compared.empty()) {
    out += "\nnot compared:\n";
    for (const NotCompared& n : rep.not_compared)
      out += std::string(n.error ? "  ERROR " : "  ") + job_name(n.model, n.variant, n.target) + ": " + n.reason + "\n";
  }
  out += "\ngate: " + overall(rep) + " - " + counts_text(rep);
  if (rep.errors()) out += fmt(", %zu data error(s)", rep.errors());
  return out + "\n";
}

std::string md_cell(std::string s) {
  std::string out;
  for (char ch : s) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return out.empty() ? "-" : out;
}

std::string format_markdown(const GateReport& rep, const gate::RunSide& base, const gate::RunSide& cand,
                            const gate::Policy& policy) {
  std::string out = "## xnn-lab performance gate: " + overall(rep);
  const size_t regressions = rep.count(Verdict::kRegression), uncertain = rep.count(Verdict::kUncertain);
  if (regressions) out += fmt(" (%zu regression%s)", regressions, regressions > 1 ? "s" : "");
  out += "\n\n";
  out += "- baseline: `" + base.run.id + "` (" + base.run.experiment + (base.run.git_commit.empty() ? "" : ", commit `" + base.run.git_commit.substr(0, 12) + "`") + ")\n";
  out += "- candidate: `" + cand.run.id + "` (" + cand.run.experiment + (cand.run.git_commit.empty() ? "" : ", commit `" + cand.run.git_commit.substr(0, 12) + "`") + ")\n";
  out += "- policy: " + md_cell(policy_line(policy)) + "\n\n";
  if (uncertain) {
    out += fmt("> **%zu UNCERTAIN** (does not fail the gate; measure again to decide):\n", uncertain);
    for (const Comparison& c : rep.comparisons) {
      if (c.verdict != Verdict::kUncertain) continue;
      out += "> - `" + job_name(c.model, c.variant, c.target) + "` " + c.metric + ": " + c.reason + (c.hint.empty() ? "" : "; " + c.hint) + "\n";
    }
    out += "\n";
  }
  out += "| model | variant | target | metric | baseline | candidate | change | p-value | verdict |\n";
  out += "|---|---|---|---|---:|---:|---:|---:|---|\n";
  for (const Comparison& c : rep.comparisons) {
    std::string verdict = gate::verdict_name(c.verdict);
    if (c.verdict != Verdict::kPass) verdict = "**" + verdict + "**";
    out += "| " + md_cell(c.model) + " | " + md_cell(c.variant) + " | " + md_cell(c.target) + " | " + c.metric + " | " +
           value_text(c.baseline, c.unit) + " | " + value_text(c.candidate, c.unit) + " | " + change_text(c) + " | " + p_text(c) +
           " | " + verdict + " |\n";
  }
  if (regressions) {
    out += "\n**Regressions**\n\n";
    for (const Comparison& c : rep.comparisons) {
      if (c.verdict == Verdict::kRegression) out += "- `" + job_name(c.model, c.variant, c.target) + "` " + c.metric + ": " + c.reason + "\n";
    }
  }
  if (!rep.not_compared.empty()) {
    out += "\n**Not compared**\n\n";
    for (const NotCompared& n : rep.not_compared)
      out += std::string("- ") + (n.error ? "**error** " : "") + "`" + job_name(n.model, n.variant, n.target) + "`: " + n.reason + "\n";
  }
  out += "\n" + counts_text(rep) + "\n";
  return out;
}

void write_side_json(json::Writer& w, const gate::RunSide& s) {
  w.begin_object().field("db", s.db).field("run_id", s.run.id).field("experiment", s.run.experiment);
  w.field("status", s.run.status).field("git_commit", s.run.git_commit).field("tag", s.run.tag.value_or(""));
  w.field("started_at", s.run.started_at).end_object();
}

std::string format_json(const GateReport& rep, const gate::RunSide& base, const gate::RunSide& cand, const gate::Policy& policy) {
  json::Writer w;
  w.begin_object().field("result", overall(rep)).field("exit_code", rep.exit_code());
  w.key("baseline");
  write_side_json(w, base);
  w.key("candidate");
  write_side_json(w, cand);
  w.key("policy").begin_object().field("source", policy.source).field("alpha", policy.alpha);
  w.field("min_samples", policy.min_samples).field("max_cv", policy.max_cv).end_object();
  w.key("counts").begin_object();
  for (Verdict v : {Verdict::kPass, Verdict::kRegression, Verdict::kImprovement, Verdict::kUncertain})
    w.field(gate::verdict_name(v), rep.count(v));
  w.end_object();
  w.key("comparisons").begin_array();
  for (const Comparison& c : rep.comparisons) {
    w.begin_object().field("model", c.model).field("variant", c.variant).field("target", c.target).field("metric", c.metric);
    w.field("unit", c.unit).field("baseline", c.baseline).field("candidate", c.candidate);
    w.field("change_rel", c.change_rel).field("change_abs", c.change_abs);
    w.field("sampled", c.sampled).field("p_value", c.p_value).field("exact", c.exact);
    w.field("n_baseline", c.n_baseline).field("n_candidate", c.n_candidate);
    w.field("cv_baseline", c.cv_baseline).field("cv_candidate", c.cv_candidate);
    w.key("rule").begin_object().field("regression", c.rule.regression).field("improvement", c.rule.improvement);
    w.field("absolute", c.rule.absolute).field("higher_is_better", c.higher_is_better).end_object();
    w.field("verdict", gate::verdict_name(c.verdict)).field("reason", c.reason).field("hint", c.hint).end_object();
  }
  w.end_array().key("not_compared").begin_array();
  for (const NotCompared& n : rep.not_compared) {
    w.begin_object().field("model", n.model).field("variant", n.variant).field("target", n.target);
    w.field("reason", n.reason).field("error", n.error).end_object();
  }
  w.end_array().end_object();
  return w.str() + "\n";
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (unsigned char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += "&#10;"; break;
      default:
        if (ch < 0x20 && ch != '\t') out += ' ';  // not allowed in XML 1.0
        else out += static_cast<char>(ch);
    }
  }
  return out;
}

// One testcase per comparison: REGRESSION = failure, UNCERTAIN = skipped, data errors = error.
std::string format_junit(const GateReport& rep, const gate::RunSide& base, const gate::RunSide& cand) {
  const size_t errors = rep.errors();
  const size_t tests = rep.comparisons.size() + errors;
  const size_t failures = rep.count(Verdict::kRegression), skipped = rep.count(Verdict::kUncertain);
  std::string counts = fmt("tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\"", tests, failures, errors, skipped);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"xnn-lab gate\" " + counts + ">\n";
  out += "  <testsuite name=\"xnn-lab gate\" " + counts + " time=\"0\">\n";
  out += "    <properties>\n";
  out += "      <property name=\"baseline\" value=\"" + xml_escape(run_line(base)) + "\"/>\n";
  out += "      <property name=\"candidate\" value=\"" + xml_escape(run_line(cand)) + "\"/>\n";
  out += "    </properties>\n";
  auto classname = [](const std::string& model, const std::string& variant, const std::string& target) {
    return xml_escape(model + (variant.empty() ? "" : "." + variant) + "." + target);
  };
  for (const Comparison& c : rep.comparisons) {
    const std::string summary = value_text(c.baseline, c.unit) + " -> " + value_text(c.candidate, c.unit) + " (" +
                                change_text(c) + (c.sampled ? ", p " + p_text(c) : "") + ")";
    out += "    <testcase classname=\"" + classname(c.model, c.variant, c.target) + "\" name=\"" + xml_escape(c.metric) +
           "\" time=\"0\">";
    if (c.verdict == Verdict::kRegression) {
      out += "\n      <failure type=\"REGRESSION\" message=\"" + xml_escape("REGRESSION: " + c.reason) + "\">" +
             xml_escape(summary) + "</failure>\n    ";
    } else if (c.verdict == Verdict::kUncertain) {
      out += "\n      <skipped message=\"" + xml_escape("UNCERTAIN: " + c.reason + (c.hint.empty() ? "" : "; " + c.hint)) +
             "\"/>\n    ";
    } else {
      out += "\n      <system-out>" + xml_escape(std::string(gate::verdict_name(c.verdict)) + ": " + summary) +
             "</system-out>\n    ";
    }
    out += "</testcase>\n";
  }
  for (const NotCompared& n : rep.not_compared) {
    if (!n.error) continue;
    out += "    <testcase classname=\"" + classname(n.model, n.variant, n.target) + "\" name=\"job\" time=\"0\">\n";
    out += "      <error type=\"DATA\" message=\"" + xml_escape(n.reason) + "\"/>\n    </testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace

void add_gate_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "gate", "CI performance gate: compare a candidate run with a baseline (exit 0 pass, 1 regression, 2 error)");
  static std::string base_sel, cand_sel, policy_path, db = "xnn-lab.db", junit_path;
  static bool markdown = false, as_json = false;
  const std::string sel_help = "run id (or unique prefix), commit:SHA, tag:NAME, or FILE.db:RUN for a run in another database";
  cmd->add_option("--baseline", base_sel, "Baseline run: " + sel_help)->required();
  cmd->add_option("--candidate", cand_sel, "Candidate run: " + sel_help)->required();
  cmd->add_option("--policy", policy_path, "YAML policy: alpha, min_samples, max_cv, per-metric and per-model thresholds");
  cmd->add_option("--db", db, "SQLite database for selectors without FILE.db: (default ./xnn-lab.db)");
  auto* md = cmd->add_flag("--markdown", markdown, "Print a Markdown report (for PR comments, $GITHUB_STEP_SUMMARY)");
  auto* js = cmd->add_flag("--json", as_json, "Print JSON");
  md->excludes(js);
  cmd->add_option("--junit", junit_path, "Also write a JUnit XML report here (REGRESSION = failure, UNCERTAIN = skipped)");
  cmd->footer(
      "Latency (raw samples): REGRESSION/IMPROVEMENT need a two-sided Mann-Whitney p < alpha AND a median change past the\n"
      "threshold (default 5%). Size (default 1%) and accuracy top1/top5 (default 0.3 points): the change alone.\n"
      "UNCERTAIN (too few samples, or CV above max_cv) does not fail the gate. Recipe: configs/ci/README.md.");
  cmd->callback([&exit_code] {
    try {
      const gate::Policy policy = policy_path.empty() ? gate::default_policy() : gate::load_policy(policy_path);
      gate::RunSide base = gate::resolve_run_side(base_sel, db);
      gate::RunSide cand = gate::resolve_run_side(cand_sel, db);
      if (base.db == cand.db && base.run.id == cand.run.id) {
        throw Error("--baseline and --candidate are the same run (" + base.run.id + ")");
      }
      const auto base_jobs = gate::load_jobs(*base.store, base.db, base.run.id);
      const auto cand_jobs = gate::load_jobs(*cand.store, cand.db, cand.run.id);
      const GateReport rep = gate::gate_runs(base_jobs, cand_jobs, policy);
      if (rep.comparisons.empty() && rep.errors() == 0) {
        bool common = false;
        for (const NotCompared& n : rep.not_compared) common = common || n.reason.rfind("only in", 0) != 0;
        throw Error(std::string(common ? "no metric to compare" : "no common jobs") + " between run " + base.run.id + " (" +
                    base.run.experiment + ") and run " + cand.run.id + " (" + cand.run.experiment +
                    "): jobs are matched by model, variant and target");
      }
      if (!junit_path.empty()) {
        std::ofstream f(junit_path);
        if (!f) throw Error(junit_path + ": cannot write the JUnit report");
        f << format_junit(rep, base, cand);
        if (!f) throw Error(junit_path + ": cannot write the JUnit report");
      }
      const std::string text = as_json    ? format_json(rep, base, cand, policy)
                               : markdown ? format_markdown(rep, base, cand, policy)
                                          : format_text(rep, base, cand, policy);
      std::fwrite(text.data(), 1, text.size(), stdout);
      exit_code = rep.exit_code();
    } catch (const std::exception& e) {
      std::fflush(stdout);
      std::fprintf(stderr, "error: %s\n", e.what());
      exit_code = 2;  // usage or data error: unknown run, bad policy, unreadable database
    }
  });
}

}  // namespace xnn::cli
