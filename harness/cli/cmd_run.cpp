// xnn-lab run CONFIG [overrides...] [--db FILE] [--force] [--dry-run] [--tag NAME]
//   [--metrics-listen ADDR] [--push-gateway URL [--push-instance NAME]] [--textfile DIR [--textfile-each-job]]
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "harness/cli/commands.h"
#include "harness/cli/registries.h"
#include "harness/cli/result_table.h"
#include "harness/cli/run_metrics.h"
#include "harness/metrics/http_exporter.h"
#include "harness/metrics/push_gateway.h"
#include "harness/runner/runner.h"

namespace xnn::cli {

void add_run_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("run", "Run an experiment config: models x variants x targets, recorded in SQLite");
  static std::string config_path, db, tag;
  static std::vector<std::string> overrides;
  static bool force = false, dry_run = false;
  cmd->add_option("config", config_path, "Experiment YAML")->required()->check(CLI::ExistingFile);
  cmd->add_option("overrides", overrides, "Overrides KEY.PATH=VALUE, e.g. targets.0.threads=1 metrics.latency.runs=50");
  cmd->add_option("--db", db, "SQLite database (default: the config's store, or xnn-lab.db beside the config)");
  cmd->add_option("--tag", tag, "Tag the run (select it later with tag:NAME)");
  cmd->add_flag("--force", force, "Re-run jobs that are already recorded");
  cmd->add_flag("--dry-run", dry_run, "Print the job matrix and exit");
  static std::string metrics_listen, push_gateway, push_instance, textfile_dir;
  static bool textfile_each_job = false;
  cmd->add_option("--metrics-listen", metrics_listen, "Serve live Prometheus metrics of the run at http://ADDR/metrics (HOST:PORT)");
  auto* push_opt = cmd->add_option("--push-gateway", push_gateway,
                                    "Push-add the run's metrics to this Prometheus Pushgateway at the end (http://HOST:PORT)");
  cmd->add_option("--push-instance", push_instance, "Pushgateway instance label (default: this host's name)")->needs(push_opt);
  auto* textfile_opt = cmd->add_option("--textfile", textfile_dir,
                                       "Write DIR/xnn_lab.prom for node_exporter's textfile collector at the end (atomically)")
                           ->check(CLI::ExistingDirectory);
  cmd->add_flag("--textfile-each-job", textfile_each_job, "With --textfile: also write it after each job")->needs(textfile_opt);
  cmd->callback([&exit_code] {
    config::ExperimentConfig cfg = config::load_experiment_config(config_path, overrides, config_parse_options());
    if (!db.empty()) cfg.store = std::filesystem::absolute(db).string();
    if (dry_run) {
      const auto plans = plan_jobs(cfg, step_registry());
      const bool have_db = std::filesystem::exists(cfg.store);
      std::unique_ptr<Store> store;
      if (have_db) store = std::make_unique<Store>(cfg.store, StoreOptions{false});
      std::printf("experiment %s: %zu jobs (%zu models x %zu variants x %zu targets); store %s\n", cfg.name.c_str(),
                  plans.size(), cfg.models.size(), cfg.variants.size(), cfg.targets.size(), cfg.store.c_str());
      for (const JobPlan& p : plans) {
        std::string steps;
        for (const auto& s : p.variant.steps) steps += (steps.empty() ? "" : " -> ") + s.type;
        const bool done = store && store->is_job_done(p.id);
        std::printf("  %s  %-20s %-12s %-10s %-9s steps: %s\n", p.id.c_str(), p.model.name.c_str(), p.variant.name.c_str(),
                    p.target.name.c_str(), done ? (force ? "re-run" : "recorded") : "pending",
                    steps.empty() ? "(none)" : steps.c_str());
      }
      exit_code = 0;
      return;
    }
    Store store(cfg.store);
    std::ifstream f(config_path);
    RunnerOptions opt;
    opt.force = force;
    opt.tag = tag;
    opt.git_commit = build_commit();
    opt.config_text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    opt.command_line = "xnn-lab run " + config_path;
    for (const auto& o : overrides) opt.command_line += " " + o;
    opt.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    // Prometheus (run_metrics.h): the exporter binds before any job runs, so a bad address fails fast.
    const bool want_metrics = !metrics_listen.empty() || !push_gateway.empty() || !textfile_dir.empty();
    auto run_metrics = want_metrics ? std::make_shared<RunMetrics>(store, textfile_dir, textfile_each_job) : nullptr;
    if (!push_gateway.empty()) metrics::Gateway check_url(push_gateway, kPushJobName);  // a bad URL fails now
    std::unique_ptr<metrics::Exposer> exposer;
    if (!metrics_listen.empty()) {
      exposer = std::make_unique<metrics::Exposer>(metrics_listen);
      exposer->RegisterCollectable(run_metrics);
      std::fprintf(stderr, "live metrics at %s\n", exposer->Url().c_str());
    }
    opt.observer = run_metrics.get();
    std::fprintf(stderr, "experiment %s -> %s\n", cfg.name.c_str(), cfg.store.c_str());
    const RunOutcome out = run_experiment(cfg, store, step_registry(), target_registry(), opt);
    bool exported = true;
    if (run_metrics && !textfile_dir.empty()) exported = run_metrics->write_textfile() && exported;
    if (run_metrics && !push_gateway.empty())
      exported = run_metrics->push(push_gateway, push_instance.empty() ? local_hostname() : push_instance) && exported;
    if (exposer) exposer->Stop();
    std::printf("\nrun %s (%s): %d executed, %d recorded earlier, %d failed\n\n", out.run_id.c_str(), out.status.c_str(),
                out.executed, out.reused, out.failed);
    std::printf("%s", format_result_table(rows_of_run(store, out.run_id)).c_str());
    std::printf("\nresults: %s  (xnn-lab show %s --db %s)\n", cfg.store.c_str(), out.run_id.c_str(), cfg.store.c_str());
    if (out.status == run_status::kKilled) {
      std::fprintf(stderr, "interrupted: run the same command again to resume\n");
      exit_code = 130;
    } else {
      exit_code = out.failed || !exported ? 1 : 0;
    }
  });
}

}  // namespace xnn::cli
