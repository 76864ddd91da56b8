// Read-only views of the results store: list, show, compare, export.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "harness/cli/commands.h"
#include "harness/cli/result_table.h"
#include "harness/runner/runner.h"
#include "harness/util/json.h"

namespace xnn::cli {
namespace {

std::unique_ptr<Store> open_existing(const std::string& db) {
  if (!std::filesystem::exists(db)) {
    throw Error(db + ": no results database here (run an experiment first, or pass --db FILE)");
  }
  return std::make_unique<Store>(db, StoreOptions{false});
}

RunRecord require_run(Store& store, const std::string& sel) {
  auto run = store.resolve_run_selector(sel);
  if (!run) throw Error("no run matches '" + sel + "' in " + store.path() + " (try: xnn-lab list runs)");
  return *run;
}

void write_run_json(json::Writer& w, const RunRecord& r) {
  w.begin_object().field("id", r.id).field("experiment", r.experiment).field("status", r.status);
  w.field("started_at", r.started_at).field("finished_at", r.finished_at).field("git_commit", r.git_commit);
  w.field("tag", r.tag.value_or("")).field("config_hash", r.config_hash).field("config_path", r.config_path);
  w.field("orphaned", Store::is_run_orphaned(r)).end_object();
}

void write_metrics_json(json::Writer& w, const std::vector<MetricValue>& ms) {
  w.begin_object();
  for (const MetricValue& m : ms) w.field(m.name, m.value);
  w.end_object();
}

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

void add_list_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("list", "List experiments or runs in a results database");
  static std::string what = "runs", db = "xnn-lab.db", experiment;
  static bool as_json = false;
  cmd->add_option("what", what, "experiments or runs (default)")->check(CLI::IsMember({"experiments", "runs"}));
  cmd->add_option("--db", db, "SQLite database (default ./xnn-lab.db)");
  cmd->add_option("--experiment", experiment, "Only runs of this experiment");
  cmd->add_flag("--json", as_json, "Print JSON");
  cmd->callback([&exit_code] {
    auto store = open_existing(db);
    json::Writer w;
    if (what == "experiments") {
      const auto exps = store->list_experiments();
      if (as_json) {
        w.begin_array();
        for (const auto& e : exps) {
          w.begin_object().field("id", e.id).field("name", e.name).field("config_path", e.config_path);
          w.field("created_at", e.created_at).end_object();
        }
        w.end_array();
        std::printf("%s\n", w.str().c_str());
      } else {
        for (const auto& e : exps) std::printf("%-24s %s  %s\n", e.name.c_str(), e.created_at.c_str(), e.config_path.c_str());
      }
    } else {
      const auto runs = store->list_runs(experiment.empty() ? std::nullopt : std::optional<std::string>(experiment));
      if (as_json) {
        w.begin_array();
        for (const auto& r : runs) write_run_json(w, r);
        w.end_array();
        std::printf("%s\n", w.str().c_str());
      } else {
        for (const auto& r : runs) {
          const std::string status = Store::is_run_orphaned(r) ? "INTERRUPTED" : r.status;
          std::printf("%-24s %-20s %-11s %s%s\n", r.id.c_str(), r.experiment.c_str(), status.c_str(), r.started_at.c_str(),
                      r.tag ? ("  tag:" + *r.tag).c_str() : "");
        }
      }
    }
    exit_code = 0;
  });
}

void add_show_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("show", "Show one run: environment and every job's results");
  static std::string sel, db = "xnn-lab.db";
  static bool as_json = false;
  cmd->add_option("run", sel, "Run id (or unique prefix), latest, commit:SHA or tag:NAME")->required();
  cmd->add_option("--db", db, "SQLite database (default ./xnn-lab.db)");
  cmd->add_flag("--json", as_json, "Print JSON");
  cmd->callback([&exit_code] {
    auto store = open_existing(db);
    const RunRecord run = require_run(*store, sel);
    const auto rows = rows_of_run(*store, run.id);
    const auto env = store->get_environment(run.environment_id);
    if (as_json) {
      json::Writer w;
      w.begin_object().key("run");
      write_run_json(w, run);
      if (env) {
        w.key("environment").begin_object().field("cpu_model", env->cpu_model).field("isa", env->isa);
        w.field("cores", env->cores).field("governor", env->governor).field("load_avg_1m", env->load_avg_1m);
        w.field("compiler", env->compiler).field("xnn_version", env->xnn_version).field("git_commit", env->git_commit);
        w.field("os", env->os).end_object();
      }
      w.key("jobs").begin_array();
      for (const auto& r : rows) {
        w.begin_object().field("id", r.job_id).field("model", r.model).field("variant", r.variant).field("target", r.target);
        w.field("status", r.status).field("reused", r.reused).field("error", r.error).key("metrics");
        write_metrics_json(w, r.metrics);
        w.end_object();
      }
      w.end_array().end_object();
      std::printf("%s\n", w.str().c_str());
    } else {
      std::printf("run %s  experiment %s  status %s%s\n", run.id.c_str(), run.experiment.c_str(), run.status.c_str(),
                  Store::is_run_orphaned(run) ? " (process gone: interrupted)" : "");
      std::printf("started %s  finished %s  commit %s  config %s\n", run.started_at.c_str(),
                  run.finished_at.empty() ? "-" : run.finished_at.c_str(), run.git_commit.empty() ? "-" : run.git_commit.c_str(),
                  run.config_hash.substr(0, 12).c_str());
      if (env) {
        std::printf("machine %s, %d cores, %s; governor %s; load %.2f; %s\n", env->cpu_model.c_str(), env->cores, env->isa.c_str(),
                    env->governor.empty() ? "n/a" : env->governor.c_str(), env->load_avg_1m, env->compiler.c_str());
      }
      std::printf("\n%s", format_result_table(rows).c_str());
    }
    exit_code = 0;
  });
}

void add_compare_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("compare", "Compare two runs side by side (B / A ratios)");
  static std::string a_sel, b_sel, db = "xnn-lab.db";
  cmd->add_option("run_a", a_sel, "Baseline run (id, latest, commit:SHA, tag:NAME)")->required();
  cmd->add_option("run_b", b_sel, "Candidate run")->required();
  cmd->add_option("--db", db, "SQLite database (default ./xnn-lab.db)");
  cmd->callback([&exit_code] {
    auto store = open_existing(db);
    const RunRecord a = require_run(*store, a_sel), b = require_run(*store, b_sel);
    auto key = [](const ResultRow& r) { return r.model + " / " + r.variant + " / " + r.target; };
    std::map<std::string, ResultRow> ra, rb;
    for (auto& r : rows_of_run(*store, a.id)) ra[key(r)] = r;
    for (auto& r : rows_of_run(*store, b.id)) rb[key(r)] = r;
    static const std::pair<const char*, const char*> metrics[] = {
        {"latency_ms_median", "ms"}, {"latency_ms_p90", "ms"}, {"size_bytes", "bytes"}, {"parameters", "count"},
        {"macs", "count"},           {"top1", "ratio"},        {"peak_rss_bytes", "bytes"}};
    std::printf("A = %s (%s)\nB = %s (%s)\n\n", a.id.c_str(), a.experiment.c_str(), b.id.c_str(), b.experiment.c_str());
    std::printf("%-44s %-20s %14s %14s %9s\n", "job", "metric", "A", "B", "B/A");
    std::set<std::string> keys;
    for (auto& [k, v] : ra) keys.insert(k);
    for (auto& [k, v] : rb) keys.insert(k);
    for (const std::string& k : keys) {
      if (!ra.count(k) || !rb.count(k)) {
        std::printf("%-44s only in %s\n", k.c_str(), ra.count(k) ? "A" : "B");
        continue;
      }
      for (const auto& [name, unit] : metrics) {
        const double va = metric_value(ra[k].metrics, name), vb = metric_value(rb[k].metrics, name);
        if (std::isnan(va) && std::isnan(vb)) continue;
        char ratio[32] = "-";
        if (!std::isnan(va) && !std::isnan(vb) && va != 0) std::snprintf(ratio, sizeof(ratio), "%.3f", vb / va);
        std::printf("%-44s %-20s %14s %14s %9s\n", k.c_str(), name, format_metric(va, unit).c_str(),
                    format_metric(vb, unit).c_str(), ratio);
      }
    }
    exit_code = 0;
  });
}

void add_export_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("export", "Export results (one row per job and metric) as CSV or JSON");
  static std::string sel, format, db = "xnn-lab.db", out_path;
  cmd->add_option("--run", sel, "Only this run (id, latest, commit:SHA, tag:NAME); default: every run");
  cmd->add_option("--format", format, "csv or json")->required()->check(CLI::IsMember({"csv", "json"}));
  cmd->add_option("--db", db, "SQLite database (default ./xnn-lab.db)");
  cmd->add_option("-o,--output", out_path, "Write to this file instead of standard output");
  cmd->callback([&exit_code] {
    auto store = open_existing(db);
    std::vector<RunRecord> runs;
    if (sel.empty()) runs = store->list_runs();
    else runs.push_back(require_run(*store, sel));
    std::string text;
    if (format == "csv") {
      text = "run_id,experiment,job_id,model,variant,target,status,metric,value,unit\n";
      for (const RunRecord& r : runs) {
        for (const ResultRow& row : rows_of_run(*store, r.id)) {
          const std::string prefix = csv_escape(r.id) + "," + csv_escape(r.experiment) + "," + row.job_id + "," +
                                     csv_escape(row.model) + "," + csv_escape(row.variant) + "," + csv_escape(row.target) +
                                     "," + row.status + ",";
          for (const MetricValue& m : row.metrics) text += prefix + csv_escape(m.name) + "," + json::number(m.value) + "," + m.unit + "\n";
        }
      }
    } else {
      json::Writer w;
      w.begin_array();
      for (const RunRecord& r : runs) {
        for (const ResultRow& row : rows_of_run(*store, r.id)) {
          w.begin_object().field("run_id", r.id).field("experiment", r.experiment).field("job_id", row.job_id);
          w.field("model", row.model).field("variant", row.variant).field("target", row.target).field("status", row.status);
          w.key("metrics");
          write_metrics_json(w, row.metrics);
          w.key("latency_ms_samples").begin_array();
          for (double v : store->samples_of_job(row.job_id, "latency_ms")) w.value(v);
          w.end_array().end_object();
        }
      }
      w.end_array();
      text = w.str() + "\n";
    }
    if (out_path.empty()) {
      std::fwrite(text.data(), 1, text.size(), stdout);
    } else {
      std::ofstream f(out_path);
      if (!f) throw Error(out_path + ": cannot write");
      f << text;
    }
    exit_code = 0;
  });
}

}  // namespace xnn::cli
