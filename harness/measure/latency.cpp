#include "harness/measure/latency.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <numeric>
#include <string>

namespace xnn {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

std::vector<NamedMetric> latency_metrics(const LatencyStats& st) {
  return {{"latency_ms_min", st.min, "ms"},    {"latency_ms_median", st.median, "ms"},
          {"latency_ms_mean", st.mean, "ms"},  {"latency_ms_p90", st.p90, "ms"},
          {"latency_ms_p99", st.p99, "ms"},    {"latency_ms_stddev", st.stddev, "ms"},
          {"latency_cv", st.cv, "ratio"},      {"latency_runs", static_cast<double>(st.count), "count"}};
}

LatencyStats summarize(const std::vector<double>& samples) {
  LatencyStats s;
  s.count = static_cast<int64_t>(samples.size());
  if (samples.empty()) return s;
  std::vector<double> v = samples;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = percentile(v, 50);
  s.p90 = percentile(v, 90);
  s.p99 = percentile(v, 99);
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double sq = 0;
  for (double x : v) sq += (x - s.mean) * (x - s.mean);
  s.stddev = v.size() > 1 ? std::sqrt(sq / static_cast<double>(v.size() - 1)) : 0;
  s.cv = s.mean > 0 ? s.stddev / s.mean : 0;
  return s;
}

LatencyRun measure_latency(const LatencySpec& spec, const std::function<void()>& run_once) {
  using clock = std::chrono::steady_clock;
  LatencyRun r;
  for (int i = 0; i < std::max(spec.warmup, 1); ++i) {
    const auto t0 = clock::now();
    run_once();
    if (i == 0) r.first_run_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  }
  const auto start = clock::now();
  while (static_cast<int>(r.samples_ms.size()) < spec.max_runs) {
    const auto t0 = clock::now();
    run_once();
    const auto t1 = clock::now();
    r.samples_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    const double elapsed = std::chrono::duration<double>(t1 - start).count();
    if (static_cast<int>(r.samples_ms.size()) >= spec.min_runs && elapsed >= spec.min_time_s) break;
  }
  return r;
}

int64_t peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  if (!f) return false;
  f << "5";
  return static_cast<bool>(f);
}

}  // namespace xnn
