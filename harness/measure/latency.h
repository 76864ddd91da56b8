// Latency measurement with an MLPerf-style stopping rule: after `warmup` untimed runs, keep
// timing until BOTH `min_runs` samples and `min_time_s` seconds are reached (or `max_runs`).
// Every raw sample is kept; summaries are derived from them.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace xnn {

struct LatencySpec {
  int warmup = 5;
  int min_runs = 20;
  double min_time_s = 0.5;
  int max_runs = 10000;
};

struct LatencyStats {
  int64_t count = 0;
  double min = 0, median = 0, mean = 0, p90 = 0, p99 = 0, max = 0, stddev = 0;
  double cv = 0;  // coefficient of variation: stddev / mean
};

// Percentile with linear interpolation between closest ranks (numpy's default).
double percentile(std::vector<double> sorted_or_not, double q);
LatencyStats summarize(const std::vector<double>& samples_ms);

// The metrics recorded for a set of latency samples (latency_ms_min/median/mean/p90/p99/stddev,
// latency_cv, latency_runs): one naming for every producer (experiment runs, imported Google
// Benchmark results), so the gate and reports compare like with like.
struct NamedMetric {
  std::string name;
  double value = 0;
  std::string unit;
};
std::vector<NamedMetric> latency_metrics(const LatencyStats& st);

struct LatencyRun {
  double first_run_ms = 0;          // the first (cold) run, part of warm-up
  std::vector<double> samples_ms;   // timed runs, in order
};

// Calls `run_once` warm-up + timed times. `run_once` must do exactly one inference.
LatencyRun measure_latency(const LatencySpec& spec, const std::function<void()>& run_once);

// Peak resident set size of this process in bytes (VmHWM), and a reset of that peak
// (writes "5" to /proc/self/clear_refs; returns false where the kernel does not allow it).
int64_t peak_rss_bytes();
bool reset_peak_rss();

}  // namespace xnn
