// xnn-lab run CONFIG [overrides...] [--db FILE] [--force] [--dry-run] [--tag NAME]
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "harness/cli/commands.h"
#include "harness/cli/registries.h"
#include "harness/cli/result_table.h"
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
    std::fprintf(stderr, "experiment %s -> %s\n", cfg.name.c_str(), cfg.store.c_str());
    const RunOutcome out = run_experiment(cfg, store, step_registry(), target_registry(), opt);
    std::printf("\nrun %s (%s): %d executed, %d recorded earlier, %d failed\n\n", out.run_id.c_str(), out.status.c_str(),
                out.executed, out.reused, out.failed);
    std::printf("%s", format_result_table(rows_of_run(store, out.run_id)).c_str());
    std::printf("\nresults: %s  (xnn-lab show %s --db %s)\n", cfg.store.c_str(), out.run_id.c_str(), cfg.store.c_str());
    if (out.status == run_status::kKilled) {
      std::fprintf(stderr, "interrupted: run the same command again to resume\n");
      exit_code = 130;
    } else {
      exit_code = out.failed ? 1 : 0;
    }
  });
}

}  // namespace xnn::cli
