// Gauges of recorded results, shared by `xnn-lab serve` (read from the results store on each
// scrape) and `xnn-lab run --metrics-listen/--push-gateway/--textfile` (set as jobs finish), so
// both expose the same names. Base units: seconds, bytes, ratios 0-1.
//
// Labels {experiment, model, variant, target}: bounded by the experiment configs. Never a run
// id or a commit (those grow without bound; the store has them).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "harness/metrics/registry.h"
#include "harness/store/store.h"

namespace xnn::metrics {

// Names, in one place (the Grafana dashboard in configs/dashboards/ uses them).
inline constexpr char kLatencyMedianSeconds[] = "xnn_lab_latency_median_seconds";
inline constexpr char kLatencyP90Seconds[] = "xnn_lab_latency_p90_seconds";
inline constexpr char kModelSizeBytes[] = "xnn_lab_model_size_bytes";
inline constexpr char kPeakRssBytes[] = "xnn_lab_peak_rss_bytes";
inline constexpr char kAccuracyTop1Ratio[] = "xnn_lab_accuracy_top1_ratio";
inline constexpr char kAccuracyTop5Ratio[] = "xnn_lab_accuracy_top5_ratio";
inline constexpr char kLastResultTimestampSeconds[] = "xnn_lab_last_result_timestamp_seconds";
inline constexpr char kTargetInfo[] = "xnn_lab_target_info";
inline constexpr char kStoreReadErrorsTotal[] = "xnn_lab_exporter_store_read_errors_total";

struct ResultKey {
  std::string experiment, model, variant, target;
};

// The result gauges, registered in `registry` on construction.
class ResultGauges {
 public:
  explicit ResultGauges(Registry& registry);
  // Sets one result's gauges from its recorded metrics (store units: latency_ms_median and
  // latency_ms_p90 in ms, size_bytes, peak_rss_bytes, top1/top5 ratios). A metric the job did
  // not record, or recorded as NaN, is left out. `finished_unix_s`: when the result was
  // recorded (NaN: left out).
  void Set(const ResultKey& key, const std::vector<MetricValue>& metrics, double finished_unix_s);

 private:
  Family<Gauge>& latency_median_;
  Family<Gauge>& latency_p90_;
  Family<Gauge>& size_;
  Family<Gauge>& peak_rss_;
  Family<Gauge>& top1_;
  Family<Gauge>& top5_;
  Family<Gauge>& timestamp_;
};

// The store's UTC timestamps ("2026-12-02T14:15:03.123Z") as Unix seconds; NaN if malformed.
double ParseUtcIso(const std::string& iso);

// Builds, into `registry`, the gauges of the latest DONE result per (experiment, model, variant,
// target) and an info gauge per target ({target, kind, simulated} = 1).
void AddStoreMetrics(Registry& registry, const std::vector<LatestResult>& results,
                     const std::vector<TargetRecord>& targets);

// Reads the store at `db_path` on every Collect() (read-only connection, one snapshot per
// read; WAL lets writers continue meanwhile; short busy timeouts so a scrape never waits long).
// A failed read (missing file, busy, corrupt) counts in xnn_lab_exporter_store_read_errors_total
// (registered in `own_metrics`), is reported through `on_error`, and yields no result gauges.
class StoreCollector : public Collectable {
 public:
  StoreCollector(std::string db_path, Registry& own_metrics);
  std::vector<MetricFamily> Collect() const override;
  // Called (from the scraping thread) with the message of each failed read.
  void set_error_handler(std::function<void(const std::string&)> on_error) { on_error_ = std::move(on_error); }

 private:
  std::string path_;
  Counter& read_errors_;
  std::function<void(const std::string&)> on_error_;
};

}  // namespace xnn::metrics
