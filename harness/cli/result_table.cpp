#include "harness/cli/result_table.h"

#include <cmath>
#include <cstdio>

#include "harness/runner/runner.h"

namespace xnn::cli {

std::string format_metric(double v, const std::string& unit) {
  if (std::isnan(v)) return "-";
  char buf[64];
  if (unit == "ms") {
    std::snprintf(buf, sizeof(buf), "%.3f", v);
  } else if (unit == "bytes") {
    if (v >= 1 << 20) std::snprintf(buf, sizeof(buf), "%.2f MiB", v / (1 << 20));
    else if (v >= 1 << 10) std::snprintf(buf, sizeof(buf), "%.1f KiB", v / (1 << 10));
    else std::snprintf(buf, sizeof(buf), "%.0f B", v);
  } else if (unit == "ratio") {
    std::snprintf(buf, sizeof(buf), "%.4f", v);
  } else if (v >= 1e9) {
    std::snprintf(buf, sizeof(buf), "%.2fG", v / 1e9);
  } else if (v >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.2fM", v / 1e6);
  } else if (v >= 1e4) {
    std::snprintf(buf, sizeof(buf), "%.1fk", v / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.6g", v);
  }
  return buf;
}

std::string format_result_table(const std::vector<ResultRow>& rows) {
  struct Col {
    const char* title;
    const char* metric;
    const char* unit;
  };
  static const Col cols[] = {{"median ms", "latency_ms_median", "ms"}, {"p90 ms", "latency_ms_p90", "ms"},
                             {"size", "size_bytes", "bytes"},          {"params", "parameters", "count"},
                             {"MACs", "macs", "count"},                {"top-1 %", "top1", "pct"},
                             {"peak RSS", "peak_rss_bytes", "bytes"}};
  std::vector<std::vector<std::string>> cells;
  cells.push_back({"model", "variant", "target", "status"});
  for (const Col& c : cols) cells[0].push_back(c.title);
  for (const ResultRow& r : rows) {
    std::vector<std::string> line = {r.model, r.variant, r.target, r.status + (r.reused ? " (earlier)" : "")};
    for (const Col& c : cols) {
      const double v = metric_value(r.metrics, c.metric);
      if (std::string(c.unit) == "pct") {
        char buf[32];
        std::snprintf(buf, sizeof(buf), "%.2f", v * 100);
        line.push_back(std::isnan(v) ? "-" : buf);
      } else {
        line.push_back(format_metric(v, c.unit));
      }
    }
    cells.push_back(std::move(line));
  }
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& line : cells) {
    for (size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  }
  std::string out;
  for (size_t li = 0; li < cells.size(); ++li) {
    for (size_t i = 0; i < cells[li].size(); ++i) {
      const bool left = i < 4;
      std::string c = cells[li][i];
      const std::string pad(width[i] - c.size(), ' ');
      out += (i ? "  " : "") + (left ? c + pad : pad + c);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "\n";
    if (li == 0) {
      size_t total = 0;
      for (size_t w : width) total += w + 2;
      out += std::string(total - 2, '-') + "\n";
    }
  }
  for (const ResultRow& r : rows) {
    if (!r.error.empty()) out += "FAILED " + r.model + " / " + r.variant + " / " + r.target + ": " + r.error + "\n";
  }
  return out;
}

std::vector<ResultRow> rows_of_run(Store& store, const std::string& run_id) {
  std::vector<ResultRow> rows;
  for (const RunJob& rj : store.jobs_of_run(run_id)) {
    ResultRow r;
    r.job_id = rj.job.id;
    r.model = rj.job.model;
    r.variant = rj.job.variant;
    r.target = rj.job.target;
    r.status = rj.job.status;
    r.error = rj.job.error;
    r.reused = rj.reused;
    r.metrics = store.metrics_of_job(rj.job.id);
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace xnn::cli
