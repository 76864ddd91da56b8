// Tables of job results shared by `run`, `show` and `compare`.
#pragma once
#include <string>
#include <vector>

#include "harness/store/store.h"

namespace xnn::cli {

struct ResultRow {
  std::string job_id, model, variant, target, status, error;
  bool reused = false;
  std::vector<MetricValue> metrics;
};

// Fixed-width text table: model, variant, target, status, latency median/p90, size, params,
// MACs, top-1, peak RSS. Failed jobs show their error below the table.
std::string format_result_table(const std::vector<ResultRow>& rows);

// Human formatting of one metric value by its unit.
std::string format_metric(double value, const std::string& unit);

// Rows for every job of a run, read from the store.
std::vector<ResultRow> rows_of_run(Store& store, const std::string& run_id);

}  // namespace xnn::cli
