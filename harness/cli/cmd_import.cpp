// xnn-lab import --gbench FILE.json [--db FILE] [--experiment NAME] [--tag T] [--target NAME] [--commit SHA]
// Records a Google Benchmark JSON result as a run (one job per benchmark, every repetition a
// raw sample), so kernel micro-benchmarks are gated like models (harness/gate/gbench.h).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/core/error.h"
#include "engine/core/sha256.h"
#include "harness/cli/commands.h"
#include "harness/gate/gbench.h"
#include "harness/util/json.h"

namespace xnn::cli {

void add_import_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("import", "Record an external benchmark result as a run (Google Benchmark JSON)");
  static std::string gbench_path, db = "xnn-lab.db", experiment, tag, target = "cpu", commit;
  cmd->add_option("--gbench", gbench_path,
                  "Google Benchmark JSON (--benchmark_format=json or --benchmark_out=FILE, with --benchmark_repetitions=N)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--db", db, "SQLite database (default ./xnn-lab.db; created if missing)");
  cmd->add_option("--experiment", experiment, "Experiment name (default: the benchmark executable's file name)");
  cmd->add_option("--tag", tag, "Tag the run (select it later with tag:NAME)");
  cmd->add_option("--target", target, "Target name the jobs run on (default cpu)");
  cmd->add_option("--commit", commit, "Source commit the benchmark was built from (select it later with commit:SHA)");
  cmd->callback([&exit_code] {
    std::ifstream f(gbench_path, std::ios::binary);
    if (!f) throw Error(gbench_path + ": cannot read the Google Benchmark result");
    std::stringstream buf;
    buf << f.rdbuf();
    const std::string text = buf.str();
    const gate::GbenchResult res = gate::parse_gbench_json(text, gbench_path);
    const std::string file_sha = sha256_hex(text);
    const std::string abs_path = std::filesystem::absolute(gbench_path).string();
    std::string exp = experiment;
    if (exp.empty()) exp = std::filesystem::path(res.executable).filename().string();
    if (exp.empty()) exp = std::filesystem::path(gbench_path).stem().string();
    XNN_CHECK(!target.empty(), "--target: expected a non-empty name");

    Store store(std::filesystem::absolute(db).string());
    store.ensure_experiment(exp, abs_path);
    // The machine as Google Benchmark saw it; the full context goes into the run's config_text.
    Environment env;
    if (res.mhz_per_cpu > 0) env.cpu_model = std::to_string(static_cast<int>(res.mhz_per_cpu)) + " MHz CPU (per Google Benchmark)";
    env.hostname = res.host_name;
    env.cores = res.num_cpus;
    env.load_avg_1m = res.load_avg_1m;
    env.git_commit = commit;
    const int64_t env_id = store.ensure_environment(env);
    bool have_target = false;
    for (const TargetRecord& t : store.list_targets()) have_target = have_target || t.name == target;
    if (!have_target) {  // never rewrite the spec of a target `xnn-lab run` registered
      json::Writer spec;
      spec.begin_object().field("source", "google-benchmark").field("num_cpus", res.num_cpus);
      spec.field("mhz_per_cpu", res.mhz_per_cpu).field("caches", res.caches).end_object();
      store.ensure_target(TargetRecord{0, target, "cpu", false, spec.str()});
    }
    RunRecord run;
    run.experiment = exp;
    run.config_path = abs_path;
    run.config_hash = file_sha;
    run.config_text = res.context_json;
    run.git_commit = commit;
    if (!tag.empty()) run.tag = tag;
    run.environment_id = env_id;
    run.command = "xnn-lab import --gbench " + gbench_path;
    const std::string run_id = store.create_run(run);

    int imported = 0, reused = 0, failed = 0;
    std::printf("%-48s %5s %12s %8s  %s\n", "benchmark", "reps", "median ms", "cv", "status");
    for (const gate::GbenchBenchmark& b : res.benchmarks) {
      // Same file, experiment, target and benchmark: the same job (importing again reuses it).
      const std::string job_id = sha256_hex(file_sha + "|" + exp + "|" + target + "|" + b.name).substr(0, 20);
      const JobResult result = gate::gbench_job_result(b);
      std::string status;
      if (store.is_job_done(job_id)) {
        store.link_job_to_run(run_id, job_id, true);
        ++reused;
        status = "recorded earlier";
      } else {
        json::Writer spec;
        spec.begin_object().field("source", "google-benchmark").field("benchmark", b.name).field("file_sha256", file_sha);
        spec.field("time_unit", b.time_unit).field("threads", b.threads).field("repetitions", b.real_time_ms.size());
        spec.field("library_build_type", res.library_build_type).field("date", res.date).end_object();
        JobRecord job;
        job.id = job_id;
        job.run_id = run_id;
        job.experiment = exp;
        job.model = b.model;
        job.variant = b.variant;
        job.target = target;
        job.spec_json = spec.str();
        store.start_job(job);
        store.finish_job(job_id, result);
        if (result.status == job_status::kDone) {
          ++imported;
          status = "imported";
        } else {
          ++failed;
          status = "FAILED: " + result.error;
        }
      }
      double median = NAN, cv = NAN;
      for (const MetricValue& m : result.metrics) {
        if (m.name == "latency_ms_median") median = m.value;
        if (m.name == "latency_cv") cv = m.value;
      }
      std::printf("%-48s %5zu %12.4g %7.2f%%  %s\n", b.name.c_str(), b.real_time_ms.size(), median, cv * 100, status.c_str());
    }
    store.finish_run(run_id, failed ? run_status::kFailed : run_status::kFinished);
    std::printf("\nrun %s (%s): %d imported, %d recorded earlier, %d failed; experiment %s, target %s\n", run_id.c_str(),
                failed ? run_status::kFailed : run_status::kFinished, imported, reused, failed, exp.c_str(), target.c_str());
    std::printf("results: %s  (xnn-lab show %s --db %s)\n", store.path().c_str(), run_id.c_str(), store.path().c_str());
    exit_code = failed ? 1 : 0;
  });
}

}  // namespace xnn::cli
