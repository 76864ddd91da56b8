#include "harness/metrics/store_metrics.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <exception>

namespace xnn::metrics {

namespace {

Family<Gauge>& gauge(Registry& r, const char* name, const char* help) {
  return BuildGauge().Name(name).Help(help).Register(r);
}

Labels labels_of(const ResultKey& k) {
  return {{"experiment", k.experiment}, {"model", k.model}, {"variant", k.variant}, {"target", k.target}};
}

}  // namespace

ResultGauges::ResultGauges(Registry& r)
    : latency_median_(gauge(r, kLatencyMedianSeconds, "Median latency of one inference, latest result per model, variant and target")),
      latency_p90_(gauge(r, kLatencyP90Seconds, "90th-percentile latency of one inference, latest result per model, variant and target")),
      size_(gauge(r, kModelSizeBytes, "Size of the measured model file (after the variant's steps)")),
      peak_rss_(gauge(r, kPeakRssBytes, "Peak resident memory of the measuring process")),
      top1_(gauge(r, kAccuracyTop1Ratio, "Top-1 accuracy on the configured dataset split (0-1)")),
      top5_(gauge(r, kAccuracyTop5Ratio, "Top-5 accuracy on the configured dataset split (0-1)")),
      timestamp_(gauge(r, kLastResultTimestampSeconds, "When the latest result was recorded (Unix seconds)")) {}

void ResultGauges::Set(const ResultKey& key, const std::vector<MetricValue>& metrics, double finished_unix_s) {
  const Labels labels = labels_of(key);
  // Divide (not multiply by 1e-3): ms / 1000 is the correctly rounded value, so 0.0859555 ms
  // reads 0.0000859555 s rather than 0.00008595550000000001.
  auto put = [&](Family<Gauge>& family, const char* name, double divisor) {
    for (const MetricValue& m : metrics) {
      if (m.name == name && !std::isnan(m.value)) {
        family.Add(labels).Set(m.value / divisor);
        return;
      }
    }
  };
  put(latency_median_, "latency_ms_median", 1000.0);
  put(latency_p90_, "latency_ms_p90", 1000.0);
  put(size_, "size_bytes", 1.0);
  put(peak_rss_, "peak_rss_bytes", 1.0);
  put(top1_, "top1", 1.0);
  put(top5_, "top5", 1.0);
  if (!std::isnan(finished_unix_s)) timestamp_.Add(labels).Set(finished_unix_s);
}

double ParseUtcIso(const std::string& iso) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, consumed = 0;
  double s = 0;
  if (std::sscanf(iso.c_str(), "%4d-%2d-%2dT%2d:%2d:%lf%n", &y, &mo, &d, &h, &mi, &s, &consumed) != 6) return std::nan("");
  if (static_cast<size_t>(consumed) != iso.size() - 1 || iso.back() != 'Z') return std::nan("");
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s < 0 || s >= 61) return std::nan("");
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  const double whole = std::floor(s);
  tm.tm_sec = static_cast<int>(whole);
  const time_t t = timegm(&tm);
  return static_cast<double>(t) + (s - whole);
}

void AddStoreMetrics(Registry& registry, const std::vector<LatestResult>& results, const std::vector<TargetRecord>& targets) {
  ResultGauges gauges(registry);
  for (const LatestResult& r : results) {
    gauges.Set(ResultKey{r.job.experiment, r.job.model, r.job.variant, r.job.target}, r.metrics, ParseUtcIso(r.job.finished_at));
  }
  auto& info = BuildGauge()
                   .Name(kTargetInfo)
                   .Help("Targets known to the results store: kind, and whether results come from a device model (simulated)")
                   .Register(registry);
  for (const TargetRecord& t : targets) {
    info.Add({{"target", t.name}, {"kind", t.kind}, {"simulated", t.simulated ? "true" : "false"}}).Set(1);
  }
}

StoreCollector::StoreCollector(std::string db_path, Registry& own_metrics)
    : path_(std::move(db_path)),
      read_errors_(BuildCounter()
                       .Name(kStoreReadErrorsTotal)
                       .Help("Scrapes that could not read the results store (missing, busy or unreadable)")
                       .Register(own_metrics)
                       .Add({})) {}

std::vector<MetricFamily> StoreCollector::Collect() const {
  try {
    StoreOptions opt;
    opt.create_if_missing = false;
    opt.read_only = true;
    opt.busy_timeout_ms = 2000;  // a scrape must finish well inside Prometheus's scrape timeout
    opt.busy_deadline_ms = 5000;
    Store store(path_, opt);  // one connection per scrape: scrapes may run on several threads
    const std::vector<LatestResult> results = store.latest_results();
    const std::vector<TargetRecord> targets = store.list_targets();
    Registry registry;
    AddStoreMetrics(registry, results, targets);
    return registry.Collect();
  } catch (const std::exception& e) {
    read_errors_.Increment();
    if (on_error_) on_error_(e.what());
    return {};
  }
}

}  // namespace xnn::metrics
