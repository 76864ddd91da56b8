// Google Benchmark JSON results (`--benchmark_format=json` or `--benchmark_out=FILE`), read so
// that `xnn-lab import --gbench` can record them as a run and `xnn-lab gate` can gate kernel
// micro-benchmarks like models. Run the benchmark with --benchmark_repetitions=N: every
// repetition ("run_type": "iteration") is one raw sample; aggregate rows (mean, median, stddev,
// cv, ...) are kept as metrics but never used as samples.
//
// Each benchmark becomes one job: model = the name up to the first '/' (the family, e.g.
// "BM_f32_gemm"), variant = the rest ("64/3136/576", "" when there are no arguments).
// The JSON is read with yaml-cpp (JSON is YAML 1.2 flow syntax), so no other parser is needed.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/store/store.h"

namespace xnn::gate {

struct GbenchBenchmark {
  std::string name;     // run_name (the name without an aggregate's suffix)
  std::string model;    // up to the first '/'
  std::string variant;  // after it ("" when none)
  std::string time_unit;  // as written: ns, us, ms or s
  int threads = 1;
  std::vector<double> real_time_ms;  // one per repetition, in repetition order
  std::vector<double> cpu_time_ms;
  std::vector<int64_t> iterations;   // iterations of each repetition
  std::vector<MetricValue> aggregates;  // gbench_<aggregate>_ms (or a ratio for cv), as reported
  std::string error;                 // error_message of a failed benchmark ("" when it ran)
};

struct GbenchResult {
  std::string context_json;  // the "context" object, re-serialised as JSON
  std::string executable, host_name, library_build_type, date;
  int num_cpus = 0;
  double mhz_per_cpu = 0;
  double load_avg_1m = 0;
  std::string caches;  // e.g. "L1 Data 32 KiB x1, L1 Instruction 32 KiB x1, L2 Unified 1024 KiB x1"
  std::vector<GbenchBenchmark> benchmarks;  // in order of first appearance
};

// Parses and validates; errors name `path` (with line:column where known) and the entry.
GbenchResult parse_gbench_json(const std::string& text, const std::string& path);
GbenchResult load_gbench_json(const std::string& path);

// What a job records: samples "latency_ms" (real time per iteration, ms) and "cpu_time_ms";
// metrics latency_ms_{min,median,mean,p90,p99,stddev}, latency_cv, latency_runs (the names
// `xnn-lab run` uses), gbench_iterations and the aggregates. A failed benchmark: FAILED.
JobResult gbench_job_result(const GbenchBenchmark& b);

}  // namespace xnn::gate
